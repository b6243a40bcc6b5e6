"""What the evaluation in progress has collected, shared by both harnesses and both packages.

lm-eval and lmms-eval call an aggregation with nothing but its values and hand a results step
nothing but the results dict. The harness edge (`eval_plugins`) records, for the evaluation in
progress, each task's per-item values by (metric, filter) as its aggregations receive them;
AQUA's results step and ORCA's judge read them here. Standard library only: no harness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

# Per-doc values of the tasks aggregated in the evaluation in progress, by task name.
_COLLECTED: ContextVar[dict[str, Mapping] | None] = ContextVar("evaluation_values", default=None)


@contextmanager
def collecting() -> Iterator[None]:
    """Within: one evaluation, whose aggregated values `record` keeps (nested: a fresh one)."""
    token = _COLLECTED.set({})
    try:
        yield
    finally:
        _COLLECTED.reset(token)


def record(task: str, values: Mapping[tuple[str, str], Any]) -> None:
    """Keep one task's {(metric, filter): values} for the evaluation in progress (none: dropped)."""
    collected = _COLLECTED.get()
    if collected is not None:
        collected[task] = values


def aggregated_values() -> Mapping[str, Mapping[tuple[str, str], list]]:
    """Task name -> {(metric, filter): per-doc values} aggregated by the evaluation in progress.

    Read by a results step; empty outside an evaluation.
    """
    collected = _COLLECTED.get()
    return {} if collected is None else collected


def built_tasks(task_dict: Mapping[str, Any]) -> list[Any]:
    """Task objects of what a harness's evaluate() receives (TaskManager.load() or nested)."""
    if "tasks" in task_dict and isinstance(task_dict["tasks"], Mapping):
        return list(task_dict["tasks"].values())
    found = []
    for value in task_dict.values():
        if isinstance(value, Mapping):
            found.extend(built_tasks(value))
        elif hasattr(value, "config") and hasattr(value, "process_results"):
            found.append(value)
    return found


def tracker_output_folder(tracker: Any) -> Callable[[], Path | None]:
    """Where an EvaluationTracker writes samples, resolved when called (None: no folder).

    Both harnesses' trackers name the model's sub-folder only once the run has started.
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
