"""The paired comparison of two comparable runs: every metric tested, and its summary.

Every tested metric and ORCA judge score is compared with the tests in
`aqua_tasks.gate.paired`; `headline`, `markdown_summary` and `comparison_record` say the
result on one line, for a CI job page and as JSON.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from aqua_tasks.gate.comparability import ComparedRun
from aqua_tasks.gate.paired import (
    JUDGE_METRIC,
    MIN_JUDGE_UNITS,
    MetricComparison,
    compare_judge,
    compare_task,
)
from aqua_tasks.runs import RunItem, iter_tasks, score_task
from aqua_tasks.runs.open_ended import is_open_item, open_task_records
from eval_common.cli import progress as progress_bar

EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE = 0, 1, 2
METRIC_NAMES = {
    "acc": "Ori (acc)",
    "ca_aad": "CA AAD",
    "ca_iasd": "CA IASD",
    "ca_iaqd": "CA IAQD",
    "joint_aad": "joint AAD",
    "joint_iasd": "joint IASD",
    "joint_iaqd": "joint IAQD",
    "unparsed_rate": "unparsed",
}
SCORE_CHUNK = 500


def _values(replies: list[RunItem], progress: Any) -> list[dict]:
    # Scored by the one pipeline, a chunk at a time so that the bar moves on a large task.
    out = []
    for start in range(0, len(replies), SCORE_CHUNK):
        chunk = replies[start : start + SCORE_CHUNK]
        out.extend(score_task(chunk).values)
        progress.update(len(chunk))
    return out


def _judge_comparison(
    base: ComparedRun,
    cand: ComparedRun,
    key: tuple[str, str],
    *,
    n_boot: int,
    seed: int,
    min_units: int,
) -> MetricComparison:
    task, filter_name = key
    b, c = base.judges[key].by_key(), cand.judges[key].by_key()
    # AQUA items are resampled by clip, as the four items of a clip are not independent.
    clips = {str(r.item.id): r.item.clip_key for r in base.replies if r.task == task}
    groups = clips if clips and clips.keys() >= b.keys() else None
    return compare_judge(
        task,
        filter_name,
        {k: float(r["orca"]) for k, r in b.items()},
        {k: float(r["orca"]) for k, r in c.items()},
        groups,
        n_boot=n_boot,
        seed=seed,
        min_units=min_units,
    )


# The open-ended figures the gate tests: Ori, CA and joint of IAQD (AAD/IASD have no open form).
OPEN_TESTED = frozenset({"acc", "ca_iaqd", "joint_iaqd"})


def _open_comparisons(
    base: ComparedRun, cand: ComparedRun, task: str, *, n_boot: int, seed: int, min_ca_clips: int
) -> list[MetricComparison]:
    """An open task's paired tests: as the judge decides, then as the rules do ('<task> rules')."""
    key = (task, "none")
    if key not in base.judges or key not in cand.judges:
        return []

    def task_items(run: ComparedRun) -> list:
        found = [i for i in run.samples.values() if i.task == task and is_open_item(i)]
        return sorted(found, key=lambda i: int(i.doc["id"]))

    b_items, c_items = task_items(base), task_items(cand)
    if not b_items or not c_items:
        return []
    b_judged, b_rules = open_task_records(b_items, base.judges[key])
    c_judged, c_rules = open_task_records(c_items, cand.judges[key])
    out = []
    for name, b, c in ((task, b_judged, c_judged), (f"{task} rules", b_rules, c_rules)):
        tested = compare_task(name, b, c, n_boot=n_boot, seed=seed, min_ca_clips=min_ca_clips)
        out += [m for m in tested if m.metric in OPEN_TESTED]
    return out


def compare_runs(
    base: ComparedRun,
    cand: ComparedRun,
    *,
    n_boot: int,
    seed: int,
    min_ca_clips: int,
    min_judge_items: int = MIN_JUDGE_UNITS,
    progress: bool = True,
) -> list[MetricComparison]:
    """Unadjusted comparisons of every tested metric and judge score, in task order."""
    base_tasks = dict(iter_tasks(base.replies))
    cand_tasks = dict(iter_tasks(cand.replies))
    comparisons: list[MetricComparison] = []
    total = len(base.replies) + len(cand.replies)
    with progress_bar(None, "scoring", progress, total=total) as bar:
        for task in sorted(set(base_tasks) | {t for t, _ in base.judges}):
            if task in base_tasks:
                comparisons += compare_task(
                    task,
                    _values(base_tasks[task], bar),
                    _values(cand_tasks[task], bar),
                    n_boot=n_boot,
                    seed=seed,
                    min_ca_clips=min_ca_clips,
                )
            comparisons += _open_comparisons(
                base, cand, task, n_boot=n_boot, seed=seed, min_ca_clips=min_ca_clips
            )
            comparisons += [
                _judge_comparison(
                    base, cand, key, n_boot=n_boot, seed=seed, min_units=min_judge_items
                )
                for key in sorted(base.judges)
                if key[0] == task
            ]
    return comparisons


