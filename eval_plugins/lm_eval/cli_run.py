"""What `aqua eval` adds around lm-eval's command line: its results, judge failures, table.

- each evaluation in a judge session whose per-item files go beside lm-eval's samples (the
  evaluation seam, under plain `lm_eval` too);
- the paper-layout table after lm-eval's own, and judge failures repeated at the end with a
  non-zero exit (`aqua eval` only: plain `lm_eval` prints its table and logs the failures).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from eval_common.cli import fail

# Modules that need scipy, regex or torch are imported when used: `aqua eval --help` stays quick.


@dataclass
class CliRun:
    """The evaluations of one command-line run: their results, any judge failures, and its
    `--metadata` (read by the judge scorers of lm-eval 0.5, which hands them no task config)."""

    results: list[dict] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    metadata: dict | None = None


_ACTIVE: ContextVar[CliRun | None] = ContextVar("aqua_cli_run", default=None)


def run_metadata() -> dict | None:
    """The `--metadata` of the `aqua eval` run in progress (None under plain lm_eval)."""
    record = _ACTIVE.get()
    return None if record is None else record.metadata


def checked_run(simple_evaluate: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """simple_evaluate(*args, **kwargs) after checking our models' arguments, its results
    kept for the open command-line run."""
    check_model(kwargs)
    results = simple_evaluate(*args, **kwargs)
    record = _ACTIVE.get()
    if record is not None and isinstance(results, dict):
        record.results.append(results)
    return results


def check_model(run: dict) -> None:
    """ModelArgumentError, before the model loads, for a bad argument of one of our models or
    a model that needs audio in a text-only AQUA run (`run`: simple_evaluate's keywords)."""
    from aqua_tasks.core.run_settings import selects_aqua_tasks
    from aqua_tasks.models.audio_prompts import refuse_text_only_run
    from eval_plugins.names import LM_EVAL, aqua_models, load, targets

    name = run.get("model")
    if not isinstance(name, str) or name not in aqua_models(LM_EVAL):
        return  # lm-eval's own models (or a model object) check their own arguments
    cls = load(targets(LM_EVAL, "models")[name])
    model_args = run.get("model_args")
    if isinstance(model_args, dict):
        harness = {key: run.get(key) for key in ("batch_size", "max_batch_size", "device")}
        cls.check_model_args(dict(model_args), harness)
    check_gen_kwargs(run.get("gen_kwargs"))
    tasks = run.get("tasks")
    names = [t for t in tasks if isinstance(t, str)] if isinstance(tasks, list) else tasks
    if isinstance(run.get("metadata"), dict) and selects_aqua_tasks(names or None):
        refuse_text_only_run(cls, run["metadata"])


def check_gen_kwargs(gen_kwargs: object) -> None:
    """ModelArgumentError for a `--gen_kwargs max_gen_toks` our models could not use (they read
    it at their first request, after loading)."""
    from lm_eval.utils import simple_parse_args_string

    from aqua_tasks.models.model_args import positive_int

    if isinstance(gen_kwargs, str):
        try:
            gen_kwargs = simple_parse_args_string(gen_kwargs)
        except (ValueError, SyntaxError):
            return  # lm-eval refuses it itself
    if isinstance(gen_kwargs, dict) and gen_kwargs.get("max_gen_toks") is not None:
        positive_int("--gen_kwargs max_gen_toks", gen_kwargs["max_gen_toks"])


@contextmanager
def command_line_run(metadata: dict | None = None) -> Iterator[CliRun]:
    """Within: every simple_evaluate's results and judge failures are kept (re-entrant).

    lm-eval's command line prints and saves the results but never returns them.
    """
    active = _ACTIVE.get()
    if active is not None:
        yield active
        return
    from orca_judge.metric.judge_pass import JudgeSession, session_scope

    record = CliRun(metadata=metadata)
    token = _ACTIVE.set(record)
    try:
        with session_scope(JudgeSession(failures=record.failures)):
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


def check_loggers(wandb_args: str | None) -> None:
    """LoggerUnavailable for `--wandb_args` without wandb, before any model is loaded.

    lm-eval's W&B logger only warns when wandb is missing, then fails on its first use of it
    with a traceback, after the evaluation; a nightly job should read the fix in one line first.
    """
    from aqua_tasks.errors import LoggerUnavailable

    if not wandb_args:
        return
    try:
        import wandb  # noqa: F401
    except ImportError:
        raise LoggerUnavailable(
            "--wandb_args needs the wandb package: pip install 'aqua-bench-eval[wandb]'"
        ) from None


def report(record: CliRun, prog: str) -> int:
    """Print the paper-layout table of each AQUA evaluation and the judge failures; exit status."""
    from aqua_tasks.reports.tables import paper_table

    for results in record.results:
        table = paper_table(results)
        if table:
            print(f"\nAQUA-Bench (paper layout, %):\n{table}")
    return report_failures(record, prog)


def report_failures(record: CliRun, prog: str) -> int:
    """Repeat the judge failures and those of an LLM fallback that failed after generation
    (its replies kept in the samples) at the end of the run; exit status 1 if any."""
    import sys

    messages = list(record.failures)
    # No reader was made unless the module was loaded: nothing to import for other runs.
    if (fallback := sys.modules.get("aqua_tasks.task.fallback")) is not None:
        messages += fallback.failures()
    for message in messages:
        fail(prog, message)
    return 1 if messages else 0
