"""The authors' published judges: recognising one from what a checkpoint records, and its clamp.

Their layout stores no clamp threshold; the paper tuned one per judge on dev data. A local
copy keeps no Hub id, so a judge is recognised by what its files say about the backbone
(the adapter's `base_model_name_or_path`, the trainer's `args.yaml` `model`) or, failing
that, by the backbone's architecture, together with what all three share: a multinomial
head and LoRA rank 128.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orca_judge.model import text_config

PUBLISHED_LIKELIHOOD = "multinomial"
PUBLISHED_LORA_R = 128


@dataclass(frozen=True)
class PublishedJudge:
    """One published judge: its name, Hub repository, clamp threshold and backbone."""

    name: str
    repo: str
    clamp_threshold: float
    backbone_pattern: str  # matched (case-insensitively) against recorded backbone ids
    model_types: tuple[str, ...]
    hidden_size: int
    num_layers: int


PUBLISHED_JUDGES = (
    PublishedJudge(
        "Gemma-3-4B",
        "BUT-FIT/orca-gemma-3-4b-it-multinomial",
        0.05,
        r"gemma-?3-4b",
        ("gemma3", "gemma3_text"),
        2560,
        34,
    ),
    PublishedJudge(
        "Llama-3.2-3B",
        "BUT-FIT/orca-llama-3.2-3b-it-multinomial",
        0.05,
        r"llama-?3\.2-3b",
        ("llama",),
        3072,
        28,
    ),
    PublishedJudge(
        "OLMo-2-1B",
        "BUT-FIT/orca-olmo-2-1b-multinomial",
        0.005,
        r"olmo-?2-(\d{4}-)?1b",
        ("olmo2",),
        2048,
        16,
    ),
)


@dataclass(frozen=True)
class ClampChoice:
    """The clamp threshold a judge uses and why (printed by orca score, kept with results)."""

    threshold: float | None
    reason: str


def by_name(recorded: Mapping[str, str]) -> tuple[PublishedJudge, str] | None:
    """The published backbone a recorded id names, with which record named it."""
    for where, value in recorded.items():
        for judge in PUBLISHED_JUDGES:
            if value and re.search(judge.backbone_pattern, value, re.IGNORECASE):
                return judge, f"{where} {value!r}"
    return None


def by_architecture(backbone_config: Any) -> tuple[PublishedJudge, str] | None:
    """The published backbone whose architecture (type, width, depth) this config has."""
    text = text_config(backbone_config)
    shape = (
        getattr(backbone_config, "model_type", None),
        getattr(text, "hidden_size", None),
        getattr(text, "num_hidden_layers", None),
    )
    for judge in PUBLISHED_JUDGES:
        if shape[0] in judge.model_types and shape[1:] == (judge.hidden_size, judge.num_layers):
            return judge, (
                f"the backbone's architecture ({shape[0]}, hidden size {shape[1]}, "
                f"{shape[2]} layers)"
            )
    return None


def published_clamp(
    recorded: Mapping[str, str], backbone_config: Any, likelihood: str, lora_r: int
) -> ClampChoice:
    """The paper's threshold when a published-layout checkpoint is a published judge."""
    found = by_name(recorded) or by_architecture(backbone_config)
    if found is None:
        return ClampChoice(
            None,
            "published layout, but not one of the published judges "
            f"({', '.join(j.name for j in PUBLISHED_JUDGES)}): no threshold, means are not "
            "clamped",
        )
    judge, evidence = found
    if (likelihood, lora_r) != (PUBLISHED_LIKELIHOOD, PUBLISHED_LORA_R):
        return ClampChoice(
            None,
            f"a {judge.name} backbone ({evidence}), but a {likelihood} head with LoRA r={lora_r} "
            f"is not the published judge ({PUBLISHED_LIKELIHOOD}, r={PUBLISHED_LORA_R}): no "
            "threshold, means are not clamped",
        )
    return ClampChoice(
        judge.clamp_threshold,
        f"the paper's threshold for the published {judge.name} judge ({judge.repo}), "
        f"recognised by {evidence}, a {likelihood} head and LoRA r={lora_r}",
    )
