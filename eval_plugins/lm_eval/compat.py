"""Every place this plugin relies on lm-evaluation-harness internals: one module, one gate.

lm-eval 0.4.13 has no hook for a plugin's task folder, for its command-line run, for the
results its CLI computes, for the start of an evaluation or for the task and filter of an
aggregation's values; this module gets them from its internals, for both packages (AQUA's tasks
and models, ORCA's metric). Each patch is a seam (`eval_plugins.seams`): applied on the versions
it was tested with only, skipped with one line on another release where lm-eval runs correctly
without it, refused with one line where it does not. `required` below says which; each one's
docstring, and docs/architecture.md, say what breaks without it.

lm-eval's 0.5 line (`scoring_pipeline()`) scores tasks through public `Scorer` classes: there
AQUA's scorer (`eval_plugins.lm_eval.aqua.scorer`) and lazy registrations replace every patch but
the two task-folder seams, which are tested on both lines.

Task folder and `--tasks` (skippable; 0.4.13 and 0.5.0.dev1):
- `index_task_folder`: wraps `TaskManager.__init__(self, verbosity, include_path,
  include_defaults, metadata)` (those parameters, in that order) so that every TaskManager
  also indexes the AQUA task folder; on 0.4.13, in a run that may do without lm-eval's built-in
  tasks it first builds the index without them, reads its `task_index` entries (`kind.name`, a
  group's `cfg["task"]`, a tag's `tags`) and builds the full one only where that index lacks
  something the run needs;
- `filter_task_matches`: wraps `TaskManager.match_tasks(self, task_list)`, which lm-eval's
  CLI calls once per `--tasks` entry, and reads the TaskManager's `metadata` (`--metadata`).

Command line (0.4.13):
- `patch_run_command` (skippable): wraps the static `Run._execute(args)` of `lm_eval._cli.run`;
- `returning_simple_evaluate` (required): lm-eval's CLI calls `lm_eval.simple_evaluate`,
  resolved through the package's lazy `__getattr__`, and drops its results; an attribute of
  the package shadows it for the duration of a run, and whatever was there before is put back;
- `before_first_simple_evaluate` (required): `lm_eval.evaluator.simple_evaluate`, looked up at
  call time, runs a step first;
- `harness_cli` (required): `HarnessCLI` of `lm_eval._cli`; its argparse parser is the private
  `_parser`, its subcommands' parsers the `choices` of its private `_subparsers`.

Evaluation (required, 0.4.13):
- `patch_evaluate`: wraps `lm_eval.evaluator.evaluate` (which `simple_evaluate` looks up at
  call time) so each evaluation runs in its own judge session, after an optional step that sees
  the built tasks before any request is made, followed by an optional step that fixes up the
  results dict before lm-eval prints and saves it;
- `patch_task_aggregations`: wraps `lm_eval.evaluator_utils._compute_task_aggregations(task,
  raw_metrics, bootstrap_iters)` (looked up at call time by `_collect_results`), where the task
  and its {(metric, filter): values} meet: each aggregation gets its values as `SitedValues`
  naming task and filter, and `eval_common.evaluation` keeps them for the results step;
- the private per-task tables both harnesses' task classes keep: `eval_plugins.built_tasks`.

Requests (skippable, 0.4.13):
- `patch_cache_keys`: `lm_eval.api.model._multimodal_cache_default`, the JSON fallback of
  `--use_cache` keys, knows bytes and images only; audio becomes a digest of its content.

Which versions: `eval_common.harness_versions` (the range pyproject.toml requires,
`lm-eval>=0.4.13,<0.6`; TESTED and NEXT name the releases the seams were tested on).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any, NamedTuple

from eval_common import harness_versions
from eval_common.evaluation import collecting, record
from eval_common.harness_versions import unsupported_version
from eval_plugins import built_tasks
from eval_plugins.seams import seam
from orca_judge.metric.aggregate import SitedValues
from orca_judge.metric.judge_pass import evaluate_task_dict, judged_evaluation

HARNESS = "lm-eval"
# The releases the task-folder seams were tested on: 0.4.13 and the 0.5 line CI runs.
BOTH_LINES = (harness_versions.TESTED[HARNESS], harness_versions.NEXT[HARNESS])
# Attributes of our wrappers, so that patching twice is a no-op.
_INDEXES_AQUA = "_indexes_aqua_tasks"
_EXTENDED = "_aqua_extended"
PATCH_MARK = "_orca_prepare"
# evaluate()'s default of the argument that also switches stderr computation off (0).
DEFAULT_BOOTSTRAP_ITERS = 100000
CACHE_DEFAULT = "_multimodal_cache_default"

IncludePath = Callable[[Any, bool], Any]


class BuiltinsNeeded(NamedTuple):
    """Whether a TaskManager may try an index without lm-eval's built-in tasks, and keep it."""

    may_skip: Callable[[], bool]
    covered: Callable[[Mapping[str, list[Any]]], bool]


