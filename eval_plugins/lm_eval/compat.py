"""Every place this plugin relies on lm-evaluation-harness internals: one module, one gate.

lm-eval 0.4.13 has no hook for a plugin's task folder, for the start of an evaluation or for
the task and filter of an aggregation's values; this module gets them from its internals, for
both packages (AQUA's tasks and models, ORCA's metric). Each `@seam` (`eval_plugins.seams`) is
applied on the versions it was tested with only, skipped with one line on another release
where lm-eval runs correctly without it, refused with one line where it does not; its
docstring, and docs/architecture.md, say what breaks without it. Three seams, six functions:

- `extend_task_manager` (skippable; 0.4.13 and 0.5.0.dev1): wraps `TaskManager.__init__(self,
  verbosity, include_path, include_defaults, metadata)` (those parameters, in that order) so
  that every TaskManager also indexes the AQUA task folder, and `TaskManager.match_tasks(self,
  task_list)` (called by lm-eval's command line once per `--tasks` entry, before any model is
  loaded) so that a glob leaves out the tracks not built and an AQUA run's `--metadata` (the
  TaskManager's `metadata`) is checked. On 0.4.13, in a run that may do without lm-eval's
  built-in tasks, the index is first built without them (its `task_index` entries: `kind.name`,
  a group's `cfg["task"]`, a tag's `tags`) and the full one only where it lacks something;
- `patch_evaluation` (required, 0.4.13): wraps `lm_eval.evaluator.simple_evaluate` (which the
  command line reaches through the package's lazy `__getattr__`, and `evaluate` through a
  lookup at call time), `lm_eval.evaluator.evaluate` and
  `lm_eval.evaluator_utils._compute_task_aggregations(task, raw_metrics, bootstrap_iters)`
  (looked up at call time by `_collect_results`): each evaluation runs in its own judge session
  writing beside the tracker's samples, after a step that sees the built tasks before any
  request, with every aggregation given its values as `SitedValues` naming task and filter,
  followed by a step that completes the results dict before lm-eval prints and saves it;
- `patch_cache_keys` (skippable, 0.4.13): `lm_eval.api.model._multimodal_cache_default`, the
  JSON fallback of `--use_cache` keys, knows bytes and images only; audio becomes a digest of
  its content.

The private per-task tables both harnesses' task classes keep: `eval_plugins.built_tasks`.
lm-eval's 0.5 line (`scoring_pipeline()`) scores tasks through public `Scorer` classes: there
AQUA's scorer (`eval_plugins.lm_eval.aqua.scorer`) and lazy registrations replace every patch
but `extend_task_manager`. Which versions: `eval_common.harness_versions` (the range
pyproject.toml requires, `lm-eval>=0.4.13,<0.6`; TESTED and NEXT name the tested releases).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from eval_common import harness_versions
from eval_common.harness_versions import unsupported_version
from eval_plugins import built_tasks
from eval_plugins.seams import seam

# Our own modules are imported inside the wrappers: the start-up hook installs them while a
# module of ours that imports lm-eval may still be executing.

HARNESS = "lm-eval"
# The releases the task-folder seam was tested on: 0.4.13 and the 0.5 line CI runs.
BOTH_LINES = (harness_versions.TESTED[HARNESS], harness_versions.NEXT[HARNESS])
# Attributes of our wrappers, so that patching twice is a no-op.
_INDEXES_AQUA = "_indexes_aqua_tasks"
PATCH_MARK = "_orca_prepare"
# evaluate()'s default of the argument that also switches stderr computation off (0).
DEFAULT_BOOTSTRAP_ITERS = 100000
CACHE_DEFAULT = "_multimodal_cache_default"

IncludePath = Callable[[Any, bool], Any]
Prepare = Callable[[Mapping[str, Any]], object]
# finish(task_dict, results, bootstrap_iters) -> the results dict lm-eval prints and saves.
Finish = Callable[[Mapping[str, Any], dict, int], dict]
# around(simple_evaluate, args, kwargs) -> its results: a caller's run around each evaluation.
Around = Callable[[Callable[..., Any], tuple, dict], Any]


class BuiltinsNeeded(NamedTuple):
    """Whether a TaskManager may try an index without lm-eval's built-in tasks, and keep it."""

    may_skip: Callable[[], bool]
    covered: Callable[[Mapping[str, list[Any]]], bool]


