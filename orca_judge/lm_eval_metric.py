"""Deprecated: `metric: orca` lives in `orca_judge.lm_eval` (metric, settings, payloads, ...).

YAMLs saying `!function orca_judge.lm_eval_metric.orca` keep working: `orca` here is the
same function as `orca_judge.lm_eval.metric.orca`, and importing it registers the metric.
"""

from aqua_tasks.deprecation import module_moved
from orca_judge.lm_eval.judge_pass import JudgePass, compute_figures
from orca_judge.lm_eval.metric import orca, orca_aggregate, register
from orca_judge.lm_eval.payloads import (
    AGREEMENT_FIGURES,
    FIGURES,
    HIGHER_IS_BETTER,
    PAYLOAD_MARK,
    candidate_text,
    judge_inputs,
    payloads,
)
from orca_judge.lm_eval.per_item import per_item_rows
from orca_judge.lm_eval.settings import (
    ENV_PREFIX,
    HARNESS_KEYS,
    METRIC,
    SETTING_NAMES,
    OrcaMetricError,
    OrcaMetricSettings,
    resolve_settings,
)

__all__ = [
    "AGREEMENT_FIGURES",
    "ENV_PREFIX",
    "FIGURES",
    "HARNESS_KEYS",
    "HIGHER_IS_BETTER",
    "METRIC",
    "PAYLOAD_MARK",
    "SETTING_NAMES",
    "JudgePass",
    "OrcaMetricError",
    "OrcaMetricSettings",
    "candidate_text",
    "compute_figures",
    "judge_inputs",
    "orca",
    "orca_aggregate",
    "payloads",
    "per_item_rows",
    "register",
    "resolve_settings",
]

module_moved(__name__, "orca_judge.lm_eval.metric")
