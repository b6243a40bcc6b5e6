"""Confidence intervals: Wilson for accuracies, seeded clip-level bootstrap for CA."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
from scipy.stats import norm

from aqua_tasks.data import UNANSWERABLE_TYPES

LEVEL = 0.95


def wilson_interval(successes: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion; (nan, nan) when n is 0."""
    if n <= 0:
        return math.nan, math.nan
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in 0..n, got {successes} of {n}")
    z = float(norm.ppf(0.5 + level / 2))
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap_ca_interval(
    solvable_correct: np.ndarray,
    variant_correct: np.ndarray,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = LEVEL,
) -> tuple[float, float]:
    """Percentile interval of CA = P(variant right | Solvable right), resampling whole clips.

    The two arrays hold one entry per clip that has both items. CA's denominator is itself
    random (the clips answered right), which is why clips, not items, are resampled.
    """
    solvable = np.asarray(solvable_correct, dtype=bool)
    variant = np.asarray(variant_correct, dtype=bool)
    if solvable.shape != variant.shape:
        raise ValueError("solvable_correct and variant_correct must have one entry per clip")
    if not solvable.any():
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(solvable), size=(n_boot, len(solvable)))
    denominators = solvable[picks].sum(axis=1)
    numerators = (solvable & variant)[picks].sum(axis=1)
    valid = denominators > 0
    ca = numerators[valid] / denominators[valid]
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(ca, [tail, 100 - tail])
    return float(low), float(high)


def metric_intervals(
    values: Iterable[Mapping],
    *,
    condition: Mapping[str, bool] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Intervals for every AQUA rate, from the same per-item values `summarize` reads."""
    rows = [r for r in values if not r["excluded"]]
    own = {r["clip"]: bool(r["correct"]) for r in rows if r["type"] == "Solvable"}
    solvable = own if condition is None else dict(condition)

    def wilson_of(flags: list[bool]) -> tuple[float, float]:
        return wilson_interval(sum(flags), len(flags))

    out = {
        "acc": wilson_of([bool(r["correct"]) for r in rows if r["type"] == "Solvable"]),
        "unparsed_rate": wilson_of([not r["parsed"] for r in rows]),
    }
    for item_type in UNANSWERABLE_TYPES:
        key = item_type.lower()
        of_type = [r for r in rows if r["type"] == item_type]
        paired = [r for r in of_type if r["clip"] in solvable]
        out[f"acc_{key}"] = wilson_of([bool(r["correct"]) for r in of_type])
        out[f"joint_{key}"] = wilson_of(
            [solvable[r["clip"]] and bool(r["correct"]) for r in paired]
        )
        out[f"ca_{key}"] = bootstrap_ca_interval(
            np.array([solvable[r["clip"]] for r in paired], dtype=bool),
            np.array([bool(r["correct"]) for r in paired], dtype=bool),
            n_boot=n_boot,
            seed=seed,
        )
    return out
