"""What a checkpoint directory holds once read, and the errors that name a broken file.

Both layouts (native and published) are read into one `CheckpointContents`, so building a
model from either is the same code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from orca_judge.config import OrcaConfig
from orca_judge.errors import CheckpointError
from orca_judge.model import pickle_refusal

# Training arguments as format orca-judge/1 first kept them, inside `config`, with the values
# a checkpoint that records none stands for (a published one, or one older than a field).
# Frozen: judge fingerprints and the settings orca average compares are computed over them.
FORMAT_1_TRAINING: dict[str, Any] = {
    "max_chars": 1000,
    "lr": 2e-4,
    "lr_floor": 0.1,
    "warmup_steps": 100,
    "max_steps": 1000,
    "batch_size": 8,
    "grad_accum": 2,
    "weight_decay": 0.0,
    "grad_clip": 5.0,
    "eval_every": 50,
    "patience": 5,
    "seed": 0,
    "gradient_checkpointing": True,
}


# Training arguments added since, with the value that means "as before they existed": a
# checkpoint recording that value is the judge an older one without the field is, so it is
# left out of the mapping fingerprints and orca average read.
LATER_TRAINING_AS_BEFORE: dict[str, Any] = {"autocast": "off", "select": "best"}


def recorded_settings(config: OrcaConfig, training: Mapping[str, Any]) -> dict[str, Any]:
    """A judge's config and training arguments as one mapping, as format orca-judge/1 had it."""
    as_before = LATER_TRAINING_AS_BEFORE.items()
    kept = {k: v for k, v in training.items() if (k, v) not in as_before}
    return {**FORMAT_1_TRAINING, **kept, **config.to_dict()}


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
    # How it was trained, as recorded (training_args.json); {} when the checkpoint says nothing.
    training: dict[str, Any] = field(default_factory=dict)
    layout: str = "native"
    root: Path | None = None
    recorded_backbones: dict[str, str] = field(default_factory=dict)  # record -> backbone id
    input_settings: str = "the checkpoint's config"  # where the input flags were read from


def require(path: Path, what: str) -> Path:
    """`path` itself, or CheckpointError naming it and what it should have held."""
    if not path.exists():
        raise CheckpointError(f"{path}: missing {what}")
    return path


def read_tensors(path: Path, what: str) -> dict[str, torch.Tensor]:
    """Tensors from a safetensors or torch file; CheckpointError naming it when unreadable."""
    from safetensors.torch import load_file

    require(path, what)
    try:
        if path.suffix == ".safetensors":
            return load_file(path)
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated or corrupt files raise many different types
        if refusal := pickle_refusal(path, err):
            raise CheckpointError(f"{what}: {refusal}") from None
        reason = " ".join(str(err).split()) or type(err).__name__
        raise CheckpointError(f"{path}: unreadable {what} ({reason})") from None
    if not isinstance(state, Mapping):
        raise CheckpointError(f"{path}: {what} is not a mapping of tensors")
    return dict(state)
