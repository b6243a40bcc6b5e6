"""Deprecated: the orca_human loader and orca-replay model live in `orca_judge.lm_eval.human`."""

from aqua_tasks.deprecation import module_moved
from orca_judge.lm_eval.human import DATA_KEY, OrcaReplayLM, load_dataset

__all__ = ["DATA_KEY", "OrcaReplayLM", "load_dataset"]

module_moved(__name__, "orca_judge.lm_eval.human")
