"""OrcaConfig: every knob of the ORCA judge (model, text, likelihood, training) in one place."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval_common.outputs import write_text

LIKELIHOODS = ("multinomial", "beta", "bernoulli")
TEMPLATES = ("reference", "paper")
POOLINGS = ("auto", "last", "mean")


def _knob(default: Any, help: str) -> Any:
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"help": help})
    return field(default=default, metadata={"help": help})


@dataclass
class OrcaConfig:
    """All settings of a judge; stored as JSON in every checkpoint."""

    # model
    backbone: str = _knob("", "Hugging Face id or local directory of the base transformer.")
    likelihood: str = _knob("multinomial", "Rating likelihood: multinomial, beta or bernoulli.")
    pooling: str = _knob("auto", "auto (last token for decoders, mean for encoders), last or mean.")
    lora_r: int = _knob(
        128, "LoRA rank (the paper's; measured best in docs/orca_judge.md); 0 trains the head only."
    )
    lora_alpha: int | None = _knob(None, "LoRA alpha; None means alpha = r.")
    lora_dropout: float = _knob(0.0, "LoRA dropout probability.")
    use_cls_token: bool = _knob(
        False, "Append a learned token after the text and pool its hidden state (last pooling)."
    )
    lora_target_modules: list[str] | None = field(
        default=None,
        metadata={"help": "Module names LoRA adapts; None detects them from the architecture."},
    )
    dtype: str = _knob(
        "auto",
        "Backbone dtype: auto (bf16 on capable GPUs, fp16 on older ones, fp32 on CPU and MPS), "
        "float32, bfloat16 or float16.",
    )
    # input text
    template: str = _knob("reference", "Input string: reference (published checkpoints) or paper.")
    use_question: bool = _knob(True, "Include the question block.")
    use_rationale: bool = _knob(True, "Include the rationale block.")
    use_transcript: bool = _knob(False, "Include the ASR transcript block (dropped when empty).")
    max_tokens: int | None = _knob(
        None,
        "Token limit; longer inputs are truncated keeping the candidate. None: the backbone's "
        "context length.",
    )
    max_chars: int | None = _knob(
        1000, "Training filter: drop items whose text exceeds this; None keeps all."
    )
    add_special_tokens: bool | None = _knob(
        None, "Add BOS/CLS/EOS tokens; None: no for decoders, yes for encoders."
    )
    # post-processing
    clamp_threshold: float | None = _knob(
        None, "Clamp the mean to 0/1 when the variance is at most this."
    )
    clamp_margin: float = _knob(
        0.125, "Distance from 0 or 1 (unit scale) within which clamping applies."
    )
    # training
    lr: float = _knob(2e-4, "Peak learning rate.")
    lr_floor: float = _knob(0.1, "Final learning rate as a fraction of the peak.")
    warmup_steps: int = _knob(100, "Linear warmup steps (optimiser steps).")
    max_steps: int = _knob(1000, "Optimiser steps in total.")
    batch_size: int = _knob(8, "Items per forward pass.")
    grad_accum: int = _knob(
        2, "Forward passes per optimiser step (effective batch = batch_size x grad_accum)."
    )
    weight_decay: float = _knob(0.0, "AdamW weight decay.")
    grad_clip: float = _knob(5.0, "Gradient-norm clip; 0 disables.")
    eval_every: int = _knob(50, "Evaluate on dev every this many optimiser steps.")
    patience: int = _knob(5, "Stop after this many evaluations without a better dev Spearman rho.")
    eval_batch_size: int = _knob(16, "Items per forward pass when evaluating or scoring.")
    seed: int = _knob(0, "Seed for initialisation and data order.")
    gradient_checkpointing: bool = _knob(
        True,
        "Training: recompute each layer's activations in the backward pass instead of keeping "
        "them (about half the peak memory for about a third more time; results unchanged).",
    )

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first invalid field."""
        choices = {
            "likelihood": LIKELIHOODS,
            "template": TEMPLATES,
            "pooling": POOLINGS,
            "dtype": ("auto", "float32", "bfloat16", "float16"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"OrcaConfig.{name}={getattr(self, name)!r}; expected one of {allowed}"
                )
        positive = (
            "max_steps",
            "batch_size",
            "grad_accum",
            "eval_every",
            "eval_batch_size",
        )
        for name in positive:
            if int(getattr(self, name)) < 1:
                raise ValueError(f"OrcaConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.max_tokens is not None and int(self.max_tokens) < 1:
            raise ValueError(f"OrcaConfig.max_tokens must be >= 1 or None, got {self.max_tokens}")
        if self.clamp_threshold is not None and not self.clamp_threshold >= 0:
            raise ValueError(
                f"OrcaConfig.clamp_threshold must be >= 0 or None, got {self.clamp_threshold}"
            )
        if self.use_cls_token and self.pooling == "mean":
            raise ValueError("OrcaConfig.use_cls_token needs last-token pooling, not 'mean'")
        if self.lora_r < 0 or self.patience < 0 or self.warmup_steps < 0:
            raise ValueError("OrcaConfig.lora_r, patience and warmup_steps must be >= 0")
        if not 0.0 <= self.lr_floor <= 1.0:
            raise ValueError(f"OrcaConfig.lr_floor must be in [0, 1], got {self.lr_floor}")

    # Knobs that change how a run computes, not what it computes: a resumed run may differ.
    RUNTIME_ONLY = ("gradient_checkpointing", "eval_batch_size")

    @classmethod
    def field_help(cls) -> dict[str, str]:
        """Field name -> one-line help."""
        return {f.name: f.metadata["help"] for f in dataclasses.fields(cls)}

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OrcaConfig:
        """Build from a dict, rejecting unknown keys."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown OrcaConfig fields: {', '.join(unknown)}")
        return cls(**data)

    def replace(self, **changes: Any) -> OrcaConfig:
        return dataclasses.replace(self, **changes)

    def save(self, path: str | Path) -> None:
        """Write the config as JSON, atomically."""
        write_text(path, json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> OrcaConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))
