"""What lm-eval 0.4.13 and lmms-eval 0.7.3 share below their public API: a built task's
private metric tables, and the `TaskManager.match_tasks(self, task_list)` both call per `--tasks`
entry. Both harnesses' `ConfigurableTask` keep the same tables (`_metric_fn_list`,
`_metric_fn_kwargs`, `_aggregation_list`, `_higher_is_better`); each harness's compat module
gates the patches that use these (`eval_plugins.seams`), so neither adapter imports the other.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

# choose(patterns, matches, metadata): the matches to keep.
ChooseMatches = Callable[[list[str], list[str], Any], list[str]]
# Attribute of our wrapper, so that patching twice is a no-op.
_FILTERS_MATCHES = "_filters_aqua_matches"
# The private tables of a built task this module reads and writes: only while a judge is wired
# into the task, which the evaluation seam of each harness does (declared there).
JUDGE_TABLES = ("_metric_fn_list", "_metric_fn_kwargs", "_aggregation_list", "_higher_is_better")
# The harnesses' name for the metric table entry of --predict_only runs.
PREDICT_ONLY_METRIC = "bypass"


def wrap_match_tasks(task_manager_cls: type, choose: ChooseMatches) -> None:
    """`match_tasks(self, task_list)` keeps only what `choose` keeps of its matches; idempotent.

    lm-eval 0.4.13 and lmms-eval 0.7.3 have the same method.
    """
    match = task_manager_cls.match_tasks
    if getattr(match, _FILTERS_MATCHES, False):
        return

    @functools.wraps(match)
    def match_tasks(self: Any, task_list: list[str]) -> list[str]:
        matches = match(self, task_list)
        return choose(list(task_list), matches, getattr(self, "metadata", None))

    setattr(match_tasks, _FILTERS_MATCHES, True)
    task_manager_cls.match_tasks = match_tasks


def predict_only(task: Any) -> bool:
    """Whether the harness runs this task with --predict_only (no metrics computed).

    lmms-eval 0.7.3 builds its tasks with the same private tables: this serves both.
    """
    return PREDICT_ONLY_METRIC in task._metric_fn_list


def take_over_metric(
    task: Any,
    metric: str,
    aggregations: Mapping[str, Callable[[list], float]],
    higher_is_better: Mapping[str, bool],
) -> None:
    """Drop the task's own call of `metric` and aggregate the given figures our way."""
    # The harness would otherwise call the doc-less metric function as well.
    task._metric_fn_list.pop(metric, None)
    task._metric_fn_kwargs.pop(metric, None)
    for figure, aggregation in aggregations.items():
        task._aggregation_list[figure] = aggregation
        task._higher_is_better[figure] = higher_is_better[figure]
