"""Checkpoint directories: the native self-describing layout and the published checkpoints' layout.

Native layout (written by `write_checkpoint`)::

    orca_judge.json          format, OrcaConfig, backbone id + weight fingerprint, pooling
    head.safetensors         linear head (weight, bias)
    adapter/                 PEFT LoRA adapter (absent when lora_r = 0)
    tokenizer/               tokenizer files
    metrics.json             training / dev metrics (optional)
    README.md                model card with data attribution

Published layout (read only): tokenizer/, model/config.yaml, model/lm/ (PEFT adapter),
model/model_minus_lm.pt (state dict with linear.weight / linear.bias).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .config import OrcaConfig

FORMAT = "orca-judge/1"
CONFIG_FILE = "orca_judge.json"
HEAD_FILE = "head.safetensors"
ADAPTER_DIR = "adapter"
TOKENIZER_DIR = "tokenizer"
METRICS_FILE = "metrics.json"
PUBLISHED_SCORE_TYPES = {
    "beta": "beta",
    "multinomial": "multinomial",
    "bernoulli_kl": "bernoulli",
    "bernoulli": "bernoulli",
}

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
  or `orca-score --checkpoint <this directory>`.

## Data attribution
Trained on human ratings from the ORCA audio-QA annotations (`BUT-FIT/orca-audio-qa-annotations`),
Speech@FIT, Brno University of Technology, licensed CC-BY-4.0. Questions come from the MMAU and
MMAR benchmarks; candidate answers were produced by audio language models.

## Metrics
{metrics}
"""


class CheckpointError(ValueError):
    """A checkpoint directory is incomplete or inconsistent; the message names the file."""


@dataclass
class CheckpointContents:
    """Everything read from a checkpoint directory, before any model is built."""

    config: OrcaConfig
    head: dict[str, torch.Tensor]
    adapter_dir: Path | None
    tokenizer_dir: Path
    backbone_fingerprint: str | None
    pooling: str | None
    metrics: dict[str, Any] = field(default_factory=dict)
    layout: str = "native"


