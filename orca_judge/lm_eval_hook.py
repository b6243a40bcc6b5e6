"""Wire `metric: orca` into built lm-eval tasks, after they are built and before generation.

lm-eval 0.4.13 gives a registered metric only the reference and the reply, and drops the
entry's settings when a task has its own `process_results`. Once tasks are built, their
configs still hold every `metric_list` entry, so this hook (installed by `install()`, which
`aqua_tasks.registration.register_all()` calls) reads the orca entry from there, loads the
judge (failing before any generation), and makes `process_results` hand the judge the doc.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from .lm_eval_metric import (
    AGREEMENT_FIGURES,
    FIGURES,
    HIGHER_IS_BETTER,
    METRIC,
    OrcaMetricError,
    OrcaMetricSettings,
    forget_passes,
    judge_inputs,
    load_judge,
    orca,
    orca_aggregate,
    payloads,
    register,
    resolve_settings,
)

WIRED = "_orca_wired"


def orca_entries(task: Any) -> list[Mapping[str, Any]]:
    """The task's `metric_list` entries that ask for the orca metric (by name or function)."""
    entries = getattr(task.config, "metric_list", None) or []
    return [e for e in entries if e.get("metric") == METRIC or e.get("metric") is orca]


def reference_of(task: Any, doc: Mapping[str, Any]) -> Any:
    """The task's gold answer for a doc, as lm-eval's own generate_until scoring takes it."""
    target = task.doc_to_target(doc)
    if task.config.doc_to_choice is not None and isinstance(target, int):
        return task.doc_to_choice(doc)[target]
    return target


def figures_for(settings: OrcaMetricSettings, likelihood: str) -> tuple[str, ...]:
    """Figures reported for a judge: no disagreement for Bernoulli (it models none)."""
    names = [f for f in FIGURES if not (f == "orca_disagreement" and likelihood == "bernoulli")]
    return (*names, *(AGREEMENT_FIGURES if settings.ratings_field else ()))


def wire_task(task: Any) -> OrcaMetricSettings | None:
    """Validate the task's orca entry, load its judge, and feed the judge the doc."""
    name = task.config.task
    entries = orca_entries(task)
    if not entries or getattr(task, WIRED, False) or "bypass" in task._metric_fn_list:
        return None
    where = f"task {name!r}, metric orca"
    if len(entries) > 1:
        raise OrcaMetricError(f"{where}: one orca entry per task (found {len(entries)})")
    if task.config.output_type != "generate_until":
        raise OrcaMetricError(
            f"{where}: orca judges generated answers; output_type is {task.config.output_type!r}"
        )
    settings = resolve_settings(entries[0], task.config.metadata, where=where)
    try:
        judge = load_judge(settings)
    except OrcaMetricError as err:
        raise OrcaMetricError(f"{where}: {err}") from err
    figures = figures_for(settings, judge.config.likelihood)
    # The harness would otherwise call the doc-less metric function as well.
    task._metric_fn_list.pop(METRIC, None)
    task._metric_fn_kwargs.pop(METRIC, None)
    original = task.process_results
    resolved = asdict(settings)

    @functools.wraps(original)
    def process_results(doc: Mapping[str, Any], results: list) -> dict:
        out = dict(original(doc, results))
        if "bypass" in task._metric_fn_list:  # --predict_only
            return out
        inputs = judge_inputs(
            settings,
            reference=reference_of(task, doc),
            candidate=results[0] if results else "",
            doc=doc,
        )
        out.update(payloads(inputs, resolved, doc_aware=True, figures=figures, task=name))
        return out

    task.process_results = process_results
    for figure in figures:
        task._aggregation_list[figure] = orca_aggregate
        task._higher_is_better[figure] = HIGHER_IS_BETTER[figure]
    # Recorded in the results' task config: which doc fields the judge reads.
    task.config.metadata = {
        **(task.config.metadata or {}),
        "orca_inputs": {
            "form": "doc-aware (aqua-eval / register_all)",
            "checkpoint": settings.checkpoint,
            "judge_fingerprint": judge.fingerprint(),
            "clamp": settings.clamp,
            "question": settings.question_field or None,
            "rationale": settings.rationale_field or None,
            "transcript": settings.transcript_field or None,
            "ratings": settings.ratings_field or None,
            "reference": "doc_to_target",
            "candidate": "filtered reply",
        },
    }
    setattr(task, WIRED, True)
    return settings


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


def prepare_tasks(task_dict: Mapping[str, Any]) -> list[OrcaMetricSettings]:
    """Wire every task that uses orca; raises OrcaMetricError before any request is built."""
    return [s for t in built_tasks(task_dict) if (s := wire_task(t)) is not None]


def install() -> None:
    """Register the metric and run `prepare_tasks` at the start of lm-eval's evaluate()."""
    from lm_eval import evaluator

    register()
    if getattr(evaluator.evaluate, WIRED, False):
        return
    original = evaluator.evaluate

    @functools.wraps(original)
    def evaluate(*args: Any, **kwargs: Any) -> Any:
        task_dict = kwargs["task_dict"] if "task_dict" in kwargs else args[1]
        # A repeated identical evaluation must judge (and write its per-item file) again.
        forget_passes()
        prepare_tasks(task_dict)
        return original(*args, **kwargs)

    setattr(evaluate, WIRED, True)
    evaluator.evaluate = evaluate
