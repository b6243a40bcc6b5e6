"""`scorer: orca` and `scorer: llm_judge` under lm-eval's 0.5 line: the doc-aware judges on
lm-eval's public scoring pipeline.

lm-eval 0.5 hands a task's scorer every instance at once (`Scorer.score_instances`), each with
its doc, rendered prompt, target and filtered reply — what lm-eval 0.4.13 needed patches for.
A task asks for a judge with `scorer: orca` (or `scorer: llm_judge`) beside its `metric_list`
entry; the scorer reads the entry's settings (the checkpoint may also come from
ORCA_CHECKPOINT), loads the judge when the task is built (before any generation), judges every
reply of the task in one batched pass and reports the same figures as lm-eval 0.4.13 with this
package (`orca`, `orca_disagreement`, `orca_with_question`, …; `llm_judge`,
`llm_judge_failed`); the task's other metrics are scored as lm-eval scores them. Per-item
judge results go to the entry's `output_dir`. Settings come from the entry, then from the
`--metadata` of an `aqua eval` run (`{"orca": {...}}`, `{"llm_judge": {...}}`, as under lm-eval
0.4.13; plain `lm_eval` 0.5 hands a scorer no metadata); a judge that fails leaves its figures
NaN and the samples written, and `aqua eval` ends with the failure and exit status 1. One
process per run: a run of several processes is refused before generation (lm-eval 0.4.13 with
this package splits the judging instead).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval.api.metrics import Metric
from lm_eval.scorers import GenScorer, ScoredDoc

from eval_common.jsonio import write_jsonl
from eval_plugins.lm_eval.cli_run import run_metadata
from orca_judge.errors import LlmJudgeError, OrcaMetricError
from orca_judge.metric.judge_pass import JudgeSession, active_session
from orca_judge.metric.payloads import HIGHER_IS_BETTER, figures_for, judge_inputs, needs_prompt
from orca_judge.metric.per_item import file_name, write_per_item
from orca_judge.metric.settings import METRIC, resolve_settings
from orca_judge.prompted import metric as prompted
from orca_judge.prompted.settings import METRIC as LLM_METRIC
from orca_judge.prompted.settings import resolve_settings as resolve_llm_settings

NOT_A_SCORE = "N/A"
logger = logging.getLogger(__name__)


def _judge_entry(metric_list: Sequence[Any], name: str, where: str, error: type) -> dict:
    """The entry naming the judge, its settings flat as written in the YAML.

    lm-eval 0.5 moves an entry's own keys under `kwargs`; the settings are read from there.
    """
    entries = [e for e in metric_list if isinstance(e, Mapping) and e.get("metric") == name]
    if len(entries) != 1:
        raise error(
            f"{where}: scorer {name} needs exactly one `- metric: {name}` entry in the "
            f"metric_list (found {len(entries)})"
        )
    entry = dict(entries[0])
    return {**{k: v for k, v in entry.items() if k != "kwargs"}, **dict(entry.get("kwargs") or {})}


def _one_process(where: str, error: type) -> None:
    if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
        raise error(
            f"{where}: judging in a run of several processes is not supported under lm-eval "
            "0.5 yet; run one process, or lm-eval 0.4.13"
        )


def _figure(name: str, higher_is_better: bool, output_type: str) -> Metric:
    return Metric(
        name=name,
        fn=_judged_together,
        higher_is_better=higher_is_better,
        output_type={output_type or "generate_until"},
    )


def _judged_together(*args: Any, **kwargs: Any) -> None:
    """Never called: a judge scores every reply of a task together (`score_instances`)."""
    raise RuntimeError("judge figures come from the scorer's batched pass")


@dataclass(kw_only=True)
class _JudgeScorer(GenScorer):
    """What both judges share: the entry split off the other metrics, figures of one pass."""

    settings: Any = None
    figure_names: tuple[str, ...] = ()
    session: JudgeSession = field(default_factory=JudgeSession)
    figures: dict[str, float] = field(default_factory=dict)

    METRIC_NAME = ""

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any], *, output_type: str | None = None, **kwargs: Any):
        name = cfg.get("name", "none")
        where = f"filter {name!r}, metric {cls.METRIC_NAME}"
        metric_list = list(cfg.get("metric_list") or [])
        entry = _judge_entry(metric_list, cls.METRIC_NAME, where, cls.error())
        _one_process(where, cls.error())
        others = [e for e in metric_list if e.get("metric") != cls.METRIC_NAME]
        # Failures go to the command-line run's log (`aqua eval` ends with them, exit 1).
        outer = active_session()
        session = JudgeSession(failures=outer.failures) if outer is not None else JudgeSession()
        settings, figures = cls.prepare(entry, session, where)
        directions = cls.directions()
        metrics = cls._resolve_metrics(others, output_type or "") if others else []
        metrics += [_figure(f, directions[f], output_type or "") for f in figures]
        return cls(
            name=name,
            filter=cls._build_filter(name, cfg),
            metrics=metrics,
            settings=settings,
            figure_names=figures,
            session=session,
            **kwargs,
        )

    @classmethod
    def error(cls) -> type:
        raise NotImplementedError

    @classmethod
    def directions(cls) -> Mapping[str, bool]:
        raise NotImplementedError

    @classmethod
    def prepare(cls, entry: dict, session: JudgeSession, where: str) -> tuple[Any, tuple[str, ...]]:
        """The settings (checked) and the figures reported; loads the judge now."""
        raise NotImplementedError

    def judge_all(self, task: str, items: list[dict[str, Any]]) -> dict[str, float]:
        """The figures of one batched judge pass over the items."""
        raise NotImplementedError

    def item_of(self, instance: Any, reply: Any, index: int) -> dict[str, Any]:
        """What the judge reads of one doc and its reply, as under lm-eval 0.4.13."""
        doc = instance.doc
        prompt = instance.arguments[0] if needs_prompt(self.settings, doc) else None
        return judge_inputs(
            self.settings,
            reference=instance.target,
            candidate=reply,
            doc=doc,
            index=index,
            prompt=prompt,
        )

    def score_instances(self, instances: Mapping[int, list[Any]]) -> dict[int, ScoredDoc]:
        scored: dict[int, ScoredDoc] = {}
        judged = []
        task = ""
        for doc_id, doc_instances in instances.items():
            reference, predictions, metric_kwargs = self._extract_inputs(doc_instances)
            others = self._dispatch_metrics(reference, predictions, metric_kwargs)
            scored[doc_id] = ScoredDoc(
                doc_id=doc_id,
                reference=reference,
                scores={k: v if isinstance(v, list) else [v] for k, v in others.items()},
            )
            reply = predictions[0] if isinstance(predictions, list) and predictions else ""
            judged.append((doc_instances[0], reply))
            task = str(getattr(doc_instances[0], "task_name", "") or task)
        self.figures = {}
        if judged:
            try:  # a doc the judge cannot read (bad ratings) fails the pass like the judge
                items = [
                    self.item_of(instance, reply, i) for i, (instance, reply) in enumerate(judged)
                ]
                self.figures = self.judge_all(task, items)
            except Exception as err:  # the run and its samples survive; the figures are NaN
                message = f"{task}/{self.name}: {self.METRIC_NAME} judge failed ({err})"
                logger.error("%s; its figures are NaN", message)
                self.session.failures.append(message)
        return scored

    def _dispatch_metrics(self, references, predictions, metric_kwargs=None):
        """The task's other metrics only: the judge's figures come from its one pass."""
        judged = set(self.figure_names)
        kept = [m for m in self.metrics or [] if m.name not in judged]
        ctx = {**self.context, **(metric_kwargs or {})}
        result: dict[str, Any] = {}
        for metric in kept:
            score = metric.compute(references, predictions, **ctx)
            result.update(score if isinstance(score, dict) else {metric.name: score})
        return result

    def aggregate(self, reduced_docs, bootstrap_iters=100000, aggregation_overrides=None):
        row, count = super().aggregate(reduced_docs, bootstrap_iters, aggregation_overrides)
        for name in self.figure_names:
            row[f"{name},{self.name}"] = self.figures.get(name, float("nan"))
            row[f"{name}_stderr,{self.name}"] = NOT_A_SCORE
        return row, max(count, len(reduced_docs))


@dataclass(kw_only=True)
class OrcaScorer(_JudgeScorer):
    """`scorer: orca`: the ORCA judge over every reply of the task, in one batched pass."""

    METRIC_NAME = METRIC

    @classmethod
    def error(cls) -> type:
        return OrcaMetricError

    @classmethod
    def directions(cls) -> Mapping[str, bool]:
        return HIGHER_IS_BETTER

    @classmethod
    def prepare(cls, entry: dict, session: JudgeSession, where: str):
        settings = resolve_settings(entry, run_metadata(), where=where)
        try:
            judge = session.judge(settings)
        except OrcaMetricError as err:
            raise OrcaMetricError(f"{where}: {err}") from err
        return settings, figures_for(settings, judge.config.likelihood)

    def judge_all(self, task: str, items: list[dict[str, Any]]) -> dict[str, float]:
        judged = self.session.run(self.settings, items, f"{task}/{self.name}")
        folder = self.session.folder(self.settings.output_dir)
        payload = {"settings": {"output_dir": self.settings.output_dir}, "inputs": items[0]}
        write_per_item(judged, task, self.name, payload, folder)
        return dict(judged.figures)


@dataclass(kw_only=True)
class LlmJudgeScorer(_JudgeScorer):
    """`scorer: llm_judge`: a prompted judge over every reply of the task, concurrently."""

    METRIC_NAME = LLM_METRIC

    @classmethod
    def error(cls) -> type:
        return LlmJudgeError

    @classmethod
    def directions(cls) -> Mapping[str, bool]:
        return prompted.HIGHER_IS_BETTER

    @classmethod
    def prepare(cls, entry: dict, session: JudgeSession, where: str):
        settings = resolve_llm_settings(entry, run_metadata(), where=where)
        prompted.session_judge(session, settings)  # made now: bad settings stop generation
        return settings, prompted.FIGURES

    def judge_all(self, task: str, items: list[dict[str, Any]]) -> dict[str, float]:
        site = f"{task}/{self.name}"
        judged = prompted.judged_pass(self.session, self.settings, items, site)
        if self.settings.output_dir:
            rows = prompted.per_item_rows(judged, items, task, self.name)
            path = Path(self.settings.output_dir) / file_name(LLM_METRIC, task, self.name)
            logger.info("%s: llm_judge per-item results: %s", site, write_jsonl(path, rows))
        return dict(judged.figures)


# The output type a bare `- metric: orca` resolves to: lm-eval 0.5 refuses the task when it is
# built (before any generation) naming it, since its default scorer never hands a metric the
# doc, and a judge without the question would be a different figure under the same name.
NEEDS_SCORER = "generate_until, with `scorer: {name}` on the task (lm-eval 0.5)"


def _bare_metric(*args: Any, **kwargs: Any) -> None:
    """Never called: lm-eval 0.5 refuses a bare judge metric by its output type (see above)."""
    raise RuntimeError("a judge metric needs its scorer under lm-eval 0.5")


def register() -> None:
    """Register `scorer: orca` and `scorer: llm_judge` with lm-eval 0.5, and the bare metric
    names as refusals that say to add the scorer; idempotent."""
    from lm_eval.api.registry import (
        metric_registry,
        register_metric,
        register_scorer,
        scorer_registry,
    )

    for name, cls in ((METRIC, OrcaScorer), (LLM_METRIC, LlmJudgeScorer)):
        if scorer_registry.get(name, None) is not cls:
            register_scorer(name)(cls)
        if name not in metric_registry:
            register_metric(name, output_type=NEEDS_SCORER.format(name=name))(_bare_metric)
