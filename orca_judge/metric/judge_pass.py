"""The judges and judge passes of one lm-eval evaluation, held by one `JudgeSession`.

lm-eval calls the aggregation once per figure; every figure of a (task, filter) is read from
one batched pass. The session that holds the loaded judges and those passes lives for one
evaluation: `compat.patch_evaluation` opens a fresh one around each `evaluate()` call, so a
second evaluation in the same process loads and judges again and shares nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from orca_judge.errors import OrcaMetricError
from orca_judge.metric.settings import OrcaMetricSettings


@dataclass
class JudgePass:
    """One batched scoring of a task's items under one filter, and every figure from it."""

    settings: OrcaMetricSettings
    inputs: list[dict[str, Any]]
    predictions: list[Any]
    figures: dict[str, float]
    seen: list[list[str]]
    identity: dict[str, Any] = field(default_factory=dict)
    reported: bool = False


def item_id(item: Mapping[str, Any]) -> str:
    """The id a judged item is recorded under: its own, else its position."""
    return item["id"] if item.get("id") is not None else str(item["index"])


def seen_fields(judge: Any, inputs: Mapping[str, Any]) -> list[str]:
    """Which of an item's inputs this judge reads (empty optional fields are not read)."""
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
    from orca_judge.data import load_items
    from orca_judge.report import agreement_report

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


