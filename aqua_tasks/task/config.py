"""The task-config steps both harness adapters take: routing key, audio switch, manifest record."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from aqua_tasks.core.docs import audio_enabled
from aqua_tasks.core.extract.fallback import FALLBACK_EXTRACTOR, fallback_settings
from aqua_tasks.core.open_ended import JudgeRule
from aqua_tasks.errors import AquaDataError
from aqua_tasks.task.aggregations import aggregate_n_fallback, aggregate_n_fallback_failed
from aqua_tasks.task.definition import docs_arguments, task_manifest
from aqua_tasks.task.fallback import check_fallback_settings
from aqua_tasks.task.open_ended import FORM, open_manifest
from orca_judge.metric.settings import check_metadata_settings

logger = logging.getLogger(__name__)


def check_judge_settings(metadata: Mapping | None, place: str = "--metadata") -> None:
    """The run's judge and fallback numbers, before the model loads: `judge_threshold` (a
    rating 1-5), `orca.*` (names, types, ranges) and `fallback.*` (every type and range);
    AquaDataError, OrcaMetricError or LlmJudgeError naming the setting."""
    metadata = dict(metadata or {})
    try:
        JudgeRule.from_setting(metadata.get("judge_threshold"))
    except AquaDataError as error:
        raise AquaDataError(f"{place} {error}") from None
    check_metadata_settings(metadata, where=place)
    try:
        settings = fallback_settings(metadata)
    except ValueError as error:
        raise AquaDataError(f"{place} {error}") from None
    if settings is not None:
        check_fallback_settings(settings)


def prepare_task_config(
    config: Mapping, settings: Mapping, *, audio_key: str, no_audio: object
) -> dict:
    """A copy of the task config without `class`, its audio input set to `no_audio` if off,
    and the fallback's counts among its metrics when the run's extractor is `aqua-rules+llm`."""
    config = dict(config)
    config.pop("class", None)  # the harness's routing key, not a TaskConfig field
    if not audio_enabled(settings):
        config[audio_key] = no_audio
        logger.warning(
            "%s: text-only run (audio: false): the model never hears the clips",
            config.get("task"),
        )
    if str(settings.get("extractor") or "").strip().lower() == FALLBACK_EXTRACTOR:
        entries = [dict(entry) for entry in FALLBACK_METRIC_ENTRIES]
        config["metric_list"] = [*config.get("metric_list", []), *entries]
    return config


# The counts a fallback run adds to its task's table (a rules-only run's table is unchanged).
FALLBACK_METRIC_ENTRIES: tuple[dict, ...] = (
    {"metric": "n_fallback", "aggregation": aggregate_n_fallback, "higher_is_better": False},
    {
        "metric": "n_fallback_failed",
        "aggregation": aggregate_n_fallback_failed,
        "higher_is_better": False,
    },
)


def is_open_form(dataset_kwargs: Mapping | None) -> bool:
    """Whether a task's dataset_kwargs build the open-ended form (`form: open`)."""
    return (dataset_kwargs or {}).get("form") == FORM


def with_judge(metadata: Mapping) -> dict:
    """The metadata with a `judge` setting handed to the task's orca entry as its checkpoint.

    `judge` is the open tasks' short name for `orca.checkpoint`; one given there wins.
    """
    metadata = dict(metadata)
    judge = metadata.get("judge")
    orca = metadata.get("orca")
    if judge and not (isinstance(orca, Mapping) and orca.get("checkpoint")):
        metadata["orca"] = {**(orca if isinstance(orca, Mapping) else {}), "checkpoint": judge}
    return metadata


def with_manifest(metadata: Mapping, dataset_kwargs: Mapping | None) -> dict:
    """The task's metadata with `aqua_manifest`: the manifest of the task these settings build."""
    # Recorded in the harness's results ("configs" -> metadata), also under plain lm_eval:
    # the one copy of the manifest fields the docs leave out (see manifest.DOC_FIELDS).
    settings = {**metadata, **(dataset_kwargs or {})}
    if is_open_form(dataset_kwargs):
        manifest = open_manifest(
            str(settings.get("track")), settings.get("data_dir"), settings.get("judge_threshold")
        )
        return with_judge(metadata) | {"aqua_manifest": manifest}
    return dict(metadata) | {"aqua_manifest": task_manifest(**docs_arguments(settings))}
