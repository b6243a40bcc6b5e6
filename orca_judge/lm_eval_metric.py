"""`metric: orca` for lm-eval: per-doc judge inputs, one batched judge pass per (task, filter).

lm-eval calls a metric once per doc and its aggregation once per (metric, filter) with every
doc's value. The per-doc function therefore only records what the judge should read (a
payload); the aggregation scores all payloads of a task and filter in one batched pass, and
every companion figure (disagreement, agreement with human ratings) is read from that pass.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import sys
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

METRIC = "orca"
PAYLOAD_MARK = "orca_figure"
ENV_PREFIX = "ORCA_"
# Keys of a metric_list entry that belong to lm-eval, not to the judge.
HARNESS_KEYS = frozenset({"metric", "aggregation", "higher_is_better", "hf_evaluate"})
TRUE_STRINGS = frozenset({"1", "true", "yes", "on"})
FALSE_STRINGS = frozenset({"0", "false", "no", "off"})


class OrcaMetricError(ValueError):
    """The orca metric is misconfigured or its judge cannot be loaded; the message says where."""


@dataclass(frozen=True)
class OrcaMetricSettings:
    """Settings of one `- metric: orca` entry (also ORCA_<NAME> environment variables)."""

    checkpoint: str
    device: str | None = None  # default: cuda if available, else cpu
    batch_size: int | None = None  # default: the checkpoint's eval_batch_size
    dtype: str | None = None  # default: the checkpoint's dtype (auto)
    clamp: bool = True  # report the clamped mean (threshold stored in the checkpoint)
    backbone: str | None = None  # load the recorded backbone from another place
    strict_backbone: bool = False  # refuse instead of warn on a backbone fingerprint mismatch
    question_field: str = "question"  # doc field with the question ('' to never send one)
    rationale_field: str = "rationale"
    transcript_field: str = "transcript"
    ratings_field: str = ""  # doc field with human 1-5 ratings; set to report rho/tau/MAE
    id_field: str = "id"  # doc field naming the item in per-item results
    output_dir: str | None = None  # where per-item results go (aqua-eval: beside lm-eval's)

    def judge_key(self) -> tuple:
        """What identifies a loaded judge: checkpoint and how it is loaded."""
        return (self.checkpoint, self.device, self.dtype, self.backbone, self.strict_backbone)


SETTING_NAMES = tuple(f.name for f in fields(OrcaMetricSettings))


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE_STRINGS:
        return True
    if text in FALSE_STRINGS:
        return False
    raise OrcaMetricError(f"orca setting {name!r}: expected true or false, got {value!r}")


def _as_batch_size(value: Any) -> int:
    try:
        size = int(value)
    except (TypeError, ValueError):
        size = 0
    if size < 1 or (isinstance(value, float) and not value.is_integer()):
        raise OrcaMetricError(f"orca setting 'batch_size': expected an integer >= 1, got {value!r}")
    return size


def resolve_settings(
    entry: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    where: str = "metric orca",
) -> OrcaMetricSettings:
    """Settings from the entry, then metadata['orca'], then ORCA_* variables; validated."""
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
        env_value = environ.get(ENV_PREFIX + name.upper())
        for source in (entry, from_metadata, {name: env_value} if env_value else {}):
            if source.get(name) is not None:
                values[name] = source[name]
                break
    if not values.get("checkpoint"):
        raise OrcaMetricError(
            f"{where}: no judge checkpoint; set `checkpoint:` on the metric entry, "
            f'--metadata \'{{"orca": {{"checkpoint": ...}}}}\' or ORCA_CHECKPOINT'
        )
    for name in ("clamp", "strict_backbone"):
        if name in values:
            values[name] = _as_bool(name, values[name])
    if "batch_size" in values:
        values["batch_size"] = _as_batch_size(values["batch_size"])
    for name in SETTING_NAMES:
        if name in values and not isinstance(values[name], (bool, int)):
            values[name] = str(values[name])
    return OrcaMetricSettings(**values)


# ---------------------------------------------------------------------------------------
# Per-doc payloads


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return " / ".join(_text(v) for v in value)
    return str(value)


def candidate_text(result: Any) -> str:
    """The reply lm-eval hands a metric (a string, or a one-element list of one)."""
    while isinstance(result, (list, tuple)) and len(result) == 1:
        result = result[0]
    return _text(result)


def judge_inputs(
    settings: OrcaMetricSettings | None,
    *,
    reference: Any,
    candidate: Any,
    doc: Mapping[str, Any] | None,
    index: int | None = None,
) -> dict[str, Any]:
    """The record the judge scores: doc fields named by the settings, reference, candidate.

    Without a doc or settings (lm-eval's plain metric call) there is no question, rationale,
    transcript or rating.
    """
    doc = doc if doc is not None and settings is not None else {}

    def field(name: str | None) -> Any:
        return doc.get(name) if settings is not None and name else None

    ratings = field(settings and settings.ratings_field)
    item_id = field(settings and settings.id_field)
    return {
        "id": None if item_id is None else str(item_id),
        "index": index,
        "question": _text(field(settings and settings.question_field)),
        "reference": _text(reference),
        "rationale": _text(field(settings and settings.rationale_field)),
        "transcript": _text(field(settings and settings.transcript_field)),
        "candidate": candidate_text(candidate),
        "ratings": list(ratings) if ratings else None,
    }


FIGURES = ("orca", "orca_disagreement", "orca_with_question")
AGREEMENT_FIGURES = ("orca_rho", "orca_tau", "orca_mae")
HIGHER_IS_BETTER = {
    "orca": True,
    "orca_disagreement": False,
    "orca_with_question": True,
    "orca_rho": True,
    "orca_tau": True,
    "orca_mae": False,
}


def payloads(
    inputs: Mapping[str, Any],
    settings: Mapping[str, Any],
    *,
    doc_aware: bool,
    figures: Sequence[str] = FIGURES,
    task: str | None = None,
) -> dict[str, dict[str, Any]]:
    """One value per figure for lm-eval to collect; all figures of a doc share the inputs."""
    shared = {"inputs": dict(inputs), "settings": dict(settings), "doc_aware": doc_aware}
    if task is not None:
        shared["task"] = task
    return {name: {PAYLOAD_MARK: name, **shared} for name in figures}


def orca(references: Sequence[Any], predictions: Sequence[Any], **entry: Any) -> dict:
    """lm-eval's per-doc metric call: records reference and reply for the judge (no doc here).

    Settings are checked at aggregation, which reports problems without losing generations.
    """
    inputs = judge_inputs(
        None, reference=references[0], candidate=predictions[0] if predictions else "", doc=None
    )
    return payloads(inputs, entry, doc_aware=False)


# ---------------------------------------------------------------------------------------
# Judges and passes


_JUDGES: dict[tuple, Any] = {}
_PASSES: OrderedDict[str, JudgePass] = OrderedDict()
MAX_CACHED_PASSES = 16
_FAILURES: list[str] = []
# Set by a wrapper that knows lm-eval's output folder (aqua-eval); see output_beside().
_OUTPUT_DIR: list[Callable[[], Path]] = []


def load_judge(settings: OrcaMetricSettings):
    """The judge for these settings, loaded once per checkpoint and kept for the process."""
    from .checkpoint import CheckpointError
    from .judge import OrcaJudge
    from .model import BackboneLoadError

    key = settings.judge_key()
    if key not in _JUDGES:
        try:
            _JUDGES[key] = OrcaJudge.from_pretrained(
                settings.checkpoint,
                device=settings.device,
                dtype=settings.dtype,
                backbone=settings.backbone,
                strict_backbone=settings.strict_backbone,
            )
        except (CheckpointError, BackboneLoadError, OSError, ValueError, RuntimeError) as err:
            raise OrcaMetricError(
                f"cannot load ORCA judge checkpoint {settings.checkpoint!r}: {err}"
            ) from err
    return _JUDGES[key]


def judge_identity(settings: OrcaMetricSettings) -> dict[str, Any]:
    """Which judge scored, as recorded with per-item results: checkpoint, fingerprint, clamp.

    `fingerprint` (see `OrcaJudge.fingerprint`) is what tells two checkpoints apart;
    `aqua-regress` refuses to compare judge scores whose fingerprints or clamping differ.
    """
    return {
        "checkpoint": settings.checkpoint,
        "fingerprint": load_judge(settings).fingerprint(),
        "clamp": settings.clamp,
    }


@dataclass
class JudgePass:
    """One batched scoring of a task's items under one filter, and every figure from it."""

    settings: OrcaMetricSettings
    inputs: list[dict[str, Any]]
    predictions: list[Any]
    figures: dict[str, float]
    seen: list[list[str]]
    reported: bool = False


def _pass_key(settings: Mapping[str, Any], inputs: Sequence[Mapping[str, Any]], site: str) -> str:
    blob = json.dumps([site, dict(settings), list(inputs)], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _seen_fields(judge: Any, inputs: Mapping[str, Any]) -> list[str]:
    cfg = judge.config
    used = {
        "question": cfg.use_question,
        "reference": True,
        "rationale": cfg.use_rationale,
        "transcript": cfg.use_transcript,
        "candidate": True,
    }
    return [name for name, on in used.items() if on and (inputs[name] or name == "candidate")]


def _mean(values: Sequence[float | None]) -> float:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present and len(present) == len(values) else math.nan


def compute_figures(
    settings: OrcaMetricSettings,
    inputs: Sequence[Mapping[str, Any]],
    predictions: Sequence[Any],
    seen: Sequence[Sequence[str]],
) -> dict[str, float]:
    """Mean correctness, mean predicted disagreement, question coverage, human agreement."""
    from .data import load_items
    from .report import agreement_report

    score = [p.clamped_unit if settings.clamp else p.expected_unit for p in predictions]
    figures = {
        "orca": _mean(score),
        "orca_disagreement": _mean([p.variance_unit for p in predictions]),
        "orca_with_question": _mean([float("question" in s) for s in seen]),
    }
    if settings.ratings_field:
        report = agreement_report(predictions, load_items(inputs))
        kind = report.get("clamped" if settings.clamp else "raw", {})
        figures["orca_rho"] = kind.get("rho", math.nan)
        figures["orca_tau"] = kind.get("tau", math.nan)
        figures["orca_mae"] = kind.get("mae_mu", math.nan)
    return figures


def forget_passes() -> None:
    """Drop cached passes: a pass serves the figures of one evaluation, not the next one."""
    _PASSES.clear()


def run_pass(
    settings: OrcaMetricSettings, inputs: Sequence[Mapping[str, Any]], site: str = ""
) -> JudgePass:
    """Score all items in one batched pass per site, i.e. (task, filter); later figures reuse it."""
    key = _pass_key(asdict(settings), inputs, site)
    if key in _PASSES:
        _PASSES.move_to_end(key)
        return _PASSES[key]
    judge = load_judge(settings)
    records = [{**item, "id": _item_id(item)} for item in inputs]
    predictions = judge.score(records, batch_size=settings.batch_size)
    seen = [_seen_fields(judge, item) for item in inputs]
    result = JudgePass(
        settings,
        list(inputs),
        predictions,
        compute_figures(settings, records, predictions, seen),
        seen,
    )
    _PASSES[key] = result
    while len(_PASSES) > MAX_CACHED_PASSES:
        _PASSES.popitem(last=False)
    return result


def _item_id(item: Mapping[str, Any]) -> str:
    return item["id"] if item.get("id") is not None else str(item["index"])


# ---------------------------------------------------------------------------------------
# Aggregation


def _aggregation_site() -> tuple[str | None, str | None]:
    """Task and filter of the lm-eval aggregation call in progress (None when not found)."""
    frame = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            break
        local = frame.f_locals
        task = local.get("task")
        if isinstance(local.get("filter_key"), str) and hasattr(task, "task_name"):
            return str(task.task_name), local["filter_key"]
        frame = frame.f_back
    return None, None


def _check_payloads(items: Sequence[Any]) -> None:
    bad = next((v for v in items if not (isinstance(v, Mapping) and PAYLOAD_MARK in v)), None)
    if not items or bad is not None:
        raise OrcaMetricError(
            f"orca aggregation received {bad!r} instead of judge inputs; lm-eval reduces "
            "metrics of tasks with list-valued targets to any(); give the task a single "
            "reference, or run it with aqua-eval / register_all() so that orca sees the doc"
        )


def orca_aggregate(items: Sequence[Any]) -> float:
    """lm-eval aggregation for every orca figure: scores the items (once), returns the figure."""
    _check_payloads(items)
    figure = items[0][PAYLOAD_MARK]
    site_task, site_filter = _aggregation_site()
    task = items[0].get("task") or site_task or "task"
    filter_name = site_filter or "filter"
    inputs = []
    for index, item in enumerate(items):
        record = dict(item["inputs"])
        if record.get("index") is None:
            record["index"] = index
        inputs.append(record)
    raw_settings = items[0]["settings"]
    try:
        settings = resolve_settings(raw_settings, where=f"task {task!r}, metric orca")
        judged = run_pass(settings, inputs, f"{task}/{filter_name}")
    except Exception as err:
        return _report_failure(task, filter_name, raw_settings, inputs, err)
    if not judged.reported:
        write_per_item(judged, task, filter_name, items[0])
        judged.reported = True
    value = judged.figures.get(figure, math.nan)
    if figure == "orca_disagreement" and math.isnan(value):
        logger.warning("%s: this judge's likelihood models no disagreement (Bernoulli)", task)
    return value


def per_item_rows(judged: JudgePass, task: str, filter_name: str) -> list[dict[str, Any]]:
    """One row per judged item: its inputs, which of them the judge read, and its prediction."""
    rows = []
    identity = judge_identity(judged.settings)
    for inputs, pred, seen in zip(judged.inputs, judged.predictions, judged.seen, strict=True):
        score = pred.clamped_unit if judged.settings.clamp else pred.expected_unit
        rows.append(
            {
                "task": task,
                "filter": filter_name,
                "index": inputs["index"],
                "inputs": {k: v for k, v in inputs.items() if k != "index"},
                "seen": seen,
                "judge": identity,
                "orca": score,
                **pred.to_dict(),
            }
        )
    return rows


def output_dir(settings_output_dir: str | None) -> Path | None:
    """Folder for per-item results: the setting (or ORCA_OUTPUT_DIR), else lm-eval's own."""
    if settings_output_dir:
        return Path(settings_output_dir)
    return _OUTPUT_DIR[0]() if _OUTPUT_DIR else None


def output_beside(tracker: Any) -> None:
    """Write per-item results where lm-eval's EvaluationTracker writes samples (None: forget).

    The folder is resolved at aggregation, after lm-eval has named the model's sub-folder.
    """
    _OUTPUT_DIR.clear()
    if tracker is None or not getattr(tracker, "output_path", None):
        return

    def folder() -> Path:
        path = Path(tracker.output_path)
        if path.suffix == ".json":
            return path.parent
        model = tracker.general_config_tracker.model_name_sanitized
        return path / str(model) if model else path

    _OUTPUT_DIR.append(folder)


def _file_name(prefix: str, task: str, filter_name: str) -> str:
    stamp = datetime.now().isoformat().replace(":", "-")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{task}_{filter_name}")
    return f"{prefix}_{safe}_{stamp}.jsonl"


def _write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows), encoding="utf-8")
    return path


