"""What an lmms-eval command-line run of ours is checked for before lmms-eval indexes its tasks.

lmms-eval spends ~15 s indexing every task folder before it builds a task or a model; a bad
`AQUA_METADATA`, a missing data folder or a bad model argument of one of this package's
models would only then fail, and a model that needs audio on a text-only run would fail on its
first request. `check_cli_run` refuses them first, with the errors the task
and the model classes raise themselves. `is_own_run` says whether a run is this package's
(its tasks or models), whose failure must not end in lmms-eval's exit status 0. Which models
are ours, and the lm-eval class each wraps, the caller says (`eval_plugins.names`).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from aqua_tasks.core.settings_place import LMMS_EVAL_PLACE, settings_given_in
from aqua_tasks.errors import AquaDataError
from aqua_tasks.models.audio_prompts import refuse_text_only_run
from aqua_tasks.task.config import check_judge_settings
from eval_plugins.lmms_eval.aqua import include_path
from eval_plugins.lmms_eval.aqua.task import METADATA_ENV, METADATA_HELP, run_settings


def shipped_tasks() -> frozenset[str]:
    """The task names of this package's lmms-eval YAMLs (file stem = task name)."""
    return frozenset(p.stem for p in Path(include_path()).glob("*.yaml"))


def selected_tasks(args: Any) -> list[str]:
    """The `--tasks` names of a run."""
    tasks = getattr(args, "tasks", None) or ""
    return [t.strip() for t in str(tasks).split(",") if t.strip()]


def is_own_run(args: Any, own_models: Collection[str]) -> bool:
    """Whether the run uses one of this package's tasks or models (`own_models`: their names)."""
    own_task = any(t in shipped_tasks() for t in selected_tasks(args))
    return own_task or str(getattr(args, "model", "") or "") in own_models


def check_cli_run(args: Any, model_class: type | None = None) -> None:
    """AquaDataError / ModelArgumentError for settings the run cannot use; no-op otherwise.

    `model_class`: the lm-eval class `--model` wraps when it is one of ours (None: not ours).
    """
    settings = None
    if any(t in shipped_tasks() for t in selected_tasks(args)):
        settings = run_settings(None)  # the shipped YAMLs carry no data folder
        check_judge_settings(settings, METADATA_ENV)
        data_dir = Path(str(settings["data_dir"])).expanduser()
        if not data_dir.is_dir():
            raise AquaDataError(
                f"{METADATA_ENV}: data_dir {str(data_dir)!r} is not a directory. {METADATA_HELP}"
            )
    if model_class is not None:
        check_model_args(args, model_class)
        if settings is not None:
            # A model that needs audio on `"audio": false`: one line now, not a traceback later.
            with settings_given_in(LMMS_EVAL_PLACE):
                refuse_text_only_run(model_class, settings)


def check_model_args(args: Any, cls: type) -> None:
    """ModelArgumentError for a bad model argument of `cls`, one of our models; loads no model."""
    from lm_eval.utils import simple_parse_args_string

    model_args = getattr(args, "model_args", None) or ""
    parsed = model_args if isinstance(model_args, dict) else simple_parse_args_string(model_args)
    harness = {name: getattr(args, name, None) for name in ("batch_size", "device")}
    cls.check_model_args(dict(parsed), harness)
