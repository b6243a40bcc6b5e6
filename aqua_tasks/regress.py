"""Comparing two runs item by item: exact McNemar, paired (clip) bootstraps, Holm correction."""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import binomtest

from aqua_tasks.data import UNANSWERABLE_TYPES
from aqua_tasks.scoring import LOWER_IS_BETTER, summarize

# Replicates are drawn in chunks so that memory stays bounded for large n_boot × clips.
_BOOT_CHUNK_CELLS = 2_000_000


def _paired(baseline: Sequence, candidate: Sequence, dtype: type) -> tuple[np.ndarray, ...]:
    base = np.asarray(baseline, dtype=dtype)
    cand = np.asarray(candidate, dtype=dtype)
    if base.ndim != 1 or base.shape != cand.shape:
        raise ValueError(
            f"baseline and candidate must be 1-d and paired item by item; got shapes "
            f"{base.shape} and {cand.shape}"
        )
    return base, cand


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
    return float(binomtest(lost, lost + gained, 0.5, alternative="two-sided").pvalue)


def conditional_accuracy(condition: Sequence[bool], correct: Sequence[bool]) -> float:
    """Mean of `correct` over the entries where `condition` holds; NaN over none."""
    cond, right = _paired(condition, correct, bool)
    n = int(cond.sum())
    return float((cond & right).sum() / n) if n else math.nan


@dataclass(frozen=True)
class BootstrapResult:
    """A paired bootstrap of a difference: observed delta, percentile CI, two-sided p."""

    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    n_boot: int
    n_valid: int


