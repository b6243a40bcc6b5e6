"""An on-disk cache of completed API replies: one JSON line per reply, written as it arrives.

Append-only and fsynced per line, so a crash or Ctrl-C loses at most the line being written
(a torn last line is skipped on reading, and counted). Keys are content digests of
everything that decides a reply, so a changed model, setting, prompt or clip never reuses
an old one; deleting the file (or any line) only costs re-sending those requests.
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

CACHE_FORMAT = 1  # part of every key: a new format never reads old replies
CACHE_ENV = "AQUA_CACHE_DIR"


def default_cache_dir() -> Path:
    """`$AQUA_CACHE_DIR/api-replies`, else `$XDG_CACHE_HOME/aqua-bench-eval/api-replies`.

    `~/.cache` stands in for an unset XDG_CACHE_HOME; the local models' reply journals live
    beside these (`audiolm-replies`).
    """
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser() / "api-replies"
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "aqua-bench-eval" / "api-replies"


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
        self._entries: dict[str, dict[str, Any]] = {}
        self.skipped_lines = 0  # unreadable lines (a torn write at a crash) that were ignored
        if self.path.is_file():
            self._read()

    def _read(self) -> None:
        with self.path.open("rb") as handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                    key = entry["key"]
                except (ValueError, KeyError, TypeError):
                    self.skipped_lines += 1
                    continue
                self._entries[key] = entry

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry for `key`, or None."""
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        """Store `entry` under `key` and make it durable before returning."""
        record = {"key": key, **entry}
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # One write per line to an O_APPEND file: lines of concurrent writers never mix.
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if not self._ends_with_newline(fd):
                    line = b"\n" + line  # close a torn line left by a crash
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._entries[key] = record

    def _ends_with_newline(self, fd: int) -> bool:
        size = os.fstat(fd).st_size
        return os.pread(fd, 1, size - 1) == b"\n" if size else True
