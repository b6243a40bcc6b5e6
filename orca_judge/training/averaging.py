"""Checkpoint averaging: one judge whose weights are the mean of several judges' weights.

Meant for the evaluation checkpoints of one run (`orca train --keep-evaluations N`), whose
weights lie close together. The head and any full tensors are averaged directly. A LoRA
update is the product B·A, and the mean of products is not the product of means, so each
adapted module's mean update (1/K)·Σ B_k·A_k is computed exactly and factored back to the
adapter's rank with a truncated SVD; the share of the update that rank cannot hold is
reported (0 when the judges agree, small when they are close).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from eval_common.inputs import read_json
from eval_common.outputs import check_output_folder
from orca_judge.checkpoint import (
    CheckpointContents,
    read_checkpoint,
    read_tensors,
    recorded_settings,
    write_checkpoint,
)
from orca_judge.errors import CheckpointError
from orca_judge.training.arguments import RUNTIME_ONLY

ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"


@dataclass(frozen=True)
class AverageReport:
    """What `average_checkpoints` wrote and how much the rank truncation lost."""

    output: Path
    sources: list[str]
    lora_modules: int
    max_truncation_error: float  # ||mean update - rank-r factorisation||_F / ||mean update||_F
    median_truncation_error: float


def _comparable_config(contents: CheckpointContents) -> dict[str, Any]:
    # the clamp threshold is tuned per judge after training; the average needs its own
    runtime_only = set(RUNTIME_ONLY) | {"clamp_threshold"}
    settings = recorded_settings(contents.config, contents.training)
    return {k: v for k, v in settings.items() if k not in runtime_only}


def _check_compatible(contents: Sequence[CheckpointContents], paths: Sequence[Path]) -> None:
    """Refuse judges that are not the same model with different weights, naming what differs."""
    first, first_path = contents[0], paths[0]
    base = _comparable_config(first)
    for other, path in zip(contents[1:], paths[1:], strict=True):
        changed = sorted(k for k, v in _comparable_config(other).items() if base.get(k) != v)
        if changed:
            raise CheckpointError(
                f"{path}: settings differ from {first_path} ({', '.join(changed)}); only "
                "judges of one configuration can be averaged"
            )
        if other.backbone_fingerprint != first.backbone_fingerprint:
            raise CheckpointError(
                f"{path}: trained on other backbone weights than {first_path} (fingerprint "
                f"{other.backbone_fingerprint} vs {first.backbone_fingerprint})"
            )
        if other.pooling != first.pooling:
            raise CheckpointError(
                f"{path}: pooling {other.pooling!r}, {first_path}: {first.pooling!r}"
            )
    adapters = [c.adapter_dir for c in contents]
    if any(a is None for a in adapters) and not all(a is None for a in adapters):
        raise CheckpointError("some judges have a LoRA adapter and some do not")
    if adapters[0] is not None:
        settings = [read_json(a / ADAPTER_CONFIG, CheckpointError) for a in adapters]
        for setting, path in zip(settings[1:], paths[1:], strict=True):
            changed = sorted(
                k for k in set(setting) | set(settings[0]) if setting.get(k) != settings[0].get(k)
            )
            if changed:
                raise CheckpointError(
                    f"{path / 'adapter' / ADAPTER_CONFIG}: differs from {first_path}'s "
                    f"({', '.join(changed)})"
                )


def _mean(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.stack([t.float() for t in tensors]).mean(dim=0).to(tensors[0].dtype)


def _same_keys(states: Sequence[dict[str, torch.Tensor]], paths: Sequence[Path], what: str) -> None:
    keys = set(states[0])
    for state, path in zip(states[1:], paths[1:], strict=True):
        if set(state) != keys:
            odd = sorted(set(state) ^ keys)
            raise CheckpointError(
                f"{path}: {what} tensors differ from {paths[0]}'s (e.g. {odd[0]})"
            )
        for key in keys:
            if state[key].shape != states[0][key].shape:
                raise CheckpointError(
                    f"{path}: {what} tensor {key} has shape {tuple(state[key].shape)}, "
                    f"{paths[0]} has {tuple(states[0][key].shape)}"
                )


def average_lora(
    states: Sequence[dict[str, torch.Tensor]],
) -> tuple[dict[str, torch.Tensor], list[float]]:
    """Average PEFT LoRA states: exact mean update per module, factored back to its rank.

    Returns the averaged state and, per module, the relative Frobenius error of the rank-r
    factorisation of the mean update.
    """
    averaged: dict[str, torch.Tensor] = {}
    errors: list[float] = []
    for key in states[0]:
        if "lora_B" in key:
            continue
        if "lora_A" not in key:
            averaged[key] = _mean([s[key] for s in states])
            continue
        b_key = key.replace("lora_A", "lora_B")
        if b_key not in states[0]:
            raise CheckpointError(f"adapter tensor {key} has no matching {b_key}")
        a0, b0 = states[0][key], states[0][b_key]
        update = sum(s[b_key].double() @ s[key].double() for s in states) / len(states)
        rank = a0.shape[0]
        u, sigma, vh = torch.linalg.svd(update, full_matrices=False)
        root = sigma[:rank].sqrt()
        b_new = u[:, :rank] * root
        a_new = root[:, None] * vh[:rank]
        if b_new.shape[1] < rank:  # the module is narrower than the rank: pad with zeros
            b_new = torch.nn.functional.pad(b_new, (0, rank - b_new.shape[1]))
            a_new = torch.nn.functional.pad(a_new, (0, 0, 0, rank - a_new.shape[0]))
        norm = update.norm()
        residual = (update - b_new @ a_new).norm()
        errors.append(float(residual / norm) if norm > 0 else 0.0)
        averaged[key] = a_new.to(a0.dtype).contiguous()
        averaged[b_key] = b_new.to(b0.dtype).contiguous()
    return averaged, errors


def average_checkpoints(
    checkpoints: Sequence[str | Path], output: str | Path, *, overwrite: bool = False
) -> AverageReport:
    """Write the weight average of `checkpoints` (same settings and backbone) to `output`."""
    from peft import LoraConfig
    from transformers import AutoTokenizer

    paths = [Path(c) for c in checkpoints]
    if len(paths) < 2:
        raise ValueError(f"averaging needs at least 2 checkpoints, got {len(paths)}")
    if len({p.resolve() for p in paths}) != len(paths):
        raise ValueError("a checkpoint is named twice; each judge must count once")
    # Any non-empty folder needs --overwrite: an average never silently replaces a judge.
    output = check_output_folder(
        output,
        command="orca average",
        flag="--output",
        inputs=paths,
        overwrite=overwrite,
        is_own=lambda _: False,
    )
    contents = [read_checkpoint(p) for p in paths]
    _check_compatible(contents, paths)

    heads = [c.head for c in contents]
    _same_keys(heads, paths, "head")
    head = {k: _mean([h[k] for h in heads]) for k in heads[0]}

    adapter_config, adapter_state, errors = None, None, []
    if contents[0].adapter_dir is not None:
        states = [
            read_tensors(c.adapter_dir / ADAPTER_WEIGHTS, "LoRA adapter weights") for c in contents
        ]
        _same_keys(states, paths, "adapter")
        adapter_state, errors = average_lora(states)
        adapter_config = LoraConfig.from_pretrained(str(contents[0].adapter_dir))

    first = contents[0]
    tokenizer = AutoTokenizer.from_pretrained(str(first.tokenizer_dir))
    sources = [str(p.resolve()) for p in paths]
    write_checkpoint(
        output,
        config=first.config.replace(clamp_threshold=None),
        training=first.training,
        head=head,
        adapter_config=adapter_config,
        adapter_state=adapter_state,
        tokenizer=tokenizer,
        backbone_fingerprint=first.backbone_fingerprint or "",
        pooling=first.pooling or "last",
        metrics={
            "averaged_from": [
                {"checkpoint": src, **{k: c.metrics[k] for k in ("step", "dev") if k in c.metrics}}
                for src, c in zip(sources, contents, strict=True)
            ],
            "lora_truncation_error_max": max(errors, default=0.0),
        },
        overwrite=True,
    )
    return AverageReport(
        output=output,
        sources=sources,
        lora_modules=len(errors),
        max_truncation_error=max(errors, default=0.0),
        median_truncation_error=statistics.median(errors) if errors else 0.0,
    )
