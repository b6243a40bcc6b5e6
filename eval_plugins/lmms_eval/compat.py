"""Every place this plugin relies on lmms-eval internals: one module, one gate.

lmms-eval 0.7.3 calls an aggregation with nothing but the collected values, has no hook
between building tasks and generation, none for a plugin's task selection, and exits 0 after
printing the traceback of a failed run. Both packages get what they need here; each `@seam`
(`eval_plugins.seams`) is made in full on the tested version only and refused with one line
on another release; its docstring, and docs/architecture.md, say what breaks without it. Two
seams, five functions:

- `patch_evaluation` (required): wraps `lmms_eval.evaluator.evaluate` (which `simple_evaluate`
  looks up at call time, after building tasks and applying --predict_only) so each evaluation
  runs in its own judge session, after a step that sees the built tasks before any request;
  `lmms_eval.evaluator.simple_evaluate`, so per-item judge files go where its
  `EvaluationTracker` writes samples; and `TaskOutput.calculate_aggregate_metric`, which
  aggregates its `sample_metrics` ({(metric, filter): values}) of the task named `task_name`:
  the wrapper hands the values on as `SitedValues` labelled with both;
- `patch_cli` (required): wraps `lmms_eval.__main__.cli_evaluate_single(args)`, which
  `cli_evaluate` calls once per run inside an `except Exception` that prints a traceback and
  exits 0: a caller's checks run first (before lmms-eval's task indexing), a misconfigured
  judge or a caller's bad-input error ends the run with one line (exit 2), and any other
  failure of a run that used `metric: orca` (or that the caller owns) ends with its traceback
  and exit 1; and `lmms_eval.tasks.TaskManager.match_tasks(self, task_list)`, which
  `cli_evaluate` calls with the `--tasks` entries to expand their globs (the same signature as
  lm-eval 0.4.13's, so the wrapper of `eval_plugins.built_tasks` serves both; lmms-eval's
  TaskManager has no `metadata`, the run settings are `AQUA_METADATA`).

The metrics themselves go through lmms-eval's public `register_metric` / `register_aggregation`
(`register`). The built task itself has lm-eval's layout (`_metric_fn_list`,
`_aggregation_list`, ...), so `eval_plugins.built_tasks.predict_only` / `take_over_metric`
serve both.

Which versions: `eval_common.harness_versions`, the one scripts/install-lmms-eval-env.sh
installs (`lmms-eval==0.7.3`). A new lmms-eval version is supported by changing this module
and that gate only.
"""

from __future__ import annotations

import collections
import functools
import sys
import traceback
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from eval_common.evaluation import collecting, record, tracker_output_folder
from eval_common.harness_versions import installed_version
from eval_plugins.built_tasks import JUDGE_TABLES, ChooseMatches, wrap_match_tasks
from eval_plugins.seams import seam
from orca_judge.errors import LlmJudgeError, OrcaMetricError
from orca_judge.metric.aggregate import SitedValues
from orca_judge.metric.judge_pass import (
    JudgeSession,
    active_session,
    evaluate_task_dict,
    judged_evaluation,
    session_scope,
)
from orca_judge.metric.settings import METRIC

HARNESS = "lmms-eval"
# Attribute of our wrappers, so that patching twice is a no-op.
PATCH_MARK = "_orca_lmms_patched"
# The output types whose replies orca judges (multi-round and agentic replies are lists).
GENERATIVE_OUTPUT_TYPES = frozenset({"generate_until"})

Prepare = Callable[[Mapping[str, Any]], object]
# One entry per evaluation of the current command-line run that judged with orca.
_ORCA_RUNS: list[bool] = []


def lmms_eval_version() -> str | None:
    """The installed lmms-eval version (None when its metadata cannot be read)."""
    return installed_version(HARNESS)


def register(metric: Callable, aggregation: Callable, name: str = METRIC) -> None:
    """Metric `name` in lmms-eval's registries (after lmms-eval's own metrics); idempotent.

    lmms-eval's public decorators refuse a name twice: one held by this package's function of
    the same name (an earlier import of its module) stays; one held by anything else is
    refused with one line.
    """
    import lmms_eval.api.metrics  # noqa: F401  (registers lmms-eval's own aggregations first)
    from lmms_eval.api import registry

    held = registry.AGGREGATION_REGISTRY.get(name)
    if held is None:
        registry.register_aggregation(name)(aggregation)
    else:
        _refuse_foreign(held, aggregation, name, "aggregation")
    held = registry.METRIC_REGISTRY.get(name)
    if held is None:
        registry.register_metric(metric=name, higher_is_better=True, aggregation=name)(metric)
    else:
        _refuse_foreign(held, metric, name, "metric")


def _refuse_foreign(held: Any, ours: Callable, name: str, kind: str) -> None:
    def identity(function: Any) -> tuple[str, str]:
        return (getattr(function, "__module__", ""), getattr(function, "__qualname__", ""))

    if held is not ours and identity(held) != identity(ours):
        module, qualname = identity(held)
        raise RuntimeError(
            f"lmms-eval already holds an {kind} named {name!r} ({module}.{qualname}); this "
            f"package's metric {name} cannot be registered beside it"
        )


