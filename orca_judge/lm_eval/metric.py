"""`metric: orca` for lm-eval: per-doc judge inputs, one batched judge pass per (task, filter).

lm-eval calls a metric once per doc and its aggregation once per (metric, filter) with every
doc's value. The per-doc function therefore only records what the judge should read (a
payload); the aggregation scores all payloads of a task and filter in one batched pass of
the evaluation's judge session, and every companion figure (disagreement, agreement with
human ratings) is read from that pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orca_judge.lm_eval import compat
from orca_judge.metric.aggregate import aggregate, doc_less_payloads
from orca_judge.metric.settings import METRIC


def orca(references: Sequence[Any], predictions: Sequence[Any], **entry: Any) -> dict:
    """lm-eval's per-doc metric call: records reference and reply for the judge (no doc here).

    Settings are checked at aggregation, which reports problems without losing generations.
    """
    return doc_less_payloads(references, predictions, **entry)


def orca_aggregate(items: Sequence[Any]) -> float:
    """lm-eval aggregation for every orca figure: scores the items (once), returns the figure.

    The items come labelled with their task and filter (`compat.patch_task_aggregations`).
    """
    return aggregate(items)


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
