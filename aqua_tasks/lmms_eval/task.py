"""The AQUA task class and the functions the lmms-eval task YAMLs reference with `!function`.

Docs, prompts, extraction and metrics are those of the lm-eval tasks (`aqua_tasks.lm_eval.task`,
`aqua_tasks.core.scoring`; the YAMLs name its harness-neutral `doc_to_target` and
`aggregate_*` directly); only lmms-eval's way in differs. lmms-eval has no `custom_dataset` and
no `--metadata`, so the run settings lm-eval takes from `--metadata` come from the
`AQUA_METADATA` environment variable (the same JSON) over the YAML's `metadata:` block.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence

from lmms_eval.api.task import ConfigurableTask

from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.core.data import DATA_HELP, AquaDataError
from aqua_tasks.core.docs import audio_enabled
from aqua_tasks.core.prompts import render_question
from aqua_tasks.core.scoring import ALL_METRICS, unpack_outcome
from aqua_tasks.lm_eval.task import doc_to_audio, docs_arguments, load_dataset, task_manifest
from aqua_tasks.lm_eval.task import process_results as lm_eval_process_results

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
            raise AquaDataError(
                f"{METADATA_ENV} is not valid JSON ({error}). {METADATA_HELP}"
            ) from None
        if not isinstance(given, dict):
            raise AquaDataError(
                f"{METADATA_ENV} must be a JSON object, got {text!r}. {METADATA_HELP}"
            )
    settings = dict(yaml_metadata or {}) | given
    if not settings.get("data_dir"):
        raise AquaDataError(f"no AQUA data folder given. {METADATA_HELP}")
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
        try:
            manifest = task_manifest(**arguments)
        except AquaDataError as error:
            # The data errors tell lm-eval users to pass --metadata; here it is the variable.
            message = str(error).replace(DATA_HELP, METADATA_HELP)
            raise AquaDataError(f"{config.get('task')}: {message}") from None
        # Recorded in lmms-eval's results ("configs" -> metadata), as under lm-eval.
        config["metadata"] = settings | {"aqua_manifest": manifest}
        self._aqua_settings = settings
        super().__init__(config=config, **kwargs)

    def download(self, dataset_kwargs: Mapping | None = None) -> None:
        """Build the docs from the local released files (never fetched; no retries)."""
        self.dataset = load_dataset(**{**self._aqua_settings, **(dataset_kwargs or {})})
        # The docs hold file paths, never decoded audio: the media-free copy is the same.
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
    """Score one reply as the lm-eval task does; pure, as lmms-eval may thread and retry it.

    Every metric gets the item's outcome as the 5-entry [clip, type, correct, parsed, excluded]
    list (`scoring.as_outcome` reads it back) rather than lm-eval's packed integer: lmms-eval
    computes a "CLT stderr" over numeric per-item values, meaningless for a packed integer,
    and skips other values.
    """
    packed = lm_eval_process_results(doc, results)["acc"]
    return {metric: list(unpack_outcome(packed)) for metric in ALL_METRICS}
