"""A judge-rated curriculum stage: unrated candidates rated 1-5 by a prompted judge, then trained.

ORCA's middle stage trains on benchmark answers rated by an LLM judge. A stage with
`rated_by: {model: ..., base_url: ...}` (the settings of `orca_judge/prompted/settings.py`)
has every item of its `train` file rated by that judge before it trains; an item then trains
with `ratings: [rating]`, whatever ratings the file held (orca synthesize's rule ratings are
ignored). Asking, re-asking and caching are the prompted judge's (`prompted/judge.py`), so a
rerun or resumed curriculum sends no request twice. A failed judgement is counted, reported
and left out of the stage; more than `max_failed_share` of them refuses the stage.

One judge rating is one observation, as a human item with one rating is: the Multinomial
and Beta losses get one term for it and the Bernoulli target is its (r - 1) / 4. It is not
smoothed: the losses are proper scoring rules, so over many items the heads learn the spread
of the judge's ratings given similar inputs without an invented one, and the human stage that
follows sets the spread the judge is finally scored on.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orca_judge.errors import JudgeEndpointError, LlmJudgeError
from orca_judge.prompted.prompt import PROMPT_VERSION
from orca_judge.prompted.settings import (
    JUDGE_NAMES,
    SETTING_NAMES,
    LlmJudgeSettings,
    build_settings,
)

if TYPE_CHECKING:
    from orca_judge.data import OrcaItem
    from orca_judge.prompted.backends import ChatBackend

RATED_BY = "rated_by"
MAX_FAILED_SHARE = "max_failed_share"
DEFAULT_MAX_FAILED_SHARE = 0.2
# The metric's doc-field settings say which field of an lm-eval doc holds what; a stage reads
# OrcaItems, whose fields are fixed, so naming one there would be silently ignored.
DOC_FIELD_SETTINGS = tuple(name for name in SETTING_NAMES if name not in JUDGE_NAMES)
FAILED_IDS_SHOWN = 5


@dataclass(frozen=True)
class JudgeRating:
    """How a stage's items are rated: the prompted judge and the share of failures allowed."""

    settings: LlmJudgeSettings
    max_failed_share: float = DEFAULT_MAX_FAILED_SHARE


def _share(value: Any, where: str) -> float:
    number = not isinstance(value, bool) and isinstance(value, (int, float))
    if not (number and math.isfinite(value) and 0.0 <= value <= 1.0):
        raise LlmJudgeError(
            f"{where}: {MAX_FAILED_SHARE}: expected a number in [0, 1], got {value!r}"
        )
    return float(value)


def judge_rating_plan(
    stage: Mapping[str, Any], where: str, synthesize: bool = False
) -> JudgeRating | None:
    """The validated `rated_by` (and `max_failed_share`) of a merged stage, or None without one.

    LlmJudgeError names `where` (the stage) and the key: a setting that is not a judge setting,
    no model, no base_url, `rated_by` with `synthesize: true`, a share outside [0, 1].
    """
    raw = stage.get(RATED_BY)
    if raw is None:
        if MAX_FAILED_SHARE in stage:
            raise LlmJudgeError(
                f"{where}: {MAX_FAILED_SHARE} is a setting of a stage with {RATED_BY}"
            )
        return None
    if not isinstance(raw, Mapping):
        raise LlmJudgeError(
            f"{where}: {RATED_BY}: expected a mapping of judge settings (model, base_url, ...), "
            f"got {raw!r}"
        )
    if synthesize:
        raise LlmJudgeError(
            f"{where}: {RATED_BY} and synthesize exclude each other (synthesize trains on "
            "rule-rated candidates, rated_by has a judge rate the train file's); keep one"
        )
    doc_fields = sorted(set(raw) & set(DOC_FIELD_SETTINGS))
    if doc_fields:
        raise LlmJudgeError(
            f"{where}: {RATED_BY}: {', '.join(doc_fields)}: a setting of metric llm_judge's doc "
            "fields, not of a stage (its items are read as orca score reads them)"
        )
    unknown = sorted(set(raw) - set(JUDGE_NAMES))
    if unknown:
        raise LlmJudgeError(
            f"{where}: {RATED_BY}: unknown setting(s) {', '.join(map(str, unknown))}; known: "
            f"{', '.join(JUDGE_NAMES)}"
        )
    settings = build_settings(dict(raw), f"{where}: {RATED_BY}", f" under {RATED_BY}:")
    share = _share(stage.get(MAX_FAILED_SHARE, DEFAULT_MAX_FAILED_SHARE), where)
    return JudgeRating(settings, share)


def rate_items(
    items: Sequence[OrcaItem],
    rating: JudgeRating,
    stage: str,
    *,
    progress: bool = False,
    backend: ChatBackend | None = None,
) -> tuple[list[OrcaItem], dict[str, Any]]:
    """Each item with the judge's rating as its one rating, and the stage's record of the judge.

    Failed judgements are left out and reported on stderr in one line; more than
    `max_failed_share` of them raise JudgeEndpointError. The record (judge model, backend,
    endpoint, prompt version, n_items, n_rated, n_failed) is the stage's data provenance.
    """
    from orca_judge.prompted.judge import PromptedJudge

    if not items:
        raise LlmJudgeError(f"stage {stage!r}: its train file holds no items for {RATED_BY}")
    judge = PromptedJudge(rating.settings, backend)
    try:
        judged = judge.score([it.as_dict() for it in items], progress_bar=progress)
    finally:
        judge.close()
    print(f"stage {stage!r}: {judge.summary()}", file=sys.stderr)
    rated = [
        dataclasses.replace(item, ratings=(j.rating,))
        for item, j in zip(items, judged, strict=True)
        if j.rating is not None
    ]
    failed = [j for j in judged if j.failed]
    record = {
        "model": rating.settings.model,
        "backend": rating.settings.backend,
        "endpoint": rating.settings.endpoint(),
        "prompt_version": PROMPT_VERSION,
        "n_items": len(items),
        "n_rated": len(rated),
        "n_failed": len(failed),
    }
    if failed:
        shown = "; ".join(f"{j.id}: {j.failure}" for j in failed[:FAILED_IDS_SHOWN])
        hidden = len(failed) - FAILED_IDS_SHOWN
        more = f"; and {hidden} more" if hidden > 0 else ""
        share = len(failed) / len(items)
        if share > rating.max_failed_share:
            raise JudgeEndpointError(
                f"stage {stage!r}: {len(failed)} of {len(items)} judgements by "
                f"{rating.settings.model!r} failed ({share:.0%}), more than {MAX_FAILED_SHARE} "
                f"{rating.max_failed_share:g} allows ({shown}{more}); fix the judge or its "
                f"endpoint and rerun (rated items are cached), or raise {MAX_FAILED_SHARE}"
            )
        print(
            f"stage {stage!r}: {len(failed)} of {len(items)} failed judgements left out of the "
            f"stage ({shown}{more})",
            file=sys.stderr,
        )
    return rated, record
