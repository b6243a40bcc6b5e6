"""Register both packages with lm-eval, idempotently, without hiding lm-eval's own models.

The models are registered lazily from `eval_plugins.names` (lm-eval's registry takes a
"module:Class" target and imports it on first use). Where the installed lm-eval reads our
`lm_eval.models` / `lm_eval.metrics` entry points itself, it has registered those names
already (as entry points), and they are left as they are.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any


def install_task_folder(task_manager_cls: type) -> None:
    """lm-eval's TaskManager also indexes the AQUA task folder, leaves unbuilt tracks out of
    glob matches and checks an AQUA run's `--metadata`, and (lm-eval 0.4.13) skips lm-eval's
    built-in tasks in a command-line run that needs none of them; idempotent."""
    from eval_plugins.lm_eval.aqua.task_folder import choose_task_matches, with_task_folder
    from eval_plugins.lm_eval.aqua.task_index import covers_run, may_skip_defaults
    from eval_plugins.lm_eval.compat import BuiltinsNeeded, extend_task_manager, scoring_pipeline

    # lm-eval 0.5 keeps its index in other structures: there the full index is built.
    builtins = None if scoring_pipeline() else BuiltinsNeeded(may_skip_defaults, covers_run)
    extend_task_manager(task_manager_cls, with_task_folder, choose_task_matches, builtins)


def same_target(current: Any, target: str) -> bool:
    """Whether a registry entry is `target` already: the string, its class, or an entry point."""
    if isinstance(current, EntryPoint):
        return current.value.replace(" ", "") == target
    if isinstance(current, str):
        return current.replace(" ", "") == target
    return f"{getattr(current, '__module__', '')}:{getattr(current, '__qualname__', '')}" == target


def register_models() -> list[str]:
    """Register every lm-eval model of the name table lazily; returns the names registered now.

    A name lm-eval already holds for the same target (registered before, or read from our
    entry points by an lm-eval that reads them) is left as it is; one held for another target
    makes lm-eval's registry raise, naming both.
    """
    from lm_eval.api.registry import model_registry

    from eval_plugins.names import LM_EVAL, targets

    held = dict(model_registry.items())  # placeholders stay unloaded
    added = []
    for name, target in targets(LM_EVAL, "models").items():
        if name in held and same_target(held[name], target):
            continue
        model_registry.register(name, target=target)
        added.append(name)
    return added


def register_all() -> None:
    """Register the AQUA and ORCA models and metric `orca`; safe to call any number of times.

    Raises RuntimeError on an lm-eval version outside the supported range, or on an untested
    one where a required patch cannot be left out (see `eval_plugins.seams`).
    """
    from lm_eval.tasks import TaskManager

    from eval_plugins.lm_eval.compat import fill_registries, lm_eval_problem, scoring_pipeline

    problem = lm_eval_problem()
    if problem:
        raise RuntimeError(problem)
    # lm-eval fills its model registry lazily only while it is empty: import its own models
    # first, or registering ours would hide `hf`, `vllm`, `dummy`, ...
    fill_registries()
    install_task_folder(TaskManager)
    register_models()
    if scoring_pipeline():
        from eval_plugins.lm_eval import judge_scorers
        from eval_plugins.lm_eval.aqua import scorer

        scorer.register()
        judge_scorers.register()
        return
    from eval_plugins.lm_eval.aqua.task import fix_results
    from eval_plugins.lm_eval.cli_run import checked_run
    from eval_plugins.lm_eval.compat import patch_cache_keys, patch_evaluation
    from eval_plugins.lm_eval.metric import install

    # Metric `orca`, and its settings checked and judge loaded before any generation.
    install()
    # Our models' arguments checked before they load; pooled all-tracks rows, standard errors
    # and counts in the results lm-eval prints and saves; the results kept for aqua eval.
    patch_evaluation(around=checked_run, finish=fix_results)
    patch_cache_keys()
