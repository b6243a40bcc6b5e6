"""The AQUA part of an lm-eval results dict, fixed after lm-eval's own aggregation.

lm-eval 0.4.13 averages a group's subtask values weighted by item count (so the `aqua`
group's CA is no CA), gives custom aggregations no standard error, and prints every metric
as a float marked higher-is-better. `fix_aqua_results` rewrites, from the per-item outcomes:

- every all-tracks row (lm-eval's `aqua` group, or one added when only the tracks were
  selected, e.g. `--tasks 'aqua_*'`; `aqua-cot` and the like for ablations) pooled over
  clips by the scoring pipeline `aqua score` uses (`aqua_tasks.runs.scoring.row_figures`),
  with its counts;
- a standard error for every rate: binomial for accuracies, clip bootstrap for CA;
- counts as integers with no direction and no standard error.

Pure: no harness is imported; the results dict given is not modified.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from aqua_tasks.core.extract.fallback import fallback_counts
from aqua_tasks.core.intervals import metric_stderrs
from aqua_tasks.core.open_ended import (
    OPEN_COUNTS,
    OPEN_LOWER_IS_BETTER,
    OPEN_METRICS,
    open_figures,
    open_stderrs,
    pool_open,
)
from aqua_tasks.core.pooling import all_tracks_rows, pooled_label
from aqua_tasks.core.scoring import (
    ALL_METRICS,
    COUNT_METRICS,
    FALLBACK_METRICS,
    LOWER_IS_BETTER,
    ItemOutcome,
)
from aqua_tasks.core.task_name import OPEN_FAMILY, TaskName
from aqua_tasks.runs.scoring import row_figures

# Bootstrap replicates for a CA's standard error (lm-eval's bootstrap_iters caps it; 0: none).
STDERR_BOOT = 1000
NO_STDERR = "N/A"


# task -> filter -> per-item values (packed integers or anything `scoring.as_outcome` reads)
Outcomes = Mapping[str, Mapping[str, Sequence]]


def metric_directions() -> dict[str, bool | None]:
    """lm-eval's higher_is_better of every AQUA metric; None (no arrow) for counts."""
    return {m: None if m in COUNT_METRICS else m not in LOWER_IS_BETTER for m in ALL_METRICS}


def _write_figures(
    row: dict, filter_key: str, summary: Mapping[str, float], stderrs: Mapping[str, float]
) -> None:
    for metric in ALL_METRICS:
        stderr_key = f"{metric}_stderr,{filter_key}"
        if metric in COUNT_METRICS:
            row[f"{metric},{filter_key}"] = int(summary[metric])
            row.pop(stderr_key, None)
            continue
        row[f"{metric},{filter_key}"] = summary[metric]
        stderr = stderrs.get(metric, math.nan)
        row[stderr_key] = NO_STDERR if math.isnan(stderr) else stderr


def _pooled_rows(results: Mapping, outcomes: Outcomes) -> dict[str, list[str]]:
    """All-tracks row → member tasks: the settings with two tracks or more, and every
    lm-eval group all of whose subtasks are AQUA tasks of this run."""
    rows = all_tracks_rows(outcomes)
    for group, members in (results.get("group_subtasks") or {}).items():
        if members and all(m in outcomes for m in members):
            rows[group] = sorted(members)
    return rows


def fix_aqua_results(
    results: Mapping, outcomes: Outcomes, *, n_boot: int = STDERR_BOOT, seed: int = 0
) -> dict:
    """A copy of an lm-eval results dict with pooled all-tracks rows, stderrs and counts fixed.

    `outcomes` holds every AQUA task's per-item values per filter; tasks without are left as
    lm-eval wrote them. `n_boot` 0 computes no standard error (lm-eval's bootstrap_iters=0).
    """
    fixed = dict(results)
    table = {k: dict(v) for k, v in (results.get("results") or {}).items()}
    groups = {k: dict(v) for k, v in (results.get("groups") or {}).items()}
    subtasks = {k: list(v) for k, v in (results.get("group_subtasks") or {}).items()}
    directions = {k: dict(v) for k, v in (results.get("higher_is_better") or {}).items()}
    versions = dict(results.get("versions") or {})
    outcomes = {t: by_filter for t, by_filter in outcomes.items() if t in table and by_filter}
    pools = _pooled_rows(results, outcomes)
    # Per filter, every task's figures and every all-tracks row's, by the one scoring pipeline.
    figures = {}
    for filter_key in dict.fromkeys(f for by_filter in outcomes.values() for f in by_filter):
        figures[filter_key] = row_figures(
            {
                t: by_filter[filter_key]
                for t, by_filter in outcomes.items()
                if filter_key in by_filter
            },
            {n: ms for n, ms in pools.items() if all(filter_key in outcomes[m] for m in ms)},
            spread=metric_stderrs if n_boot else None,
            n_boot=n_boot,
            seed=seed,
        )
    for task, by_filter in outcomes.items():
        for filter_key in by_filter:
            summaries, stderrs = figures[filter_key]
            _write_figures(table[task], filter_key, summaries[task], stderrs.get(task, {}))
        directions[task] = directions.get(task, {}) | metric_directions()
    for name, members in pools.items():
        # lm-eval's own group values (size-weighted means) are dropped, not kept beside.
        # The alias names the tracks pooled: `aqua` is three or four tracks (see docs/build.md).
        row = {"alias": pooled_label(name, members), "name": name}
        row["sample_len"] = sum(int(table[m].get("sample_len", 0)) for m in members)
        filters = set.intersection(*(set(outcomes[m]) for m in members))
        for filter_key in sorted(filters):
            summaries, stderrs = figures[filter_key]
            _write_figures(row, filter_key, summaries[name], stderrs.get(name, {}))
        table[name] = row
        groups[name] = dict(row)
        subtasks[name] = members
        member_versions = {str(versions.get(m)) for m in members}
        if len(member_versions) == 1 and members[0] in versions:
            versions.setdefault(name, versions[members[0]])
        directions[name] = directions.get(name, {}) | metric_directions()
    fixed["results"] = table
    if groups:
        fixed["groups"] = groups
    fixed["group_subtasks"] = subtasks
    fixed["higher_is_better"] = directions
    fixed["versions"] = versions
    return fixed


