"""Every place AQUA relies on lm-evaluation-harness internals, for the versions of one gate.

lm-eval has no hook for a plugin's task folder, for its command-line run or for the results
its CLI computes; AQUA gets them here, from internals of lm-eval 0.4.13:

- `index_task_folder`: wraps `TaskManager.__init__(self, verbosity, include_path,
  include_defaults, metadata)` (those parameters, in that order) so that every TaskManager
  also indexes the AQUA task folder;
- `filter_task_matches`: wraps `TaskManager.match_tasks(self, task_list)`, which lm-eval's
  CLI calls once per `--tasks` entry to expand it, and reads the TaskManager's `metadata`
  attribute (the run's `--metadata`);
- `patch_run_command`: wraps the static `Run._execute(args)` of `lm_eval._cli.run`, which
  runs the `lm_eval run` command;
- `returning_simple_evaluate`: lm-eval's CLI calls `lm_eval.simple_evaluate`, resolved at run
  time through the package's lazy module `__getattr__`, and drops its results; an attribute
  of the package shadows it for the duration of a run;
- `before_first_simple_evaluate`: `lm_eval.evaluator.simple_evaluate`, looked up at call time;
- `harness_cli`: `HarnessCLI`'s argparse parser is its private `_parser`, its subcommands'
  parsers the `choices` of its private `_subparsers` (their epilogs are lm-eval's examples);
- `known_task_names`: the `all_tasks` of the last TaskManager built (recorded by the
  `index_task_folder` wrapper), for "did you mean" hints;
- `load_task_yaml`: `lm_eval.tasks._yaml_loader.load_yaml(path, resolve_func=False,
  recursive=True)`, the call lm-eval's task indexer makes (it skips a file it raises on);
- `report_invalid_json`: wraps `lm_eval._cli.utils.MergeDictAction.__call__`, which raises a
  bare ValueError for a `--metadata` / `--model_args` value that is broken JSON.

Which versions: `eval_common.harness_versions`, the range pyproject.toml requires
(`lm-eval>=0.4.13,<0.5`), tested with 0.4.13. Outside it the start-up hook patches nothing
and `aqua-eval` / `register_all()` stop with the reason. ORCA's own lm-eval internals (the
evaluate() and aggregation wrappers, private task tables) are `orca_judge.lm_eval.compat`.
A new lm-eval version is supported by changing the compat modules and that gate only.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from eval_common.cli import fail
from eval_common.harness_versions import unsupported_version

# Attributes of our wrappers, so that patching twice is a no-op.
_INDEXES_AQUA = "_indexes_aqua_tasks"
_FILTERS_MATCHES = "_filters_aqua_matches"
_EXTENDED = "_aqua_extended"
_REPORTS_JSON = "_aqua_reports_json"
# The last TaskManager built: its task names are the "did you mean" candidates.
_LAST_TASK_MANAGER: list[weakref.ref] = []

IncludePath = Callable[[Any, bool], Any]
# choose(patterns, matches, metadata): the matches to keep.
ChooseMatches = Callable[[list[str], list[str], Any], list[str]]
# around(execute, args): runs lm-eval's `run` command (execute(args)) with what it adds.
Around = Callable[[Callable[[Any], None], Any], None]


def lm_eval_problem() -> str | None:
    """Why the installed lm-eval cannot be extended (None: a supported version)."""
    import lm_eval

    return unsupported_version("lm-eval", getattr(lm_eval, "__version__", None))


def index_task_folder(task_manager_cls: type, folders: IncludePath) -> None:
    """Every TaskManager indexes `folders(include_path, include_defaults)`; idempotent."""
    init = task_manager_cls.__init__
    if getattr(init, _INDEXES_AQUA, False):
        return

    @functools.wraps(init)
    def __init__(
        self: Any,
        verbosity: str | None = None,
        include_path: Any = None,
        include_defaults: bool = True,
        metadata: dict | None = None,
    ) -> None:
        init(self, verbosity, folders(include_path, include_defaults), include_defaults, metadata)
        _LAST_TASK_MANAGER[:] = [weakref.ref(self)]

    setattr(__init__, _INDEXES_AQUA, True)
    task_manager_cls.__init__ = __init__


def filter_task_matches(task_manager_cls: type, choose: ChooseMatches) -> None:
    """`TaskManager.match_tasks` keeps only what `choose` keeps of its matches; idempotent."""
    match = task_manager_cls.match_tasks
    if getattr(match, _FILTERS_MATCHES, False):
        return

    @functools.wraps(match)
    def match_tasks(self: Any, task_list: list[str]) -> list[str]:
        matches = match(self, task_list)
        return choose(list(task_list), matches, getattr(self, "metadata", None))

    setattr(match_tasks, _FILTERS_MATCHES, True)
    task_manager_cls.match_tasks = match_tasks


def patch_run_command(run_cls: type, around: Around) -> None:
    """lm-eval's `run` command runs inside `around(execute, args)`; idempotent."""
    execute: Callable[[Any], None] = run_cls._execute
    if getattr(execute, _EXTENDED, False):
        return

    @functools.wraps(execute)
    def _execute(args: Any) -> None:
        around(execute, args)

    setattr(_execute, _EXTENDED, True)
    run_cls._execute = staticmethod(_execute)


