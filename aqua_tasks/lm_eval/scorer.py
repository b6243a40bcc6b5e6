"""AQUA's scoring under lm-eval 0.5: a `Scorer` of lm-eval's public scoring pipeline.

lm-eval 0.5 scores a task through scorers (`lm_eval.scorers`): filter, score, reduce,
aggregate. The AQUA task keeps its own `process_results` (the per-item outcome of each
reply), which lm-eval 0.5 still calls first; this scorer adds what lm-eval 0.4.13 needed patches
for, on public ground:

- its metrics are AQUA's own figures, built from the task's `metric_list` as given: lm-eval's
  registry holds `acc` for log-likelihood tasks and would refuse AQUA's `acc` by output type;
- `aggregate` sees every item of the task at once and writes the row lm-eval 0.4.13 gets from
  `aqua_tasks.lm_eval.task.fix_results`: every figure, the standard errors (binomial for
  accuracies, clip bootstrap for CA), counts as integers with no direction and no standard
  error — the same function, so both releases give the same figures.

Registered as `scorer: aqua` by `register()`; the AQUA task class asks for it on lm-eval 0.5.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lm_eval.api.metrics import Metric
from lm_eval.scorers import GenScorer

from aqua_tasks.core.scoring import FALLBACK_METRICS
from aqua_tasks.lm_eval.results import (
    STDERR_BOOT,
    fix_aqua_results,
    fix_fallback_counts,
    metric_directions,
)
from aqua_tasks.task.aggregations import aqua_metric_of

SCORER = "aqua"
# The one task a scorer scores, as the results helpers key it.
_TASK = "task"


def _from_process_results(*args: Any, **kwargs: Any) -> None:
    """Never called: the AQUA task's process_results gives every figure's per-item value."""
    raise RuntimeError("AQUA figures come from the task's process_results")


def _aggregation(entry: Mapping[str, Any]) -> Callable[[list], float] | None:
    aggregation = entry.get("aggregation")
    if aggregation is None or callable(aggregation):
        return aggregation
    from lm_eval.api.registry import get_aggregation

    return get_aggregation(str(aggregation))


@dataclass(kw_only=True)
class AquaScorer(GenScorer):
    """An AQUA task's figures from its per-item outcomes, pooled over clips in one pass."""

    @classmethod
    def _resolve_metrics(
        cls, metric_cfg: Sequence[Mapping[str, Any] | Metric], output_type: str
    ) -> list[Metric]:
        metrics = []
        for entry in metric_cfg:
            if isinstance(entry, Metric):
                metrics.append(entry)
                continue
            metrics.append(
                Metric(
                    name=str(entry["metric"]),
                    fn=_from_process_results,
                    aggregation=_aggregation(entry),
                    higher_is_better=bool(entry.get("higher_is_better", True)),
                    output_type={output_type or "generate_until"},
                )
            )
        return metrics

    def aggregate(
        self,
        reduced_docs: Mapping[int, Mapping[str, Any]],
        bootstrap_iters: int | None = 100000,
        aggregation_overrides: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], int]:
        """Every figure of the task, as lm-eval 0.4.13 reports it with this package."""
        docs = [reduced_docs[doc_id] for doc_id in sorted(reduced_docs)]
        values: dict[str, list] = {}
        for doc in docs:
            for name, value in doc.items():
                values.setdefault(name, []).append(value)
        ours = [m.name for m in self.metrics or [] if aqua_metric_of(m.aggregation) is not None]
        row: dict[str, Any] = {}
        n_boot = min(int(bootstrap_iters or 0), STDERR_BOOT)
        results: dict[str, Any] = {"results": {_TASK: row}}
        if ours and ours[0] in values:
            results = fix_aqua_results(
                results, {_TASK: {self.name: values[ours[0]]}}, n_boot=n_boot
            )
        if FALLBACK_METRICS[0] in values:
            readings = {_TASK: {self.name: values[FALLBACK_METRICS[0]]}}
            results = fix_fallback_counts(results, readings)
        row = dict(results["results"][_TASK])
        for metric in self.metrics or []:
            key = f"{metric.name},{self.name}"
            if key not in row and metric.name in values and metric.aggregation is not None:
                row[key] = metric.aggregation(values[metric.name])
                row[f"{metric.name}_stderr,{self.name}"] = "N/A"
        return row, len(docs)

    @property
    def higher_is_better(self) -> dict[str, bool]:  # type: ignore[override]
        """Directions as lm-eval 0.4.13 reports them with this package: none for counts."""
        directions = {m.name: m.higher_is_better for m in self.metrics or []}
        directions |= {k: v for k, v in metric_directions().items() if k in directions}
        directions |= {k: None for k in FALLBACK_METRICS if k in directions}
        return directions  # type: ignore[return-value]


def register() -> None:
    """Register `scorer: aqua` with lm-eval 0.5 (public registry); idempotent."""
    from lm_eval.api.registry import register_scorer, scorer_registry

    if scorer_registry.get(SCORER, None) is not AquaScorer:
        register_scorer(SCORER)(AquaScorer)
