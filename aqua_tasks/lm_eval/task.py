"""The functions AQUA task YAMLs reference with `!function`: dataset, prompt, audio, scoring."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

import datasets
from lm_eval.api.task import ConfigurableTask

from aqua_tasks.audio.clips import AudioFileError, AudioRoots, LazyAudio, probe_audio, resolve_audio
from aqua_tasks.core.data import check_track, check_variant, load_items, track_file
from aqua_tasks.core.docs import audio_enabled, clip_indices, doc_to_item, item_to_doc
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR, get_extractor_name
from aqua_tasks.core.manifest import DOC_FIELDS, run_manifest
from aqua_tasks.core.prompts import check_prompt_style, render_prompt
from aqua_tasks.core.scoring import (
    ALL_METRICS,
    ItemOutcome,
    as_outcome,
    item_outcome,
    pack_outcome,
    score_reply,
    summarize,
)
from aqua_tasks.lm_eval.results import STDERR_BOOT, UncollectedOutcomesError, fix_aqua_results
from eval_common.cli import parse_bool

logger = logging.getLogger(__name__)


class AquaTask(ConfigurableTask):
    """A YAML-configured task whose audio input can be switched off explicitly.

    lm-eval 0.4.13 refuses audio tasks for models without multimodal support, and its API
    models fail on audio arguments, so built-in models can only run AQUA text-only. That mode
    must be asked for (`--metadata '{"audio": false}'`), and is recorded in the results.
    """

    def __init__(self, config: dict | None = None, **kwargs: object) -> None:
        config = dict(config or {})
        config.pop("class", None)  # the factory's routing key, not a TaskConfig field
        if not audio_enabled(config.get("metadata") or {}):
            config["doc_to_audio"] = None
            logger.warning(
                "%s: text-only run (audio: false): the model never hears the clips",
                config.get("task"),
            )
        super().__init__(config=config, **kwargs)
        # Recorded in lm-eval's results ("configs" -> metadata), also under plain lm_eval:
        # the one copy of the manifest fields the docs leave out (see manifest.DOC_FIELDS).
        settings = {**(self.config.metadata or {}), **(self.config.dataset_kwargs or {})}
        self.config.metadata = dict(self.config.metadata or {}) | {
            "aqua_manifest": task_manifest(**docs_arguments(settings))
        }


def task_manifest(
    track: str,
    variant: str = "main",
    *,
    data_dir: str | None = None,
    prompt_style: str = "plain",
    extractor: str = DEFAULT_EXTRACTOR,
) -> dict[str, str]:
    """The manifest of one track's task (data file hash, prompt, extractor, versions)."""
    check_track(track)
    check_variant(variant)
    check_prompt_style(prompt_style)
    return run_manifest(
        data_file=track_file(data_dir, track, variant),
        track=track,
        variant=variant,
        prompt_style=prompt_style,
        extractor=get_extractor_name(extractor),
    )


def build_docs(
    track: str,
    variant: str = "main",
    *,
    data_dir: str | None = None,
    prompt_style: str = "plain",
    extractor: str = DEFAULT_EXTRACTOR,
    exclude_defective: object = False,
    settings: Mapping | None = None,
) -> list[dict]:
    """Docs of one track: validated items with their audio resolved (not decoded)."""
    manifest = task_manifest(
        track, variant, data_dir=data_dir, prompt_style=prompt_style, extractor=extractor
    )
    run = {key: manifest[key] for key in DOC_FIELDS} | {
        "exclude_defective": parse_bool("exclude_defective", exclude_defective)
    }
    settings = settings or {}
    with_audio = audio_enabled(settings)
    roots = AudioRoots.from_settings(settings)
    items = load_items(data_dir, track, variant)
    clips = clip_indices(items)
    docs = []
    for item in items:
        if not with_audio:
            audio_path, audio_error = "", "text-only run: no audio"
        else:
            try:
                audio_path = str(resolve_audio(track, item.audio_filename, roots))
                audio_error = ""
            except AudioFileError as error:
                # Reported when lm-eval builds this item's request: under --limit an absent
                # clip that is never requested must not stop the run.
                audio_path, audio_error = "", str(error)
        docs.append(
            item_to_doc(
                item,
                audio_path=audio_path,
                audio_error=audio_error,
                run=run,
                clip_index=clips[item.clip_key],
            )
        )
    return docs


