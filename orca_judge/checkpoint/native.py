"""The native checkpoint layout: writing it whole, updating its config and metrics, reading it.

Layout (written by `write_checkpoint`, one atomic directory swap)::

    orca_judge.json          format, OrcaConfig, backbone id + weight fingerprint, pooling
    training_args.json       how it was trained: TrainingArguments (absent when not recorded)
    head.safetensors         linear head (weight, bias)
    adapter/                 PEFT LoRA adapter (absent when lora_r = 0)
    tokenizer/               tokenizer files
    metrics.json             training / dev metrics (optional)
    README.md                model card with data attribution

The later in-place updates (`update_config`, `update_metrics`) are each an atomic file replace.
Checkpoints written before the training arguments had their own file hold them inside
`orca_judge.json`'s `config` (the keys of `FORMAT_1_TRAINING`); they read the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from eval_common.inputs import read_json
from eval_common.outputs import check_output_folder
from orca_judge.checkpoint.atomic import atomic_dir, atomic_write_json, atomic_write_text, json_text
from orca_judge.checkpoint.contents import (
    FORMAT_1_TRAINING,
    CheckpointContents,
    read_tensors,
    require,
)
from orca_judge.config import OrcaConfig
from orca_judge.errors import CheckpointError
from orca_judge.model import OrcaModel

FORMAT = "orca-judge/1"
CONFIG_FILE = "orca_judge.json"
TRAINING_FILE = "training_args.json"
HEAD_FILE = "head.safetensors"
ADAPTER_DIR = "adapter"
TOKENIZER_DIR = "tokenizer"
METRICS_FILE = "metrics.json"
CARD_FILE = "README.md"
# The manifest of a folder of several judges (`ensemble`), never a file of one judge.
ENSEMBLE_FILE = "orca_ensemble.json"
# The top-level names a native checkpoint consists of: replacing one touches nothing else.
OWNED = frozenset(
    {CONFIG_FILE, TRAINING_FILE, HEAD_FILE, ADAPTER_DIR, TOKENIZER_DIR, METRICS_FILE, CARD_FILE}
)

MODEL_CARD = """---
license: cc-by-4.0
tags: [orca, judge, audio-question-answering]
---
# ORCA judge ({likelihood})

Predicts the distribution of human 1-5 correctness ratings for an answer to an open-ended
question, given the question, the reference answer, a rationale and the candidate answer.

- Backbone: `{backbone}` (weight fingerprint `{fingerprint}`).
- LoRA r={lora_r}; {pooling}-token pooling.
- Likelihood: {likelihood}; input template: {template}; clamp threshold: {clamp_threshold}.
- Load: `OrcaJudge.from_pretrained("<this directory>")`
  or `orca score --checkpoint <this directory>`.

## Data attribution
Trained on human ratings from the ORCA audio-QA annotations (`BUT-FIT/orca-audio-qa-annotations`),
Speech@FIT, Brno University of Technology, licensed CC-BY-4.0. Questions come from the MMAU and
MMAR benchmarks; candidate answers were produced by audio language models.

## Metrics
{metrics}
"""


def write_checkpoint(
    target: str | Path,
    *,
    config: OrcaConfig,
    head: dict[str, torch.Tensor],
    adapter_config: Any | None,
    adapter_state: dict[str, torch.Tensor] | None,
    tokenizer: Any,
    backbone_fingerprint: str,
    pooling: str,
    metrics: dict[str, Any] | None = None,
    training: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a native checkpoint directory atomically; `training`: how it was trained, if known.

    An existing checkpoint is replaced; a non-empty folder that is not one is refused unless
    `overwrite`. Either way only the checkpoint's own files change: other files in the
    folder are kept.
    """
    from safetensors.torch import save

    check_output_folder(
        target,
        command="orca-judge",
        flag="checkpoint folder",
        overwrite=overwrite,
        overwrite_flag="overwrite=True (orca train/average: --overwrite)",
        is_own=is_native_checkpoint,
    )
    with atomic_dir(target, owned=OWNED) as tmp:
        meta = {
            "format": FORMAT,
            "config": config.to_dict(),
            "pooling": pooling,
            "backbone": {"id": config.backbone, "fingerprint": backbone_fingerprint},
        }
        (tmp / CONFIG_FILE).write_text(json_text(meta), encoding="utf-8")
        if training:
            (tmp / TRAINING_FILE).write_text(json_text(dict(training)), encoding="utf-8")
        # Tensors serialised in memory, written as plain files: a full disk is an OSError.
        (tmp / HEAD_FILE).write_bytes(
            save({k: v.detach().cpu().contiguous() for k, v in head.items()})
        )
        if adapter_config is not None:
            (tmp / ADAPTER_DIR).mkdir()
            adapter_config.save_pretrained(tmp / ADAPTER_DIR)
            (tmp / ADAPTER_DIR / "adapter_model.safetensors").write_bytes(
                save({k: v.detach().cpu().contiguous() for k, v in adapter_state.items()})
            )
        tokenizer.save_pretrained(tmp / TOKENIZER_DIR)
        metrics = metrics or {}
        (tmp / METRICS_FILE).write_text(json_text(metrics), encoding="utf-8")
        card = model_card(config, backbone_fingerprint, pooling, metrics)
        (tmp / CARD_FILE).write_text(card, encoding="utf-8")
    return Path(target)


def is_native_checkpoint(folder: Path) -> bool:
    """Whether `folder` holds a native judge checkpoint (its `orca_judge.json`)."""
    return (Path(folder) / CONFIG_FILE).is_file()


