"""AQUA's scoring under lm-eval 0.5: a `Scorer` of lm-eval's public scoring pipeline.

lm-eval 0.5 scores a task through scorers (`lm_eval.scorers`): filter, score, reduce,
aggregate. The AQUA task keeps its own `process_results` (the per-item outcome of each
reply), which lm-eval 0.5 still calls first; this scorer adds what lm-eval 0.4.13 needed patches
for, on public ground:

- its metrics are AQUA's own figures, built from the task's `metric_list` as given: lm-eval's
  registry holds `acc` for log-likelihood tasks and would refuse AQUA's `acc` by output type;
- `aggregate` sees every item of the task at once and writes the row lm-eval 0.4.13 gets from
  `eval_plugins.lm_eval.aqua.task.fix_results`: every figure, the standard errors (binomial for
  accuracies, clip bootstrap for CA), counts as integers with no direction and no standard
  error — the same function, so both releases give the same figures.

An open-ended task (its `metric_list` names `orca`) is judged here too: the task class adds
what the judge reads to each item's value, and `aggregate` runs the judge's one batched pass
and writes the row `fix_open_results` writes under lm-eval 0.4.13 (with the judge's own
`orca*` figures). The judge settings come from the task's metadata (`--metadata` `judge` /
`orca`, as under 0.4.13) and the judge is loaded when the task is built, before generation.

Registered as `scorer: aqua` by `register()`; the AQUA task class asks for it on lm-eval 0.5.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from lm_eval.api.metrics import Metric
from lm_eval.scorers import GenScorer

from aqua_tasks.core.scoring import FALLBACK_METRICS
from aqua_tasks.task.aggregations import aqua_metric_of
from aqua_tasks.task.config import with_judge
from aqua_tasks.task.open_ended import judged_task_outcomes
from eval_plugins.lm_eval.aqua.results import (
    STDERR_BOOT,
    fix_aqua_results,
    fix_fallback_counts,
    fix_open_results,
    metric_directions,
    open_directions,
)
from orca_judge.metric.judge_pass import JudgeSession
from orca_judge.metric.payloads import HIGHER_IS_BETTER as JUDGE_DIRECTIONS
from orca_judge.metric.payloads import figures_for, judge_inputs, needs_prompt
from orca_judge.metric.per_item import write_per_item
from orca_judge.metric.settings import METRIC as JUDGE_METRIC
from orca_judge.metric.settings import OrcaMetricSettings, resolve_settings

SCORER = "aqua"
# The one task a scorer scores, as the results helpers key it.
_TASK = "task"


def judge_settings_of(config: Mapping[str, Any]) -> OrcaMetricSettings | None:
    """An open task's judge settings (None for a multiple-choice task): its orca entry with the
    run's metadata, `judge` standing for `orca.checkpoint`, checked now."""
    entries = [e for e in config.get("metric_list") or [] if e.get("metric") == JUDGE_METRIC]
    if not entries:
        return None
    where = f"task {config.get('task')!r}, metric orca"
    return resolve_settings(entries[0], with_judge(config.get("metadata") or {}), where=where)


def scorer_config(config: Mapping[str, Any], settings: OrcaMetricSettings | None) -> Any:
    """The task's `scorer:` entry: `aqua`, with the judge's settings for an open task."""
    if settings is None:
        return SCORER
    kwargs = {"task": str(config.get("task")), "judge": asdict(settings)}
    return {"type": SCORER, "kwargs": kwargs}


def judge_value(task: Any, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """What the judge reads of one open item, as the `orca` value lm-eval 0.5 collects."""
    settings = task.judge_settings
    reply = results[0] if results else ""
    prompt = task.doc_to_text(doc) if needs_prompt(settings, doc) else None
    inputs = judge_inputs(
        settings, reference=task.doc_to_target(doc), candidate=reply, doc=doc, prompt=prompt
    )
    return {JUDGE_METRIC: {"inputs": inputs}}


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

    task: str = _TASK
    judge: dict[str, Any] | None = None  # an open task's judge settings
    session: JudgeSession = field(default_factory=JudgeSession)

    def __post_init__(self) -> None:
        if self.judge is not None:  # loaded when the task is built: before any generation
            self.session.judge(self.settings)

    @property
    def settings(self) -> OrcaMetricSettings:
        return OrcaMetricSettings(**(self.judge or {}))

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
        n_boot = min(int(bootstrap_iters or 0), STDERR_BOOT)
        if self.judge is not None:
            return self.open_row(values, n_boot), len(docs)
        ours = [m.name for m in self.metrics or [] if aqua_metric_of(m.aggregation) is not None]
        row: dict[str, Any] = {}
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

    def open_row(self, values: Mapping[str, list], n_boot: int) -> dict[str, Any]:
        """An open task's row: the judge's one pass decides each item, as under 0.4.13."""
        items = list(values.get("acc", []))
        inputs = [{**v["inputs"], "index": i} for i, v in enumerate(values[JUDGE_METRIC])]
        settings = self.settings
        judged = self.session.run(settings, inputs, f"{self.task}/{self.name}")
        folder = self.session.folder(settings.output_dir)
        payload = {"settings": {"output_dir": settings.output_dir}, "inputs": inputs[0]}
        write_per_item(judged, self.task, self.name, payload, folder)
        outcomes = judged_task_outcomes(items, [p.expected_unit for p in judged.predictions])
        sites = {_TASK: {self.name: (items, outcomes)}}
        row = fix_open_results({"results": {_TASK: {}}}, sites, n_boot=n_boot)["results"][_TASK]
        likelihood = self.session.judge(settings).config.likelihood
        for figure in figures_for(settings, likelihood):
            row[f"{figure},{self.name}"] = judged.figures.get(figure, float("nan"))
            row[f"{figure}_stderr,{self.name}"] = "N/A"
        return dict(row)

    @property
    def higher_is_better(self) -> dict[str, bool]:  # type: ignore[override]
        """Directions as lm-eval 0.4.13 reports them with this package: none for counts."""
        directions = {m.name: m.higher_is_better for m in self.metrics or []}
        directions |= {k: v for k, v in metric_directions().items() if k in directions}
        directions |= {k: None for k in FALLBACK_METRICS if k in directions}
        if self.judge is not None:
            settings = self.settings
            likelihood = self.session.judge(settings).config.likelihood
            directions |= open_directions()
            directions |= {f: JUDGE_DIRECTIONS[f] for f in figures_for(settings, likelihood)}
        return directions  # type: ignore[return-value]


def register() -> None:
    """Register `scorer: aqua` with lm-eval 0.5 (public registry); idempotent."""
    from lm_eval.api.registry import register_scorer, scorer_registry

    if scorer_registry.get(SCORER, None) is not AquaScorer:
        register_scorer(SCORER)(AquaScorer)