def _pass_key(settings: Mapping[str, Any], inputs: Sequence[Mapping[str, Any]], site: str) -> str:
    blob = json.dumps([site, dict(settings), list(inputs)], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _no_folder() -> Path | None:
    return None


@dataclass(eq=False)  # a session is itself, not its contents
class JudgeSession:
    """Judges loaded and passes run for one evaluation, plus where its per-item files go.

    `output_folder` is resolved when results are written (lm-eval names its model sub-folder
    only after the run starts); `failures` collects judge failures for a non-zero exit.
    """

    output_folder: Callable[[], Path | None] = _no_folder
    failures: list[str] = field(default_factory=list)
    judges: dict[tuple, Any] = field(default_factory=dict)
    passes: dict[str, JudgePass] = field(default_factory=dict)
    # A pass that failed (e.g. bad ratings in the docs) fails again at once for every other
    # figure of its (task, filter): the judge is not run once per figure.
    failed: dict[str, Exception] = field(default_factory=dict)
    # (task, filter) -> the judge inputs saved after its failure, reported once.
    pending: dict[str, Path] = field(default_factory=dict)

    def next_evaluation(self) -> JudgeSession:
        """A fresh session for the next evaluation: same output folder and failure log only."""
        return JudgeSession(output_folder=self.output_folder, failures=self.failures)

    def judge(self, settings: OrcaMetricSettings) -> Any:
        """The judge for these settings, loaded once in this session."""
        from orca_judge.checkpoint.ensemble import load_judge
        from orca_judge.errors import BackboneLoadError, CheckpointError
        from orca_judge.processes import Processes

        key = settings.judge_key()
        if key not in self.judges:
            # Several processes: each loads the judge on its own GPU (see orca_wiring.RankShare).
            processes = Processes.current()
            device = processes.device(settings.device) if processes.distributed else settings.device
            try:
                self.judges[key] = load_judge(
                    settings.checkpoint,
                    device=device,
                    dtype=settings.dtype,
                    backbone=settings.backbone,
                    strict_backbone=settings.strict_backbone,
                    clamp_threshold=settings.clamp_threshold,
                )
            except (CheckpointError, BackboneLoadError, OSError, ValueError, RuntimeError) as err:
                raise OrcaMetricError(
                    f"cannot load ORCA judge checkpoint {settings.checkpoint!r}: {err}"
                ) from err
        return self.judges[key]

    def identity(self, settings: OrcaMetricSettings) -> dict[str, Any]:
        """Which judge scored, as recorded with per-item results: checkpoint, fingerprint, clamp.

        `fingerprint` (see `OrcaJudge.fingerprint`) is what tells two checkpoints apart;
        `aqua regress` refuses to compare judge scores whose fingerprints or clamping differ.
        The clamp threshold, token limit and where they came from are recorded beside them.
        """
        setup = self.judge(settings).describe()
        return {
            "checkpoint": settings.checkpoint,
            "fingerprint": self.judge(settings).fingerprint(),
            "clamp": settings.clamp,
            "clamp_threshold": setup["clamp_threshold"],
            "clamp_reason": setup["clamp_reason"],
            "token_limit": setup["token_limit"],
        }

    def run(
        self,
        settings: OrcaMetricSettings,
        inputs: Sequence[Mapping[str, Any]],
        site: str = "",
        scored: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> JudgePass:
        """Score all items in one batched pass per site, i.e. (task, filter); figures reuse it.

        `scored` (one entry per item, or None) holds predictions another process already made
        (`OrcaPrediction.to_dict()`, see `eval_plugins.orca_wiring.RankShare`): those items are
        not scored again.
        """
        key = _pass_key(asdict(settings), inputs, site)
        if key in self.failed:
            raise self.failed[key]
        if key not in self.passes:
            try:
                self.passes[key] = self._judged(settings, inputs, scored)
            except Exception as err:
                self.failed[key] = err
                raise
        return self.passes[key]

    def _judged(
        self,
        settings: OrcaMetricSettings,
        inputs: Sequence[Mapping[str, Any]],
        scored: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> JudgePass:
        from orca_judge.data import load_items
        from orca_judge.errors import DataError
        from orca_judge.judge import OrcaPrediction

        records = [{**item, "id": item_id(item)} for item in inputs]
        if settings.ratings_field:
            # Bad ratings stop the pass before the judge runs, not after it.
            try:
                load_items(records)
            except DataError as err:
                raise OrcaMetricError(f"ratings_field {settings.ratings_field!r}: {err}") from err
        judge = self.judge(settings)
        made = list(scored) if scored is not None else [None] * len(records)
        todo = [i for i, done in enumerate(made) if done is None]
        fresh = (
            judge.score([records[i] for i in todo], batch_size=settings.batch_size) if todo else []
        )
        predictions = [OrcaPrediction(**done) if done is not None else None for done in made]
        for i, prediction in zip(todo, fresh, strict=True):
            predictions[i] = prediction
        seen = [seen_fields(judge, item) for item in inputs]
        return JudgePass(
            settings,
            list(inputs),
            predictions,
            compute_figures(settings, records, predictions, seen),
            seen,
            self.identity(settings),
        )

    def folder(self, setting: str | None) -> Path | None:
        """Folder for per-item results: the setting, else the session's."""
        return Path(setting) if setting else self.output_folder()

    def record_failure(self, message: str) -> bool:
        """Note a judge failure once; False when it was already noted."""
        if message in self.failures:
            return False
        self.failures.append(message)
        return True


_ACTIVE: ContextVar[JudgeSession | None] = ContextVar("orca_judge_session", default=None)


def active_session() -> JudgeSession | None:
    """The session of the evaluation in progress, if any."""
    return _ACTIVE.get()


@contextmanager
def session_scope(session: JudgeSession | None = None) -> Iterator[JudgeSession]:
    """Make `session` (default: a new one) the active session for the calls inside."""
    session = JudgeSession() if session is None else session
    token = _ACTIVE.set(session)
    try:
        yield session
    finally:
        _ACTIVE.reset(token)


@contextmanager
def evaluation_session() -> Iterator[JudgeSession]:
    """A fresh session for one evaluation, keeping an enclosing one's output folder and log."""
    outer = active_session()
    with session_scope(outer.next_evaluation() if outer else None) as session:
        yield session


def evaluate_task_dict(args: tuple, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `task_dict` argument of a harness's evaluate(task_dict, ...) call (both name it so)."""
    return kwargs["task_dict"] if "task_dict" in kwargs else args[1]


@contextmanager
def judged_evaluation(
    prepare: Callable[[Mapping[str, Any]], object] | None, task_dict: Mapping[str, Any]
) -> Iterator[JudgeSession]:
    """One evaluation of either harness: a fresh judge session, `prepare(task_dict)` run first.

    A repeated identical evaluation must load, judge and write its per-item file again, and
    `prepare` sees the built tasks before any request is made.
    """
    with evaluation_session() as session:
        if prepare is not None:
            prepare(task_dict)
        yield session
