"""The harness-neutral half of `metric: orca`: per-doc payloads in, one batched judge pass out.

lm-eval and lmms-eval both call a metric's aggregation once per (figure, filter) with every
doc's value and nothing else. `aggregate` scores all payloads of a task and filter in one
pass of the evaluation's judge session and returns one figure. The harness's aggregation
call says nothing about which task and filter the values are from: each adapter's compat
module hands them over as `SitedValues`, which say so. Nothing here imports a harness.
"""

from __future__ import annotations

import logging
import math
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orca_judge.errors import OrcaMetricError
from orca_judge.metric.judge_pass import JudgePass, JudgeSession, active_session, session_scope
from orca_judge.metric.payloads import PAYLOAD_MARK, judge_inputs, payloads
from orca_judge.metric.per_item import write_pending, write_per_item
from orca_judge.metric.settings import resolve_settings

logger = logging.getLogger(__name__)


def doc_less_payloads(references: Sequence[Any], predictions: Sequence[Any], **entry: Any) -> dict:
    """A harness's per-doc metric call: records reference and reply for the judge (no doc)."""
    inputs = judge_inputs(
        None, reference=references[0], candidate=predictions[0] if predictions else "", doc=None
    )
    return payloads(inputs, entry, doc_aware=False)


class SitedValues(list):
    """One (task, filter)'s per-doc values, labelled by the harness adapter that collected them."""

    def __init__(self, values: Sequence[Any], task: str, filter_key: str) -> None:
        super().__init__(values)
        self.task = task
        self.filter_key = filter_key


def site_of(items: Sequence[Any]) -> tuple[str, str]:
    """The task and filter of an aggregation's values; OrcaMetricError when they are unlabelled."""
    if isinstance(items, SitedValues):
        return items.task, items.filter_key
    raise OrcaMetricError(
        "orca aggregation received values without their task and filter: run it inside an "
        "evaluation of lm-eval or lmms-eval with this package installed, whose compat module "
        "labels them"
    )


def check_payloads(items: Sequence[Any]) -> None:
    """Raise OrcaMetricError unless every collected value is a judge payload."""
    bad = next((v for v in items if not (isinstance(v, Mapping) and PAYLOAD_MARK in v)), None)
    if not items or bad is not None:
        raise OrcaMetricError(
            f"orca aggregation received {bad!r} instead of judge inputs; lm-eval reduces "
            "metrics of tasks with list-valued targets to any(); give the task a single "
            "reference, or run it with aqua eval / register_all() so that orca sees the doc"
        )


def in_doc_order(items: Sequence[Any]) -> Sequence[Any]:
    """The items in doc order when each carries its doc's position (a run of several processes
    gathers them rank by rank), else as given; every figure of a site sorts them alike."""
    indices = [item["inputs"].get("index") for item in items]
    if not items or any(i is None for i in indices) or "scored" not in items[0]:
        return items
    order = sorted(range(len(items)), key=indices.__getitem__)
    sorted_items = [items[i] for i in order]
    return (
        SitedValues(sorted_items, *site_of(items))
        if isinstance(items, SitedValues)
        else sorted_items
    )


def _scored(items: Sequence[Any]) -> list[Any] | None:
    """Predictions made where the items were collected (one process of several), if any."""
    found = [item.get("scored") for item in items]
    return found if any(f is not None for f in found) else None


def _pass_inputs(items: Sequence[Any]) -> list[dict[str, Any]]:
    inputs = []
    for index, item in enumerate(items):
        record = dict(item["inputs"])
        if record.get("index") is None:
            record["index"] = index
        inputs.append(record)
    return inputs


def judge_pass(items: Sequence[Any]) -> JudgePass:
    """The one judge pass of a (task, filter)'s payloads: run now, or the one already run.

    What other figures of the same items read (e.g. open-ended AQUA's, which decide each
    item by its expected rating): the same items give the same pass as `aggregate`'s, so
    the judge runs once per answer. Raises what the judge raised.
    """
    check_payloads(items)
    items = in_doc_order(items)
    site_task, filter_name = site_of(items)
    task = items[0].get("task") or site_task
    session = active_session()
    if session is None:
        raise OrcaMetricError(
            f"task {task!r}: judge figures need the evaluation's judge session; run them "
            "inside lm-eval or lmms-eval with this package installed"
        )
    settings = resolve_settings(items[0]["settings"], where=f"task {task!r}, metric orca")
    return session.run(settings, _pass_inputs(items), f"{task}/{filter_name}", _scored(items))


def aggregate(items: Sequence[Any]) -> float:
    """Score the items of one (task, filter) once per evaluation; return the items' figure."""
    check_payloads(items)
    items = in_doc_order(items)
    site_task, filter_name = site_of(items)
    figure = items[0][PAYLOAD_MARK]
    task = items[0].get("task") or site_task
    inputs = _pass_inputs(items)
    raw_settings = items[0]["settings"]
    # Outside a patched evaluate() (the harness's function bound before the patch), this one
    # call gets a session of its own.
    with session_scope(active_session()) as session:
        try:
            judged = judge_pass(items)
        except Exception as err:
            return report_failure(session, task, filter_name, raw_settings, inputs, err)
        if not judged.reported:
            settings = resolve_settings(raw_settings, where=f"task {task!r}, metric orca")
            folder = session.folder(settings.output_dir)
            write_per_item(judged, task, filter_name, items[0], folder)
            judged.reported = True
    value = judged.figures.get(figure, math.nan)
    if figure == "orca_disagreement" and math.isnan(value):
        logger.warning("%s: this judge's likelihood models no disagreement (Bernoulli)", task)
    return value


def report_failure(
    session: JudgeSession,
    task: str,
    filter_name: str,
    settings: Mapping[str, Any],
    inputs: Sequence[Mapping],
    err: Exception,
) -> float:
    """Keep the run (and its samples) alive: save the judge inputs for orca score, log, nan.

    Once per (task, filter): the other figures of a failed pass only return nan.
    """
    site = f"{task}/{filter_name}"
    if site in session.pending:
        return math.nan
    folder = session.folder(settings.get("output_dir"))
    folder = folder or Path(tempfile.mkdtemp(prefix="orca-pending-"))
    path = write_pending(folder, task, filter_name, inputs)
    session.pending[site] = path
    message = (
        f"{task}/{filter_name}: ORCA judge failed ({err}); the {len(inputs)} judge inputs are "
        f"saved in {path}: score them with `orca score --checkpoint CKPT --input {path}`"
    )
    if session.record_failure(message):
        logger.error(message)
    return math.nan
