"""Register AQUA models with lm-eval, idempotently, without hiding lm-eval's own models."""

from __future__ import annotations

import logging
from importlib.resources import files
from pathlib import Path

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


def register_all() -> None:
    """Register the AQUA and ORCA models and metric `orca`; safe to call any number of times."""
    from lm_eval.api.registry import model_registry, register_model

    from aqua_tasks.lm_eval_task import fix_results
    from aqua_tasks.models import MODELS
    from orca_judge.lm_eval.compat import fill_registries, patch_evaluate, patch_make_table
    from orca_judge.lm_eval.human import OrcaReplayLM
    from orca_judge.lm_eval.wiring import install

    # lm-eval fills its model registry lazily only while it is empty: import its own models
    # first, or registering ours would hide `hf`, `vllm`, `dummy`, ...
    fill_registries()

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
