"""OrcaConfig: what a judge checkpoint records and loading it needs (model, text, likelihood).

How a judge was trained (learning rate, steps, seeds, …) is apart, in
`orca_judge.training.TrainingArguments`, as PEFT keeps an adapter's config apart from the
trainer's arguments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from eval_common.inputs import read_json
from eval_common.outputs import write_text
from orca_judge.knobs import Knobs, knob

LIKELIHOODS = ("multinomial", "beta", "bernoulli")
TEMPLATES = ("reference", "paper")
POOLINGS = ("auto", "last", "mean")
DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass
class OrcaConfig(Knobs):
    """All settings of a judge; stored as JSON in every checkpoint."""

    # model
    backbone: str = knob("", "Hugging Face id or local directory of the base transformer.")
    likelihood: str = knob(
        "multinomial", "Rating likelihood: multinomial, beta or bernoulli.", choices=LIKELIHOODS
    )
    pooling: str = knob(
        "auto", "auto (last token for decoders, mean for encoders), last or mean.", choices=POOLINGS
    )
    lora_r: int = knob(
        128,
        "LoRA rank (the paper's; measured best in docs/orca_judge.md); 0 trains the head only.",
        minimum=0,
    )
    lora_alpha: int | None = knob(None, "LoRA alpha; None means alpha = r.", minimum=1)
    lora_dropout: float = knob(0.0, "LoRA dropout probability.", minimum=0, maximum=1)
    use_cls_token: bool = knob(
        False, "Append a learned token after the text and pool its hidden state (last pooling)."
    )
    lora_target_modules: list[str] | None = field(
        default=None,
        metadata={
            "help": "Module names LoRA adapts; None detects them from the architecture.",
            "items": "module names",
        },
    )
    dtype: str = knob(
        "auto",
        "Backbone dtype: auto (bf16 on capable GPUs, fp16 on older ones, fp32 on CPU and MPS), "
        "float32, bfloat16 or float16.",
        choices=DTYPES,
    )
    # input text
    template: str = knob(
        "reference", "Input string: reference (published checkpoints) or paper.", choices=TEMPLATES
    )
    use_question: bool = knob(True, "Include the question block.")
    use_rationale: bool = knob(True, "Include the rationale block.")
    use_transcript: bool = knob(False, "Include the ASR transcript block (dropped when empty).")
    max_tokens: int | None = knob(
        None,
        "Token limit; longer inputs are truncated keeping the candidate. None: the backbone's "
        "context length.",
        minimum=1,
    )
    add_special_tokens: bool | None = knob(
        None, "Add BOS/CLS/EOS tokens; None: no for decoders, yes for encoders."
    )
    # post-processing
    clamp_threshold: float | None = knob(
        None, "Clamp the mean to 0/1 when the variance is at most this.", minimum=0
    )
    clamp_margin: float = knob(
        0.125,
        "Distance from 0 or 1 (unit scale) within which clamping applies.",
        minimum=0,
        maximum=0.5,
    )
    # scoring
    eval_batch_size: int = knob(16, "Items per forward pass when evaluating or scoring.", minimum=1)

    RUNTIME_ONLY: ClassVar[tuple[str, ...]] = ("eval_batch_size",)

    def validate(self) -> None:
        """Raise ValueError naming the first invalid field."""
        super().validate()
        if self.use_cls_token and self.pooling == "mean":
            raise ValueError("OrcaConfig.use_cls_token needs last-token pooling, not 'mean'")

    def save(self, path: str | Path) -> None:
        """Write the config as JSON, atomically."""
        write_text(path, json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> OrcaConfig:
        """Read a config saved by `save` (UTF-8 JSON)."""
        return cls.from_dict(read_json(path))
