"""Deprecated: `orca-lm-eval-items` is `orca_judge.cli_lm_eval_items`; its reading logic is
`orca_judge.lm_eval.samples`."""

from aqua_tasks.deprecation import module_moved
from orca_judge.cli_lm_eval_items import build_parser, main
from orca_judge.lm_eval.samples import NOT_LOADED, items_from_samples, read_samples

__all__ = ["NOT_LOADED", "build_parser", "items_from_samples", "main", "read_samples"]

module_moved(__name__, "orca_judge.cli_lm_eval_items (CLI) and orca_judge.lm_eval.samples (logic)")
