"""Register AQUA models with lm-eval, idempotently, without hiding lm-eval's own models."""

from __future__ import annotations

import logging
from importlib.resources import files
from pathlib import Path
from typing import Any

# lm-eval tells every custom_dataset task how to pass --metadata, even when it was passed.
CUSTOM_DATASET_HINT = "Custom kwargs can be passed to `--metadata`"


class _QuietCustomDatasetHint(logging.Filter):
    """Drops lm-eval's --metadata hint for our own tasks, which always read --metadata."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (CUSTOM_DATASET_HINT in message and message.startswith(("aqua", "orca")))


_HINT_FILTER = _QuietCustomDatasetHint()


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
    """A `--tasks` entry's matches without the built tracks not built (one line each)."""
    from aqua_tasks.core.run_settings import unbuilt_matches

    left_out = unbuilt_matches(patterns, matches, metadata)
    for message in left_out.values():
        logging.getLogger(__name__).warning(message)
    return [m for m in matches if m not in left_out]


def install_task_matching(task_manager_cls: type) -> None:
    """lm-eval's TaskManager leaves unbuilt built tracks out of glob matches; idempotent."""
    from aqua_tasks.lm_eval.compat import filter_task_matches

    filter_task_matches(task_manager_cls, choose_task_matches)


def _same_folder(path: Any, folder: Path) -> bool:
    try:
        return Path(path).resolve() == folder.resolve()
    except (OSError, TypeError, ValueError):
        return False


def register_all() -> None:
    """Register the AQUA and ORCA models and metric `orca`; safe to call any number of times.

    Raises RuntimeError on an lm-eval version outside the supported range (see `compat`).
    """
    from lm_eval.api.registry import model_registry, register_model
    from lm_eval.tasks import TaskManager

    from aqua_tasks.lm_eval.compat import lm_eval_problem
    from aqua_tasks.lm_eval.task import fix_results
    from aqua_tasks.models.baselines import MODELS
    from orca_judge.lm_eval.compat import fill_registries, patch_evaluate, patch_make_table
    from orca_judge.lm_eval.human import OrcaReplayLM
    from orca_judge.lm_eval.wiring import install

    problem = lm_eval_problem()
    if problem:
        raise RuntimeError(problem)
    # lm-eval fills its model registry lazily only while it is empty: import its own models
    # first, or registering ours would hide `hf`, `vllm`, `dummy`, ...
    fill_registries()
    install_task_matching(TaskManager)

    for name, cls in {**MODELS, "orca-replay": OrcaReplayLM}.items():
        if model_registry.get(name, None) is not cls:
            register_model(name)(cls)
    # Metric `orca`, and its settings checked and judge loaded before any generation.
    install()
    # Pooled all-tracks rows, standard errors and counts in the results lm-eval prints and saves.
    patch_evaluate(finish=fix_results)
    patch_make_table()
    task_logger = logging.getLogger("lm_eval.api.task")
    if _HINT_FILTER not in task_logger.filters:
        task_logger.addFilter(_HINT_FILTER)
