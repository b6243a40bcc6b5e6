"""Statistics on paired binary outcomes: Wilson, clip-level bootstrap, exact McNemar, Holm.

Pure numpy/scipy (scipy.stats is imported where it is needed: it is slow to import); nothing
here knows about AQUA items. Callers line their outcomes up one entry per unit (clip or item)
and pass arrays in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

LEVEL = 0.95
# Replicates are drawn in chunks so that memory stays bounded for large n_boot × units.
_BOOT_CHUNK_CELLS = 2_000_000

Seed = int | Sequence[int]


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")


def _check_n_boot(n_boot: int) -> None:
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")


def wilson_interval(successes: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion, within [0, 1]; (nan, nan) when n is 0."""
    if n <= 0:
        return math.nan, math.nan
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in 0..n, got {successes} of {n}")
    _check_level(level)
    # The closed form (scipy's binomtest(...).proportion_ci(method="wilson") gives the same to
    # float rounding): computed here, because importing scipy.stats costs ≈ 1 s per process.
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p, z2 = successes / n, z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # At none or all successes a bound is exactly 0 or 1; the float form is only close to it.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def binomial_stderr(successes: int, n: int) -> float:
    """Standard error of a proportion, sqrt(p(1 - p) / (n - 1)) like lm-eval's; NaN for n < 2."""
    if n < 2:
        return math.nan
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in 0..n, got {successes} of {n}")
    p = successes / n
    return math.sqrt(p * (1 - p) / (n - 1))


