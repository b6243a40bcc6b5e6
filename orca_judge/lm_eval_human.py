"""Deprecated: the orca_human loader and orca-replay model live in `orca_judge.lm_eval.human`."""

import warnings

from orca_judge.lm_eval.human import DATA_KEY, OrcaReplayLM, load_dataset

__all__ = ["DATA_KEY", "OrcaReplayLM", "load_dataset"]

warnings.warn(
    "orca_judge.lm_eval_human is deprecated; use orca_judge.lm_eval.human",
    DeprecationWarning,
    stacklevel=2,
)
