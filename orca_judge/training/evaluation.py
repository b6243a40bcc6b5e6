"""Dev evaluation during training, and the clamp threshold tuned on the best model's predictions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from orca_judge import likelihoods
from orca_judge.checkpoint import update_config, update_metrics
from orca_judge.config import OrcaConfig
from orca_judge.data import OrcaItem
from orca_judge.judge import batched_logits
from orca_judge.metrics import agreement, tune_clamp_threshold
from orca_judge.model import OrcaModel
from orca_judge.processes import Processes


def evaluate(
    model: OrcaModel,
    cfg: OrcaConfig,
    items: Sequence[OrcaItem],
    encoded,
    pad_id: int,
    device: torch.device,
    *,
    processes: Processes | None = None,
) -> tuple[dict[str, float], list[float], list[float | None]]:
    """Dev metrics plus the predicted means and variances (unit scale), on every process."""
    logits = batched_logits(
        model,
        encoded,
        pad_id=pad_id,
        batch_size=cfg.eval_batch_size,
        device=device,
        processes=processes,
    )
    mean, var = likelihoods.moments(cfg.likelihood, logits)
    means = mean.tolist()
    variances = var.tolist() if var is not None else [None] * len(means)
    if not torch.isfinite(logits).all():
        raise FloatingPointError("the judge produced NaN or infinite outputs on the dev set")
    metrics = agreement(
        means,
        [it.human_mean_unit for it in items],
        variances,
        [it.human_var_unit for it in items],
        [len(it.ratings) for it in items],
    )
    return metrics, means, variances


def finalize(
    output: Path,
    cfg: OrcaConfig,
    best_dev: dict[str, Any],
    dev_items: Sequence[OrcaItem],
    info: dict[str, Any],
) -> dict[str, Any]:
    """Tune the clamp threshold on the best model's dev predictions; store it in the checkpoint."""
    from orca_judge.likelihoods import clamp_mean

    means, variances = best_dev["means"], best_dev["variances"]
    human = [it.human_mean_unit for it in dev_items]
    threshold = tune_clamp_threshold(means, variances, human, cfg.clamp_margin)
    clamped = [
        clamp_mean(m, v, threshold, cfg.clamp_margin) for m, v in zip(means, variances, strict=True)
    ]
    update_config(output, clamp_threshold=threshold)
    metrics = {
        **info,
        "dev": best_dev["metrics"],
        "clamp_threshold": threshold,
        "dev_clamped": agreement(clamped, human),
    }
    return update_metrics(output, metrics, replace=True)
