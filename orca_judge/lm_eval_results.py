"""Deprecated: per-item judge results are read by `orca_judge.lm_eval.results`."""

from aqua_tasks.deprecation import module_moved
from orca_judge.lm_eval.results import (
    PER_ITEM_NAME,
    ROW_FIELDS,
    JudgeResults,
    JudgeResultsError,
    find_judge_results,
    read_judge_results,
)

__all__ = [
    "PER_ITEM_NAME",
    "ROW_FIELDS",
    "JudgeResults",
    "JudgeResultsError",
    "find_judge_results",
    "read_judge_results",
]

module_moved(__name__, "orca_judge.lm_eval.results")