# task -> filter -> (per-item open values, the outcomes the judge decided)
OpenSites = Mapping[str, Mapping[str, tuple[Sequence[Mapping], Sequence[ItemOutcome]]]]


def open_directions() -> dict[str, bool | None]:
    """lm-eval's higher_is_better of every open-ended figure; None (no arrow) for counts."""
    return {m: None if m in OPEN_COUNTS else m not in OPEN_LOWER_IS_BETTER for m in OPEN_METRICS}


def _write_open(row: dict, filter_key: str, figures: Mapping, stderrs: Mapping) -> None:
    for metric in OPEN_METRICS:
        stderr_key = f"{metric}_stderr,{filter_key}"
        if metric in OPEN_COUNTS:
            row[f"{metric},{filter_key}"] = int(figures[metric])
            row.pop(stderr_key, None)
            continue
        row[f"{metric},{filter_key}"] = figures[metric]
        stderr = stderrs.get(metric, math.nan)
        row[stderr_key] = NO_STDERR if math.isnan(stderr) else stderr


def fix_open_results(
    results: Mapping, sites: OpenSites, *, n_boot: int = STDERR_BOOT, seed: int = 0
) -> dict:
    """A copy of a results dict with every open-ended task's figures, stderrs and counts, and
    an all-tracks `aqua-open` row pooled over clips when two tracks or more ran."""
    fixed = dict(results)
    table = {k: dict(v) for k, v in (results.get("results") or {}).items()}
    directions = {k: dict(v) for k, v in (results.get("higher_is_better") or {}).items()}
    subtasks = {k: list(v) for k, v in (results.get("group_subtasks") or {}).items()}
    sites = {t: by_filter for t, by_filter in sites.items() if t in table and by_filter}

    def stderrs(values: Sequence[Mapping], judged: Sequence[ItemOutcome]) -> Mapping:
        return open_stderrs(values, judged, n_boot=n_boot, seed=seed) if n_boot else {}

    for task, by_filter in sites.items():
        for filter_key, (values, judged) in by_filter.items():
            _write_open(
                table[task], filter_key, open_figures(values, judged), stderrs(values, judged)
            )
        directions[task] = directions.get(task, {}) | open_directions()
    members = sorted(t for t in sites if (n := TaskName.parse(t)) is not None and n.is_open_ended)
    if len(members) >= 2:
        row = {"alias": pooled_label(OPEN_FAMILY, members), "name": OPEN_FAMILY}
        row["sample_len"] = sum(int(table[m].get("sample_len", 0)) for m in members)
        for filter_key in sorted(set.intersection(*(set(sites[m]) for m in members))):
            values, judged = pool_open({m: sites[m][filter_key] for m in members})
            _write_open(row, filter_key, open_figures(values, judged), stderrs(values, judged))
        table[OPEN_FAMILY] = row
        subtasks[OPEN_FAMILY] = members
        directions[OPEN_FAMILY] = open_directions()
    fixed["results"] = table
    fixed["group_subtasks"] = subtasks
    fixed["higher_is_better"] = directions
    return fixed


# task -> filter -> the fallback's logged readings (aqua-rules+llm runs)
FallbackReadings = Mapping[str, Mapping[str, Sequence[int]]]


def fix_fallback_counts(results: Mapping, readings: FallbackReadings) -> dict:
    """A copy of a results dict whose fallback counts are integers, summed in all-tracks rows.

    lm-eval would give a group the size-weighted mean of its tasks' counts; a count of
    replies read by the fallback is their sum.
    """
    fixed = dict(results)
    table = {k: dict(v) for k, v in (results.get("results") or {}).items()}
    directions = {k: dict(v) for k, v in (results.get("higher_is_better") or {}).items()}
    counts = {
        task: {f: fallback_counts(values) for f, values in by_filter.items()}
        for task, by_filter in readings.items()
        if task in table
    }
    rows = {task: [task] for task in counts}
    for group, members in (results.get("group_subtasks") or {}).items():
        if group in table and members and all(m in counts for m in members):
            rows[group] = list(members)
    for name, members in rows.items():
        for filter_key in set.intersection(*(set(counts[m]) for m in members)):
            for metric in FALLBACK_METRICS:
                table[name][f"{metric},{filter_key}"] = sum(
                    counts[m][filter_key][metric] for m in members
                )
                table[name].pop(f"{metric}_stderr,{filter_key}", None)
        directions[name] = directions.get(name, {}) | dict.fromkeys(FALLBACK_METRICS)
    fixed["results"] = table
    fixed["higher_is_better"] = directions
    if results.get("groups"):
        fixed["groups"] = {
            k: {**v, **{m: table[k][m] for m in table.get(k, {}) if m.startswith("n_fallback")}}
            for k, v in results["groups"].items()
        }
    return fixed