@contextmanager
def returning_simple_evaluate(replacement: Callable[..., Any]) -> Iterator[None]:
    """Within: lm-eval's CLI calls `replacement` where it calls `lm_eval.simple_evaluate`."""
    import lm_eval

    lm_eval.simple_evaluate = replacement
    try:
        yield
    finally:
        del lm_eval.simple_evaluate


def before_first_simple_evaluate(evaluator: ModuleType, step: Callable[[], object]) -> None:
    """Run `step()` at the start of the evaluator's first simple_evaluate()."""
    original = evaluator.simple_evaluate

    @functools.wraps(original)
    def simple_evaluate(*args: Any, **kwargs: Any) -> Any:
        evaluator.simple_evaluate = original
        step()
        return original(*args, **kwargs)

    evaluator.simple_evaluate = simple_evaluate


def harness_cli(prog: str, description: str, epilog: str) -> Any:
    """lm-eval's command-line parser, presented as `prog` with `description` and `epilog`.

    lm-eval's own epilogs are its quick start (`lm-eval run … --tasks hellaswag`): they are
    replaced by `epilog` on the command and on its `run` subcommand, and every subcommand is
    shown under `prog`.
    """
    from lm_eval._cli import HarnessCLI

    parser = HarnessCLI()
    parser._parser.prog = prog
    parser._parser.description = description
    parser._parser.epilog = epilog
    for name, sub in parser._subparsers.choices.items():
        sub.prog = f"{prog} {name}"
        sub.usage = None if sub.usage is None else sub.usage.replace("lm-eval", prog, 1)
        sub.epilog = epilog if name == "run" else None
    return parser


def known_task_names() -> list[str]:
    """The task names the last TaskManager built knows ([] before any)."""
    manager = _LAST_TASK_MANAGER[0]() if _LAST_TASK_MANAGER else None
    return list(getattr(manager, "all_tasks", None) or [])


def load_task_yaml(path: Any) -> Any:
    """A task YAML read as lm-eval's indexer reads it; raises what makes the indexer skip it."""
    from lm_eval.tasks._yaml_loader import load_yaml

    return load_yaml(path, resolve_func=False, recursive=True)


def report_invalid_json(
    utils_module: ModuleType, problem: Callable[[list[str]], str | None]
) -> None:
    """lm-eval's dict flags print `problem([flag, value])` and exit 2 on broken JSON; idempotent."""
    action_cls = utils_module.MergeDictAction
    call = action_cls.__call__
    if getattr(call, _REPORTS_JSON, False):
        return

    @functools.wraps(call)
    def __call__(self: Any, parser: Any, namespace: Any, values: Any, option_string: Any = None):
        try:
            return call(self, parser, namespace, values, option_string)
        except ValueError as error:
            first = values[0] if isinstance(values, list | tuple) and values else values
            line = problem([str(option_string or self.dest), str(first)]) or str(error)
            # The name the user typed (lm_eval, lm-eval or aqua-eval), as every other error says.
            prog = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "lm_eval"
            raise SystemExit(fail(prog, line)) from None

    setattr(__call__, _REPORTS_JSON, True)
    action_cls.__call__ = __call__
