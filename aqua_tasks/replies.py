"""Deprecated: saved replies are read by `aqua_tasks.runs` (one run model for every reader)."""

from __future__ import annotations

from pathlib import Path

from aqua_tasks.data import AquaDataError
from aqua_tasks.deprecation import module_moved
from aqua_tasks.runs import (
    SAMPLES_NAME,
    RunItem,
    find_outputs,
    iter_tasks,
    read_authors_results,
    read_run,
    read_samples_file,
    require_aqua_items,
)

module_moved(__name__, "aqua_tasks.runs")

SavedReply = RunItem

__all__ = [
    "SavedReply",
    "find_reply_files",
    "iter_tasks",
    "read_authors_results",
    "read_replies",
    "read_samples_file",
    "task_from_samples_name",
]


def task_from_samples_name(name: str) -> str | None:
    """The task of an lm-eval `samples_<task>_<time>.jsonl` file name (None: not one)."""
    match = SAMPLES_NAME.match(name)
    return match.group("name") if match else None


def find_reply_files(path: Path) -> list[Path]:
    """Reply files of the run at a path: its newest samples per task, or authors' results."""
    files = find_outputs(path)
    found = [f.path for f in files.samples] + list(files.authors)
    if not found:
        raise AquaDataError(
            f"{path}: found neither lm-eval samples (samples_*.jsonl, written with "
            "--log_samples) nor result JSON files"
        )
    return found


def read_replies(path: str | Path, *, track: str | None = None) -> list[RunItem]:
    """The AQUA items with replies of the run at a path."""
    return require_aqua_items(read_run(path, track=track))
