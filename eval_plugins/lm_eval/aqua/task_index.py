"""Whether a command-line run's TaskManager can index its task folders without lm-eval's own.

lm-eval indexes its ~14 700 built-in task files for every run, which is most of a short AQUA
run's wall time. A run whose `--tasks` are all found in the AQUA task folder and the user's
`--include_path` gets the same tasks from an index of those folders alone: a folder on the
include path overrides a built-in task of the same name anyway. Such a run is one where

- every `--tasks` entry is a name (no glob character, not a path) that index holds, or a glob
  whose fixed start is one of ours (`OWN_PREFIXES`: lm-eval 0.4.13 has no built-in task, group
  or tag starting so; a test checks) matching at least one name there;
- every group those names reach (through groups and tags) has every member in that index.

Anything else keeps lm-eval's full index: a YAML path or folder, `--config`, a glob such as
`*_easy` that built-in names could match, a name the folders lack (lm-eval then says "not
found" with its full list), a group whose member they lack. When unsure, the full index.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# Fixed starts of the names of our tasks, groups and tags that no built-in name has.
OWN_PREFIXES = ("aqua", "orca")
GLOB_CHARACTERS = frozenset("*?[")
# The --tasks entries of the command-line run under way, when they may skip the built-ins.
_REQUESTED: ContextVar[tuple[str, ...] | None] = ContextVar("aqua_requested_tasks", default=None)
logger = logging.getLogger(__name__)


def is_glob(pattern: str) -> bool:
    """Whether a `--tasks` entry is a glob (lm-eval matches it with fnmatch)."""
    return not GLOB_CHARACTERS.isdisjoint(pattern)


def may_skip_builtins(pattern: str) -> bool:
    """Whether one `--tasks` entry can be answered without the built-in tasks, if found."""
    if not pattern or pattern != pattern.strip() or "/" in pattern or "\\" in pattern:
        return False
    if pattern.endswith((".yaml", ".yml")):  # a task file: lm-eval reads it, not the index
        return False
    if not is_glob(pattern):
        return True
    fixed = pattern[: min(pattern.index(c) for c in GLOB_CHARACTERS if c in pattern)]
    return fixed.lower().startswith(OWN_PREFIXES)


def requested_tasks(args: Any) -> tuple[str, ...] | None:
    """A run's `--tasks` entries if each may skip the built-ins (None: index them)."""
    if getattr(args, "config", None):  # a YAML config may name other tasks and folders
        return None
    tasks = getattr(args, "tasks", None)
    if not tasks:
        return None
    entries = (
        tasks.split(",") if isinstance(tasks, str) else [t for x in tasks for t in x.split(",")]
    )
    if not all(may_skip_builtins(entry) for entry in entries):
        return None
    return tuple(entries)


@contextmanager
def indexing_for(args: Any) -> Iterator[None]:
    """Within: a TaskManager may index without the built-ins if `args.tasks` allow it."""
    token = _REQUESTED.set(requested_tasks(args))
    try:
        yield
    finally:
        _REQUESTED.reset(token)


def may_skip_defaults() -> bool:
    """Whether the run under way may try an index without lm-eval's built-in tasks."""
    return _REQUESTED.get() is not None


def covers_run(references: Mapping[str, Sequence[Any]]) -> bool:
    """Whether an index without the built-ins holds all the run under way needs; logs it.

    `references`: every name of that index -> the members a group lists (names, or lm-eval's
    dict entries) or a tag's tasks; [] for a task.
    """
    patterns = _REQUESTED.get()
    covered = patterns is not None and covers(patterns, references)
    if covered:
        logger.info(
            "task index: %d names from the AQUA and --include_path folders, without lm-eval's "
            "built-in tasks (every requested task is there)",
            len(references),
        )
    return covered


def covers(patterns: Sequence[str], references: Mapping[str, Sequence[Any]]) -> bool:
    """Whether `patterns` and every group member they reach are all names of `references`."""
    names: list[str] = []
    for pattern in patterns:
        if not may_skip_builtins(pattern):
            return False
        matched = fnmatch.filter(references, pattern) if is_glob(pattern) else [pattern]
        if not matched or any(name not in references for name in matched):
            return False
        names += matched
    return _members_known(names, references)


def _members_known(names: list[str], references: Mapping[str, Sequence[Any]]) -> bool:
    seen: set[str] = set()
    pending: list[Any] = list(names)
    while pending:
        member = pending.pop()
        if isinstance(member, dict):
            # lm-eval's `{group: name, task: [...]}` defines a group inline when the name is
            # not indexed; `{task: name, ...}` overrides an indexed task (else defines one,
            # which a built-in of that name would replace: not ours to decide).
            name = member.get("group")
            if isinstance(name, str) and name not in references:
                inline = member.get("task", [])
                pending += inline if isinstance(inline, list) else [inline]
                continue
            member = name if name is not None else member.get("task")
        if not isinstance(member, str) or member not in references:
            return False
        if member not in seen:
            seen.add(member)
            pending += list(references[member])
    return True
