"""OrcaConfig: every knob of the ORCA judge (model, text, likelihood, training) in one place."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval_common.cli import number_problem
from eval_common.inputs import read_json
from eval_common.outputs import write_text

LIKELIHOODS = ("multinomial", "beta", "bernoulli")
TEMPLATES = ("reference", "paper")
POOLINGS = ("auto", "last", "mean")
_CHOICES = {
    "likelihood": LIKELIHOODS,
    "template": TEMPLATES,
    "pooling": POOLINGS,
    "dtype": ("auto", "float32", "bfloat16", "float16"),
}
_BOOL_FIELDS = frozenset(
    {
        "use_cls_token",
        "use_question",
        "use_rationale",
        "use_transcript",
        "add_special_tokens",
        "gradient_checkpointing",
    }
)
_OPTIONAL_FIELDS = frozenset(
    {"lora_alpha", "max_tokens", "max_chars", "clamp_threshold", "add_special_tokens"}
    | {"lora_target_modules"}
)
# The allowed range of every numeric field, as eval_common.cli.number_problem takes it.
_NUMBER_RULES: dict[str, dict[str, Any]] = {
    "lora_r": {"minimum": 0},
    "lora_alpha": {"minimum": 1},
    "lora_dropout": {"minimum": 0, "maximum": 1},
    "max_tokens": {"minimum": 1},
    "max_chars": {"minimum": 1},
    "clamp_threshold": {"minimum": 0},
    "clamp_margin": {"minimum": 0, "maximum": 0.5},
    "lr": {"minimum": 0, "open_interval": True},
    "lr_floor": {"minimum": 0, "maximum": 1},
    "warmup_steps": {"minimum": 0},
    "max_steps": {"minimum": 1},
    "batch_size": {"minimum": 1},
    "grad_accum": {"minimum": 1},
    "weight_decay": {"minimum": 0},
    "grad_clip": {"minimum": 0},
    "eval_every": {"minimum": 1},
    "patience": {"minimum": 0},
    "eval_batch_size": {"minimum": 1},
    "seed": {"minimum": 0},
}
_INT_FIELDS = frozenset(
    {"lora_r", "lora_alpha", "max_tokens", "max_chars", "warmup_steps", "max_steps"}
    | {"batch_size", "grad_accum", "eval_every", "patience", "eval_batch_size", "seed"}
)


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
        # A whole float (1000.0, as some trainers' YAML writes) is the int it stands for.
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, float) and value.is_integer():
                setattr(self, name, int(value))
        self.validate()

    @classmethod
    def field_problem(cls, name: str, value: Any, label: str | None = None) -> str | None:
        """Why `value` is refused for field `name` (wrong type, out of range), or None.

        The message names the field as `label` (a flag, say), by default as `name`.
        """
        label = label or name
        if value is None and name in _OPTIONAL_FIELDS:
            return None
        if name in _CHOICES:
            allowed = _CHOICES[name]
            ok = value in allowed if isinstance(value, str) else False
            return None if ok else f"{label}={value!r}; expected one of {', '.join(allowed)}"
        if name in _BOOL_FIELDS:
            return (
                None
                if isinstance(value, bool)
                else f"{label}: expected true or false, got {value!r}"
            )
        if name == "lora_target_modules":
            ok = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
            return None if ok else f"{label}: expected a list of module names, got {value!r}"
        if name == "backbone":
            return None if isinstance(value, str) else f"{label}: expected text, got {value!r}"
        if name not in _NUMBER_RULES:
            return None
        rule = _NUMBER_RULES[name]
        whole = name in _INT_FIELDS
        if whole and isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
            kind = "a whole number" if whole else "a number"
            low = f" >= {rule['minimum']}" if "minimum" in rule and whole else ""
            none = " or null" if name in _OPTIONAL_FIELDS else ""
            return f"{label}: expected {kind}{low}{none}, got {value!r}"
        return number_problem(label, value, **rule)

    def validate(self) -> None:
        """Raise ValueError naming the first invalid field."""
        for f in dataclasses.fields(self):
            if problem := self.field_problem(f.name, getattr(self, f.name)):
                raise ValueError(f"OrcaConfig.{problem}")
        if self.use_cls_token and self.pooling == "mean":
            raise ValueError("OrcaConfig.use_cls_token needs last-token pooling, not 'mean'")

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
        """Read a config saved by `save` (UTF-8 JSON)."""
        return cls.from_dict(read_json(path))