@seam(
    HARNESS,
    "judge sessions, per-item judge files and each aggregation's task and filter",
    required=True,
    patches=(
        "evaluator.evaluate",
        "evaluator.simple_evaluate",
        "api.task.TaskOutput.calculate_aggregate_metric",
        # each judged task's own method, wrapped when the evaluation wires its judge
        "api.task.ConfigurableTask.process_results",
    ),
    tables=JUDGE_TABLES,
)
def patch_evaluation(evaluator: ModuleType, prepare: Prepare) -> None:
    """Each evaluate() in a fresh judge session after `prepare(task_dict)`, per-item judge files
    beside simple_evaluate's samples, every aggregation's values as SitedValues; idempotent.

    Without it `metric: orca` / `llm_judge` cannot see the doc nor score a task's replies in
    one pass, and AQUA's conditional accuracy has no values to join.
    """
    _wrap_evaluate(evaluator, prepare)
    _wrap_simple_evaluate(evaluator)
    _wrap_task_output()


def _wrap_evaluate(evaluator: ModuleType, prepare: Prepare) -> None:
    """Run each lmms-eval evaluate() in a fresh judge session, after `prepare(task_dict)`."""
    current = evaluator.evaluate
    if getattr(current, PATCH_MARK, None) is prepare:
        return
    current = getattr(current, "__wrapped__", current) if hasattr(current, PATCH_MARK) else current

    def prepare_and_note(task_dict: Mapping[str, Any]) -> object:
        found = prepare(task_dict)
        if found:
            _ORCA_RUNS.append(True)  # a failure of this run must not exit 0 (patch_cli)
        return found

    @functools.wraps(current)
    def evaluate(*args: Any, **kwargs: Any) -> Any:
        # `collecting`: what one task's aggregations read of its other metrics' values (the
        # open AQUA figures read the orca entry's judge inputs; `_wrap_task_output` records).
        with collecting(), judged_evaluation(prepare_and_note, evaluate_task_dict(args, kwargs)):
            return current(*args, **kwargs)

    setattr(evaluate, PATCH_MARK, prepare)
    evaluator.evaluate = evaluate


def _wrap_simple_evaluate(evaluator: ModuleType) -> None:
    """Per-item judge results go beside the samples of simple_evaluate's EvaluationTracker."""
    current = evaluator.simple_evaluate
    if hasattr(current, PATCH_MARK):
        return

    @functools.wraps(current)
    def simple_evaluate(*args: Any, **kwargs: Any) -> Any:
        tracker = kwargs.get("evaluation_tracker")
        outer = active_session()
        if tracker is None:
            return current(*args, **kwargs)
        session = outer if outer is not None else JudgeSession()
        session.output_folder = tracker_output_folder(tracker)
        with session_scope(session):
            return current(*args, **kwargs)

    setattr(simple_evaluate, PATCH_MARK, True)
    evaluator.simple_evaluate = simple_evaluate


def _wrap_task_output() -> None:
    """`TaskOutput.calculate_aggregate_metric` aggregates `self.sample_metrics`, a
    {(metric, filter): values} table of the task named `self.task_name`: its values are
    handed on as SitedValues labelled with both, and recorded."""
    from lmms_eval.evaluator_utils import TaskOutput

    current = TaskOutput.calculate_aggregate_metric
    if hasattr(current, PATCH_MARK):
        return

    @functools.wraps(current)
    def calculate_aggregate_metric(self: Any, *args: Any, **kwargs: Any) -> None:
        name = str(self.task_name)
        labelled = collections.defaultdict(list)
        for key, values in self.sample_metrics.items():
            labelled[key] = SitedValues(values, task=name, filter_key=key[1])
        self.sample_metrics = labelled
        record(name, labelled)
        return current(self, *args, **kwargs)

    setattr(calculate_aggregate_metric, PATCH_MARK, True)
    TaskOutput.calculate_aggregate_metric = calculate_aggregate_metric


@seam(
    HARNESS,
    "a failed run's non-zero exit status, and unbuilt tracks out of --tasks globs",
    required=True,
    patches=("__main__.cli_evaluate_single", "tasks.TaskManager.match_tasks"),
)
def patch_cli(
    main: ModuleType,
    errors: tuple[type[BaseException], ...] = (),
    check: Callable[[Any], None] | None = None,
    owns: Callable[[Any], bool] | None = None,
    choose: ChooseMatches | None = None,
) -> None:
    """lmms-eval's command-line run: `check(args)` first; a misconfigured judge (or any of
    `errors`, the caller's bad-input errors) ends it with one line and exit status 2; any
    other failure of an orca run, or of a run `owns(args)`, with its traceback and exit 1.
    `choose(patterns, matches, None)` keeps what it keeps of each `--tasks` glob's matches.

    Without it a failed judge or a missing clip ends the run with exit status 0, which a CI
    job reads as success, and `--tasks 'aqua_*'` fails on a track the user has not built.
    """
    if choose is not None:
        wrap_match_tasks(main.TaskManager, choose)
    current = getattr(main, "cli_evaluate_single", None)
    if current is None or hasattr(current, PATCH_MARK):
        return
    stopping = (OrcaMetricError, LlmJudgeError, *errors)

    @functools.wraps(current)
    def cli_evaluate_single(args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        _ORCA_RUNS.clear()
        try:
            if check is not None:
                check(args)
            return current(args, *rest, **kwargs)
        except stopping as err:
            # lmms-eval would print a traceback and carry on (exit 0), which a CI job reads as
            # success; SystemExit passes its handler.
            sys.stderr.write(f"lmms-eval: error: {err}\n")
            raise SystemExit(2) from None
        except Exception as err:
            if not (_ORCA_RUNS or (owns is not None and owns(args))):
                raise
            traceback.print_exc()
            sys.stderr.write(
                f"lmms-eval: error: the run failed ({type(err).__name__}: {err}); "
                "exit status 1 (lmms-eval alone would exit 0)\n"
            )
            raise SystemExit(1) from None

    setattr(cli_evaluate_single, PATCH_MARK, True)
    main.cli_evaluate_single = cli_evaluate_single