def paired_bootstrap_ca(
    base_solvable: Sequence[bool],
    base_variant: Sequence[bool],
    cand_solvable: Sequence[bool],
    cand_variant: Sequence[bool],
    *,
    n_boot: int = 5000,
    seed: int | Sequence[int] = 0,
    level: float = 0.95,
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
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    delta = conditional_accuracy(cs, cv) - conditional_accuracy(bs, bv)
    n = bs.size
    if n == 0 or math.isnan(delta):
        return BootstrapResult(delta, math.nan, math.nan, math.nan, n_boot, 0)
    rng = np.random.default_rng(seed)
    per_chunk = max(1, _BOOT_CHUNK_CELLS // n)
    deltas = []
    for start in range(0, n_boot, per_chunk):
        idx = rng.integers(0, n, size=(min(per_chunk, n_boot - start), n))
        with np.errstate(invalid="ignore", divide="ignore"):
            base_ca = (bs & bv)[idx].sum(1) / bs[idx].sum(1)
            cand_ca = (cs & cv)[idx].sum(1) / cs[idx].sum(1)
        deltas.append(cand_ca - base_ca)
    return _bootstrap_result(delta, np.concatenate(deltas), n_boot, level)


def _bootstrap_result(delta: float, boot: np.ndarray, n_boot: int, level: float) -> BootstrapResult:
    boot = boot[~np.isnan(boot)]
    if boot.size == 0:
        return BootstrapResult(delta, math.nan, math.nan, math.nan, n_boot, 0)
    tail = (1 - level) / 2
    low, high = np.quantile(boot, [tail, 1 - tail])
    # Two-sided percentile p-value; +1 terms keep it away from an impossible exact 0.
    below = (np.sum(boot <= 0) + 1) / (boot.size + 1)
    above = (np.sum(boot >= 0) + 1) / (boot.size + 1)
    p = min(1.0, 2 * min(below, above))
    return BootstrapResult(delta, float(low), float(high), float(p), n_boot, int(boot.size))


def paired_bootstrap_mean(
    baseline: Sequence[float],
    candidate: Sequence[float],
    groups: Sequence[object] | None = None,
    *,
    n_boot: int = 5000,
    seed: int | Sequence[int] = 0,
    level: float = 0.95,
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
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if base.size == 0:
        return BootstrapResult(math.nan, math.nan, math.nan, math.nan, n_boot, 0)
    diff = cand - base
    if groups is None:
        sums, counts = diff, np.ones_like(diff)
    else:
        _, unit = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)
        sums, counts = np.bincount(unit, weights=diff), np.bincount(unit).astype(float)
    n = sums.size
    rng = np.random.default_rng(seed)
    per_chunk = max(1, _BOOT_CHUNK_CELLS // n)
    deltas = []
    for start in range(0, n_boot, per_chunk):
        idx = rng.integers(0, n, size=(min(per_chunk, n_boot - start), n))
        deltas.append(sums[idx].sum(1) / counts[idx].sum(1))
    return _bootstrap_result(float(diff.mean()), np.concatenate(deltas), n_boot, level)


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


# Metrics compared per task, and the test each gets (CA's conditioning sets differ between
# runs, so it is bootstrapped over clips; the others are paired binary outcomes).
TESTED_METRICS: tuple[str, ...] = (
    "acc",
    "ca_aad",
    "ca_iasd",
    "ca_iaqd",
    "joint_aad",
    "joint_iasd",
    "joint_iaqd",
    "unparsed_rate",
)
# With very few conditioning clips every resample gives the same CA difference and the
# bootstrap p-value becomes meaninglessly small; such CAs are shown, not tested.
MIN_CA_CLIPS = 10


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one task in both runs, with its paired test and the verdict."""

    task: str
    metric: str
    test: str
    baseline: float
    candidate: float
    n: int
    p_value: float
    lost: int | None = None
    gained: int | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    note: str = ""
    p_holm: float = math.nan
    regression: bool = False
    improvement: bool = False

    @property
    def delta_points(self) -> float:
        """Candidate minus baseline, in percentage points."""
        return (self.candidate - self.baseline) * 100

    @property
    def drop_points(self) -> float:
        """How much worse the candidate is, in points (negative: better)."""
        return self.delta_points if self.metric in LOWER_IS_BETTER else -self.delta_points


def _paired_outcomes(
    base: Sequence[Mapping], cand: Sequence[Mapping]
) -> tuple[dict[int, tuple[Mapping, Mapping]], dict[str, tuple[bool, bool]]]:
    b = {int(r["id"]): r for r in base if not r["excluded"]}
    c = {int(r["id"]): r for r in cand if not r["excluded"]}
    pairs = {i: (b[i], c[i]) for i in sorted(b.keys() & c.keys())}
    solvable = {
        rb["clip"]: (bool(rb["correct"]), bool(rc["correct"]))
        for rb, rc in pairs.values()
        if rb["type"] == "Solvable"
    }
    return pairs, solvable


def _mcnemar(
    task: str, metric: str, values: tuple[float, float], base: list[bool], cand: list[bool]
) -> MetricComparison:
    lost, gained = discordant_pairs(base, cand)
    return MetricComparison(
        task, metric, "mcnemar", *values, len(base), mcnemar_exact_p(lost, gained), lost, gained
    )


def compare_task(
    task: str,
    base: Sequence[Mapping],
    cand: Sequence[Mapping],
    *,
    n_boot: int,
    seed: int,
    min_ca_clips: int = MIN_CA_CLIPS,
) -> list[MetricComparison]:
    """Paired tests of every tested metric of one task, from both runs' per-item values.

    Items are paired by id (see `scoring.metric_value`); the metric values are `summarize`'s,
    so they equal the runs' own figures. A CA conditioned on fewer than `min_ca_clips` clips
    in either run is reported but not tested.
    """
    base_summary, cand_summary = summarize(base), summarize(cand)
    pairs, solvable = _paired_outcomes(base, cand)

    def values(metric: str) -> tuple[float, float]:
        return base_summary[metric], cand_summary[metric]

    out = [
        _mcnemar(
            task,
            "acc",
            values("acc"),
            [b for b, _ in solvable.values()],
            [c for _, c in solvable.values()],
        )
    ]
    for item_type in UNANSWERABLE_TYPES:
        key = item_type.lower()
        rows = [
            (solvable[rb["clip"]], bool(rb["correct"]), bool(rc["correct"]))
            for rb, rc in pairs.values()
            if rb["type"] == item_type and rb["clip"] in solvable
        ]
        conditioned = min(sum(s[0] for s, _, _ in rows), sum(s[1] for s, _, _ in rows))
        boot = paired_bootstrap_ca(
            [s[0] for s, _, _ in rows],
            [b for _, b, _ in rows],
            [s[1] for s, _, _ in rows],
            [c for _, _, c in rows],
            n_boot=n_boot,
            # Each metric gets its own stream, independent of which other metrics are compared.
            seed=[seed, zlib.crc32(f"{task}|ca_{key}".encode())],
        )
        out.append(
            MetricComparison(
                task,
                f"ca_{key}",
                "bootstrap",
                *values(f"ca_{key}"),
                len(rows),
                boot.p_value if conditioned >= min_ca_clips else math.nan,
                ci_low=boot.ci_low,
                ci_high=boot.ci_high,
                note="" if conditioned >= min_ca_clips else f"untested: < {min_ca_clips} clips",
            )
        )
        out.append(
            _mcnemar(
                task,
                f"joint_{key}",
                values(f"joint_{key}"),
                [s[0] and b for s, b, _ in rows],
                [s[1] and c for s, _, c in rows],
            )
        )
    out.append(
        _mcnemar(
            task,
            "unparsed_rate",
            values("unparsed_rate"),
            [not rb["parsed"] for rb, _ in pairs.values()],
            [not rc["parsed"] for _, rc in pairs.values()],
        )
    )
    order = {m: k for k, m in enumerate(TESTED_METRICS)}
    return sorted(out, key=lambda m: order[m.metric])


JUDGE_METRIC = "orca"
# As for CA: with very few items (or clips) the bootstrap p-value is not to be trusted.
MIN_JUDGE_UNITS = 10


def judge_metric(filter_name: str) -> str:
    """The metric name of a judge-score comparison: lm-eval's `orca,<filter>`."""
    return f"{JUDGE_METRIC},{filter_name}"


def compare_judge(
    task: str,
    filter_name: str,
    base: Mapping[str, float],
    cand: Mapping[str, float],
    groups: Mapping[str, str] | None = None,
    *,
    n_boot: int,
    seed: int,
    min_units: int = MIN_JUDGE_UNITS,
) -> MetricComparison:
    """Paired bootstrap of the mean ORCA judge score of one task and filter.

    `base` and `cand` map item keys to the judge's per-item score (the same keys); with
    `groups` (item key -> clip, for AQUA items) clips are resampled instead of items. Scores
    are on [0, 1], so deltas are in points like the accuracy metrics'. Fewer than
    `min_units` items (clips) are shown but not tested.
    """
    if base.keys() != cand.keys():
        raise ValueError(f"{task}: judge scores must cover the same items in both runs")
    keys = sorted(base)
    metric = judge_metric(filter_name)
    boot = paired_bootstrap_mean(
        [base[k] for k in keys],
        [cand[k] for k in keys],
        None if groups is None else [groups[k] for k in keys],
        n_boot=n_boot,
        seed=[seed, zlib.crc32(f"{task}|{metric}".encode())],
    )
    unit = "item" if groups is None else "clip"
    units = len(keys) if groups is None else len({groups[k] for k in keys})
    tested = units >= min_units
    return MetricComparison(
        task,
        metric,
        f"{unit}_bootstrap",
        float(np.mean([base[k] for k in keys])) if keys else math.nan,
        float(np.mean([cand[k] for k in keys])) if keys else math.nan,
        len(keys),
        boot.p_value if tested else math.nan,
        ci_low=boot.ci_low,
        ci_high=boot.ci_high,
        note="" if tested else f"untested: < {min_units} {unit}s",
    )


def judge(
    comparisons: Sequence[MetricComparison], *, max_drop: float, alpha: float
) -> list[MetricComparison]:
    """Holm-adjust all p-values together; a regression drops > max_drop points, significantly."""
    if max_drop < 0:
        raise ValueError(f"max_drop must be >= 0 points, got {max_drop}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    adjusted = holm([c.p_value for c in comparisons])
    judged = []
    for c, p in zip(comparisons, adjusted, strict=True):
        significant = not math.isnan(p) and p < alpha
        judged.append(
            replace(
                c,
                p_holm=p,
                regression=significant and c.drop_points > max_drop,
                improvement=significant and -c.drop_points > max_drop,
            )
        )
    return judged
