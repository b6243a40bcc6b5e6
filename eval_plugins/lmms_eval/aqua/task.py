"""The lmms-eval wrapper of the AQUA task: its task class and the functions its YAMLs reference.

Docs, prompts, extraction and metrics are those of the lm-eval tasks (`aqua_tasks.task`; the
YAMLs name its `doc_to_target` and `aggregate_*` directly); only lmms-eval's way in differs.
lmms-eval has no `custom_dataset` and no `--metadata`, so the run settings lm-eval takes from
`--metadata` come from the `AQUA_METADATA` environment variable (the same JSON) over the
YAML's `metadata:` block.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
from collections.abc import Mapping, Sequence

from lmms_eval.api.task import ConfigurableTask

from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.core.prompts import render_question
from aqua_tasks.core.run_settings import AQUA_METADATA_KEYS, unbuilt_matches
from aqua_tasks.core.scoring import ALL_METRICS, unpack_outcome
from aqua_tasks.core.settings_place import LMMS_EVAL_PLACE, settings_given_in
from aqua_tasks.errors import AquaDataError
from aqua_tasks.task import definition, open_ended
from aqua_tasks.task.config import is_open_form, prepare_task_config, with_manifest
from aqua_tasks.task.definition import doc_to_audio, load_dataset

METADATA_ENV = LMMS_EVAL_PLACE
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
    # The variable is ours alone (lm-eval's --metadata is shared with other tasks, so only
    # near-misses are refused there): any key that is not an AQUA setting is a typo that
    # would silently leave the default in force.
    unknown = sorted(set(given) - set(AQUA_METADATA_KEYS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], AQUA_METADATA_KEYS, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(AQUA_METADATA_KEYS)}"
        raise AquaDataError(f"{METADATA_ENV}: unknown key {unknown[0]!r}; {hint}")
    settings = dict(yaml_metadata or {}) | given
    if not settings.get("data_dir"):
        raise AquaDataError(f"no AQUA data folder given. {METADATA_HELP}")
    return settings


def choose_task_matches(
    patterns: list[str], matches: list[str], metadata: object = None
) -> list[str]:
    """A `--tasks` expansion without the built tracks `AQUA_METADATA`'s data_dir lacks.

    `--tasks 'aqua_*'` then runs for a user with the released tracks only (one line says
    what was left out); a task named outright is kept, so its missing file is an error.
    Bad settings filter nothing: the task itself then stops the run with the reason.
    """
    try:
        settings = run_settings(None)
    except AquaDataError:
        return matches
    left_out = unbuilt_matches(patterns, matches, settings)
    for message in left_out.values():
        logging.getLogger(__name__).warning(message)
    return [m for m in matches if m not in left_out]


class AquaTask(ConfigurableTask):
    """An lmms-eval task whose docs are built from the released AQUA files, as under lm-eval."""

    def __init__(self, config: dict | None = None, **kwargs: object) -> None:
        config = dict(config or {})
        settings = run_settings(config.get("metadata"))
        config = prepare_task_config(config, settings, audio_key="doc_to_visual", no_audio=no_audio)
        # Hints raised while the task and its docs are built name AQUA_METADATA, not --metadata.
        with settings_given_in(LMMS_EVAL_PLACE):
            try:
                config["metadata"] = with_manifest(settings, config.get("dataset_kwargs"))
            except AquaDataError as error:
                raise AquaDataError(f"{config.get('task')}: {error}") from None
            self._aqua_settings = settings
            super().__init__(config=config, **kwargs)

    def download(self, dataset_kwargs: Mapping | None = None) -> None:
        """Build the docs from the local released files (never fetched; no retries)."""
        with settings_given_in(LMMS_EVAL_PLACE):
            settings = {**self._aqua_settings, **(dataset_kwargs or {})}
            build = open_ended.load_dataset if is_open_form(dataset_kwargs) else load_dataset
            self.dataset = build(**settings)
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


def process_results(doc: Mapping, results: Sequence[str]) -> dict[str, list | int]:
    """Score one reply as the lm-eval task does; pure, as lmms-eval may thread and retry it.

    Every metric gets the item's outcome as the 5-entry [clip, type, correct, parsed, excluded]
    list (`scoring.as_outcome` reads it back) rather than lm-eval's packed integer: lmms-eval
    computes a "CLT stderr" over numeric per-item values, meaningless for a packed integer,
    and skips other values.
    """
    scored = definition.process_results(doc, results)
    values: dict = {metric: list(unpack_outcome(scored["acc"])) for metric in ALL_METRICS}
    # An `aqua-rules+llm` run's fallback reading: the value its two counts aggregate.
    values.update({k: v for k, v in scored.items() if k.startswith("n_fallback")})
    return values
