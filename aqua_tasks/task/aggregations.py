"""The AQUA task's aggregations: each AQUA metric of a task's per-item outcomes, computed once."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from types import MappingProxyType

from aqua_tasks.core.extract.fallback import fallback_counts
from aqua_tasks.core.scoring import ItemOutcome, as_outcome, summarize

logger = logging.getLogger(__name__)


@functools.lru_cache(maxsize=8)
def task_summary(outcomes: tuple[ItemOutcome, ...]) -> Mapping[str, float]:
    """All AQUA metrics of one task's outcomes (`summarize`), computed once per task."""
    # lm-eval hands each of the 18 aggregations its own list of the same per-item outcomes.
    # Memoising on the full (hashable) outcome tuple makes `summarize` run once per task:
    # the result is a pure function of that key, so a hit returns exactly what a fresh
    # computation would, whatever ran before; the read-only view keeps it that way.
    return MappingProxyType(summarize(outcomes))


def task_metric(metric: str, outcomes: tuple[ItemOutcome, ...]) -> float:
    """One AQUA metric of a task's outcomes; `acc` also warns of items it cannot condition."""
    summary = task_summary(outcomes)
    if metric == "acc" and summary["n_unconditioned"]:
        logger.warning(
            "%d unanswerable items have no Solvable item of their clip in this run "
            "(--limit/--samples?): they count in acc_* but not in ca_*/joint_*",
            int(summary["n_unconditioned"]),
        )
    return summary[metric]


# Attribute of an AQUA aggregation: the metric it returns.
AQUA_METRIC = "aqua_metric"


def aqua_metric_of(aggregation: object) -> str | None:
    """The AQUA metric an aggregation function returns (None: not one of AQUA's)."""
    return getattr(aggregation, AQUA_METRIC, None)


def _aggregation(metric: str) -> Callable[[list], float]:
    def aggregate(values: list) -> float:
        return task_metric(metric, tuple(as_outcome(v) for v in values))

    aggregate.__name__ = f"aggregate_{metric}"
    aggregate.__doc__ = f"Aggregation (lm-eval and lmms-eval) returning the AQUA metric {metric!r}."
    setattr(aggregate, AQUA_METRIC, metric)
    return aggregate


aggregate_acc = _aggregation("acc")
aggregate_acc_aad = _aggregation("acc_aad")
aggregate_acc_iasd = _aggregation("acc_iasd")
aggregate_acc_iaqd = _aggregation("acc_iaqd")
aggregate_ca_aad = _aggregation("ca_aad")
aggregate_ca_iasd = _aggregation("ca_iasd")
aggregate_ca_iaqd = _aggregation("ca_iaqd")
aggregate_joint_aad = _aggregation("joint_aad")
aggregate_joint_iasd = _aggregation("joint_iasd")
aggregate_joint_iaqd = _aggregation("joint_iaqd")
aggregate_unparsed_rate = _aggregation("unparsed_rate")
aggregate_n_ca_aad = _aggregation("n_ca_aad")
aggregate_n_ca_iasd = _aggregation("n_ca_iasd")
aggregate_n_ca_iaqd = _aggregation("n_ca_iaqd")
aggregate_n_items = _aggregation("n_items")
aggregate_n_solvable = _aggregation("n_solvable")
aggregate_n_unconditioned = _aggregation("n_unconditioned")
aggregate_n_excluded = _aggregation("n_excluded")


def aggregate_n_fallback(values: list) -> float:
    """Aggregation: replies the LLM fallback read into an answer (`aqua-rules+llm` runs)."""
    return float(fallback_counts(values)["n_fallback"])


def aggregate_n_fallback_failed(values: list) -> float:
    """Aggregation: replies the LLM fallback failed to read, left unparsed."""
    return float(fallback_counts(values)["n_fallback_failed"])
