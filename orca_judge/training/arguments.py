"""TrainingArguments: how a judge is trained (optimiser, schedule, batches, seed, stopping).

Apart from `OrcaConfig`, which is what the checkpoint records for loading; a trained
checkpoint keeps these beside it in `training_args.json`, and a run's resume state holds
both as one mapping (`run_settings`), so a resume with changed settings is refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from orca_judge.config import OrcaConfig
from orca_judge.knobs import Knobs, knob
from orca_judge.processes import RECORD_FIELDS

# bfloat16 only: float16 autocast needs a gradient scaler to train without underflow.
AUTOCAST_DTYPES = ("off", "bfloat16")
SELECTIONS = ("best", "last")


@dataclass
class TrainingArguments(Knobs):
    """Every knob of a training run; one curriculum stage has its own."""

    max_chars: int | None = knob(
        1000, "Training filter: drop items whose text exceeds this; None keeps all.", minimum=1
    )
    lr: float = knob(2e-4, "Peak learning rate.", minimum=0, open_interval=True)
    lr_floor: float = knob(
        0.1, "Final learning rate as a fraction of the peak.", minimum=0, maximum=1
    )
    warmup_steps: int = knob(100, "Linear warmup steps (optimiser steps).", minimum=0)
    max_steps: int = knob(1000, "Optimiser steps in total.", minimum=1)
    batch_size: int = knob(
        8, "Items per forward pass (over all processes: each takes its share).", minimum=1
    )
    grad_accum: int = knob(
        2,
        "Forward passes per optimiser step (effective batch = batch_size x grad_accum).",
        minimum=1,
    )
    weight_decay: float = knob(0.0, "AdamW weight decay.", minimum=0)
    grad_clip: float = knob(5.0, "Gradient-norm clip; 0 disables.", minimum=0)
    eval_every: int = knob(50, "Evaluate on dev every this many optimiser steps.", minimum=1)
    patience: int = knob(
        5, "Stop after this many evaluations without a better dev Spearman rho.", minimum=0
    )
    select: str = knob(
        "best",
        "Which evaluated checkpoint the run writes: best (the highest dev Spearman rho) or "
        "last (the final evaluation's), for a short stage that teaches what the dev ratings "
        "do not measure, such as abstentions, where the best dev rho is the stage's start.",
        choices=SELECTIONS,
    )
    seed: int = knob(0, "Seed for initialisation and data order.", minimum=0)
    gradient_checkpointing: bool = knob(
        True,
        "Training: recompute each layer's activations in the backward pass instead of keeping "
        "them (about half the peak memory for about a third more time; results unchanged).",
    )

    autocast: str = knob(
        "off",
        "Training: run the backbone under torch.autocast in this dtype (bfloat16: about twice "
        "as fast on GPUs and on CPUs with native bf16; weights, optimiser state, head and loss "
        "stay in their own dtype); off computes in the backbone's dtype.",
        choices=AUTOCAST_DTYPES,
    )

    RUNTIME_ONLY: ClassVar[tuple[str, ...]] = ("gradient_checkpointing",)

    def autocast_context(self, device: Any) -> contextlib.AbstractContextManager:
        """The context a forward pass of this run computes under (a no-op when off)."""
        import torch

        if self.autocast == "off":
            return contextlib.nullcontext()
        return torch.autocast(device.type, dtype=getattr(torch, self.autocast))


# Fields that change how a run computes, not what: a resume may change them (and the number
# of processes, which a checkpoint's training record adds), and averaging ignores them.
RUNTIME_ONLY = OrcaConfig.RUNTIME_ONLY + TrainingArguments.RUNTIME_ONLY + RECORD_FIELDS


def run_settings(config: OrcaConfig, training: TrainingArguments) -> dict[str, Any]:
    """The judge's config and the training arguments as one mapping (what a run records)."""
    return {**config.to_dict(), **training.to_dict()}


def split_settings(settings: Mapping[str, Any]) -> tuple[OrcaConfig, TrainingArguments]:
    """(OrcaConfig, TrainingArguments) from one mapping of both's fields (flat, as YAML has them).

    ValueError naming an unknown key or the first invalid field.
    """
    judge_fields = set(OrcaConfig.field_names())
    training_fields = set(TrainingArguments.field_names())
    unknown = sorted(set(settings) - judge_fields - training_fields)
    if unknown:
        raise ValueError(f"unknown OrcaConfig or TrainingArguments fields: {', '.join(unknown)}")
    config = OrcaConfig(**{k: v for k, v in settings.items() if k in judge_fields})
    training = TrainingArguments(**{k: v for k, v in settings.items() if k in training_fields})
    return config, training


def setting_problem(name: str, value: Any, label: str | None = None) -> str | None:
    """Why `value` is refused for the OrcaConfig or TrainingArguments field `name`, or None."""
    owner = OrcaConfig if name in OrcaConfig.field_names() else TrainingArguments
    return owner.field_problem(name, value, label)
