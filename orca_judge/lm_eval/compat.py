"""Every place ORCA relies on lm-evaluation-harness internals, for the versions of one gate.

lm-eval gives a registered metric only the reference and the reply, calls an aggregation with
nothing but the collected values, and has no hook at the start of an evaluation. ORCA needs
more, and gets it here, from internals of lm-eval 0.4.13:

- `patch_evaluate`: wraps `lm_eval.evaluator.evaluate` (which `simple_evaluate` looks up at
  call time) so each evaluation runs in its own judge session, after an optional step that
  sees the built tasks before any request is made, and is followed by an optional step that
  fixes up the results dict before lm-eval prints and saves it;
- `patch_task_aggregations`: wraps `lm_eval.evaluator_utils._compute_task_aggregations(task,
  raw_metrics, bootstrap_iters)` (looked up at call time by `_collect_results`), where the
  task object and its {(metric, filter): values} table meet: each aggregation gets its values
  as `SitedValues` that name their task and filter, and `aggregated_values` hands the tables
  to the `finish` step of the same evaluation;
- `built_tasks`: the task objects inside the `task_dict` evaluate() receives;
- `predict_only`, `take_over_metric`: the private per-task tables `_metric_fn_list`,
  `_metric_fn_kwargs`, `_aggregation_list` and `_higher_is_better`;
- `tracker_output_folder`: where `EvaluationTracker` writes samples for the model;
- `patch_make_table`: `lm_eval.utils.make_table` (looked up at call time by the CLI) builds
  its Markdown with pytablewriter, which re-formats a column of numbers to one precision.

Which versions: `eval_common.harness_versions`, the range pyproject.toml requires
(`lm-eval>=0.4.13,<0.5`), tested with 0.4.13; the start-up hook, `aqua-eval` and
`register_all()` apply these patches only inside it. A new lm-eval version is supported by
changing this module, `aqua_tasks.lm_eval.compat` and that gate only.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NamedTuple

from orca_judge.metric.aggregate import SitedValues
from orca_judge.metric.judge_pass import evaluate_task_dict, judged_evaluation

# Attribute of our evaluate() wrapper: the EvaluateHooks it runs.
PATCH_MARK = "_orca_prepare"
# lm-eval's name for the metric table entry of --predict_only runs.
PREDICT_ONLY_METRIC = "bypass"
# evaluate()'s default of the argument that also switches stderr computation off (0).
DEFAULT_BOOTSTRAP_ITERS = 100000

# Per-doc values of the tasks aggregated in the evaluate() in progress, by task name.
_COLLECTED: ContextVar[dict[str, Mapping] | None] = ContextVar("orca_collected", default=None)

Prepare = Callable[[Mapping[str, Any]], object]
# finish(task_dict, results, bootstrap_iters) -> the results dict lm-eval prints and saves.
Finish = Callable[[Mapping[str, Any], dict, int], dict]


class EvaluateHooks(NamedTuple):
    """The steps our evaluate() wrapper runs before and after lm-eval's evaluate()."""

    prepare: Prepare | None
    finish: Finish | None


def patch_evaluate(prepare: Prepare | None = None, finish: Finish | None = None) -> None:
    """Run each lm-eval evaluate() in a fresh judge session, between `prepare` and `finish`.

    `prepare(task_dict)` runs before any request is built; `finish(task_dict, results,
    bootstrap_iters)` returns the results dict evaluate() hands back. Idempotent; a hook
    given replaces the installed one of its kind, a hook not given keeps it.
    """
    from lm_eval import evaluator

    current = evaluator.evaluate
    if hasattr(current, PATCH_MARK):
        installed = getattr(current, PATCH_MARK)
        hooks = EvaluateHooks(prepare or installed.prepare, finish or installed.finish)
        if hooks == installed:
            return
        current = current.__wrapped__
    else:
        hooks = EvaluateHooks(prepare, finish)

    @functools.wraps(current)
    def evaluate(*args: Any, **kwargs: Any) -> Any:
        task_dict = evaluate_task_dict(args, kwargs)
        token = _COLLECTED.set({})
        try:
            with judged_evaluation(hooks.prepare, task_dict):
                results = current(*args, **kwargs)
            if hooks.finish is None or results is None:  # None: not rank 0
                return results
            return hooks.finish(task_dict, results, _bootstrap_iters(current, args, kwargs))
        finally:
            _COLLECTED.reset(token)

    setattr(evaluate, PATCH_MARK, hooks)
    evaluator.evaluate = evaluate
    patch_task_aggregations()