# around(execute, args): runs lm-eval's `run` command (execute(args)) with what it adds.
Around = Callable[[Callable[[Any], None], Any], None]
Prepare = Callable[[Mapping[str, Any]], object]
# finish(task_dict, results, bootstrap_iters) -> the results dict lm-eval prints and saves.
Finish = Callable[[Mapping[str, Any], dict, int], dict]


def scoring_pipeline() -> bool:
    """Whether the installed lm-eval scores tasks through public Scorers (the 0.5 line).

    There, everything this package adds goes through lm-eval's public registries and
    `Scorer` classes, and only the task-folder seams above are made.
    """
    import importlib.util

    return importlib.util.find_spec("lm_eval.scorers") is not None


def lm_eval_problem() -> str | None:
    """Why the installed lm-eval cannot be extended at all (None: a version in the range)."""
    import lm_eval

    return unsupported_version(HARNESS, getattr(lm_eval, "__version__", None))


# --- task folder and --tasks ---------------------------------------------------------------


@seam(
    HARNESS,
    "the AQUA tasks in every TaskManager (pass --include_path), and AQUA-only runs indexed "
    "without lm-eval's built-in tasks",
    required=False,
    tested=BOTH_LINES,
)
def index_task_folder(
    task_manager_cls: type, folders: IncludePath, builtins: BuiltinsNeeded | None = None
) -> None:
    """Every TaskManager indexes `folders(include_path, include_defaults)`; idempotent.

    With `builtins`: where `builtins.may_skip()`, the index is built without lm-eval's
    built-in tasks first, and kept if `builtins.covered(references)` says it holds what the
    run needs (`references`: name -> a group's members or a tag's tasks; [] for a task).
    """
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
        paths = folders(include_path, include_defaults)
        narrow = include_defaults and builtins is not None and builtins.may_skip()
        if narrow:
            init(self, verbosity, paths, False, metadata)
            narrow = builtins.covered(_index_references(self))
        if not narrow:
            init(self, verbosity, paths, include_defaults, metadata)

    setattr(__init__, _INDEXES_AQUA, True)
    task_manager_cls.__init__ = __init__


def _index_references(task_manager: Any) -> dict[str, list[Any]]:
    """Each indexed name -> the members its group lists or its tag's tasks ([] for a task)."""
    references: dict[str, list[Any]] = {}
    for name, entry in task_manager.task_index.items():
        kind = entry.kind.name
        if kind == "GROUP":
            members = (entry.cfg or {}).get("task", [])
            references[name] = list(members) if isinstance(members, list) else [members]
        else:
            references[name] = sorted(entry.tags) if kind == "TAG" else []
    return references


@seam(
    HARNESS,
    "leaving unbuilt tracks out of --tasks globs",
    required=False,
    tested=BOTH_LINES,
)
def filter_task_matches(task_manager_cls: type, choose: built_tasks.ChooseMatches) -> None:
    """`TaskManager.match_tasks` keeps only what `choose` keeps of its matches; idempotent."""
    built_tasks.wrap_match_tasks(task_manager_cls, choose)


# --- command line --------------------------------------------------------------------------


@seam(HARNESS, "aqua-eval's checks, judge files and table under plain lm_eval", required=False)
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


@seam(HARNESS, "the results of lm-eval's command line (judge failures, table)", required=True)
@contextmanager
def returning_simple_evaluate(
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]],
) -> Iterator[None]:
    """Within: lm-eval's CLI calls `wrap(current)` where it calls `lm_eval.simple_evaluate`.

    `current` is what the CLI would have called: lm-eval's own function, or a wrapper or test
    mock a user set on the package before; that attribute is put back afterwards.
    """
    import lm_eval

    missing = object()
    previous = lm_eval.__dict__.get("simple_evaluate", missing)
    lm_eval.simple_evaluate = wrap(lm_eval.simple_evaluate)
    try:
        yield
    finally:
        if previous is missing:
            del lm_eval.simple_evaluate
        else:
            lm_eval.simple_evaluate = previous


@seam(HARNESS, "registering our models and metric before the first evaluation", required=True)
def before_first_simple_evaluate(evaluator: ModuleType, step: Callable[[], object]) -> None:
    """Run `step()` at the start of the evaluator's first simple_evaluate()."""
    original = evaluator.simple_evaluate

    @functools.wraps(original)
    def simple_evaluate(*args: Any, **kwargs: Any) -> Any:
        evaluator.simple_evaluate = original
        step()
        return original(*args, **kwargs)

    evaluator.simple_evaluate = simple_evaluate


