"""`metric: orca` for lm-eval: per-doc judge inputs, one batched judge pass per (task, filter).

lm-eval calls a metric once per doc and its aggregation once per (metric, filter) with every
doc's value. The per-doc function therefore only records what the judge should read (a
payload); the aggregation scores all payloads of a task and filter in one batched pass of
the evaluation's judge session, and every companion figure (disagreement, agreement with
human ratings) is read from that pass.

The doc-aware form: lm-eval 0.4.13 gives a registered metric only the reference and the
reply, and drops the entry's settings when a task has its own `process_results`. Once tasks
are built, their configs still hold every `metric_list` entry, so `prepare_tasks` (run at the
start of each evaluation once `install()` has been called, as `register_all()` does) reads
the orca entry from there, loads the judge (failing before any generation), and makes
`process_results` hand the judge the doc (`eval_plugins.orca_wiring`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eval_plugins import orca_wiring as wiring
from eval_plugins.lm_eval import compat
from eval_plugins.orca_wiring import LLM_JUDGE, ORCA, metric_entries, wire
from orca_judge.errors import LlmJudgeError
from orca_judge.metric.aggregate import aggregate, doc_less_payloads
from orca_judge.metric.judge_pass import JudgeSession
from orca_judge.metric.settings import METRIC, OrcaMetricSettings
from orca_judge.prompted import metric as prompted
from orca_judge.prompted.settings import METRIC as LLM_METRIC
from orca_judge.prompted.settings import LlmJudgeSettings

FORM = "doc-aware (lm_eval with this package installed, aqua eval, register_all)"


def orca(references: Sequence[Any], predictions: Sequence[Any], **entry: Any) -> dict:
    """lm-eval's per-doc metric call: records reference and reply for the judge (no doc here).

    Settings are checked at aggregation, which reports problems without losing generations.
    """
    return doc_less_payloads(references, predictions, **entry)


def orca_aggregate(items: Sequence[Any]) -> float:
    """lm-eval aggregation for every orca figure: scores the items (once), returns the figure.

    The items come labelled with their task and filter (`compat.patch_evaluation`).
    """
    return aggregate(items)


def llm_judge(references: Sequence[Any], predictions: Sequence[Any], **entry: Any) -> dict:
    """lm-eval's per-doc call of `metric: llm_judge`: records reference and reply (no doc)."""
    return prompted.doc_less_payloads(references, predictions, **entry)


def llm_judge_aggregate(items: Sequence[Any]) -> float:
    """lm-eval aggregation for both llm_judge figures: judges the items (once), returns one."""
    return prompted.aggregate(items)


def lm_eval_has_own_llm_judge() -> bool:
    """Whether lm-eval itself holds a metric named `llm_judge` (one was proposed upstream).

    Built-in names win over a plugin's: ours is then not registered under that name, and a
    task naming it is refused (`wire_llm_judge_task`) rather than judged by either silently.
    """
    from lm_eval.api.registry import metric_registry

    current = metric_registry.get(LLM_METRIC, None)
    return current is not None and current is not llm_judge


def register() -> None:
    """Register metrics and aggregations `orca` and `llm_judge` with lm-eval, and scope judge
    sessions; idempotent."""
    from lm_eval.api.registry import (
        aggregation_registry,
        metric_registry,
        register_aggregation,
        register_metric,
    )

    compat.fill_registries()
    if aggregation_registry.get(METRIC, None) is not orca_aggregate:
        register_aggregation(METRIC)(orca_aggregate)
    if metric_registry.get(METRIC, None) is not orca:
        register_metric(metric=METRIC, higher_is_better=True, aggregation=METRIC)(orca)
    if not lm_eval_has_own_llm_judge():
        if aggregation_registry.get(LLM_METRIC, None) is not llm_judge_aggregate:
            register_aggregation(LLM_METRIC)(llm_judge_aggregate)
        if metric_registry.get(LLM_METRIC, None) is not llm_judge:
            register_metric(metric=LLM_METRIC, higher_is_better=True, aggregation=LLM_METRIC)(
                llm_judge
            )
    compat.patch_evaluation()


def orca_entries(task: Any) -> list[Mapping[str, Any]]:
    """The task's `metric_list` entries that ask for the orca metric (by name or function)."""
    return metric_entries(task, METRIC, (orca,))


def wire_task(task: Any, session: JudgeSession | None = None) -> OrcaMetricSettings | None:
    """Validate the task's orca entry, load its judge into the session, feed the judge the doc."""
    return wire(
        task,
        session,
        ORCA,
        aggregation=orca_aggregate,
        form=FORM,
        functions=(orca,),
        share_docs=True,
    )


def wire_llm_judge_task(task: Any, session: JudgeSession | None = None) -> LlmJudgeSettings | None:
    """Validate the task's llm_judge entry, make its judge, feed the judge the doc."""
    named = [e for e in task.config.metric_list or [] if e.get("metric") == LLM_METRIC]
    if named and lm_eval_has_own_llm_judge():
        raise LlmJudgeError(
            f"task {task.config.task!r}: metric llm_judge is both lm-eval's own metric and this "
            "package's prompted judge; choose one: `metric: !function "
            "eval_plugins.lm_eval.metric.llm_judge` for this package's, or AQUA_LM_EVAL_HOOK=0 "
            "for lm-eval's"
        )
    return wire(
        task, session, LLM_JUDGE, aggregation=llm_judge_aggregate, form=FORM, functions=(llm_judge,)
    )


def prepare_tasks(task_dict: Mapping[str, Any]) -> list[OrcaMetricSettings | LlmJudgeSettings]:
    """Wire every task that uses orca or llm_judge; raises before any request is built."""
    return wiring.prepare_tasks(task_dict, (wire_task, wire_llm_judge_task))


def install() -> None:
    """Register the metric and run `prepare_tasks` at the start of each lm-eval evaluate()."""
    register()
    compat.patch_evaluation(prepare=prepare_tasks)


# `metric: !function eval_plugins.lm_eval.metric.orca` (or `.llm_judge`) imports this module
# while lm-eval builds the task, just before it looks up the aggregation registered under the
# metric's name (and before it calls evaluate(), which then runs in a judge session of its own).
register()
