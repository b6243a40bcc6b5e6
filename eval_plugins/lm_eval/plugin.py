"""What plain `lm_eval` gets from both packages, applied by the start-up hook as lm-eval imports.

`eval_plugins.startup_hook` calls one function per lm-eval module, right after that module has
executed: the TaskManager also indexes our task folder, the evaluator comes with our models
and `metric: orca` registered (after lm-eval's own), and `--use_cache` keys accept audio.
Only on the lm-eval versions `eval_common.harness_versions` supports; every patch itself is a
seam of `eval_plugins.lm_eval.compat`, made in full on the tested version only.
"""

from __future__ import annotations

import sys
from types import ModuleType

PACKAGES = ("aqua_tasks", "orca_judge", "eval_plugins")


def unsupported_version() -> str | None:
    """Why the installed lm-eval cannot be extended (None: a supported version)."""
    from eval_plugins.lm_eval.compat import lm_eval_problem

    return lm_eval_problem()


def on_task_manager(module: ModuleType) -> None:
    """lm_eval.tasks.manager imported: every TaskManager also indexes the AQUA task folder
    (without lm-eval's built-in tasks in a run that needs none), and its glob matches leave
    out a built track whose file data_dir lacks."""
    from eval_plugins.lm_eval.registration import install_task_folder

    install_task_folder(module.TaskManager)


def own_import_underway() -> bool:
    """Whether a module of ours is still executing (and imported lm-eval itself)."""
    # importlib marks a module's spec while its code runs.
    return any(
        name.partition(".")[0] in PACKAGES
        and getattr(getattr(module, "__spec__", None), "_initializing", False)
        for name, module in list(sys.modules.items())
    )


def on_evaluator(module: ModuleType) -> None:
    """lm_eval.evaluator imported: register our models (after lm-eval's own) and metric orca."""
    from eval_plugins.lm_eval.compat import patch_evaluation, scoring_pipeline
    from eval_plugins.lm_eval.registration import register_all

    if own_import_underway():
        # e.g. aqua eval's register_all() importing the metric, which imports the evaluator:
        # registering now would meet our modules half-initialised. On 0.4.13 it is done when
        # each evaluation starts (a no-op once the caller has registered); lm-eval 0.5 builds
        # its tasks before that, and the caller underway registers.
        if not scoring_pipeline():
            patch_evaluation(before=register_all)
        return
    register_all()


def on_model(module: ModuleType) -> None:
    """lm_eval.api.model imported: `--use_cache` keys accept audio (CachingLM, any caller)."""
    from eval_plugins.lm_eval.compat import patch_cache_keys, scoring_pipeline

    if not scoring_pipeline():
        patch_cache_keys()
