"""Wiring one built task for the doc-aware `metric: orca` and `metric: llm_judge`, shared by
lm-eval and lmms-eval.

Both harnesses build a `ConfigurableTask` with the same layout (config.metric_list, the
private metric tables `eval_plugins.lm_eval.compat` edits, a bound
`process_results(doc, results, ...)`). `wire` reads the task's orca entry, loads the judge
(failing before any generation), and replaces the built task's `process_results` so that
each doc's value carries the judge's inputs — question, reference, rationale, transcript,
reply — to the aggregation, which has no task handle (the compat modules label its values
with their task and filter). The wrapper is pure (it reads the doc and the reply and returns
a new dict): lmms-eval calls it from several threads and may call it again. Nothing here
imports a harness; it sets attributes of the harness's built task, so it lives in the edge.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from eval_plugins.lm_eval import compat
from orca_judge.errors import LlmJudgeError, OrcaMetricError
from orca_judge.metric.judge_pass import JudgeSession, active_session
from orca_judge.metric.payloads import (
    DEFAULT_QUESTION_FIELD,
    HIGHER_IS_BETTER,
    PROMPT_SOURCE,
    figures_for,
    judge_inputs,
    needs_prompt,
    payloads,
)
from orca_judge.metric.settings import (
    LM_EVAL_METADATA_HINT,
    METRIC,
    OrcaMetricSettings,
    resolve_settings,
)
from orca_judge.prompted.metric import FIGURES as LLM_FIGURES
from orca_judge.prompted.metric import HIGHER_IS_BETTER as LLM_HIGHER_IS_BETTER
from orca_judge.prompted.metric import session_judge
from orca_judge.prompted.settings import LM_EVAL_METADATA_HINT as LLM_LM_EVAL_METADATA_HINT
from orca_judge.prompted.settings import METRIC as LLM_METRIC
from orca_judge.prompted.settings import LlmJudgeSettings
from orca_judge.prompted.settings import resolve_settings as resolve_llm_settings

WIRED = "_orca_wired"
LLM_WIRED = "_llm_judge_wired"
Aggregation = Callable[[list], float]


def orca_entries(task: Any, functions: Iterable[Callable] = ()) -> list[Mapping[str, Any]]:
    """The task's `metric_list` entries that ask for the orca metric (by name or function)."""
    entries = getattr(task.config, "metric_list", None) or []
    functions = tuple(functions)
    return [e for e in entries if e.get("metric") == METRIC or e.get("metric") in functions]


def reference_of(task: Any, doc: Mapping[str, Any]) -> Any:
    """The task's gold answer for a doc, as the harness's own generate_until scoring takes it."""
    target = task.doc_to_target(doc)
    if task.config.doc_to_choice is not None and isinstance(target, int):
        return task.doc_to_choice(doc)[target]
    return target


def check_question_field(task: Any, settings: OrcaMetricSettings, where: str) -> None:
    """Raise OrcaMetricError unless every doc has the question field the entry names."""
    name = settings.question_field
    if not name:
        return
    docs = task.eval_docs
    columns = getattr(docs, "column_names", None)
    if columns is not None:
        if name not in columns:
            raise OrcaMetricError(
                f"{where}: question_field {name!r} is not a doc field (fields: "
                f"{', '.join(columns)}); name one of them, or leave question_field unset to use "
                f"`{DEFAULT_QUESTION_FIELD}`, else the prompt"
            )
        return
    missing = [i for i, doc in enumerate(docs) if name not in doc]
    if missing:
        raise OrcaMetricError(
            f"{where}: question_field {name!r} is missing from {len(missing)} doc(s), "
            f"the first at position {missing[0]}"
        )


def metadata_settings(metadata: Any) -> dict[str, Any]:
    """A task's metadata as a mapping: lmms-eval YAMLs often write it as a list of mappings."""
    if isinstance(metadata, Mapping):
        return dict(metadata)
    if isinstance(metadata, (list, tuple)):
        merged: dict[str, Any] = {}
        for part in metadata:
            if isinstance(part, Mapping):
                merged.update(part)
        return merged
    return {}


def with_record(metadata: Any, key: str, value: Any) -> Any:
    """The task's metadata with `key: value` added, keeping the form (mapping or list) it had."""
    if isinstance(metadata, (list, tuple)):
        return [*metadata, {key: value}]
    return {**(metadata if isinstance(metadata, Mapping) else {}), key: value}


def question_rule(settings: OrcaMetricSettings) -> str | None:
    """Where the judge's question comes from, as recorded in the results' task config."""
    if settings.question_field == "":
        return None
    if settings.question_field is None:
        return f"doc.{DEFAULT_QUESTION_FIELD} if present, else {PROMPT_SOURCE}"
    return f"doc.{settings.question_field}"


