"""Every place ORCA relies on lm-evaluation-harness internals, for the versions listed below.

lm-eval gives a registered metric only the reference and the reply, calls an aggregation with
nothing but the collected values, and has no hook at the start of an evaluation. ORCA needs
more, and gets it here, from internals of lm-eval 0.4.13:

- `patch_evaluate`: wraps `lm_eval.evaluator.evaluate` (which `simple_evaluate` looks up at
  call time) so each evaluation runs in its own judge session, after an optional step that
  sees the built tasks before any request is made;
- `built_tasks`: the task objects inside the `task_dict` evaluate() receives;
- `aggregation_site`: the task and filter of the aggregation call in progress, read from the
  caller's frame (`task`, `filter_key` locals of lm-eval's aggregation loop);
- `predict_only`, `take_over_metric`: the private per-task tables `_metric_fn_list`,
  `_metric_fn_kwargs`, `_aggregation_list` and `_higher_is_better`;
- `tracker_output_folder`: where `EvaluationTracker` writes samples for the model.

A new lm-eval version is supported by changing this module (and TESTED_LM_EVAL_VERSIONS) only.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .judge_pass import evaluation_session

# lm-eval versions the end-to-end tests run against.
TESTED_LM_EVAL_VERSIONS = ("0.4.13",)
# Attribute of our evaluate() wrapper: the preparation step it runs (None: none).
PATCH_MARK = "_orca_prepare"
# lm-eval's name for the metric table entry of --predict_only runs.
PREDICT_ONLY_METRIC = "bypass"

Prepare = Callable[[Mapping[str, Any]], object]


def patch_evaluate(prepare: Prepare | None = None) -> None:
    """Run each lm-eval evaluate() in a fresh judge session, calling `prepare(task_dict)` first.

    Idempotent; a call with `prepare` replaces a wrapper installed without one.
    """
    from lm_eval import evaluator

    current = evaluator.evaluate
    if hasattr(current, PATCH_MARK):
        if prepare is None or getattr(current, PATCH_MARK) is prepare:
            return
        current = current.__wrapped__

    @functools.wraps(current)
    def evaluate(*args: Any, **kwargs: Any) -> Any:
        task_dict = kwargs["task_dict"] if "task_dict" in kwargs else args[1]
        # A repeated identical evaluation must load, judge and write its per-item file again.
        with evaluation_session():
            if prepare is not None:
                prepare(task_dict)
            return current(*args, **kwargs)

    setattr(evaluate, PATCH_MARK, prepare)
    evaluator.evaluate = evaluate


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


def aggregation_site() -> tuple[str | None, str | None]:
    """Task and filter of the lm-eval aggregation call in progress (None when not found).

    Called by an aggregation function, whose caller is lm-eval's loop over the
    (metric, filter_key) pairs of one task.
    """
    frame = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            break
        local = frame.f_locals
        task = local.get("task")
        if isinstance(local.get("filter_key"), str) and hasattr(task, "task_name"):
            return str(task.task_name), local["filter_key"]
        frame = frame.f_back
    return None, None


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


def fill_registries() -> None:
    """Import lm-eval's own models and metrics: its registries fill lazily only while empty."""
    import lm_eval.api.metrics
    import lm_eval.models  # noqa: F401
