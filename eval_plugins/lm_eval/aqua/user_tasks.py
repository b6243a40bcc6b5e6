"""User task YAMLs (`--include_path`): refused in one line where lm-eval would skip them unread.

lm-eval indexes every `*.yaml` of an include path and skips one it cannot parse with a log line,
then reports its tasks as "not found"; the file, line and what is allowed are said here first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aqua_tasks.errors import AquaDataError
from eval_common.inputs import load_yaml

# lm-eval's loader: plain YAML plus `!function module.name` (a scalar naming a Python function).
LM_EVAL_TAGS = ("!function",)
_IGNORED_DIRS = {"__pycache__", ".ipynb_checkpoints"}


def check_user_task_yamls(include_path: str | Sequence[str] | None) -> int:
    """Read every task YAML under the include path(s) as lm-eval would; returns how many.

    Raises AquaDataError naming the file and line of a syntax error, of a byte that is not
    UTF-8, or of a tag other than lm-eval's `!function`.
    """
    if not include_path:
        return 0
    folders = [include_path] if isinstance(include_path, str) else list(include_path)
    checked = 0
    for folder in map(Path, folders):
        paths = [folder] if folder.is_file() else sorted(folder.rglob("*.yaml"))
        for path in paths:
            if _IGNORED_DIRS.intersection(path.parts):
                continue
            try:
                load_yaml(path, AquaDataError, scalar_tags=LM_EVAL_TAGS)
            except AquaDataError as error:
                raise AquaDataError(
                    f"{error} (lm-eval would skip this task file and call its tasks not found)"
                ) from None
            checked += 1
    return checked
