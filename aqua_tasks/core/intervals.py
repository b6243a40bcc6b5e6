"""Uncertainty of the AQUA rates: Wilson intervals and binomial standard errors for
accuracies, clip-bootstrap intervals and standard errors for CA."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from aqua_tasks.core.data import UNANSWERABLE_TYPES
from aqua_tasks.core.scoring import ClipOutcomes, clip_outcomes
from aqua_tasks.core.stats import (
    LEVEL,
    binomial_stderr,
    bootstrap_ca_interval,
    bootstrap_ca_stderr,
    wilson_interval,
)

__all__ = [
    "LEVEL",
    "bootstrap_ca_interval",
    "metric_intervals",
    "metric_stderrs",
    "wilson_interval",
]


def _binary_flags(outcomes: ClipOutcomes) -> dict[str, list[bool]]:
    # Per rate other than CA, the 0/1 outcomes it is the mean of (as `summarize` computes it).
    kept = outcomes.kept
    flags = {
        "acc": [o.correct for o in kept if o.type == "Solvable"],
        "unparsed_rate": [not o.parsed for o in kept],
    }
    for item_type in UNANSWERABLE_TYPES:
        key = item_type.lower()
        pairs = outcomes.conditioned[item_type]
        flags[f"acc_{key}"] = [o.correct for o in kept if o.type == item_type]
        flags[f"joint_{key}"] = (pairs.solvable_right & pairs.variant_right).tolist()
    return flags


def _ca_pairs(outcomes: ClipOutcomes) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {
        f"ca_{t.lower()}": (
            outcomes.conditioned[t].solvable_right,
            outcomes.conditioned[t].variant_right,
        )
        for t in UNANSWERABLE_TYPES
    }


def metric_intervals(
    values: Iterable[Mapping | Sequence],
    *,
    condition: Mapping[str, bool] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Intervals for every AQUA rate, from the same per-item values `summarize` reads."""
    outcomes = clip_outcomes(values, condition)
    out = {m: wilson_interval(sum(f), len(f)) for m, f in _binary_flags(outcomes).items()}
    for metric, (solvable, variant) in _ca_pairs(outcomes).items():
        out[metric] = bootstrap_ca_interval(solvable, variant, n_boot=n_boot, seed=seed)
    return out


def metric_stderrs(
    values: Iterable[Mapping | Sequence],
    *,
    condition: Mapping[str, bool] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, float]:
    """Standard errors of every AQUA rate: binomial for accuracies, clip bootstrap for CA."""
    outcomes = clip_outcomes(values, condition)
    out = {m: binomial_stderr(sum(f), len(f)) for m, f in _binary_flags(outcomes).items()}
    for metric, (solvable, variant) in _ca_pairs(outcomes).items():
        out[metric] = bootstrap_ca_stderr(solvable, variant, n_boot=n_boot, seed=seed)
    return out
