"""A training run's folder: its log, its resume state and its kept evaluation checkpoints.

Layout (default `<output>-run/`)::

    log.jsonl                one JSON record per line: start / resume / done events, steps
    state.pt                 the resume point, with the configuration and data it belongs to
    evaluations/step-NNNNNN  checkpoints of the last dev evaluations (`keep_evaluations`)

A checkpoint is pruned by renaming it to a hidden `.step-NNNNNN.old` first and deleting
that, so a kill midway never leaves a half-deleted folder that looks like a checkpoint.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from eval_common.inputs import read_text
from eval_common.outputs import write_bytes
from orca_judge.checkpoint import atomic_write_text, clean_temporary_files
from orca_judge.checkpoint.contents import LATER_TRAINING_AS_BEFORE
from orca_judge.errors import RunConflictError
from orca_judge.training.arguments import RUNTIME_ONLY

STATE_FILE = "state.pt"
EVALUATIONS_DIR = "evaluations"
LOG_FILE = "log.jsonl"


def _differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    keys = sorted(set(saved) | set(current))
    changed = [k for k in keys if saved.get(k) != current.get(k)]
    return [f"{k} {saved.get(k)!r} -> {current.get(k)!r}" for k in changed]


def _state_conflict(state: Mapping[str, Any], config: dict, identity: dict) -> str | None:
    """Why a saved state does not belong to this run (settings or data), or None."""
    runtime_only = set(RUNTIME_ONLY)

    def compared(settings: Mapping[str, Any]) -> dict[str, Any]:
        # A state written before a setting existed ran it at its "as before" value.
        full = {**LATER_TRAINING_AS_BEFORE, **settings}
        return {k: v for k, v in full.items() if k not in runtime_only}

    changed = _differences(compared(state["config"]), compared(config))
    if changed:
        return f"saved for a different configuration ({'; '.join(changed)})"
    # States written before data fingerprints existed carry none; their config still matches.
    changed = _differences(state["data"], identity) if "data" in state else []
    if changed:
        return f"saved for different data or split settings ({'; '.join(changed)})"
    return None


def _discard(snapshot: Path) -> None:
    """Remove an evaluation checkpoint: renamed away first (the hidden rest goes on resume)."""
    hidden = snapshot.with_name(f".{snapshot.name}.old")
    shutil.rmtree(hidden, ignore_errors=True)
    os.replace(snapshot, hidden)
    shutil.rmtree(hidden)


class RunFolder:
    """One run's folder: where its log, resume state and evaluation checkpoints go."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.state_path = path / STATE_FILE
        self.log_path = path / LOG_FILE
        self.evaluations = path / EVALUATIONS_DIR

    def resumable_state(
        self, config: dict[str, Any], identity: dict[str, Any], overwrite: bool
    ) -> dict[str, Any] | None:
        """The saved resume state when it belongs to this run; None when there is none.

        A state that is unreadable or belongs to other settings or data is refused, or with
        `overwrite` ignored (None).
        """
        if not self.state_path.exists():
            return None
        state = None
        try:
            state = self._read_state()
        except RunConflictError:
            if not overwrite:
                raise
        conflict = state and _state_conflict(state, config, identity)
        if conflict:
            if not overwrite:
                raise RunConflictError(
                    f"{self.state_path}: {conflict}; rerun with the original settings to resume, "
                    "pass --overwrite (overwrite=True) to start over, or use a new --run-dir"
                )
            state = None
        return state

    def _read_state(self) -> dict[str, Any]:
        path = self.state_path
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # a truncated file raises one of several types
            reason = " ".join(str(err).split()) or type(err).__name__
            raise RunConflictError(
                f"{path}: unreadable resume state ({reason}); pass --overwrite "
                "(overwrite=True) to start over"
            ) from None
        if not isinstance(state, dict) or "config" not in state:
            raise RunConflictError(f"{path}: not a resume state written by orca train")
        return state

    def require_no_evaluations(self, overwrite: bool) -> None:
        """A fresh run must not mix its evaluation checkpoints with another run's.

        A step-0 snapshot alone (or hidden half-written ones) is what a run killed before its
        first resume state leaves: the same command run again replaces it without asking.
        """
        folder = self.evaluations
        if not folder.is_dir():
            return
        later = [path for step, path in self.evaluation_steps().items() if step > 0]
        if later and not overwrite:
            raise RunConflictError(
                f"{folder}: holds evaluation checkpoints of an earlier run without its resume "
                "state; pass --overwrite (overwrite=True) to discard them, or use a new --run-dir"
            )
        shutil.rmtree(folder)

    def clean_temporary_files(self) -> None:
        """Remove the hidden temporary files that killed atomic writes left in the folder."""
        clean_temporary_files(self.path)

    def start(self, record: dict[str, Any]) -> None:
        """Begin a fresh run: no resume state, a log holding only `record`."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.state_path.unlink(missing_ok=True)
        atomic_write_text(self.log_path, "")
        self.log(record)

    def resume(self, step: int) -> None:
        """Continue at `step`: later log lines and snapshots go (they are written again)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._trim_log(step)
        self._drop_evaluations_after(step)
        self.log({"event": "resume", "step": step})

    def log(self, record: dict[str, Any]) -> None:
        """Append one record to log.jsonl."""
        with self.log_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")

    def _trim_log(self, last_step: int) -> None:
        """Keep the log lines up to the resume point, so replayed steps appear once."""
        if not self.log_path.exists():
            return
        kept = []
        # split("\n"), not splitlines(): a logged string may hold U+2028 and other breaks.
        for line in read_text(self.log_path, RunConflictError).split("\n"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by the interruption
                continue
            if record.get("step", 0) <= last_step:
                kept.append(line + "\n")
        atomic_write_text(self.log_path, "".join(kept))

    def evaluation_steps(self) -> dict[int, Path]:
        """The evaluation checkpoints by step (`step-000120` -> 120)."""
        if not self.evaluations.is_dir():
            return {}
        found = {}
        for entry in self.evaluations.iterdir():
            match = re.fullmatch(r"step-(\d+)", entry.name)
            if match and entry.is_dir():
                found[int(match.group(1))] = entry
        return found

    def _drop_evaluations_after(self, step: int) -> None:
        """Remove snapshots newer than the resume point (they are written again) and the hidden
        half-written ones a killed run left."""
        for at, path in self.evaluation_steps().items():
            if at > step:
                _discard(path)
        if self.evaluations.is_dir():
            for entry in self.evaluations.iterdir():
                if entry.name.startswith(".step-"):
                    shutil.rmtree(entry, ignore_errors=True)

    def keep_evaluation(self, step: int, keep: int, write: Callable[[Path], Any]) -> None:
        """Write this evaluation's checkpoint and keep only the newest `keep` of them."""
        self.evaluations.mkdir(parents=True, exist_ok=True)
        write(self.evaluations / f"step-{step:06d}")
        steps = sorted(self.evaluation_steps())
        for old in steps[: max(0, len(steps) - keep)]:
            _discard(self.evaluations / f"step-{old:06d}")

    def save_state(self, state: dict[str, Any]) -> None:
        """Replace the resume state in one step (a full disk: one line, no temporary left)."""
        # Serialised in memory first: torch's own file writer reports a full disk vaguely.
        buffer = io.BytesIO()
        torch.save(state, buffer)
        write_bytes(self.state_path, buffer.getvalue())

    def mark_done(self) -> None:
        """Record in the resume state that the run finished."""
        self.save_state({**torch.load(self.state_path, weights_only=True), "done": True})