def scoring_pipeline() -> bool:
    """Whether the installed lm-eval scores tasks through public Scorers (the 0.5 line).

    There, everything this package adds goes through lm-eval's public registries and
    `Scorer` classes, and only the task-folder seam above is made.
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
    "the AQUA tasks in every TaskManager (pass --include_path), unbuilt tracks left out of "
    "--tasks globs and --metadata checked before the model loads",
    required=False,
    patches=("tasks.TaskManager.__init__", "tasks.TaskManager.match_tasks"),
    tested=BOTH_LINES,
)
def extend_task_manager(
    task_manager_cls: type,
    folders: IncludePath,
    choose: built_tasks.ChooseMatches,
    builtins: BuiltinsNeeded | None = None,
) -> None:
    """Every TaskManager indexes `folders(include_path, include_defaults)` and its
    `match_tasks` keeps what `choose(patterns, matches, metadata)` keeps; idempotent.

    Without it a user passes `--include_path` with the installed task folder and gets the
    settings checked when the tasks are built. With `builtins`: where `builtins.may_skip()`,
    the index is built without lm-eval's built-in tasks first, and kept if
    `builtins.covered(references)` says it holds what the run needs (`references`: name ->
    a group's members or a tag's tasks; [] for a task).
    """
    built_tasks.wrap_match_tasks(task_manager_cls, choose)
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


# --- evaluation ----------------------------------------------------------------------------


@dataclass
class EvaluationHooks:
    """What the wrappers of `patch_evaluation` run; None: nothing of that kind."""

    before: Callable[[], object] | None = None
    around: Around | None = None
    prepare: Prepare | None = None
    finish: Finish | None = None


HOOKS = EvaluationHooks()


@seam(
    HARNESS,
    "judge sessions, the task and filter of every aggregation's values, and AQUA's pooled "
    "all-tracks rows",
    required=True,
    patches=(
        "evaluator.simple_evaluate",
        "evaluator.evaluate",
        "evaluator_utils._compute_task_aggregations",
        # each judged task's own method, wrapped when the evaluation wires its judge
        "api.task.ConfigurableTask.process_results",
    ),
    tables=built_tasks.JUDGE_TABLES,
)
def patch_evaluation(
    *,
    before: Callable[[], object] | None = None,
    around: Around | None = None,
    prepare: Prepare | None = None,
    finish: Finish | None = None,
) -> None:
    """Run each simple_evaluate() after `before()` inside `around`, each evaluate() in a fresh
    judge session between `prepare(task_dict)` and `finish(task_dict, results,
    bootstrap_iters)`, every aggregation with SitedValues. A hook given replaces the installed
    one of its kind, a hook not given keeps it; the wrappers are installed once.

    Without it: `metric: orca` / `llm_judge` cannot see the doc nor score a task's replies in
    one pass, AQUA's conditional accuracy (a join of each clip's variants) has no values to
    join, and the all-tracks rows would be lm-eval's average of tracks, which is not CA.
    """
    from lm_eval import evaluator, evaluator_utils

    for name, hook in (("before", before), ("around", around), ("prepare", prepare)):
        if hook is not None:
            setattr(HOOKS, name, hook)
    if finish is not None:
        HOOKS.finish = finish
    _wrap_simple_evaluate(evaluator)
    _wrap_evaluate(evaluator)
    _wrap_task_aggregations(evaluator_utils)


def _wrap_simple_evaluate(evaluator: Any) -> None:
    current = evaluator.simple_evaluate
    if hasattr(current, PATCH_MARK):
        return

    @functools.wraps(current)
    def simple_evaluate(*args: Any, **kwargs: Any) -> Any:
        from eval_common.evaluation import tracker_output_folder
        from orca_judge.metric.judge_pass import JudgeSession, active_session, session_scope

        if HOOKS.before is not None:
            HOOKS.before()
        # Per-item judge results go where lm-eval's tracker writes the samples; each
        # evaluation inside gets its own judge session, sharing this folder and failure log.
        outer = active_session()
        session = JudgeSession(
            output_folder=tracker_output_folder(kwargs.get("evaluation_tracker")),
            failures=outer.failures if outer is not None else [],
        )
        with session_scope(session):
            if HOOKS.around is None:
                return current(*args, **kwargs)
            return HOOKS.around(current, args, kwargs)

    setattr(simple_evaluate, PATCH_MARK, True)
    evaluator.simple_evaluate = simple_evaluate


def _wrap_evaluate(evaluator: Any) -> None:
    current = evaluator.evaluate
    if hasattr(current, PATCH_MARK):
        return

    @functools.wraps(current)
    def evaluate(*args: Any, **kwargs: Any) -> Any:
        from eval_common.evaluation import collecting
        from orca_judge.metric.judge_pass import evaluate_task_dict, judged_evaluation

        task_dict = evaluate_task_dict(args, kwargs)
        with collecting():
            with judged_evaluation(HOOKS.prepare, task_dict):
                results = current(*args, **kwargs)
            if HOOKS.finish is None or results is None:  # None: not rank 0
                return results
            return HOOKS.finish(task_dict, results, _bootstrap_iters(current, args, kwargs))

    setattr(evaluate, PATCH_MARK, True)
    evaluator.evaluate = evaluate


def _bootstrap_iters(function: Callable, args: tuple, kwargs: Mapping[str, Any]) -> int:
    bound = inspect.signature(function).bind_partial(*args, **kwargs).arguments
    value = bound.get("bootstrap_iters", DEFAULT_BOOTSTRAP_ITERS)
    return int(value) if value else 0


def _wrap_task_aggregations(evaluator_utils: Any) -> None:
    """lm-eval's `_compute_task_aggregations(task, raw_metrics, bootstrap_iters)` gets each
    task's {(metric, filter): values} after lm-eval gathered them from every rank: each
    aggregation gets them as SitedValues (task and filter), and they are recorded."""
    current = evaluator_utils._compute_task_aggregations
    if hasattr(current, PATCH_MARK):
        return

    @functools.wraps(current)
    def compute_task_aggregations(task: Any, raw_metrics: Mapping, *args: Any, **kwargs: Any):
        from eval_common.evaluation import record
        from orca_judge.metric.aggregate import SitedValues

        name = str(task.task_name)
        sited = {
            key: SitedValues(values, task=name, filter_key=key[1])
            for key, values in raw_metrics.items()
        }
        record(name, sited)
        return current(task, sited, *args, **kwargs)

    setattr(compute_task_aggregations, PATCH_MARK, True)
    evaluator_utils._compute_task_aggregations = compute_task_aggregations


# --- requests ------------------------------------------------------------------------------


@seam(
    HARNESS,
    "--use_cache keys for audio requests",
    required=False,
    patches=(f"api.model.{CACHE_DEFAULT}",),
)
def patch_cache_keys() -> bool:
    """Make lm-eval's cache keys accept audio; True if its hook was found (idempotent).

    Without it `--use_cache` with an audio task stops with lm-eval's TypeError before the
    first request.
    """
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
