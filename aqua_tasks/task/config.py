"""The task-config steps both harness adapters take: routing key, audio switch, manifest record."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from aqua_tasks.core.docs import audio_enabled
from aqua_tasks.task.definition import docs_arguments, task_manifest

logger = logging.getLogger(__name__)


def prepare_task_config(
    config: Mapping, settings: Mapping, *, audio_key: str, no_audio: object
) -> dict:
    """A copy of the task config without `class`, its audio input set to `no_audio` if off."""
    config = dict(config)
    config.pop("class", None)  # the harness's routing key, not a TaskConfig field
    if not audio_enabled(settings):
        config[audio_key] = no_audio
        logger.warning(
            "%s: text-only run (audio: false): the model never hears the clips",
            config.get("task"),
        )
    return config


def with_manifest(metadata: Mapping, dataset_kwargs: Mapping | None) -> dict:
    """The task's metadata with `aqua_manifest`: the manifest of the task these settings build."""
    # Recorded in the harness's results ("configs" -> metadata), also under plain lm_eval:
    # the one copy of the manifest fields the docs leave out (see manifest.DOC_FIELDS).
    settings = {**metadata, **(dataset_kwargs or {})}
    return dict(metadata) | {"aqua_manifest": task_manifest(**docs_arguments(settings))}
