"""The doc-aware form of `metric: orca`: wired into built tasks before any generation.

lm-eval 0.4.13 gives a registered metric only the reference and the reply, and drops the
entry's settings when a task has its own `process_results`. Once tasks are built, their
configs still hold every `metric_list` entry, so `prepare_tasks` (run at the start of each
evaluation once `install()` has been called, as `aqua_tasks.lm_eval.registration.register_all()`
does) reads the orca entry from there, loads the judge (failing before any generation), and
makes `process_results` hand the judge the doc.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orca_judge.lm_eval import compat
from orca_judge.lm_eval.metric import orca, orca_aggregate, register
from orca_judge.lm_eval.task_wiring import (
    WIRED,
    check_question_field,
    question_rule,
    reference_of,
    wire,
)
from orca_judge.metric.judge_pass import JudgeSession, active_session
from orca_judge.metric.settings import OrcaMetricSettings

__all__ = [
    "WIRED",
    "check_question_field",
    "install",
    "orca_entries",
    "prepare_tasks",
    "question_rule",
    "reference_of",
    "wire_task",
]

FORM = "doc-aware (lm_eval with this package installed, aqua-eval, register_all)"


def orca_entries(task: Any) -> list[Mapping[str, Any]]:
    """The task's `metric_list` entries that ask for the orca metric (by name or function)."""
    from orca_judge.lm_eval.task_wiring import orca_entries as entries

    return entries(task, (orca,))


def wire_task(task: Any, session: JudgeSession | None = None) -> OrcaMetricSettings | None:
    """Validate the task's orca entry, load its judge into the session, feed the judge the doc."""
    return wire(task, session, aggregation=orca_aggregate, form=FORM, functions=(orca,))


def prepare_tasks(task_dict: Mapping[str, Any]) -> list[OrcaMetricSettings]:
    """Wire every task that uses orca; raises OrcaMetricError before any request is built."""
    session = active_session() or JudgeSession()
    return [s for t in compat.built_tasks(task_dict) if (s := wire_task(t, session)) is not None]


def install() -> None:
    """Register the metric and run `prepare_tasks` at the start of each lm-eval evaluate()."""
    register()
    compat.patch_evaluate(prepare_tasks)
