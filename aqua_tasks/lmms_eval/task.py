"""The AQUA task class and the functions the lmms-eval task YAMLs reference with `!function`.

Docs, prompts, extraction and metrics are those of the lm-eval tasks (`aqua_tasks.lm_eval_task`,
`aqua_tasks.scoring`); only lmms-eval's way in differs. lmms-eval has no `custom_dataset` and
no `--metadata`, so the run settings lm-eval takes from `--metadata` come from the
`AQUA_METADATA` environment variable (the same JSON) over the YAML's `metadata:` block.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence

import datasets
from lmms_eval.api.task import ConfigurableTask

from aqua_tasks.audio import LazyAudio
from aqua_tasks.docs import audio_enabled, doc_to_item
from aqua_tasks.lm_eval_task import (
    build_docs,
    doc_to_audio,
    docs_arguments,
    task_manifest,
    task_summary,
)
from aqua_tasks.prompts import render_question
from aqua_tasks.scoring import ALL_METRICS, as_outcome, item_outcome, score_reply

logger = logging.getLogger(__name__)

METADATA_ENV = "AQUA_METADATA"
METADATA_HELP = (
    f"lmms-eval has no --metadata: pass the AQUA settings as JSON in {METADATA_ENV}, e.g. "
    f'{METADATA_ENV}=\'{{"data_dir": "/path/to/AQUA-Bench", "audio_root": "/path/to/audio"}}\''
)


def run_settings(yaml_metadata: Mapping | None, environ: Mapping[str, str] | None = None) -> dict:
    """The run's settings: the YAML's `metadata:` block, overridden by `AQUA_METADATA`."""
    text = (os.environ if environ is None else environ).get(METADATA_ENV, "").strip()
    given: object = {}
    if text:
        try:
            given = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{METADATA_ENV} is not valid JSON ({error}). {METADATA_HELP}"
            ) from None
        if not isinstance(given, dict):
            raise ValueError(f"{METADATA_ENV} must be a JSON object, got {text!r}. {METADATA_HELP}")
    settings = dict(yaml_metadata or {}) | given
    if not settings.get("data_dir"):
        raise ValueError(f"no AQUA data folder given. {METADATA_HELP}")
    return settings


class AquaTask(ConfigurableTask):
    """An lmms-eval task whose docs are built from the released AQUA files, as under lm-eval."""

    def __init__(self, config: dict | None = None, **kwargs: object) -> None:
        config = dict(config or {})
        config.pop("class", None)  # lmms-eval's routing key, not a TaskConfig field
        settings = run_settings(config.get("metadata"))
        if not audio_enabled(settings):
            config["doc_to_visual"] = no_audio
            logger.warning(
                "%s: text-only run (audio: false): the model never hears the clips",
                config.get("task"),
            )
        arguments = docs_arguments({**settings, **(config.get("dataset_kwargs") or {})})
        # Recorded in lmms-eval's results ("configs" -> metadata), as under lm-eval.
        config["metadata"] = settings | {"aqua_manifest": task_manifest(**arguments)}
        self._aqua_settings = settings
        super().__init__(config=config, **kwargs)

    def download(self, dataset_kwargs: Mapping | None = None) -> None:
        """Build the docs from the local released files (never fetched; no retries)."""
        settings = {**self._aqua_settings, **(dataset_kwargs or {})}
        docs = build_docs(
            **docs_arguments(settings),
            exclude_defective=settings.get("exclude_defective", False),
            settings=settings,
        )
        excluded = sum(1 for d in docs if d["exclude_defective"] and d["flags"])
        if excluded:
            logger.warning(
                "%s: exclude_defective is on: %d flagged items are excluded from the metrics",
                self.config.task,
                excluded,
            )
        # The docs hold file paths, never decoded audio: the media-free copy is the same.
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})
        self.dataset_no_image = self.dataset


def doc_to_visual(doc: Mapping) -> list[LazyAudio]:
    """The clip as a lazily decoded 16 kHz mono `{array, sampling_rate}` mapping."""
    return doc_to_audio(doc)


def no_audio(doc: Mapping) -> list:
    """No clip: an explicit text-only run (`"audio": false`)."""
    return []


def doc_to_text(doc: Mapping) -> str:
    """The released prompt without the audio placeholder (lmms-eval models place the clip)."""
    return render_question(doc)


def process_results(doc: Mapping, results: Sequence[str]) -> dict[str, list]:
    """Score one reply; pure, as lmms-eval may run it in threads and retry it.

    Every metric gets the item's outcome as the 5-entry [clip, type, correct, parsed, excluded]
    list (`scoring.as_outcome` reads it back). A list rather than lm-eval's packed integer:
    lmms-eval computes a "CLT stderr" over numeric per-item values, meaningless for a packed
    integer, and skips other values.
    """
    reply = results[0] if results else ""
    verdict = score_reply(
        doc_to_item(doc),
        reply if isinstance(reply, str) else str(reply),
        extractor=doc["extractor"],
        exclude_defective=bool(doc["exclude_defective"]),
    )
    outcome = item_outcome(verdict)._replace(clip=int(doc["clip_index"]))
    return {metric: list(outcome) for metric in ALL_METRICS}


def _aggregation(metric: str) -> Callable[[list], float]:
    def aggregate(values: list) -> float:
        summary = task_summary(tuple(as_outcome(v) for v in values))
        if metric == "acc" and summary["n_unconditioned"]:
            logger.warning(
                "%d unanswerable items have no Solvable item of their clip in this run "
                "(--limit?): they count in acc_* but not in ca_*/joint_*",
                int(summary["n_unconditioned"]),
            )
        return summary[metric]

    aggregate.__name__ = f"aggregate_{metric}"
    aggregate.__doc__ = f"lmms-eval aggregation returning the AQUA metric {metric!r}."
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
