"""lm-eval's own refusals, said in one line with the reason: bad JSON flags and tasks not found.

lm-eval 0.4.13 raises a bare ValueError, shown as a traceback, for a `--metadata` or
`--model_args` value that is broken JSON ("Invalid JSON: ..." without the flag or the place),
and for a task name it cannot find ("Tasks not found: x"), even when the reason is a user
task YAML its indexer skipped (an unsafe tag, a syntax error), logged only at debug level.
These functions turn both into one line; `aqua-eval` and the start-up hook print it.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

# lm-eval's flags whose value may be a JSON object (MergeDictAction, `--gen_kwargs`).
JSON_FLAGS = ("--metadata", "--model_args", "-a", "--gen_kwargs")
NOT_FOUND = "Tasks not found: "
SKIPPED_SHOWN = 3


def json_flag_problem(argv: Sequence[str]) -> str | None:
    """Why a JSON-looking value of a dict flag is not JSON (flag, line, column), or None."""
    args = list(argv)
    for index, arg in enumerate(args):
        flag, equals, inline = arg.partition("=")
        if flag not in JSON_FLAGS:
            continue
        value = inline if equals else (args[index + 1] if index + 1 < len(args) else "")
        if "{" not in value:
            continue
        try:
            json.loads(value)
        except json.JSONDecodeError as error:
            return (
                f"{flag}: invalid JSON {value!r} ({error.msg} at line {error.lineno} column "
                f"{error.colno}); give a JSON object with double-quoted keys and strings, e.g. "
                f"""'{{"data_dir": "DATA"}}', or key=value pairs"""
            )
    return None


def missing_tasks_message(
    error: Exception, known: Iterable[str], folders: Iterable[str | Path]
) -> str | None:
    """One line for lm-eval's "Tasks not found": close names, and user YAMLs it skipped and why.

    None when `error` is not that refusal. `folders` are the user's include paths: their
    YAML files are read again the way lm-eval's indexer reads them, to say which it skipped.
    """
    text = str(error)
    if not text.startswith(NOT_FOUND):
        return None
    missing = [name.strip() for name in text[len(NOT_FOUND) :].split(",") if name.strip()]
    names = sorted(set(known))
    parts = []
    for name in missing:
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.75)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        parts.append(f"{name}{hint}")
    line = f"task(s) not found: {'; '.join(parts)}"
    skipped = skipped_task_files(folders)
    if skipped:
        shown = "; ".join(skipped[:SKIPPED_SHOWN])
        more = f" (and {len(skipped) - SKIPPED_SHOWN} more)" if len(skipped) > SKIPPED_SHOWN else ""
        line += f"; lm-eval skipped {len(skipped)} task file(s) it could not read: {shown}{more}"
    else:
        line += "; `lm_eval ls tasks` lists the task names (a user folder goes in --include_path)"
    return line


def skipped_task_files(folders: Iterable[str | Path]) -> list[str]:
    """`file line N: reason` for each YAML under `folders` that lm-eval's indexer cannot load."""
    from eval_plugins.lm_eval.compat import load_task_yaml

    found = []
    for folder in folders:
        root = Path(folder).expanduser()
        for path in [root] if root.is_file() else sorted(root.glob("**/*.yaml")):
            try:
                load_task_yaml(path)
            except Exception as error:  # whatever the indexer skips, it skips silently
                found.append(f"{path}{yaml_place(error)}: {yaml_reason(error)}")
    return found


def yaml_place(error: Exception) -> str:
    """` line N` where a YAML error points (1-based), else ''."""
    mark = getattr(error, "problem_mark", None)
    return f" line {mark.line + 1}" if mark is not None else ""


def yaml_reason(error: Exception) -> str:
    """What is wrong, in a few words (an unsafe tag says which, and what a task YAML allows)."""
    problem = str(getattr(error, "problem", "") or error).splitlines()[0]
    if "could not determine a constructor for the tag" in problem:
        tag = problem.split("'")[1] if "'" in problem else problem
        tag = tag.replace("tag:yaml.org,2002:", "!!")
        return f"tag {tag} is not allowed (task YAMLs take plain YAML, !function and include:)"
    return problem
