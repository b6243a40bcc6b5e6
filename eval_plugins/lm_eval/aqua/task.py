"""The lm-eval wrapper of the AQUA task: its task class and the results step."""

from __future__ import annotations

from collections.abc import Mapping

try:  # lm-eval 0.5: one public task class per output type
    from lm_eval.api.task import GenerateTask as GenerationTask
except ImportError:  # lm-eval 0.4.13: one class for every output type
    from lm_eval.api.task import ConfigurableTask as GenerationTask

from aqua_tasks.core.scoring import FALLBACK_METRICS, as_outcome
from aqua_tasks.errors import UncollectedOutcomesError
from aqua_tasks.task.aggregations import aqua_metric_of
from aqua_tasks.task.config import prepare_task_config, with_manifest
from aqua_tasks.task.definition import read_unparsed
from aqua_tasks.task.open_ended import open_metric_of
from eval_plugins.lm_eval.aqua.results import (
    STDERR_BOOT,
    fix_aqua_results,
    fix_fallback_counts,
    fix_open_results,
)
from eval_plugins.lm_eval.compat import scoring_pipeline


class AquaTask(GenerationTask):
    """A YAML-configured task whose audio input can be switched off explicitly.

    lm-eval 0.4.13 refuses audio tasks for models without multimodal support, and its API
    models fail on audio arguments, so built-in models can only run AQUA text-only. That mode
    must be asked for (`--metadata '{"audio": false}'`), and is recorded in the results.
    """

    def __init__(self, config: dict | None = None, **kwargs: object) -> None:
        config = dict(config or {})
        config = prepare_task_config(
            config, config.get("metadata") or {}, audio_key="doc_to_audio", no_audio=None
        )
        self.judge_settings = None
        if scoring_pipeline():
            # lm-eval 0.5 scores through its public Scorer pipeline: AQUA's one (see scorer.py).
            from eval_plugins.lm_eval.aqua import scorer

            scorer.register()
            self.judge_settings = scorer.judge_settings_of(config)
            config.setdefault("scorer", scorer.scorer_config(config, self.judge_settings))
        super().__init__(config=config, **kwargs)
        # After lm-eval built the docs: a data error surfaces from its `custom_dataset` call.
        self.config.metadata = with_manifest(self.config.metadata or {}, self.config.dataset_kwargs)

    def process_results(self, doc: Mapping, results: list) -> dict | None:
        """The task's per-item values; under lm-eval 0.5 an open task's also carry what its
        judge reads (lm-eval 0.4.13 gets them from the `metric: orca` wiring)."""
        values = super().process_results(doc, results)
        if self.judge_settings is None or values is None:
            return values
        from eval_plugins.lm_eval.aqua.scorer import judge_value

        return {**values, **judge_value(self, doc, results)}

    def apply_filters(self) -> list | None:
        """lm-eval's filters, then the LLM fallback (`aqua-rules+llm`) asked in one batch.

        lm-eval calls `process_results` item by item; reading every unparsed reply here first
        lets the fallback's requests run concurrently, and `process_results` finds them read.
        """
        filtered = super().apply_filters()
        pairs = [
            (instance.doc, reply)
            for instance in self.instances
            for reply in instance.filtered_resps.values()
            if isinstance(reply, str)
        ]
        read_unparsed(pairs)
        return filtered


def fix_results(task_dict: Mapping, results: dict, bootstrap_iters: int) -> dict:
    """evaluate()'s last step: pooled all-tracks rows, stderrs, counts (`fix_aqua_results`).

    Every task aggregated with AQUA's aggregations must have its per-item values collected
    (`eval_common.evaluation`, filled by `eval_plugins.lm_eval.compat` after lm-eval gathered
    them from every rank); one that has none stops the run rather than leaving lm-eval's
    averaged all-tracks row in place.
    """
    from eval_common.evaluation import aggregated_values, built_tasks

    collected = aggregated_values()
    outcomes = {}
    open_sites = {}
    readings: dict[str, dict[str, list]] = {}
    for task in built_tasks(task_dict):
        name = str(task.task_name)
        if any(open_metric_of(fn) is not None for fn in task.aggregation().values()):
            open_sites[name] = open_task_sites(name, collected)
            continue
        ours = {m for m, fn in task.aggregation().items() if aqua_metric_of(fn) is not None}
        if not ours:
            continue
        if name not in collected:
            raise UncollectedOutcomesError(
                f"{name}: lm-eval's per-item values of this AQUA task never reached the results "
                "step (eval_plugins.lm_eval.compat did not wrap this lm-eval's per-task "
                "aggregation), so its all-tracks rows cannot be pooled"
            )
        by_filter = {
            filter_key: tuple(as_outcome(v) for v in values)
            for (metric, filter_key), values in collected[name].items()
            if metric in ours
        }
        fallback = {
            filter_key: list(values)
            for (metric, filter_key), values in collected[name].items()
            if metric == FALLBACK_METRICS[0]
        }
        if fallback:
            readings[name] = fallback
        if by_filter:
            outcomes[name] = by_filter
    n_boot = min(bootstrap_iters, STDERR_BOOT)
    fixed = fix_aqua_results(results, outcomes, n_boot=n_boot)
    if readings:
        fixed = fix_fallback_counts(fixed, readings)
    return fix_open_results(fixed, open_sites, n_boot=n_boot) if open_sites else fixed


def open_task_sites(name: str, collected: Mapping) -> dict:
    """An open task's per filter values and judged outcomes (its judge pass, run once)."""
    from aqua_tasks.task.open_ended import site_outcomes

    if name not in collected:
        raise UncollectedOutcomesError(
            f"{name}: lm-eval's per-item values of this open-ended AQUA task never reached the "
            "results step (eval_plugins.lm_eval.compat did not wrap this lm-eval's per-task "
            "aggregation)"
        )
    sites = {}
    for (metric, filter_key), values in collected[name].items():
        if metric != "acc" or filter_key in sites:
            continue
        try:
            sites[filter_key] = (list(values), site_outcomes(name, filter_key, values))
        except Exception:  # the judge failed: its aggregation logged why; lm-eval's NaN stays
            continue
    return sites
