"""Settings of one `- metric: orca` entry: from the entry, then task metadata (`--metadata`).

The one environment variable read is ORCA_CHECKPOINT, the judge a whole run uses where
neither names one.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from eval_common.cli import parse_bool
from orca_judge.errors import OrcaMetricError

METRIC = "orca"
# The judge of every orca entry that names none (as an entry or --metadata would).
CHECKPOINT_ENV = "ORCA_CHECKPOINT"
# Keys of a metric_list entry that belong to lm-eval, not to the judge.
HARNESS_KEYS = frozenset({"metric", "aggregation", "higher_is_better", "hf_evaluate"})


@dataclass(frozen=True)
class OrcaMetricSettings:
    """Settings of one `- metric: orca` entry."""

    checkpoint: str
    device: str | None = None  # default: cuda if available, else cpu
    batch_size: int | None = None  # default: the checkpoint's eval_batch_size
    dtype: str | None = None  # default: the checkpoint's dtype (auto)
    clamp: bool = True  # report the clamped mean (threshold: clamp_threshold, else the judge's)
    clamp_threshold: float | None = None  # replaces the checkpoint's / published one; 0: off
    backbone: str | None = None  # load the recorded backbone from another place
    strict_backbone: bool = False  # refuse instead of warn on a backbone fingerprint mismatch
    # Doc field with the question; unset: `question` if the doc has one, else the rendered
    # prompt (doc_to_text); '' never sends one.
    question_field: str | None = None
    rationale_field: str = "rationale"
    transcript_field: str = "transcript"
    ratings_field: str = ""  # doc field with human 1-5 ratings; set to report rho/tau/MAE
    id_field: str = "id"  # doc field naming the item in per-item results
    output_dir: str | None = None  # where per-item results go (aqua eval: beside lm-eval's)

    def judge_key(self) -> tuple:
        """What identifies a loaded judge: checkpoint and how it is loaded."""
        return (
            self.checkpoint,
            self.device,
            self.dtype,
            self.backbone,
            self.strict_backbone,
            self.clamp_threshold,
        )


SETTING_NAMES = tuple(f.name for f in fields(OrcaMetricSettings))


def _as_bool(name: str, value: Any) -> bool:
    try:
        return parse_bool(name, value)
    except ValueError:
        raise OrcaMetricError(
            f"orca setting {name!r}: expected true or false, got {value!r}"
        ) from None


def _as_batch_size(value: Any) -> int:
    try:
        size = int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: JSON's Infinity
        size = 0
    if size < 1 or (isinstance(value, float) and not value.is_integer()):
        raise OrcaMetricError(f"orca setting 'batch_size': expected an integer >= 1, got {value!r}")
    return size


def _as_threshold(value: Any) -> float:
    try:
        threshold = float(value)
    except (TypeError, ValueError):
        threshold = -1.0
    if isinstance(value, bool) or not (math.isfinite(threshold) and threshold >= 0):
        raise OrcaMetricError(
            f"orca setting 'clamp_threshold': expected a number >= 0 (0 turns clamping off), "
            f"got {value!r}"
        )
    return threshold


# How each harness's run sets metadata['orca']: lm-eval's --metadata; lmms-eval has no such
# flag, only the task YAML's `metadata:` block.
LM_EVAL_METADATA_HINT = '--metadata \'{"orca": {"checkpoint": ...}}\''
LMMS_EVAL_METADATA_HINT = "`metadata: {orca: {checkpoint: ...}}` in the task YAML"


def resolve_settings(
    entry: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    where: str = "metric orca",
    metadata_hint: str = LM_EVAL_METADATA_HINT,
) -> OrcaMetricSettings:
    """Settings from the entry, then metadata['orca'] (the checkpoint also ORCA_CHECKPOINT).

    `metadata_hint` says how the running harness sets metadata['orca'] (hints name it).
    """
    environ = os.environ if environ is None else environ
    unknown = sorted(set(entry) - HARNESS_KEYS - set(SETTING_NAMES))
    from_metadata = dict((metadata or {}).get(METRIC) or {})
    unknown += sorted(f"metadata.orca.{k}" for k in set(from_metadata) - set(SETTING_NAMES))
    if unknown:
        raise OrcaMetricError(
            f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(SETTING_NAMES)}"
        )
    values: dict[str, Any] = {}
    for name in SETTING_NAMES:
        for source in (entry, from_metadata):
            if source.get(name) is not None:
                values[name] = source[name]
                break
    if not values.get("checkpoint") and environ.get(CHECKPOINT_ENV):
        values["checkpoint"] = environ[CHECKPOINT_ENV]
    if not values.get("checkpoint"):
        raise OrcaMetricError(
            f"{where}: no judge checkpoint; set `checkpoint:` on the metric entry, "
            f"{metadata_hint} or {CHECKPOINT_ENV}"
        )
    return OrcaMetricSettings(**typed_values(values))


def typed_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Setting values in their types; OrcaMetricError naming the first of a wrong type or range."""
    values = dict(values)
    for name in ("clamp", "strict_backbone"):
        if name in values:
            values[name] = _as_bool(name, values[name])
    if "batch_size" in values:
        values["batch_size"] = _as_batch_size(values["batch_size"])
    if "clamp_threshold" in values:
        values["clamp_threshold"] = _as_threshold(values["clamp_threshold"])
    for name in SETTING_NAMES:
        if (
            name in values
            and name != "clamp_threshold"
            and not isinstance(values[name], (bool, int))
        ):
            values[name] = str(values[name])
    return values


def check_metadata_settings(metadata: Mapping[str, Any] | None, where: str) -> None:
    """OrcaMetricError for a `metadata['orca']` a run could not use (unknown names, wrong types or
    ranges), before any task is built; the checkpoint may still come from elsewhere."""
    given = (metadata or {}).get(METRIC)
    if given is None:
        return
    if not isinstance(given, Mapping):
        raise OrcaMetricError(f"{where}: orca: expected an object of settings, got {given!r}")
    unknown = sorted(set(given) - set(SETTING_NAMES))
    if unknown:
        raise OrcaMetricError(
            f"{where}: unknown setting(s) {', '.join(f'orca.{k}' for k in unknown)}; known: "
            f"{', '.join(SETTING_NAMES)}"
        )
    try:
        typed_values({k: v for k, v in given.items() if v is not None})
    except OrcaMetricError as error:
        raise OrcaMetricError(f"{where}: {error}") from None
