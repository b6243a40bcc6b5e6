"""Comparing two runs item by item: exact McNemar, paired (clip) bootstraps, Holm correction."""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from aqua_tasks.core.data import UNANSWERABLE_TYPES
from aqua_tasks.core.scoring import LOWER_IS_BETTER, ClipOutcomes, clip_outcomes, summarize
from aqua_tasks.core.stats import (
    BootstrapResult,
    conditional_accuracy,
    discordant_pairs,
    holm,
    mcnemar_exact_p,
    paired_bootstrap_ca,
    paired_bootstrap_mean,
)

# The statistics live in `aqua_tasks.core.stats`; their names stay importable from here.
__all__ = [
    "JUDGE_METRIC",
    "MIN_CA_CLIPS",
    "MIN_JUDGE_UNITS",
    "TESTED_METRICS",
    "BootstrapResult",
    "MetricComparison",
    "compare_judge",
    "compare_task",
    "conditional_accuracy",
    "discordant_pairs",
    "holm",
    "judge",
    "judge_metric",
    "mcnemar_exact_p",
    "paired_bootstrap_ca",
    "paired_bootstrap_mean",
]


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
) -> tuple[ClipOutcomes, ClipOutcomes]:
    """Both runs' outcomes over the items kept in both, paired by id, in id order."""
    b = {int(r["id"]): r for r in base if not r["excluded"]}
    c = {int(r["id"]): r for r in cand if not r["excluded"]}
    ids = sorted(b.keys() & c.keys())
    base_outcomes = clip_outcomes([b[i] for i in ids])
    cand_outcomes = clip_outcomes([c[i] for i in ids])
    # Same ids must mean the same clips and types, or the arrays below would not line up.
    if list(base_outcomes.own_solvable) != list(cand_outcomes.own_solvable) or any(
        base_outcomes.conditioned[t].clips != cand_outcomes.conditioned[t].clips
        for t in UNANSWERABLE_TYPES
    ):
        raise ValueError("runs give the same item ids different clips or types (same data?)")
    return base_outcomes, cand_outcomes


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
    base_items, cand_items = _paired_outcomes(base, cand)

    def values(metric: str) -> tuple[float, float]:
        return base_summary[metric], cand_summary[metric]

    clips = list(base_items.own_solvable)
    out = [
        _mcnemar(
            task,
            "acc",
            values("acc"),
            [base_items.own_solvable[c] for c in clips],
            [cand_items.own_solvable[c] for c in clips],
        )
    ]
    for item_type in UNANSWERABLE_TYPES:
        key = item_type.lower()
        b, c = base_items.conditioned[item_type], cand_items.conditioned[item_type]
        conditioned = min(int(b.solvable_right.sum()), int(c.solvable_right.sum()))
        boot = paired_bootstrap_ca(
            b.solvable_right,
            b.variant_right,
            c.solvable_right,
            c.variant_right,
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
                len(b.clips),
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
                (b.solvable_right & b.variant_right).tolist(),
                (c.solvable_right & c.variant_right).tolist(),
            )
        )
    out.append(
        _mcnemar(
            task,
            "unparsed_rate",
            values("unparsed_rate"),
            [not o.parsed for o in base_items.kept],
            [not o.parsed for o in cand_items.kept],
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
