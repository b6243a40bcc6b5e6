"""ORCA: a learned judge of open-ended answers that predicts the distribution of human ratings."""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Loaded on first use: `orca_judge.lm_eval.compat` and friends are imported when lm-eval
# starts (see aqua_tasks.startup_hook), and must not pull in torch for `lm_eval ls tasks`.
_EXPORTS = {"OrcaConfig": ".config", "OrcaJudge": ".judge", "OrcaPrediction": ".judge"}

__all__ = ["OrcaConfig", "OrcaJudge", "OrcaPrediction"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
