"""Every place the AQUA tasks rely on lmms-eval internals, for the version of one gate.

lmms-eval has no hook for a plugin's task selection; AQUA gets one here, from lmms-eval 0.7.3:

- `filter_task_matches`: wraps `lmms_eval.tasks.TaskManager.match_tasks(self, task_list)`,
  which `lmms_eval.__main__.cli_evaluate` calls once with the `--tasks` entries to expand
  their globs (`fnmatch` over every indexed task). The signature is that of lm-eval 0.4.13's
  method of the same name, so the one wrapper in `aqua_tasks.lm_eval.compat` serves both;
  lmms-eval's TaskManager has no `metadata` (the run settings are `AQUA_METADATA`), so the
  wrapper hands `choose` None for it.

Which version: `eval_common.harness_versions` (`lmms-eval==0.7.3`, what
scripts/install-lmms-eval-env.sh installs); the start-up hook applies this only there.
ORCA's own lmms-eval internals are `orca_judge.lmms_eval.compat`.
"""

from __future__ import annotations

from aqua_tasks.lm_eval.compat import ChooseMatches
from aqua_tasks.lm_eval.compat import filter_task_matches as _filter_task_matches


def filter_task_matches(task_manager_cls: type, choose: ChooseMatches) -> None:
    """lmms-eval's `TaskManager.match_tasks` keeps only what `choose` keeps; idempotent."""
    _filter_task_matches(task_manager_cls, choose)