def docs_arguments(settings: Mapping) -> dict:
    """`--metadata` keys and the YAML's `dataset_kwargs`, as `task_manifest` takes them."""
    return {
        "track": str(settings.get("track")),
        "variant": str(settings.get("variant") or "main"),
        "data_dir": settings.get("data_dir"),
        "prompt_style": str(settings.get("prompt") or "plain"),
        "extractor": str(settings.get("extractor") or DEFAULT_EXTRACTOR),
    }


def load_dataset(**kwargs: object) -> datasets.DatasetDict:
    """`custom_dataset` hook: receives `--metadata` keys and the YAML's `dataset_kwargs`."""
    docs = build_docs(
        **docs_arguments(kwargs),
        exclude_defective=kwargs.get("exclude_defective", False),
        settings=kwargs,
    )
    excluded = sum(1 for d in docs if d["exclude_defective"] and d["flags"])
    if excluded:
        logger.warning(
            "aqua_%s: exclude_defective is on: %d flagged items are excluded from the metrics",
            kwargs.get("track"),
            excluded,
        )
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})


def doc_to_text(doc: Mapping) -> str:
    """The released prompt (stem, inline options, guidance) after the audio placeholder."""
    return render_prompt(doc)


def doc_to_target(doc: Mapping) -> str:
    """Gold as '(letter) text' for logs; scoring uses the option text."""
    return f"({chr(ord('a') + int(doc['answer_index']))}) {doc['answer']}"


def doc_to_audio(doc: Mapping) -> list[LazyAudio]:
    """The clip as a lazily decoded 16 kHz mono array; a missing file fails here, pre-inference."""
    if doc["audio_error"]:
        raise AudioFileError(f"aqua_{doc['track']} item {doc['id']}: {doc['audio_error']}")
    try:
        probe_audio(doc["audio_path"])
    except AudioFileError as error:
        raise AudioFileError(f"aqua_{doc['track']} item {doc['id']}: {error}") from None
    return [LazyAudio(doc["audio_path"])]


def process_results(doc: Mapping, results: Sequence[str]) -> dict[str, int]:
    """Score one reply; every metric receives the same packed per-item outcome."""
    reply = results[0] if results else ""
    verdict = score_reply(
        doc_to_item(doc),
        reply if isinstance(reply, str) else str(reply),
        extractor=doc["extractor"],
        exclude_defective=bool(doc["exclude_defective"]),
    )
    # lm-eval logs this value once per metric in every sample line: it holds only what the
    # metrics read, packed into one small integer (see scoring.pack_outcome).
    return dict.fromkeys(ALL_METRICS, pack_outcome(int(doc["clip_index"]), item_outcome(verdict)))


@functools.lru_cache(maxsize=8)
def task_summary(outcomes: tuple[ItemOutcome, ...]) -> Mapping[str, float]:
    """All AQUA metrics of one task's outcomes (`summarize`), computed once per task."""
    # lm-eval hands each of the 18 aggregations its own list of the same per-item outcomes.
    # Memoising on the full (hashable) outcome tuple makes `summarize` run once per task:
    # the result is a pure function of that key, so a hit returns exactly what a fresh
    # computation would, whatever ran before; the read-only view keeps it that way.
    return MappingProxyType(summarize(outcomes))


def fix_results(task_dict: Mapping, results: dict, bootstrap_iters: int) -> dict:
    """evaluate()'s last step: pooled all-tracks rows, stderrs, counts (`fix_aqua_results`).

    Every task aggregated with AQUA's aggregations must have its per-item values collected
    by `orca_judge.lm_eval.compat` (after lm-eval gathered them from every rank); one that has
    none stops the run rather than leaving lm-eval's averaged all-tracks row in place.
    """
    from orca_judge.lm_eval.compat import aggregated_values, built_tasks

    collected = aggregated_values()
    outcomes = {}
    for task in built_tasks(task_dict):
        name = str(task.task_name)
        ours = {m for m, fn in task.aggregation().items() if aqua_metric_of(fn) is not None}
        if not ours:
            continue
        if name not in collected:
            raise UncollectedOutcomesError(
                f"{name}: lm-eval's per-item values of this AQUA task never reached the results "
                "step (orca_judge.lm_eval.compat did not wrap this lm-eval's per-task "
                "aggregation), so its all-tracks rows cannot be pooled"
            )
        by_filter = {
            filter_key: tuple(as_outcome(v) for v in values)
            for (metric, filter_key), values in collected[name].items()
            if metric in ours
        }
        if by_filter:
            outcomes[name] = by_filter
    return fix_aqua_results(results, outcomes, n_boot=min(bootstrap_iters, STDERR_BOOT))


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
