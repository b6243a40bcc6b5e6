"""What plain `lmms-eval` gets from both packages, applied by the start-up hook as it imports.

`eval_plugins.startup_hook` calls one function per lmms-eval module, right after that module
has executed: the evaluator comes with `metric: orca` registered and its judge checked before
generation, and the command-line run turns bad input to our tasks, models or judge into a
one-line error with exit status 2, and leaves a built track whose file `data_dir` lacks out of
a `--tasks` glob (one line), as under lm-eval.
Only on the lmms-eval version `eval_common.harness_versions` supports (0.7.3); every patch is a
seam of `eval_plugins.lmms_eval.compat`.
"""

from __future__ import annotations

from types import ModuleType


def unsupported_version() -> str | None:
    """Why the installed lmms-eval cannot be extended (None: the supported version)."""
    from eval_common.harness_versions import unsupported_version as problem
    from eval_plugins.lmms_eval.compat import lmms_eval_version

    return problem("lmms-eval", lmms_eval_version())


def on_evaluator(module: ModuleType) -> None:
    """lmms_eval.evaluator imported: metric orca registered, judges checked before generation."""
    from eval_plugins.lmms_eval.metric import install

    install(module)


def on_cli(module: ModuleType) -> None:
    """lmms_eval.__main__ imported: bad input to our tasks, models or judge (no data folder,
    a bad AQUA_METADATA or model argument, a missing clip, a misconfigured judge) ends the run
    with one line and exit status 2 instead of lmms-eval's traceback and exit 0 (settings are
    checked before lmms-eval indexes its tasks); any other failure of a run with our tasks,
    models or metric orca exits 1."""
    from eval_common.errors import EvalError
    from eval_plugins.lmms_eval.aqua.run_checks import check_cli_run, is_own_run
    from eval_plugins.lmms_eval.aqua.task import choose_task_matches
    from eval_plugins.lmms_eval.compat import patch_cli
    from eval_plugins.names import LM_EVAL, LMMS_EVAL, aqua_models, load, targets

    # AQUA's lmms-eval models carry the names of the lm-eval classes they wrap.
    ours = aqua_models(LMMS_EVAL)
    classes = targets(LM_EVAL, "models")

    def check(args: object) -> None:
        name = str(getattr(args, "model", "") or "")
        check_cli_run(args, load(classes[name]) if name in ours else None)

    errors = (EvalError,)  # every error of both packages' families
    owns = lambda args: is_own_run(args, ours)  # noqa: E731
    patch_cli(module, errors, check=check, owns=owns, choose=choose_task_matches)