@seam(HARNESS, "lm-eval's command line inside aqua-eval", required=True)
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


# --- evaluation ----------------------------------------------------------------------------


class EvaluateHooks(NamedTuple):
    """The steps our evaluate() wrapper runs before and after lm-eval's evaluate()."""

    prepare: Prepare | None
    finish: Finish | None


@seam(HARNESS, "judge sessions and AQUA's pooled all-tracks rows", required=True)
def patch_evaluate(prepare: Prepare | None = None, finish: Finish | None = None) -> None:
    """Run each lm-eval evaluate() in a fresh judge session, between `prepare` and `finish`.

    `prepare(task_dict)` runs before any request is built; `finish(task_dict, results,
    bootstrap_iters)` returns the results dict evaluate() hands back. Idempotent; a hook
    given replaces the installed one of its kind, a hook not given keeps it.
    """
    from lm_eval import evaluator

    current = evaluator.evaluate
    if hasattr(current, PATCH_MARK):
        installed = getattr(current, PATCH_MARK)
        hooks = EvaluateHooks(prepare or installed.prepare, finish or installed.finish)
        if hooks == installed:
            return
        current = current.__wrapped__
    else:
        hooks = EvaluateHooks(prepare, finish)

    @functools.wraps(current)
    def evaluate(*args: Any, **kwargs: Any) -> Any:
        task_dict = evaluate_task_dict(args, kwargs)
        with collecting():
            with judged_evaluation(hooks.prepare, task_dict):
                results = current(*args, **kwargs)
            if hooks.finish is None or results is None:  # None: not rank 0
                return results
            return hooks.finish(task_dict, results, _bootstrap_iters(current, args, kwargs))

    setattr(evaluate, PATCH_MARK, hooks)
    evaluator.evaluate = evaluate
    patch_task_aggregations()


def _bootstrap_iters(function: Callable, args: tuple, kwargs: Mapping[str, Any]) -> int:
    bound = inspect.signature(function).bind_partial(*args, **kwargs).arguments
    value = bound.get("bootstrap_iters", DEFAULT_BOOTSTRAP_ITERS)
    return int(value) if value else 0


@seam(HARNESS, "the task and filter of every aggregation's values", required=True)
def patch_task_aggregations() -> None:
    """Hand every aggregation its values as SitedValues (task and filter), and collect them.

    lm-eval's `_compute_task_aggregations(task, raw_metrics, bootstrap_iters)` (looked up at
    call time by `_collect_results`) gets each task's {(metric, filter): values} after lm-eval
    gathered them from every rank. Idempotent.
    """
    from lm_eval import evaluator_utils

    current = evaluator_utils._compute_task_aggregations
    if hasattr(current, PATCH_MARK):
        return

    @functools.wraps(current)
    def compute_task_aggregations(task: Any, raw_metrics: Mapping, *args: Any, **kwargs: Any):
        name = str(task.task_name)
        sited = {
            key: SitedValues(values, task=name, filter_key=key[1])
            for key, values in raw_metrics.items()
        }
        record(name, sited)
        return current(task, sited, *args, **kwargs)

    setattr(compute_task_aggregations, PATCH_MARK, True)
    evaluator_utils._compute_task_aggregations = compute_task_aggregations


# --- output --------------------------------------------------------------------------------


@seam(HARNESS, "--use_cache keys for audio requests", required=False)
def patch_cache_keys() -> bool:
    """Make lm-eval's cache keys accept audio; True if its hook was found (idempotent)."""
    import logging

    from lm_eval.api import model as lm_model

    current = getattr(lm_model, CACHE_DEFAULT, None)
    if current is None:
        logging.getLogger(__name__).warning(
            "lm-eval has no %s: --use_cache keys for audio requests are lm-eval's own",
            CACHE_DEFAULT,
        )
        return False
    if hasattr(current, "wrapped"):
        return True

    def audio_default(obj: Any) -> Any:
        # Imported on the first key made: numpy and the audio reader stay out of lm-eval's start.
        from aqua_tasks.models.cache_keys import audio_cache_default

        return audio_cache_default(current)(obj)

    audio_default.wrapped = current  # type: ignore[attr-defined]
    setattr(lm_model, CACHE_DEFAULT, audio_default)
    return True


def fill_registries() -> None:
    """Import lm-eval's own models and metrics: its registries fill lazily only while empty."""
    import lm_eval.api.metrics
    import lm_eval.models  # noqa: F401
