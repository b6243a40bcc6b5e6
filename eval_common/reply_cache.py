"""An on-disk cache of completed API replies: one JSON line per reply, written as it arrives.

Stored through `durable_jsonl` (append-only, fsynced per line: a crash or Ctrl-C loses at
most the line being written; a torn last line is skipped on reading, and counted). Keys are
content digests of everything that decides a reply, so a changed model, setting, prompt or
clip never reuses an old one; deleting the file (or any line) only costs re-sending those
requests. What is read back is checked as a fresh reply is (`check`): an entry that fails is
never used — it is counted (`refused`) and its request sent again. The folder is checked to
be writable when the cache is opened, before any request is paid for.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from eval_common.durable_jsonl import DurableAppender, cache_root, read_numbered_records

# Why a stored entry cannot be used (None: it can); see ReplyCache.
EntryCheck = Callable[[Mapping[str, Any]], "str | None"]

CACHE_FORMAT = 1  # part of every key: a new format never reads old replies


def default_cache_dir() -> Path:
    """`$AQUA_CACHE_DIR/api-replies`, else `$XDG_CACHE_HOME/aqua-bench-eval/api-replies`.

    The local models' reply journals live beside these (`audiolm-replies`).
    """
    return cache_root("api-replies")


def cache_key(request: Mapping[str, Any]) -> str:
    """SHA-256 of a request description (JSON-serialisable; key order does not matter)."""
    text = json.dumps({"cache_format": CACHE_FORMAT, **request}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_file_name(model: str) -> str:
    """A readable, filesystem-safe file name for one model's replies."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("._") or "model"
    digest = hashlib.sha256(model.encode("utf-8")).hexdigest()[:8]
    return f"{safe[:80]}-{digest}.jsonl"


class ReplyCache:
    """Replies by key, read from and appended to one JSONL file; safe across threads.

    `check(entry)` says why a stored entry cannot be used (None: it can), by the rules a
    fresh reply is read with: such entries are left out (`refused`, `first_refusal` names
    the file and line) and their requests asked again. OutputError, before anything is
    sent, when the file cannot be written.
    """

    def __init__(self, path: str | os.PathLike, check: EntryCheck | None = None) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._appender = DurableAppender(self.path)
        self._appender.require_writable("the reply cache")
        records, self.skipped_lines = read_numbered_records(self.path)  # torn lines are counted
        self.refused = 0
        self.first_refusal: str | None = None
        self._entries: dict[str, dict[str, Any]] = {}
        for line, record in records:
            problem = check(record) if check is not None else None
            if problem is None:
                self._entries[str(record["key"])] = record
                continue
            self.refused += 1
            self.first_refusal = self.first_refusal or f"{self.path}:{line}: {problem}"
            self._entries.pop(str(record["key"]), None)  # an older good line is superseded

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry for `key`, or None."""
        with self._lock:
            return self._entries.get(key)

    def refuse(self, key: str, problem: str) -> None:
        """Drop an entry found unusable where it is used (its request is asked again)."""
        with self._lock:
            if self._entries.pop(key, None) is not None:
                self.refused += 1
                self.first_refusal = self.first_refusal or f"{self.path}: {problem}"

    def refusal_note(self) -> str:
        """One line on the entries left out, or '' when none was."""
        if not self.refused:
            return ""
        return (
            f"{self.refused} cached entr{'y' if self.refused == 1 else 'ies'} of {self.path} "
            f"refused and asked again (first: {self.first_refusal})"
        )

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        """Store `entry` under `key` and make it durable before returning."""
        record = {"key": key, **entry}
        self._appender.append([record])
        with self._lock:
            self._entries[key] = record


def cache_note(cache: ReplyCache | None) -> str:
    """'; ' and the cache's refusal note, for a summary line ('' without refusals)."""
    note = cache.refusal_note() if cache is not None else ""
    return f"; {note}" if note else ""


def count_problem(entry: Mapping[str, Any], *names: str) -> str | None:
    """Why one of `names` in `entry` is not a whole number >= 0 (None: all are, or absent)."""
    for name in names:
        value = entry.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"{name} {value!r} is not a whole number >= 0"
    return None