def metric_name(metric: str) -> str:
    """How a compared metric is named in the summary."""
    if metric.startswith(f"{JUDGE_METRIC},"):
        filter_name = metric.partition(",")[2]
        return "ORCA judge" + ("" if filter_name == "none" else f" [{filter_name}]")
    return METRIC_NAMES[metric]


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _p(value: float) -> str:
    return "—" if math.isnan(value) else (f"{value:.3f}" if value >= 0.001 else f"{value:.1e}")


def _verdict(c: MetricComparison) -> str:
    if c.regression:
        return "**REGRESSION**"
    if c.improvement:
        return "improved"
    return "—" if math.isnan(c.p_holm) else "ok"


def _test_text(c: MetricComparison) -> str:
    if c.note:
        return c.note
    if c.test == "mcnemar":
        return f"McNemar −{c.lost}/+{c.gained}"
    unit = c.test.removesuffix("_bootstrap") + " " if c.test.endswith("_bootstrap") else ""
    return f"{unit}bootstrap CI [{_num(_scale(c.ci_low))}, {_num(_scale(c.ci_high))}]"


def _scale(value: float | None) -> float | None:
    return None if value is None else value * 100


def headline(
    comparisons: Sequence[MetricComparison], reason: str | None, max_drop: float, alpha: float
) -> str:
    """The one-line result."""
    if reason is not None:
        return f"not comparable: {reason}"
    bad = [c for c in comparisons if c.regression]
    if bad:
        worst = max(bad, key=lambda c: c.drop_points)
        return (
            f"REGRESSION in {len(bad)} of {len(comparisons)} comparisons; worst: {worst.task} "
            f"{metric_name(worst.metric)} {worst.delta_points:+.1f} points "
            f"(Holm p = {_p(worst.p_holm)})"
        )
    return (
        f"no regression ({len(comparisons)} comparisons; a drop counts above {max_drop:g} "
        f"points at Holm-adjusted p < {alpha:g})"
    )


def markdown_summary(
    base: ComparedRun,
    cand: ComparedRun,
    comparisons: Sequence[MetricComparison],
    reason: str | None,
    *,
    max_drop: float,
    alpha: float,
    n_boot: int,
    seed: int,
) -> str:
    """A Markdown summary for a CI job page (e.g. GitHub's $GITHUB_STEP_SUMMARY)."""
    if reason is not None:
        status = "⚠️ not comparable"
    elif any(c.regression for c in comparisons):
        status = "❌ regression"
    else:
        status = "✅ no regression"
    lines = [
        f"## AQUA-Bench regression check: {status}",
        "",
        headline(comparisons, reason, max_drop, alpha),
        "",
    ]
    for side, run in (("baseline", base), ("candidate", cand)):
        lines.append(f"- {side}: `{run.path}` ({run.label}; {run.harness})")
        lines += [f"  - {s.task}: `{s.describe()}`" for s in run.sources]
    judged = any(c.metric.startswith(f"{JUDGE_METRIC},") for c in comparisons)
    aqua = any(not c.metric.startswith(f"{JUDGE_METRIC},") for c in comparisons)
    tests, legend = [], ["Values in %."]
    if aqua:
        tests.append(
            "exact McNemar on paired items (Ori, joint, unparsed); paired clip bootstrap for CA"
        )
        legend.append(
            "Ori = Solvable accuracy; CA = conditional accuracy (each run conditions on its own "
            "Solvable answers); joint = Solvable and variant both right; unparsed: lower is "
            "better. McNemar −lost/+gained counts the discordant items."
        )
    if judged:
        tests.append(
            "paired bootstrap of the mean ORCA judge score over items (over clips for AQUA items)"
        )
        legend.append(
            "ORCA judge = mean per-item judge correctness on [0, 1] (the run's `orca` figure), "
            "as %; the two runs were judged by the same checkpoint."
        )
    if reason is None:
        lines += [
            f"- rule: a regression is a drop of more than {max_drop:g} points that is significant "
            f"at α = {alpha:g} after Holm correction over all {len(comparisons)} comparisons",
            f"- tests: {'; '.join(tests)} ({n_boot} resamples, seed {seed})",
            "",
            "| task | metric | baseline | candidate | Δ points | n | test | p | p (Holm) | |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in comparisons:
            lines.append(
                f"| {c.task} | {metric_name(c.metric)} | {_num(_scale(c.baseline))} | "
                f"{_num(_scale(c.candidate))} | {_num(c.delta_points)} | {c.n} | "
                f"{_test_text(c)} | {_p(c.p_value)} | {_p(c.p_holm)} | {_verdict(c)} |"
            )
        lines += ["", " ".join(legend)]
    return "\n".join(lines) + "\n"


def comparison_record(c: MetricComparison) -> dict[str, Any]:
    """One comparison as a JSON-ready row (intervals in points, like the deltas)."""
    return {
        "task": c.task,
        "metric": c.metric,
        "test": c.test,
        "baseline": c.baseline,
        "candidate": c.candidate,
        "delta_points": c.delta_points,
        "n": c.n,
        "note": c.note,
        "lost": c.lost,
        "gained": c.gained,
        "ci_low_points": _scale(c.ci_low),
        "ci_high_points": _scale(c.ci_high),
        "p_value": c.p_value,
        "p_holm": c.p_holm,
        "regression": c.regression,
        "improvement": c.improvement,
    }