def write_per_item(
    judged: JudgePass, task: str, filter_name: str, payload: Mapping[str, Any]
) -> Path | None:
    """Write the pass's per-item results beside lm-eval's output; log where."""
    folder = output_dir(judged.settings.output_dir)
    figures = ", ".join(f"{k}={v:.4f}" for k, v in judged.figures.items())
    if folder is None:
        logger.warning(
            "%s/%s: orca judged %d items in one pass (%s); per-item results not written: no "
            "output folder (set output_dir: or ORCA_OUTPUT_DIR, or run aqua-eval --output_path)",
            task,
            filter_name,
            len(judged.inputs),
            figures,
        )
        return None
    path = _write_jsonl(
        folder / _file_name("orca", task, filter_name), per_item_rows(judged, task, filter_name)
    )
    saw = "the doc" if payload.get("doc_aware") else "only references and predictions"
    logger.info(
        "%s/%s: orca judged %d items in one pass (%s; judge saw %s); per-item results: %s",
        task,
        filter_name,
        len(judged.inputs),
        figures,
        saw,
        path,
    )
    return path


def _report_failure(
    task: str,
    filter_name: str,
    settings: Mapping[str, Any],
    inputs: Sequence[Mapping],
    err: Exception,
) -> float:
    """Keep the run (and its samples) alive: save the judge inputs for orca-score, log, nan."""
    folder = output_dir(settings.get("output_dir") or os.environ.get("ORCA_OUTPUT_DIR"))
    folder = folder or Path(tempfile.mkdtemp(prefix="orca-pending-"))
    path = folder / _file_name("orca_pending", task, filter_name)
    if not path.exists():
        _write_jsonl(path, [{**item, "id": _item_id(item)} for item in inputs])
    message = (
        f"{task}/{filter_name}: ORCA judge failed ({err}); the {len(inputs)} judge inputs are "
        f"saved in {path}: score them with `orca-score --checkpoint CKPT --input {path}`"
    )
    if message not in _FAILURES:
        _FAILURES.append(message)
        logger.error(message)
    return math.nan


def judge_failures() -> list[str]:
    """Messages of judge failures at aggregation in this process (for a non-zero exit)."""
    return list(_FAILURES)


# ---------------------------------------------------------------------------------------
# Registration


def register() -> None:
    """Register metric `orca` and aggregation `orca` with lm-eval; idempotent."""
    import lm_eval.api.metrics
    import lm_eval.models  # noqa: F401  (fill lm-eval's registries before adding to them)
    from lm_eval.api.registry import (
        aggregation_registry,
        metric_registry,
        register_aggregation,
        register_metric,
    )

    if aggregation_registry.get(METRIC, None) is not orca_aggregate:
        register_aggregation(METRIC)(orca_aggregate)
    if metric_registry.get(METRIC, None) is not orca:
        register_metric(metric=METRIC, higher_is_better=True, aggregation=METRIC)(orca)


# `metric: !function orca_judge.lm_eval_metric.orca` imports this module while lm-eval builds
# the task, just before it looks up the aggregation registered under the metric's name.
register()
