"""Confidence intervals of the AQUA metrics: Wilson for accuracies, clip bootstrap for CA."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from aqua_tasks.data import UNANSWERABLE_TYPES
from aqua_tasks.scoring import clip_outcomes
from aqua_tasks.stats import LEVEL, bootstrap_ca_interval, wilson_interval

__all__ = ["LEVEL", "bootstrap_ca_interval", "metric_intervals", "wilson_interval"]


def _wilson_of(flags: Sequence[bool]) -> tuple[float, float]:
    return wilson_interval(sum(flags), len(flags))


def metric_intervals(
    values: Iterable[Mapping | Sequence],
    *,
    condition: Mapping[str, bool] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Intervals for every AQUA rate, from the same per-item values `summarize` reads."""
    outcomes = clip_outcomes(values, condition)
    kept = outcomes.kept
    out = {
        "acc": _wilson_of([o.correct for o in kept if o.type == "Solvable"]),
        "unparsed_rate": _wilson_of([not o.parsed for o in kept]),
    }
    for item_type in UNANSWERABLE_TYPES:
        key = item_type.lower()
        pairs = outcomes.conditioned[item_type]
        out[f"acc_{key}"] = _wilson_of([o.correct for o in kept if o.type == item_type])
        out[f"joint_{key}"] = _wilson_of((pairs.solvable_right & pairs.variant_right).tolist())
        out[f"ca_{key}"] = bootstrap_ca_interval(
            pairs.solvable_right, pairs.variant_right, n_boot=n_boot, seed=seed
        )
    return out
