"""The harness-neutral half of `metric: llm_judge`: payloads in, one judge pass, two figures.

As for `metric: orca` (`orca_judge.metric`), each doc's value only carries the judge's inputs;
the aggregation judges every item of a (task, filter) once per evaluation session and reads
both figures from that pass: `llm_judge`, the mean normalised rating (rating - 1) / 4 over the
items the judge rated, and `llm_judge_failed`, the share of items it gave no rating (a failed
judgement is never counted as a rating). Per-item rows go to
`llm_judge_<task>_<filter>_<time>.jsonl` beside the harness's samples.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any

from eval_common.jsonio import write_jsonl
from orca_judge.errors import JudgeEndpointError, LlmJudgeError
from orca_judge.metric.aggregate import check_payloads, site_of
from orca_judge.metric.judge_pass import JudgeSession, active_session, item_id, session_scope
from orca_judge.metric.payloads import PAYLOAD_MARK, judge_inputs, payloads
from orca_judge.metric.per_item import file_name, write_pending
from orca_judge.prompted.judge import Judgement, PromptedJudge
from orca_judge.prompted.settings import METRIC, LlmJudgeSettings, resolve_settings

logger = logging.getLogger(__name__)

FIGURES = ("llm_judge", "llm_judge_failed")
HIGHER_IS_BETTER = MappingProxyType({"llm_judge": True, "llm_judge_failed": False})


@dataclass
class PromptedPass:
    """One judged (task, filter): its judgements, figures and who judged."""

    judgements: list[Judgement]
    figures: dict[str, float]
    identity: dict[str, Any]
    reported: bool = False


def figures_of(judgements: Sequence[Judgement]) -> dict[str, float]:
    """Mean normalised rating of the rated items, and the share of failed judgements."""
    rated = [j.rating_unit for j in judgements if j.rating_unit is not None]
    return {
        "llm_judge": sum(rated) / len(rated) if rated else math.nan,
        "llm_judge_failed": (len(judgements) - len(rated)) / len(judgements)
        if judgements
        else math.nan,
    }


def doc_less_payloads(references: Sequence[Any], predictions: Sequence[Any], **entry: Any) -> dict:
    """A harness's per-doc metric call: records reference and reply for the judge (no doc)."""
    inputs = judge_inputs(
        None, reference=references[0], candidate=predictions[0] if predictions else "", doc=None
    )
    return payloads(inputs, entry, doc_aware=False, figures=FIGURES)


def session_judge(session: JudgeSession, settings: LlmJudgeSettings) -> PromptedJudge:
    """The session's prompted judge for these settings, made once per evaluation and asked
    one test item then (`check_endpoint`): the wiring makes it before any generation."""
    key = (METRIC, settings.judge_key())
    if key not in session.judges:
        judge = PromptedJudge(settings)
        judge.check_endpoint()
        session.judges[key] = judge
    return session.judges[key]


def _pass_key(settings: LlmJudgeSettings, inputs: Sequence[Mapping[str, Any]], site: str) -> str:
    blob = json.dumps([METRIC, site, asdict(settings), list(inputs)], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def judged_pass(
    session: JudgeSession, settings: LlmJudgeSettings, inputs: list[dict[str, Any]], site: str
) -> PromptedPass:
    """Judge the items of one site once per session; every figure reads the same pass."""
    key = _pass_key(settings, inputs, site)
    if key in session.failed:
        raise session.failed[key]
    if key not in session.passes:
        judge = session_judge(session, settings)
        try:
            judgements = judge.score([{**i, "id": item_id(i)} for i in inputs])
        except Exception as err:
            session.failed[key] = err
            raise
        print(f"{site}: {judge.summary()}", file=sys.stderr)
        judge.print_failures(judgements)
        session.passes[key] = PromptedPass(judgements, figures_of(judgements), judge.describe())
    return session.passes[key]


def per_item_rows(
    judged: PromptedPass, inputs: Sequence[Mapping[str, Any]], task: str, filter_name: str
) -> list[dict[str, Any]]:
    """One row per item: where it is, what the judge read, its judgement, which judge."""
    return [
        {
            "task": task,
            "filter": filter_name,
            "index": item["index"],
            "inputs": {k: v for k, v in item.items() if k != "index"},
            "judge": judged.identity,
            **judgement.to_dict(),
        }
        for item, judgement in zip(inputs, judged.judgements, strict=True)
    ]


def aggregate(items: Sequence[Any]) -> float:
    """Judge the items of one (task, filter) once per evaluation; return the items' figure."""
    check_payloads(items)
    site_task, filter_name = site_of(items)
    figure = items[0][PAYLOAD_MARK]
    task = items[0].get("task") or site_task
    inputs = [
        {
            **item["inputs"],
            "index": i if item["inputs"].get("index") is None else item["inputs"]["index"],
        }
        for i, item in enumerate(items)
    ]
    raw = items[0]["settings"]
    site = f"{task}/{filter_name}"
    with session_scope(active_session()) as session:
        try:
            settings = resolve_settings(raw, where=f"task {task!r}, metric llm_judge")
            judged = judged_pass(session, settings, inputs, site)
        except (LlmJudgeError, JudgeEndpointError, OSError) as err:
            return _failed(session, site, task, filter_name, raw, inputs, err)
        if not judged.reported:
            folder = session.folder(settings.output_dir)
            if folder is not None:
                path = write_jsonl(
                    folder / file_name(METRIC, task, filter_name),
                    per_item_rows(judged, inputs, task, filter_name),
                )
                logger.info("%s: llm_judge per-item results: %s", site, path)
            judged.reported = True
    return judged.figures.get(figure, math.nan)


def _failed(
    session: JudgeSession,
    site: str,
    task: str,
    filter_name: str,
    raw: Mapping[str, Any],
    inputs: Sequence[Mapping[str, Any]],
    err: Exception,
) -> float:
    """Keep the run alive: log once, save the inputs for `orca llm-judge`, return nan."""
    if f"{METRIC}:{site}" in session.pending:
        return math.nan
    folder = session.folder(raw.get("output_dir"))
    where = ""
    if folder is not None:
        path = write_pending(folder, f"{METRIC}_{task}", filter_name, inputs)
        session.pending[f"{METRIC}:{site}"] = path
        where = f"; the {len(inputs)} judge inputs are saved in {path} (orca llm-judge --input)"
    message = f"{site}: llm_judge failed ({err}){where}"
    if session.record_failure(message):
        logger.error(message)
    return math.nan