def _bootstrap_iters(function: Callable, args: tuple, kwargs: Mapping[str, Any]) -> int:
    bound = inspect.signature(function).bind_partial(*args, **kwargs).arguments
    value = bound.get("bootstrap_iters", DEFAULT_BOOTSTRAP_ITERS)
    return int(value) if value else 0


def built_tasks(task_dict: Mapping[str, Any]) -> list[Any]:
    """Task objects of what lm-eval's evaluate() receives (TaskManager.load() or nested)."""
    if "tasks" in task_dict and isinstance(task_dict["tasks"], Mapping):
        return list(task_dict["tasks"].values())
    found = []
    for value in task_dict.values():
        if isinstance(value, Mapping):
            found.extend(built_tasks(value))
        elif hasattr(value, "config") and hasattr(value, "process_results"):
            found.append(value)
    return found


def patch_task_aggregations() -> None:
    """Hand every aggregation its values as SitedValues (task and filter), and collect them.

    lm-eval's `_compute_task_aggregations(task, raw_metrics, bootstrap_iters)` (looked up at
    call time by `_collect_results`) gets each task's {(metric, filter): values} after lm-eval
    gathered them from every rank. Idempotent.
    """
    from lm_eval import evaluator_utils

    current = evaluator_utils._compute_task_aggregations
    if hasattr(current, PATCH_MARK):
        return

    @functools.wraps(current)
    def compute_task_aggregations(task: Any, raw_metrics: Mapping, *args: Any, **kwargs: Any):
        name = str(task.task_name)
        sited = {
            key: SitedValues(values, task=name, filter_key=key[1])
            for key, values in raw_metrics.items()
        }
        collected = _COLLECTED.get()
        if collected is not None:
            collected[name] = sited
        return current(task, sited, *args, **kwargs)

    setattr(compute_task_aggregations, PATCH_MARK, True)
    evaluator_utils._compute_task_aggregations = compute_task_aggregations


def aggregated_values() -> Mapping[str, Mapping[tuple[str, str], list]]:
    """Task name -> {(metric, filter): per-doc values} aggregated by the evaluate() in progress.

    Read by a `finish` step; empty outside a patched evaluate().
    """
    collected = _COLLECTED.get()
    return {} if collected is None else collected


def predict_only(task: Any) -> bool:
    """Whether lm-eval runs this task with --predict_only (no metrics computed)."""
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


def tracker_output_folder(tracker: Any) -> Callable[[], Path | None]:
    """Where an EvaluationTracker writes samples, resolved when called (None: no folder).

    lm-eval names the model's sub-folder only once the run has started.
    """

    def folder() -> Path | None:
        if tracker is None or not getattr(tracker, "output_path", None):
            return None
        path = Path(tracker.output_path)
        if path.suffix == ".json":
            return path.parent
        model = tracker.general_config_tracker.model_name_sanitized
        return path / str(model) if model else path

    return folder


# Attribute of our make_table wrapper; positions of make_table's Value and Stderr columns.
TABLE_MARK = "_aqua_as_formatted"
FORMATTED_COLUMNS = (6, 8)


def _as_formatted(writer_class: type) -> type:
    """A pytablewriter writer class that prints the Value and Stderr cells as given."""
    from pytablewriter.style import Style
    from typepy import String

    class AsFormatted(writer_class):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            width = max(FORMATTED_COLUMNS) + 1
            self.type_hints = [String if i in FORMATTED_COLUMNS else None for i in range(width)]
            self.column_styles = [
                Style(align="right") if i in FORMATTED_COLUMNS else Style() for i in range(width)
            ]

    return AsFormatted


def patch_make_table() -> None:
    """lm-eval's printed results table shows counts as integers, not as `1440.0000`.

    make_table already formats floats to 4 decimals and stderrs itself; pytablewriter then
    re-formats the whole column as numbers of one precision. The wrapper has it print the
    cells as make_table formatted them. Idempotent.
    """
    from lm_eval import utils

    current = utils.make_table
    if hasattr(current, TABLE_MARK):
        return

    @functools.wraps(current)
    def make_table(*args: Any, **kwargs: Any) -> str:
        import pytablewriter

        original = pytablewriter.MarkdownTableWriter
        pytablewriter.MarkdownTableWriter = _as_formatted(original)
        try:
            return current(*args, **kwargs)
        finally:
            pytablewriter.MarkdownTableWriter = original

    setattr(make_table, TABLE_MARK, True)
    utils.make_table = make_table


def fill_registries() -> None:
    """Import lm-eval's own models and metrics: its registries fill lazily only while empty."""
    import lm_eval.api.metrics
    import lm_eval.models  # noqa: F401
