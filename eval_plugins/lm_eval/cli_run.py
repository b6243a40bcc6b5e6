"""What an lm-eval command-line run gets from both packages, under `aqua-eval` or plain `lm_eval`.

- `--metadata` of an AQUA run checked before lm-eval spends time indexing and loading;
- each evaluation in a judge session whose per-item files go beside lm-eval's samples;
- the paper-layout table after lm-eval's own, and judge failures repeated at the end with a
  non-zero exit.

`aqua-eval` opens `command_line_run()` around lm-eval's CLI; under plain `lm_eval` the
start-up hook wraps lm-eval's `run` command with `extend_run_command`. Inside `aqua-eval`
the wrapped command sees the open run and adds nothing twice.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from eval_common.cli import fail

# Modules that need scipy, regex or torch are imported when used: `lm_eval ls tasks` and
# `lm_eval --help` import lm-eval's run command too, and must stay quick.


@dataclass
class CliRun:
    """The evaluations of one command-line run: their results and any judge failures."""

    results: list[dict] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


_ACTIVE: ContextVar[CliRun | None] = ContextVar("aqua_cli_run", default=None)


@contextmanager
def command_line_run() -> Iterator[CliRun]:
    """Within: lm_eval.simple_evaluate runs in a judge session, keeping results (re-entrant)."""
    active = _ACTIVE.get()
    if active is not None:
        yield active
        return
    from eval_common.evaluation import tracker_output_folder
    from eval_plugins.lm_eval.compat import returning_simple_evaluate
    from orca_judge.metric.judge_pass import JudgeSession, session_scope

    record = CliRun()

    def keeping(simple_evaluate: Callable[..., Any]) -> Callable[..., Any]:
        def evaluate_and_keep(*args: Any, **kwargs: Any) -> dict | None:
            # Per-item judge results go where lm-eval's tracker writes the samples; each
            # evaluation inside gets its own judge session, sharing this folder and failure log.
            folder = tracker_output_folder(kwargs.get("evaluation_tracker"))
            with session_scope(JudgeSession(output_folder=folder, failures=record.failures)):
                results = simple_evaluate(*args, **kwargs)
            if isinstance(results, dict):
                record.results.append(results)
            return results

        return evaluate_and_keep

    # lm-eval's CLI never returns the results: it calls this instead, which keeps them.
    token = _ACTIVE.set(record)
    try:
        with returning_simple_evaluate(keeping):
            yield record
    finally:
        _ACTIVE.reset(token)


def user_errors() -> tuple[type[Exception], ...]:
    """Errors in the user's settings or data: reported in one line, not with a traceback.

    Every error of both packages' families (`eval_common.errors.EvalError`), as every console
    script of ours reports them.
    """
    from eval_common.errors import EvalError

    return (EvalError,)


def harness_refusal(error: Exception) -> str | None:
    """The one line for an error that is the user's to fix (ours or lm-eval's), else None."""
    from eval_plugins.lm_eval.harness_errors import missing_tasks_message

    if isinstance(error, user_errors()):
        return str(error)
    if isinstance(error, ValueError | KeyError):
        return missing_tasks_message(error)
    return None


def check_run_settings(args: Any) -> None:
    """Refuse, before lm-eval indexes tasks, `--metadata` an AQUA run cannot use
    (AquaDataError), bad model arguments of this package's models (ModelArgumentError) and
    `--wandb_args` without wandb installed (LoggerUnavailable)."""
    from aqua_tasks.core.run_settings import check_aqua_metadata, selects_aqua_tasks

    if getattr(args, "command", "run") != "run":
        return
    aqua = selects_aqua_tasks(getattr(args, "tasks", None))
    if aqua:
        check_aqua_metadata(getattr(args, "metadata", None))
    check_model_args(args, getattr(args, "metadata", None) if aqua else None)
    check_loggers(args)


def check_loggers(args: Any) -> None:
    """LoggerUnavailable for `--wandb_args` without wandb, before any model is loaded.

    lm-eval's W&B logger only warns when wandb is missing, then fails on its first use of it
    with a traceback; a nightly job should read the fix in one line instead.
    """
    from aqua_tasks.errors import LoggerUnavailable

    if not getattr(args, "wandb_args", None):
        return
    try:
        import wandb  # noqa: F401
    except ImportError:
        raise LoggerUnavailable(
            "--wandb_args needs the wandb package: pip install 'aqua-bench-eval[wandb]'"
        ) from None


def check_model_args(args: Any, aqua_metadata: dict | None = None) -> None:
    """ModelArgumentError for a bad model argument of one of our models; loads no model.

    `aqua_metadata`: the `--metadata` of a run of AQUA tasks (None otherwise), so that a model
    that needs audio refuses a text-only run before any request.
    """
    from aqua_tasks.models.audio_prompts import refuse_text_only_run
    from eval_plugins.names import LM_EVAL, aqua_models, load, targets

    name = str(getattr(args, "model", "") or "")
    if name not in aqua_models(LM_EVAL):
        return  # lm-eval's own models check their own arguments
    cls = load(targets(LM_EVAL, "models")[name])
    model_args = getattr(args, "model_args", None)
    if isinstance(model_args or {}, dict):
        harness = {
            name: getattr(args, name, None) for name in ("batch_size", "max_batch_size", "device")
        }
        cls.check_model_args(dict(model_args or {}), harness)
    if isinstance(aqua_metadata, dict):
        refuse_text_only_run(cls, aqua_metadata)


def report(record: CliRun, prog: str) -> int:
    """Print the paper-layout table of each AQUA evaluation and the judge failures; exit status."""
    from aqua_tasks.reports.tables import paper_table

    for results in record.results:
        table = paper_table(results)
        if table:
            print(f"\nAQUA-Bench (paper layout, %):\n{table}")
    for message in record.failures:
        fail(prog, message)
    return 1 if record.failures else 0


def extend_run_command(run_cls: type, prog: str = "lm_eval") -> None:
    """Wrap lm-eval's `run` command with what this module adds; idempotent."""
    from eval_plugins.lm_eval.compat import patch_run_command

    def around(execute: Callable[[Any], None], args: Any) -> None:
        if _ACTIVE.get() is not None:  # aqua-eval: it checks, collects and reports itself
            execute(args)
            return
        from eval_plugins.lm_eval.aqua.task_index import indexing_for

        try:
            check_run_settings(args)
            with command_line_run() as record, indexing_for(args):
                execute(args)
        except Exception as err:
            line = harness_refusal(err)
            if line is None:
                raise
            sys.exit(fail(prog, line))
        status = report(record, prog)
        if status:
            sys.exit(status)

    patch_run_command(run_cls, around)