def percentile_interval(replicates: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Central percentile interval of bootstrap replicates (linear interpolation)."""
    _check_level(level)
    tail = (1 - level) / 2
    low, high = np.quantile(np.asarray(replicates, dtype=float), [tail, 1 - tail])
    return float(low), float(high)


def resample_totals(columns: np.ndarray, *, n_boot: int, seed: Seed = 0) -> np.ndarray:
    """Column totals of `n_boot` resamples, with replacement, of the rows (one row per unit).

    The one bootstrap engine: every statistic bootstrapped here (conditional accuracy, its
    paired difference, a mean item difference over clips) is a ratio of per-unit totals, so
    resampling units and summing their columns is all a replicate needs. Returns an
    (n_boot, n_columns) array; the draws depend only on `seed`, n_boot and the row count.
    """
    _check_n_boot(n_boot)
    table = np.asarray(columns, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0:
        raise ValueError(f"columns must be a non-empty (units, columns) table, got {table.shape}")
    n = table.shape[0]
    rng = np.random.default_rng(seed)
    per_chunk = max(1, _BOOT_CHUNK_CELLS // n)
    totals = np.empty((n_boot, table.shape[1]))
    for start in range(0, n_boot, per_chunk):
        stop = min(n_boot, start + per_chunk)
        picks = rng.integers(0, n, size=(stop - start, n))
        for j in range(table.shape[1]):
            totals[start:stop, j] = table[:, j][picks].sum(axis=1)
    return totals


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return numerator / denominator


def _paired(baseline: Sequence, candidate: Sequence, dtype: type) -> tuple[np.ndarray, ...]:
    base = np.asarray(baseline, dtype=dtype)
    cand = np.asarray(candidate, dtype=dtype)
    if base.ndim != 1 or base.shape != cand.shape:
        raise ValueError(
            f"baseline and candidate must be 1-d and paired item by item; got shapes "
            f"{base.shape} and {cand.shape}"
        )
    return base, cand


def conditional_accuracy(condition: Sequence[bool], correct: Sequence[bool]) -> float:
    """Mean of `correct` over the entries where `condition` holds; NaN over none."""
    cond, right = _paired(condition, correct, bool)
    n = int(cond.sum())
    return float((cond & right).sum() / n) if n else math.nan


def ca_replicates(
    solvable_correct: Sequence[bool],
    variant_correct: Sequence[bool],
    *,
    n_boot: int,
    seed: Seed = 0,
) -> np.ndarray:
    """Defined clip-bootstrap replicates of CA = P(variant right | Solvable right).

    The two arrays hold one entry per clip that has both items. CA's denominator is itself
    random (the clips answered right), which is why clips, not items, are resampled;
    replicates that drew no clip answered right are undefined and left out.
    """
    solvable = np.asarray(solvable_correct, dtype=bool)
    variant = np.asarray(variant_correct, dtype=bool)
    if solvable.ndim != 1 or solvable.shape != variant.shape:
        raise ValueError("solvable_correct and variant_correct must have one entry per clip")
    if not solvable.any():
        return np.empty(0)
    totals = resample_totals(
        np.column_stack([solvable, solvable & variant]), n_boot=n_boot, seed=seed
    )
    valid = totals[:, 0] > 0
    return totals[valid, 1] / totals[valid, 0]


def bootstrap_ca_interval(
    solvable_correct: Sequence[bool],
    variant_correct: Sequence[bool],
    *,
    n_boot: int = 2000,
    seed: Seed = 0,
    level: float = LEVEL,
) -> tuple[float, float]:
    """Percentile interval of CA, resampling whole clips (see `ca_replicates`)."""
    boot = ca_replicates(solvable_correct, variant_correct, n_boot=n_boot, seed=seed)
    return percentile_interval(boot, level) if boot.size else (math.nan, math.nan)


def bootstrap_ca_stderr(
    solvable_correct: Sequence[bool],
    variant_correct: Sequence[bool],
    *,
    n_boot: int = 1000,
    seed: Seed = 0,
) -> float:
    """Standard error of CA: the standard deviation of its clip-bootstrap replicates.

    NaN when fewer than two replicates are defined (e.g. no Solvable item right).
    """
    boot = ca_replicates(solvable_correct, variant_correct, n_boot=n_boot, seed=seed)
    return float(np.std(boot, ddof=1)) if boot.size >= 2 else math.nan


@dataclass(frozen=True)
class BootstrapResult:
    """A paired bootstrap of a difference: observed delta, percentile CI, two-sided p."""

    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    n_boot: int
    n_valid: int


def bootstrap_result(
    delta: float, replicates: np.ndarray, n_boot: int, level: float = LEVEL
) -> BootstrapResult:
    """Interval and two-sided p-value of a difference from its replicates (NaNs dropped)."""
    boot = np.asarray(replicates, dtype=float)
    boot = boot[~np.isnan(boot)]
    if boot.size == 0:
        return BootstrapResult(delta, math.nan, math.nan, math.nan, n_boot, 0)
    low, high = percentile_interval(boot, level)
    # Two-sided percentile p-value; +1 terms keep it away from an impossible exact 0.
    below = (np.sum(boot <= 0) + 1) / (boot.size + 1)
    above = (np.sum(boot >= 0) + 1) / (boot.size + 1)
    p = min(1.0, 2 * min(below, above))
    return BootstrapResult(delta, low, high, float(p), n_boot, int(boot.size))


def paired_bootstrap_ca(
    base_solvable: Sequence[bool],
    base_variant: Sequence[bool],
    cand_solvable: Sequence[bool],
    cand_variant: Sequence[bool],
    *,
    n_boot: int = 5000,
    seed: Seed = 0,
    level: float = LEVEL,
) -> BootstrapResult:
    """Paired clip-level bootstrap of CA(candidate) − CA(baseline).

    Index i of every array is the same clip. Each replicate resamples clips with replacement
    and recomputes both CAs on that resample, so their differing conditioning sets are
    handled; replicates where either CA is undefined are dropped (counted in n_valid).
    """
    bs, bv = _paired(base_solvable, base_variant, bool)
    cs, cv = _paired(cand_solvable, cand_variant, bool)
    if bs.shape != cs.shape:
        raise ValueError(f"runs must cover the same clips; got {bs.size} and {cs.size}")
    _check_n_boot(n_boot)
    _check_level(level)
    delta = conditional_accuracy(cs, cv) - conditional_accuracy(bs, bv)
    if bs.size == 0 or math.isnan(delta):
        return BootstrapResult(delta, math.nan, math.nan, math.nan, n_boot, 0)
    totals = resample_totals(np.column_stack([bs, bs & bv, cs, cs & cv]), n_boot=n_boot, seed=seed)
    boot = _ratio(totals[:, 3], totals[:, 2]) - _ratio(totals[:, 1], totals[:, 0])
    return bootstrap_result(delta, boot, n_boot, level)


def paired_bootstrap_mean(
    baseline: Sequence[float],
    candidate: Sequence[float],
    groups: Sequence[object] | None = None,
    *,
    n_boot: int = 5000,
    seed: Seed = 0,
    level: float = LEVEL,
) -> BootstrapResult:
    """Paired bootstrap of mean(candidate) − mean(baseline), e.g. of ORCA judge scores.

    Index i of both arrays is the same item. Without `groups` items are resampled; with
    them (e.g. each AQUA item's clip) whole groups are, so items that share a clip move
    together, and each replicate's delta is the mean item difference over the drawn groups.
    """
    base, cand = _paired(baseline, candidate, float)
    if not (np.isfinite(base).all() and np.isfinite(cand).all()):
        raise ValueError("scores must be finite numbers")
    if groups is not None and len(groups) != base.size:
        raise ValueError(f"got {len(groups)} groups for {base.size} items")
    _check_n_boot(n_boot)
    _check_level(level)
    if base.size == 0:
        return BootstrapResult(math.nan, math.nan, math.nan, math.nan, n_boot, 0)
    diff = cand - base
    if groups is None:
        sums, counts = diff, np.ones_like(diff)
    else:
        _, unit = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)
        sums, counts = np.bincount(unit, weights=diff), np.bincount(unit).astype(float)
    totals = resample_totals(np.column_stack([sums, counts]), n_boot=n_boot, seed=seed)
    return bootstrap_result(float(diff.mean()), totals[:, 0] / totals[:, 1], n_boot, level)


def discordant_pairs(baseline: Sequence[bool], candidate: Sequence[bool]) -> tuple[int, int]:
    """(lost, gained): items right in the baseline only, and right in the candidate only."""
    base, cand = _paired(baseline, candidate, bool)
    return int(np.sum(base & ~cand)), int(np.sum(~base & cand))


def mcnemar_exact_p(lost: int, gained: int) -> float:
    """Exact two-sided McNemar p-value from the two discordant counts (1.0 when both are 0)."""
    if lost < 0 or gained < 0:
        raise ValueError(f"discordant counts must be >= 0, got {lost} and {gained}")
    if lost + gained == 0:
        return 1.0
    from scipy.stats import binomtest  # here: scipy.stats takes ≈ 1 s to import

    return float(binomtest(lost, lost + gained, 0.5, alternative="two-sided").pvalue)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in input order; NaN entries stay NaN, not counted."""
    ps = [float(p) for p in p_values]
    for p in ps:
        if not math.isnan(p) and not 0 <= p <= 1:
            raise ValueError(f"p-values must lie in [0, 1], got {p}")
    order = sorted((p, i) for i, p in enumerate(ps) if not math.isnan(p))
    m = len(order)
    adjusted = [math.nan] * len(ps)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
