"""What one doc hands the judge: its inputs, and one payload per reported figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from orca_judge.metric.settings import OrcaMetricSettings

PAYLOAD_MARK = "orca_figure"
# Where the judge's question comes from when the entry names no field.
DEFAULT_QUESTION_FIELD = "question"
PROMPT_SOURCE = "doc_to_text"
FIGURES = ("orca", "orca_disagreement", "orca_with_question")
AGREEMENT_FIGURES = ("orca_rho", "orca_tau", "orca_mae")
HIGHER_IS_BETTER = MappingProxyType(
    {
        "orca": True,
        "orca_disagreement": False,
        "orca_with_question": True,
        "orca_rho": True,
        "orca_tau": True,
        "orca_mae": False,
    }
)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return " / ".join(_text(v) for v in value)
    return str(value)


def candidate_text(result: Any) -> str:
    """The reply lm-eval hands a metric (a string, or a one-element list of one)."""
    while isinstance(result, (list, tuple)) and len(result) == 1:
        result = result[0]
    return _text(result)


def needs_prompt(settings: OrcaMetricSettings | None, doc: Mapping[str, Any] | None) -> bool:
    """Whether the question comes from the rendered prompt (no field named, no `question`)."""
    return (
        settings is not None
        and doc is not None
        and settings.question_field is None
        and DEFAULT_QUESTION_FIELD not in doc
    )


def question_of(
    settings: OrcaMetricSettings | None, doc: Mapping[str, Any] | None, prompt: Any = None
) -> tuple[str, str | None]:
    """The judge's question and its source: the named doc field, else `question`, else the prompt.

    The source is `doc.<field>`, `doc_to_text` or None (no question: no doc, or `''` named).
    """
    if settings is None or doc is None or settings.question_field == "":
        return "", None
    name = settings.question_field
    if name is None and DEFAULT_QUESTION_FIELD in doc:
        name = DEFAULT_QUESTION_FIELD
    if name is not None:
        return _text(doc.get(name)), f"doc.{name}"
    if prompt is None:
        return "", None
    return _text(prompt), PROMPT_SOURCE


def judge_inputs(
    settings: OrcaMetricSettings | None,
    *,
    reference: Any,
    candidate: Any,
    doc: Mapping[str, Any] | None,
    index: int | None = None,
    prompt: Any = None,
) -> dict[str, Any]:
    """The record the judge scores: doc fields named by the settings, reference, candidate.

    `prompt` (the doc's rendered prompt) is the question when the doc names none (see
    `question_of`). Without a doc or settings (lm-eval's plain metric call) there is no
    question, rationale, transcript or rating.
    """
    question, question_from = question_of(settings, doc, prompt)
    doc = doc if doc is not None and settings is not None else {}

    def field(name: str | None) -> Any:
        return doc.get(name) if settings is not None and name else None

    ratings = field(settings and settings.ratings_field)
    item_id = field(settings and settings.id_field)
    return {
        "id": None if item_id is None else str(item_id),
        "index": index,
        "question": question,
        "question_from": question_from,
        "reference": _text(reference),
        "rationale": _text(field(settings and settings.rationale_field)),
        "transcript": _text(field(settings and settings.transcript_field)),
        "candidate": candidate_text(candidate),
        "ratings": list(ratings) if ratings else None,
    }


def payloads(
    inputs: Mapping[str, Any],
    settings: Mapping[str, Any],
    *,
    doc_aware: bool,
    figures: Sequence[str] = FIGURES,
    task: str | None = None,
    scored: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """One value per figure for lm-eval to collect; all figures of a doc share the inputs.

    `scored` is the judge's prediction when the process that collected the doc made it (a
    run of several processes, each judging its own docs); the aggregation then reuses it.
    """
    shared = {"inputs": dict(inputs), "settings": dict(settings), "doc_aware": doc_aware}
    if task is not None:
        shared["task"] = task
    if scored is not None:
        shared["scored"] = dict(scored)
    return {name: {PAYLOAD_MARK: name, **shared} for name in figures}


def figures_for(settings: OrcaMetricSettings, likelihood: str) -> tuple[str, ...]:
    """Figures reported for a judge: no disagreement for Bernoulli (it models none)."""
    names = [f for f in FIGURES if not (f == "orca_disagreement" and likelihood == "bernoulli")]
    return (*names, *(AGREEMENT_FIGURES if settings.ratings_field else ()))
