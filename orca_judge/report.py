"""Agreement of a judge's predictions with human ratings, raw and clamped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orca_judge.data import OrcaItem
from orca_judge.judge import OrcaPrediction
from orca_judge.metrics import agreement


def agreement_report(
    predictions: Sequence[OrcaPrediction], items: Sequence[OrcaItem]
) -> dict[str, Any]:
    """rho, tau, MAE_mu, MAE_var (raw and clamped) on rated items; unrated ones are skipped."""
    rated = [(p, it) for p, it in zip(predictions, items, strict=True) if it.ratings]
    skipped = [it.id for it in items if not it.ratings]
    report: dict[str, Any] = {"n": len(rated), "skipped": len(skipped), "skipped_ids": skipped[:20]}
    if len(rated) < 2:
        return report
    human = [it.human_mean_unit for _, it in rated]
    human_var = [it.human_var_unit for _, it in rated]
    counts = [len(it.ratings) for _, it in rated]
    variances = [p.variance_unit for p, _ in rated]
    has_var = all(v is not None for v in variances)
    report["raw"] = agreement(
        [p.expected_unit for p, _ in rated],
        human,
        variances if has_var else None,
        human_var,
        counts,
    )
    report["clamped"] = agreement(
        [p.clamped_unit for p, _ in rated], human, variances if has_var else None, human_var, counts
    )
    return report
