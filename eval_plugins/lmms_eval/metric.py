"""`metric: orca` for lmms-eval: one batched judge pass per (task, filter), judge checked early.

The judge itself, its settings, the payloads a doc hands it, the batched pass and the
per-item files are `orca_judge.metric`'s harness-neutral modules, wired into a built task by
`eval_plugins.orca_wiring` as under lm-eval; this module only tells lmms-eval about them.
`install()` (called by the start-up hook when lmms_eval.evaluator is imported) registers the
metric and, at the start of each evaluate() — after tasks are built, before any request —
checks every task's orca entry, loads its judge, and makes the task's `process_results` hand
the judge the doc.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from eval_plugins import orca_wiring as wiring
from eval_plugins.lmms_eval import compat
from eval_plugins.orca_wiring import LLM_JUDGE, ORCA, wire
from orca_judge.metric.aggregate import aggregate, doc_less_payloads
from orca_judge.metric.judge_pass import JudgeSession
from orca_judge.metric.settings import LMMS_EVAL_METADATA_HINT, METRIC, OrcaMetricSettings
from orca_judge.prompted import metric as prompted
from orca_judge.prompted.settings import LMMS_EVAL_METADATA_HINT as LLM_METADATA_HINT
from orca_judge.prompted.settings import METRIC as LLM_METRIC
from orca_judge.prompted.settings import LlmJudgeSettings

FORM = "doc-aware (lmms-eval with this package installed)"


def orca(references: Sequence[Any], predictions: Sequence[Any], **entry: Any) -> dict:
    """lmms-eval's per-doc metric call, used only when a task was not wired (no doc here).

    lmms-eval keeps the `orca` value of the returned dict: the doc's reference and reply.
    """
    return doc_less_payloads(references, predictions, **entry)


def orca_aggregate(items: Sequence[Any]) -> float:
    """lmms-eval aggregation for every orca figure: scores the items (once), returns the figure.

    The items come labelled with their task and filter (`compat.patch_evaluation`).
    """
    return aggregate(items)


def wire_task(task: Any, session: JudgeSession | None = None) -> OrcaMetricSettings | None:
    """Validate one built lmms-eval task's orca entry, load its judge, feed the judge the doc."""
    return wire(
        task,
        session,
        ORCA,
        aggregation=orca_aggregate,
        form=FORM,
        functions=(orca,),
        generative=compat.GENERATIVE_OUTPUT_TYPES.__contains__,
        metadata_hint=LMMS_EVAL_METADATA_HINT,
    )


def llm_judge(references: Sequence[Any], predictions: Sequence[Any], **entry: Any) -> dict:
    """lmms-eval's per-doc call of `metric: llm_judge`, used only when a task was not wired."""
    return prompted.doc_less_payloads(references, predictions, **entry)


def llm_judge_aggregate(items: Sequence[Any]) -> float:
    """lmms-eval aggregation for both llm_judge figures: judges the items (once), returns one."""
    return prompted.aggregate(items)


def wire_llm_judge_task(task: Any, session: JudgeSession | None = None) -> LlmJudgeSettings | None:
    """Validate one built lmms-eval task's llm_judge entry, make its judge, feed it the doc."""
    return wire(
        task,
        session,
        LLM_JUDGE,
        aggregation=llm_judge_aggregate,
        form=FORM,
        functions=(llm_judge,),
        generative=compat.GENERATIVE_OUTPUT_TYPES.__contains__,
        metadata_hint=LLM_METADATA_HINT,
    )


def prepare_tasks(task_dict: Mapping[str, Any]) -> list[OrcaMetricSettings | LlmJudgeSettings]:
    """Wire every task that uses orca or llm_judge; raises before any request is built."""
    return wiring.prepare_tasks(task_dict, (wire_task, wire_llm_judge_task))


def register() -> None:
    """Register metrics and aggregations `orca` and `llm_judge` with lmms-eval; idempotent."""
    compat.register(orca, orca_aggregate, METRIC)
    compat.register(llm_judge, llm_judge_aggregate, LLM_METRIC)


def install(evaluator: ModuleType | None = None) -> None:
    """Register the metric and wire orca tasks at the start of each lmms-eval evaluate()."""
    if evaluator is None:
        from lmms_eval import evaluator
    register()
    compat.patch_evaluation(evaluator, prepare_tasks)
