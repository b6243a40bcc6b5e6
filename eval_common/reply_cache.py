"""An on-disk cache of completed API replies: one JSON line per reply, written as it arrives.

Stored through `durable_jsonl` (append-only, fsynced per line: a crash or Ctrl-C loses at
most the line being written; a torn last line is skipped on reading, and counted). Keys are
content digests of everything that decides a reply, so a changed model, setting, prompt or
clip never reuses an old one; deleting the file (or any line) only costs re-sending those
requests.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval_common.durable_jsonl import DurableAppender, cache_root, read_records

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
    """Replies by key, read from and appended to one JSONL file; safe across threads."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._appender = DurableAppender(self.path)
        records, self.skipped_lines = read_records(self.path)  # torn lines are counted
        self._entries: dict[str, dict[str, Any]] = {str(r["key"]): r for r in records}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry for `key`, or None."""
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        """Store `entry` under `key` and make it durable before returning."""
        record = {"key": key, **entry}
        self._appender.append([record])
        with self._lock:
            self._entries[key] = record
