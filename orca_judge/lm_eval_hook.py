"""Deprecated: the doc-aware wiring of `metric: orca` is in `orca_judge.lm_eval.wiring`."""

from aqua_tasks.deprecation import module_moved
from orca_judge.lm_eval.compat import built_tasks
from orca_judge.lm_eval.payloads import figures_for
from orca_judge.lm_eval.wiring import (
    WIRED,
    install,
    orca_entries,
    prepare_tasks,
    reference_of,
    wire_task,
)

__all__ = [
    "WIRED",
    "built_tasks",
    "figures_for",
    "install",
    "orca_entries",
    "prepare_tasks",
    "reference_of",
    "wire_task",
]

module_moved(__name__, "orca_judge.lm_eval.wiring")
