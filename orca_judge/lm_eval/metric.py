"""`metric: orca` for lm-eval: per-doc judge inputs, one batched judge pass per (task, filter).

lm-eval calls a metric once per doc and its aggregation once per (metric, filter) with every
doc's value. The per-doc function therefore only records what the judge should read (a
payload); the aggregation scores all payloads of a task and filter in one batched pass of
the evaluation's judge session, and every companion figure (disagreement, agreement with
human ratings) is read from that pass.
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import compat
from .judge_pass import JudgeSession, active_session, session_scope
from .payloads import PAYLOAD_MARK, judge_inputs, payloads
from .per_item import write_pending, write_per_item
from .settings import METRIC, OrcaMetricError, resolve_settings

logger = logging.getLogger(__name__)


def orca(references: Sequence[Any], predictions: Sequence[Any], **entry: Any) -> dict:
    """lm-eval's per-doc metric call: records reference and reply for the judge (no doc here).

    Settings are checked at aggregation, which reports problems without losing generations.
    """
    inputs = judge_inputs(
        None, reference=references[0], candidate=predictions[0] if predictions else "", doc=None
    )
    return payloads(inputs, entry, doc_aware=False)


def _check_payloads(items: Sequence[Any]) -> None:
    bad = next((v for v in items if not (isinstance(v, Mapping) and PAYLOAD_MARK in v)), None)
    if not items or bad is not None:
        raise OrcaMetricError(
            f"orca aggregation received {bad!r} instead of judge inputs; lm-eval reduces "
            "metrics of tasks with list-valued targets to any(); give the task a single "
            "reference, or run it with aqua-eval / register_all() so that orca sees the doc"
        )


def orca_aggregate(items: Sequence[Any]) -> float:
    """lm-eval aggregation for every orca figure: scores the items (once), returns the figure."""
    _check_payloads(items)
    figure = items[0][PAYLOAD_MARK]
    site_task, site_filter = compat.aggregation_site()
    task = items[0].get("task") or site_task or "task"
    filter_name = site_filter or "filter"
    inputs = []
    for index, item in enumerate(items):
        record = dict(item["inputs"])
        if record.get("index") is None:
            record["index"] = index
        inputs.append(record)
    raw_settings = items[0]["settings"]
    # Outside a patched evaluate() (lm-eval's function bound before the patch), this one
    # call gets a session of its own.
    with session_scope(active_session()) as session:
        try:
            settings = resolve_settings(raw_settings, where=f"task {task!r}, metric orca")
            judged = session.run(settings, inputs, f"{task}/{filter_name}")
        except Exception as err:
            return _report_failure(session, task, filter_name, raw_settings, inputs, err)
        if not judged.reported:
            folder = session.folder(settings.output_dir)
            write_per_item(judged, task, filter_name, items[0], folder)
            judged.reported = True
    value = judged.figures.get(figure, math.nan)
    if figure == "orca_disagreement" and math.isnan(value):
        logger.warning("%s: this judge's likelihood models no disagreement (Bernoulli)", task)
    return value


def _report_failure(
    session: JudgeSession,
    task: str,
    filter_name: str,
    settings: Mapping[str, Any],
    inputs: Sequence[Mapping],
    err: Exception,
) -> float:
    """Keep the run (and its samples) alive: save the judge inputs for orca-score, log, nan."""
    folder = session.folder(settings.get("output_dir") or os.environ.get("ORCA_OUTPUT_DIR"))
    folder = folder or Path(tempfile.mkdtemp(prefix="orca-pending-"))
    path = write_pending(folder, task, filter_name, inputs)
    message = (
        f"{task}/{filter_name}: ORCA judge failed ({err}); the {len(inputs)} judge inputs are "
        f"saved in {path}: score them with `orca-score --checkpoint CKPT --input {path}`"
    )
    if session.record_failure(message):
        logger.error(message)
    return math.nan


def register() -> None:
    """Register metric and aggregation `orca` with lm-eval, and scope judge sessions; idempotent."""
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
    compat.patch_evaluate()


# `metric: !function orca_judge.lm_eval.metric.orca` imports this module while lm-eval builds
# the task, just before it looks up the aggregation registered under the metric's name (and
# before it calls evaluate(), which then runs in a judge session of its own).
register()
