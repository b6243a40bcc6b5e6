"""The one reader of saved output: lm-eval and lmms-eval logs, the authors' format, judge files.

The names below are what the other rooms (aqua-score, aqua-report, aqua-regress,
orca-lm-eval-items, aqua-replay) use; the modules hold one concern each: `discovery` (which
files make a run), `lm_eval_samples`, `lmms_eval_logs` and `authors` (one reader per kind of
file), `model` (the `Run`), `read` (`read_run`), `scores`, `judge_results` and `orca_items`.
`judge_calibrations` is imported from its module: it loads the judge (torch), which reading a
run must not.
"""

from aqua_tasks.runs.discovery import (
    HARNESS_AUTHORS,
    HARNESS_LM_EVAL,
    HARNESS_LMMS_EVAL,
    RunFiles,
    find_outputs,
    is_lmms_results,
    iter_jsonl,
    read_json,
    samples_file_of,
    when,
)
from aqua_tasks.runs.judge_results import (
    JudgeResults,
    find_judge_results,
    judge_files_beside,
    read_judge_results,
)
from aqua_tasks.runs.model import (
    Run,
    RunItem,
    RunSource,
    iter_tasks,
    require_aqua_items,
    run_label,
)
from aqua_tasks.runs.orca_items import (
    NOT_LOADED,
    is_lmms_samples,
    items_from_samples,
    read_lmms_samples,
    read_samples,
)
from aqua_tasks.runs.read import read_run
from aqua_tasks.runs.scores import breakdown, condition_map, rescoring_notices, score_items

__all__ = [
    "HARNESS_AUTHORS",
    "HARNESS_LMMS_EVAL",
    "HARNESS_LM_EVAL",
    "NOT_LOADED",
    "JudgeResults",
    "Run",
    "RunFiles",
    "RunItem",
    "RunSource",
    "breakdown",
    "condition_map",
    "find_judge_results",
    "find_outputs",
    "is_lmms_results",
    "is_lmms_samples",
    "items_from_samples",
    "iter_jsonl",
    "iter_tasks",
    "judge_files_beside",
    "read_json",
    "read_judge_results",
    "read_lmms_samples",
    "read_run",
    "read_samples",
    "require_aqua_items",
    "rescoring_notices",
    "run_label",
    "samples_file_of",
    "score_items",
    "when",
]
