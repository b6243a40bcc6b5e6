"""lm-eval's own refusals, said in one line: bad JSON flags (aqua eval) and tasks not found.

lm-eval 0.4.13 raises a bare ValueError, shown as a traceback, for a `--metadata` or
`--model_args` value that is broken JSON ("Invalid JSON: ..." without the flag or the place),
and for a task name it cannot find ("Tasks not found: x"). `aqua eval` checks its own command
line for the first before lm-eval parses it; both say the second in one line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

# lm-eval's flags whose value may be a JSON object (MergeDictAction, `--gen_kwargs`).
JSON_FLAGS = ("--metadata", "--model_args", "-a", "--gen_kwargs")
NOT_FOUND = "Tasks not found: "
NOT_A_SPEC = "Spec '"


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


def missing_tasks_message(error: Exception) -> str | None:
    """One line for lm-eval's "task not found" (None when `error` is not that refusal).

    lm-eval 0.4.13 raises ValueError("Tasks not found: a, b"); the 0.5 line raises
    KeyError("Spec 'a' is not a registered task/group/tag name or valid YAML path").
    """
    text = str(error.args[0]) if error.args else ""
    if text.startswith(NOT_FOUND):
        missing = [name.strip() for name in text[len(NOT_FOUND) :].split(",") if name.strip()]
    elif text.startswith(NOT_A_SPEC) and text.count("'") >= 2:
        missing = [text.split("'")[1]]
    else:
        return None
    return (
        f"task(s) not found: {'; '.join(missing)}; `lm_eval ls tasks` lists the task names "
        "(a user folder goes in --include_path)"
    )