def feed_doc(task: Any, settings: Any, figures: Sequence[str]) -> None:
    """Make the task's `process_results` add the judge's inputs, one payload per figure.

    `settings` is the metric's settings record (the doc fields it names: `question_field`,
    `rationale_field`, `transcript_field`, `ratings_field`, `id_field`).
    """
    original = task.process_results
    resolved = asdict(settings)
    name = task.config.task

    @functools.wraps(original)
    def process_results(doc: Mapping[str, Any], results: list, *args: Any, **kwargs: Any) -> dict:
        out = dict(original(doc, results, *args, **kwargs))
        if compat.predict_only(task):
            return out
        inputs = judge_inputs(
            settings,
            reference=reference_of(task, doc),
            candidate=results[0] if results else "",
            doc=doc,
            prompt=task.doc_to_text(doc) if needs_prompt(settings, doc) else None,
        )
        out.update(payloads(inputs, resolved, doc_aware=True, figures=figures, task=name))
        return out

    task.process_results = process_results


def wire(
    task: Any,
    session: JudgeSession | None,
    *,
    aggregation: Aggregation,
    form: str,
    functions: Iterable[Callable] = (),
    generative: Callable[[str], bool] = lambda kind: kind == "generate_until",
    metadata_hint: str = LM_EVAL_METADATA_HINT,
) -> OrcaMetricSettings | None:
    """Validate the task's orca entry, load its judge into the session, feed the judge the doc.

    `aggregation` is the harness's orca aggregation, `form` is recorded in the results'
    task config, `functions` are metric functions that also mean orca (`!function` form),
    `generative` says which output types produce replies to judge, `metadata_hint` how the
    harness's run sets metadata['orca'] (for the hint when no checkpoint is set).
    """
    session = session or active_session() or JudgeSession()
    name = task.config.task
    entries = orca_entries(task, functions)
    if not entries or getattr(task, WIRED, False) or compat.predict_only(task):
        return None
    where = f"task {name!r}, metric orca"
    if len(entries) > 1:
        raise OrcaMetricError(f"{where}: one orca entry per task (found {len(entries)})")
    if not generative(str(task.config.output_type)):
        raise OrcaMetricError(
            f"{where}: orca judges generated answers; output_type is {task.config.output_type!r}"
        )
    settings = resolve_settings(
        entries[0],
        metadata_settings(task.config.metadata),
        where=where,
        metadata_hint=metadata_hint,
    )
    check_question_field(task, settings, where)
    try:
        judge = session.judge(settings)
    except OrcaMetricError as err:
        raise OrcaMetricError(f"{where}: {err}") from err
    figures = figures_for(settings, judge.config.likelihood)
    feed_doc(task, settings, figures)
    compat.take_over_metric(task, METRIC, dict.fromkeys(figures, aggregation), HIGHER_IS_BETTER)
    # Recorded in the results' task config: which doc fields the judge reads.
    task.config.metadata = with_record(
        task.config.metadata,
        "orca_inputs",
        {
            "form": form,
            "checkpoint": settings.checkpoint,
            "judge_fingerprint": judge.fingerprint(),
            "clamp": settings.clamp,
            "question": question_rule(settings),
            "rationale": settings.rationale_field or None,
            "transcript": settings.transcript_field or None,
            "ratings": settings.ratings_field or None,
            "reference": "doc_to_target",
            "candidate": "filtered reply",
        },
    )
    setattr(task, WIRED, True)
    return settings


def llm_judge_entries(task: Any, functions: Iterable[Callable] = ()) -> list[Mapping[str, Any]]:
    """The task's `metric_list` entries that ask for the llm_judge metric."""
    entries = getattr(task.config, "metric_list", None) or []
    functions = tuple(functions)
    return [e for e in entries if e.get("metric") == LLM_METRIC or e.get("metric") in functions]


def wire_llm_judge(
    task: Any,
    session: JudgeSession | None,
    *,
    aggregation: Aggregation,
    form: str,
    functions: Iterable[Callable] = (),
    generative: Callable[[str], bool] = lambda kind: kind == "generate_until",
    metadata_hint: str = LLM_LM_EVAL_METADATA_HINT,
) -> LlmJudgeSettings | None:
    """`wire` for `metric: llm_judge`: settings checked and judge made before any generation."""
    session = session or active_session() or JudgeSession()
    name = task.config.task
    entries = llm_judge_entries(task, functions)
    if not entries or getattr(task, LLM_WIRED, False) or compat.predict_only(task):
        return None
    where = f"task {name!r}, metric llm_judge"
    if len(entries) > 1:
        raise LlmJudgeError(f"{where}: one llm_judge entry per task (found {len(entries)})")
    if not generative(str(task.config.output_type)):
        raise LlmJudgeError(
            f"{where}: llm_judge judges generated answers; output_type is "
            f"{task.config.output_type!r}"
        )
    settings = resolve_llm_settings(
        entries[0],
        metadata_settings(task.config.metadata),
        where=where,
        metadata_hint=metadata_hint,
    )
    check_question_field(task, settings, where)
    judge = session_judge(session, settings)
    feed_doc(task, settings, LLM_FIGURES)
    compat.take_over_metric(
        task, LLM_METRIC, dict.fromkeys(LLM_FIGURES, aggregation), LLM_HIGHER_IS_BETTER
    )
    task.config.metadata = with_record(
        task.config.metadata,
        "llm_judge_inputs",
        {
            "form": form,
            **judge.describe(),
            "question": question_rule(settings),
            "rationale": settings.rationale_field or None,
            "transcript": settings.transcript_field or None,
            "reference": "doc_to_target",
            "candidate": "filtered reply",
        },
    )
    setattr(task, LLM_WIRED, True)
    return settings
