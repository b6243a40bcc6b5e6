"""What plain `lm_eval` gets from this package, applied by the start-up hook as lm-eval imports.

`aqua_tasks.startup_hook` calls one function per lm-eval module, right after that module has
executed: the TaskManager also indexes our task folder, the evaluator comes with our models
and `metric: orca` registered (after lm-eval's own), and the command-line run adds what
`aqua-eval` adds. Only on the lm-eval versions `orca_judge.lm_eval.compat` is tested with.
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType
from typing import Any

PACKAGES = ("aqua_tasks", "orca_judge")


def unsupported_version() -> str | None:
    """Why the installed lm-eval cannot be extended (None: it is a tested version)."""
    import lm_eval

    from orca_judge.lm_eval.compat import TESTED_LM_EVAL_VERSIONS

    version = getattr(lm_eval, "__version__", None)
    if version in TESTED_LM_EVAL_VERSIONS:
        return None
    tested = ", ".join(TESTED_LM_EVAL_VERSIONS)
    return f"lm-eval {version} is not a version this package is tested with ({tested})"


def on_task_manager(module: ModuleType) -> None:
    """lm_eval.tasks.manager imported: every TaskManager also indexes the AQUA task folder."""
    from aqua_tasks.lm_eval.registration import index_task_folder

    index_task_folder(module.TaskManager)


def own_import_underway() -> bool:
    """Whether a module of this package is still executing (and imported lm-eval itself)."""
    # importlib marks a module's spec while its code runs.
    return any(
        name.partition(".")[0] in PACKAGES
        and getattr(getattr(module, "__spec__", None), "_initializing", False)
        for name, module in list(sys.modules.items())
    )


def on_evaluator(module: ModuleType) -> None:
    """lm_eval.evaluator imported: register our models (after lm-eval's own) and metric orca."""
    from aqua_tasks.lm_eval.registration import register_all

    if own_import_underway():
        # e.g. aqua-eval's register_all() importing the metric, which imports the evaluator:
        # registering now would meet our modules half-initialised. Do it when the first
        # evaluation starts instead (a no-op if the caller has registered by then).
        register_on_first_evaluation(module)
        return
    register_all()


def register_on_first_evaluation(evaluator: ModuleType) -> None:
    """Call register_all() at the start of the evaluator's first simple_evaluate()."""
    from aqua_tasks.lm_eval.registration import register_all

    original = evaluator.simple_evaluate

    @functools.wraps(original)
    def simple_evaluate(*args: Any, **kwargs: Any) -> Any:
        evaluator.simple_evaluate = original
        register_all()
        return original(*args, **kwargs)

    evaluator.simple_evaluate = simple_evaluate


def on_cli_run(module: ModuleType) -> None:
    """lm_eval._cli.run imported: `lm_eval run` gets aqua-eval's checks, judge output and table."""
    from aqua_tasks.lm_eval.run import extend_run_command

    extend_run_command(module.Run)
