"""The AQUA task folder under lm-eval: where it is, how a TaskManager's include path gets it,
and which of a `--tasks` glob's matches a run can use. lm-eval's public API only."""

from __future__ import annotations

import logging
from importlib.resources import files
from pathlib import Path
from typing import Any


def task_config_dir() -> Path:
    """Folder of the installed AQUA task YAMLs (pass it to lm_eval --include_path)."""
    return Path(str(files("aqua_tasks.task_configs")))


def with_task_folder(include_path: Any, include_defaults: bool = True) -> Any:
    """A TaskManager's include_path with the AQUA task folder first (once; user folders after).

    Unchanged when the caller indexes only its own folders (include_defaults=False) or already
    names ours; a user's folder comes later, so its tasks override ours of the same name.
    """
    if not include_defaults:
        return include_path
    ours = task_config_dir()
    if include_path is None:
        given = []
    elif isinstance(include_path, (list, tuple)):  # what TaskManager takes as several folders
        given = list(include_path)
    else:
        given = [include_path]
    if any(_same_folder(path, ours) for path in given):
        return include_path
    return [str(ours), *given]


def choose_task_matches(patterns: list[str], matches: list[str], metadata: Any) -> list[str]:
    """A `--tasks` entry's matches without the built tracks not built (one line each).

    lm-eval's command line matches `--tasks` before it loads the model: where AQUA tasks match
    and the run has settings (`--metadata`, with the model arguments lm-eval merges in), an
    AquaDataError stops it here for settings the tasks could not use.
    """
    from aqua_tasks.core.run_settings import (
        check_aqua_metadata,
        selects_aqua_tasks,
        unbuilt_matches,
    )
    from aqua_tasks.task.config import check_judge_settings

    if metadata and isinstance(metadata, dict) and selects_aqua_tasks(matches):
        check_aqua_metadata(metadata)
        check_judge_settings(metadata)

    left_out = unbuilt_matches(patterns, matches, metadata)
    for message in left_out.values():
        logging.getLogger(__name__).warning(message)
    return [m for m in matches if m not in left_out]


def _same_folder(path: Any, folder: Path) -> bool:
    try:
        return Path(path).resolve() == folder.resolve()
    except (OSError, TypeError, ValueError):
        return False
