"""AQUA-Bench under lmms-eval 0.7.3: task YAMLs, their functions, and this package's models.

lmms-eval's public API only (its start-up plugin and manifests are `eval_plugins.lmms_eval`).
Nothing here is imported by the lm-eval side of the package: lmms-eval lives in its own
environment (scripts/install-lmms-eval-env.sh).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def include_path() -> Path:
    """Folder of the installed lmms-eval task YAMLs (pass it to `lmms-eval --include_path`)."""
    return Path(str(files("aqua_tasks.lmms_task_configs")))
