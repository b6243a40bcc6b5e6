"""The one reader of saved output: lm-eval and lmms-eval logs, the authors' format, judge files.

The names below are what the other rooms (aqua score, aqua report, aqua regress,
aqua orca-items, aqua-replay) use; the modules hold one concern each: `discovery` (which
files make a run), `lm_eval_samples`, `lmms_eval_logs` and `authors` (one reader per kind of
file, each into `RunItem`s), `model` (the `Run`, `RunItem`, the one reply unwrap), `read`
(`read_run`), `scoring` (the one scoring pipeline: `score_run` → `RunScores`), `judge_results`
and `orca_items` (judge input from the run items).
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
    JudgeSamples,
    orca_records,
    read_judge_samples,
)
from aqua_tasks.runs.read import read_run
from aqua_tasks.runs.scoring import (
    RunScores,
    ScoreSettings,
    TaskScoring,
    breakdown,
    condition_map,
    is_run_scores,
    rescoring_notices,
    row_figures,
    score_items,
    score_run,
    score_task,
)

__all__ = [
    "HARNESS_AUTHORS",
    "HARNESS_LMMS_EVAL",
    "HARNESS_LM_EVAL",
    "NOT_LOADED",
    "JudgeResults",
    "JudgeSamples",
    "Run",
    "RunFiles",
    "RunItem",
    "RunScores",
    "RunSource",
    "ScoreSettings",
    "TaskScoring",
    "breakdown",
    "condition_map",
    "find_judge_results",
    "find_outputs",
    "is_lmms_results",
    "is_run_scores",
    "iter_jsonl",
    "iter_tasks",
    "judge_files_beside",
    "orca_records",
    "read_json",
    "read_judge_results",
    "read_judge_samples",
    "read_run",
    "require_aqua_items",
    "rescoring_notices",
    "row_figures",
    "run_label",
    "samples_file_of",
    "score_items",
    "score_run",
    "score_task",
    "when",
]
