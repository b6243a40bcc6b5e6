"""Reading the user's input files: UTF-8 text and plain YAML, with one-line errors naming the
file and the line.

Python's own errors say "'utf-8' codec can't decode byte 0xff in position 8123" (no file, no
line) and PyYAML's span several lines; every reader of a question file, ORCA data, samples or
config goes through here instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eval_common.errors import InputFileError

# What `yaml.safe_load` builds: anything else (`!!python/object`, `!!binary`, …) is refused.
PLAIN_YAML = "plain YAML only (mappings, lists, strings, numbers, true/false, null)"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def decode_utf8(path: str | Path, data: bytes, error: type[Exception] = InputFileError) -> str:
    """`data` decoded as UTF-8; `error` naming the file, line and byte when it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise error(
            f"{path}:{line}: byte 0x{data[err.start]:02x} at column {column} is not UTF-8; "
            "save the file as UTF-8 text"
        ) from None


def read_text(path: str | Path, error: type[Exception] = InputFileError) -> str:
    """A UTF-8 text file's content (OSError as raised); `error` naming file and line otherwise."""
    return decode_utf8(path, Path(path).read_bytes(), error)


def read_json(path: str | Path, error: type[Exception] = InputFileError) -> Any:
    """A UTF-8 JSON file's content; `error` naming file, line and column when it is not one."""
    try:
        return json.loads(read_text(path, error))
    except json.JSONDecodeError as err:
        raise error(f"{path}:{err.lineno}:{err.colno}: malformed JSON ({err.msg})") from None


def iter_json_lines(
    path: str | Path, error: type[Exception] = InputFileError
) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a UTF-8 JSON Lines file.

    `error` names the file, line and column of a line that is not JSON or not UTF-8 (OSError as
    raised).
    """
    # split("\n"), not splitlines(): a JSON string may hold U+2028 and other line breaks.
    for number, line in enumerate(read_text(path, error).split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as err:
            raise error(f"{path}:{number}:{err.colno}: malformed JSON ({err.msg})") from None


def lone_surrogate_at(text: str) -> int | None:
    """The index of the first lone UTF-16 surrogate in `text` (JSON's "\\ud800"), or None.

    `json.loads` accepts such escapes, but no tokenizer or UTF-8 writer can encode them.
    """
    found = _LONE_SURROGATE.search(text)
    return None if found is None else found.start()


def load_yaml(
    path: str | Path,
    error: type[Exception] = InputFileError,
    text: str | None = None,
    *,
    scalar_tags: tuple[str, ...] = (),
) -> Any:
    """A YAML file's plain content (the file is read unless `text` is given).

    `error` names the file and line of a syntax error or of a tag that would build a Python
    object; such tags are refused, never run. `scalar_tags` (e.g. lm-eval's `!function`) are
    accepted on scalars and read as their text.
    """
    import yaml

    if text is None:
        text = read_text(path, error)

    class Loader(yaml.SafeLoader):
        pass

    for tag in scalar_tags:
        Loader.add_constructor(tag, lambda loader, node: loader.construct_scalar(node))
    try:
        return yaml.load(text, Loader=Loader)  # a SafeLoader: no Python objects are built
    except yaml.constructor.ConstructorError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        tag = re.search(r"tag '([^']+)'", str(err.problem))
        shown = tag.group(1).replace("tag:yaml.org,2002:", "!!") if tag else "a tag"
        also = f" and {', '.join(scalar_tags)}" if scalar_tags else ""
        raise error(f"{where}: {shown} is not allowed: {PLAIN_YAML}{also}") from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise error(f"{where}: YAML syntax error: {err.problem or err.context}") from None
    except yaml.YAMLError as err:
        raise error(f"{path}: YAML syntax error: {err}") from None