def model_card(
    config: OrcaConfig, backbone_fingerprint: str, pooling: str, metrics: Mapping[str, Any]
) -> str:
    """The README.md of a native checkpoint: what it is, how to load it, data attribution."""
    shown = {k: v for k, v in metrics.items() if isinstance(v, (int, float, str))}
    return MODEL_CARD.format(
        fingerprint=backbone_fingerprint,
        pooling=pooling,
        metrics="\n".join(f"- {k}: {v}" for k, v in sorted(shown.items())) or "- none recorded",
        **{
            k: getattr(config, k)
            for k in ("likelihood", "backbone", "lora_r", "template", "clamp_threshold")
        },
    )


def peft_adapter(backbone: nn.Module) -> tuple[Any, dict[str, torch.Tensor]] | None:
    """(LoRA config, adapter weights) of an unmerged PEFT backbone; None for a plain one."""
    from peft import PeftModel, get_peft_model_state_dict

    if not isinstance(backbone, PeftModel):
        return None
    return backbone.peft_config["default"], get_peft_model_state_dict(backbone)


def save_model(
    target: str | Path,
    model: OrcaModel,
    tokenizer: Any,
    *,
    config: OrcaConfig,
    backbone_fingerprint: str,
    metrics: dict[str, Any] | None = None,
    adapter: tuple[Any, dict[str, torch.Tensor]] | None = None,
    training: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write an OrcaModel as a native checkpoint; `adapter` is needed once LoRA was merged.

    `overwrite`: see `write_checkpoint` (a non-empty folder that is not a checkpoint).
    """
    lora, state = adapter or peft_adapter(model.backbone) or (None, None)
    return write_checkpoint(
        target,
        config=config,
        head=model.head_state(),
        adapter_config=lora,
        adapter_state=state,
        tokenizer=tokenizer,
        backbone_fingerprint=backbone_fingerprint,
        pooling=model.pooling,
        metrics=metrics,
        training=training,
        overwrite=overwrite,
    )


def _native_meta(root: Path) -> dict[str, Any]:
    if not (root / CONFIG_FILE).exists():
        raise CheckpointError(f"{root}: missing {CONFIG_FILE} (only native checkpoints update)")
    return read_json(root / CONFIG_FILE, CheckpointError)


def _read_metrics(root: Path) -> dict[str, Any]:
    """A checkpoint's recorded metrics; {} when it has no metrics.json."""
    path = root / METRICS_FILE
    return read_json(path, CheckpointError) if path.exists() else {}


def _split_config(recorded: Mapping[str, Any]) -> tuple[OrcaConfig, dict[str, Any]]:
    """(OrcaConfig, training arguments kept inside it by format orca-judge/1's first files)."""
    training = {k: v for k, v in recorded.items() if k in FORMAT_1_TRAINING}
    config = OrcaConfig.from_dict({k: v for k, v in recorded.items() if k not in training})
    return config, training


def update_config(target: str | Path, **changes: Any) -> OrcaConfig:
    """Change OrcaConfig fields stored in a native checkpoint atomically; returns the new config."""
    root = Path(target)
    meta = _native_meta(root)
    config, training = _split_config(meta["config"])
    config = config.replace(**changes)
    meta["config"] = {**training, **config.to_dict()}  # an older file keeps what it recorded
    atomic_write_json(root / CONFIG_FILE, meta)
    _refresh_card(root, meta, _read_metrics(root))
    return config


def update_metrics(
    target: str | Path, entries: Mapping[str, Any], *, replace: bool = False
) -> dict[str, Any]:
    """Merge `entries` into a checkpoint's metrics.json (replace=True: overwrite it), atomically."""
    root = Path(target)
    meta = _native_meta(root)
    path = root / METRICS_FILE
    current = _read_metrics(root) if not replace else {}
    metrics = {**current, **entries}
    atomic_write_json(path, metrics)
    _refresh_card(root, meta, metrics)
    return metrics


def _refresh_card(root: Path, meta: dict[str, Any], metrics: Mapping[str, Any]) -> None:
    # The model card quotes the config and metrics, so it follows every update of them.
    config, _ = _split_config(meta["config"])
    fingerprint = meta.get("backbone", {}).get("fingerprint")
    card = model_card(config, fingerprint, meta.get("pooling"), metrics)
    atomic_write_text(root / CARD_FILE, card)


def read_native(root: Path, backbone: str | None) -> CheckpointContents:
    """Read a native checkpoint directory; `backbone` replaces the recorded backbone id."""
    meta = read_json(root / CONFIG_FILE, CheckpointError)
    try:
        config, training = _split_config(meta["config"])
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{root / CONFIG_FILE}: unreadable ({err})") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{root / CONFIG_FILE}: format {meta.get('format')!r}, expected {FORMAT!r}"
        )
    head = read_tensors(root / HEAD_FILE, "head weights")
    adapter = root / ADAPTER_DIR
    if config.lora_r > 0:
        require(adapter / "adapter_config.json", "LoRA adapter config")
        require(adapter / "adapter_model.safetensors", "LoRA adapter weights")
    metrics = _read_metrics(root)
    if (root / TRAINING_FILE).exists():
        training = {**training, **_read_training(root / TRAINING_FILE)}
    if backbone:
        config = config.replace(backbone=backbone)
    return CheckpointContents(
        config=config,
        head=head,
        adapter_dir=adapter if config.lora_r > 0 else None,
        tokenizer_dir=require(root / TOKENIZER_DIR, "tokenizer directory"),
        backbone_fingerprint=meta.get("backbone", {}).get("fingerprint"),
        pooling=meta.get("pooling"),
        metrics=metrics,
        training=training,
        root=root,
    )


def _read_training(path: Path) -> dict[str, Any]:
    recorded = read_json(path, CheckpointError)
    if not isinstance(recorded, dict):
        raise CheckpointError(f"{path}: expected a mapping of TrainingArguments fields")
    return recorded