@contextlib.contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling directory that replaces `target` only if the block succeeds."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.replace(target, old)
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write a text file via a temporary file and rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def recover_interrupted(target: str | Path) -> None:
    """Restore a checkpoint left as `.NAME.old` by a crash between the two renames."""
    target = Path(target)
    old = target.with_name(f".{target.name}.old")
    if not target.exists() and old.exists():
        os.replace(old, target)


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
) -> Path:
    """Write a native checkpoint directory atomically."""
    from safetensors.torch import save_file

    with atomic_dir(target) as tmp:
        meta = {
            "format": FORMAT,
            "config": config.to_dict(),
            "pooling": pooling,
            "backbone": {"id": config.backbone, "fingerprint": backbone_fingerprint},
        }
        (tmp / CONFIG_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        save_file({k: v.detach().cpu().contiguous() for k, v in head.items()}, tmp / HEAD_FILE)
        if adapter_config is not None:
            (tmp / ADAPTER_DIR).mkdir()
            adapter_config.save_pretrained(tmp / ADAPTER_DIR)
            save_file(
                {k: v.detach().cpu().contiguous() for k, v in adapter_state.items()},
                tmp / ADAPTER_DIR / "adapter_model.safetensors",
            )
        tokenizer.save_pretrained(tmp / TOKENIZER_DIR)
        metrics = metrics or {}
        (tmp / METRICS_FILE).write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
        shown = {k: v for k, v in metrics.items() if isinstance(v, (int, float, str))}
        (tmp / "README.md").write_text(
            MODEL_CARD.format(
                fingerprint=backbone_fingerprint,
                pooling=pooling,
                metrics="\n".join(f"- {k}: {v}" for k, v in sorted(shown.items()))
                or "- none recorded",
                **{
                    k: getattr(config, k)
                    for k in ("likelihood", "backbone", "lora_r", "template", "clamp_threshold")
                },
            )
        )
    return Path(target)


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise CheckpointError(f"{path}: missing {what}")
    return path


def read_checkpoint(path: str | Path, backbone: str | None = None) -> CheckpointContents:
    """Read a native or published-layout checkpoint directory (no model is built)."""
    root = Path(path)
    if not root.is_dir():
        raise CheckpointError(f"{root}: not a checkpoint directory")
    if (root / CONFIG_FILE).exists():
        return _read_native(root, backbone)
    if (root / "model" / "config.yaml").exists():
        return _read_published(root, backbone)
    raise CheckpointError(
        f"{root}: missing {CONFIG_FILE} (native) or model/config.yaml (published layout)"
    )


def _read_native(root: Path, backbone: str | None) -> CheckpointContents:
    from safetensors.torch import load_file

    try:
        meta = json.loads((root / CONFIG_FILE).read_text())
        config = OrcaConfig.from_dict(meta["config"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{root / CONFIG_FILE}: unreadable ({err})") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{root / CONFIG_FILE}: format {meta.get('format')!r}, expected {FORMAT!r}"
        )
    head = load_file(_require(root / HEAD_FILE, "head weights"))
    adapter = root / ADAPTER_DIR
    if config.lora_r > 0:
        _require(adapter / "adapter_config.json", "LoRA adapter config")
        _require(adapter / "adapter_model.safetensors", "LoRA adapter weights")
    metrics_path = root / METRICS_FILE
    metrics = json.loads(metrics_path.read_text()) if metrics_path.exists() else {}
    if backbone:
        config = config.replace(backbone=backbone)
    return CheckpointContents(
        config=config,
        head=head,
        adapter_dir=adapter if config.lora_r > 0 else None,
        tokenizer_dir=_require(root / TOKENIZER_DIR, "tokenizer directory"),
        backbone_fingerprint=meta.get("backbone", {}).get("fingerprint"),
        pooling=meta.get("pooling"),
        metrics=metrics,
    )


def _read_published(root: Path, backbone: str | None) -> CheckpointContents:
    import yaml

    model_dir = root / "model"
    settings = yaml.safe_load((model_dir / "config.yaml").read_text()) or {}
    score_type = settings.get("score_type")
    if score_type not in PUBLISHED_SCORE_TYPES:
        raise CheckpointError(
            f"{model_dir / 'config.yaml'}: score_type {score_type!r} is not one of "
            f"{sorted(PUBLISHED_SCORE_TYPES)}"
        )
    likelihood = PUBLISHED_SCORE_TYPES[score_type]
    adapter_dir = model_dir / "lm"
    adapter_cfg = json.loads(
        _require(adapter_dir / "adapter_config.json", "PEFT adapter config").read_text()
    )
    state = torch.load(
        _require(model_dir / "model_minus_lm.pt", "head state dict"),
        map_location="cpu",
        weights_only=True,
    )
    weight = next((v for k, v in state.items() if k.endswith("linear.weight")), None)
    bias = next((v for k, v in state.items() if k.endswith("linear.bias")), None)
    if weight is None or bias is None:
        raise CheckpointError(f"{model_dir / 'model_minus_lm.pt'}: no linear.weight / linear.bias")
    weight, bias = weight.float(), bias.float()
    if likelihood == "bernoulli" and weight.shape[0] == 2:
        # softmax over two logits with p = first equals sigmoid(z0 - z1)
        weight, bias = (weight[0] - weight[1])[None], (bias[0] - bias[1])[None]
    config = OrcaConfig(
        backbone=backbone or adapter_cfg.get("base_model_name_or_path") or "",
        likelihood=likelihood,
        template="reference",
        pooling="last",
        lora_r=int(adapter_cfg.get("r", 0)),
        lora_alpha=adapter_cfg.get("lora_alpha"),
        use_rationale=not settings.get("no_rationale", False),
        use_question=not settings.get("no_question", False),
        use_transcript=bool(settings.get("use_transcription", False)),
        max_chars=None,
        add_special_tokens=False,
    )
    return CheckpointContents(
        config=config,
        head={"weight": weight, "bias": bias},
        adapter_dir=adapter_dir,
        tokenizer_dir=_require(root / "tokenizer", "tokenizer directory"),
        backbone_fingerprint=None,
        pooling="last",
        layout="published",
        metrics={"published_config": settings},
    )
