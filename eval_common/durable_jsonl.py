"""Append-only JSON-lines files that survive a crash: the one store behind both reply caches.

The local models' reply journal (`reply_journal.py`) and the API reply cache
(`reply_cache.py`) keep completed replies the same way: one JSON object per line, each line
written with a single `write` to an `O_APPEND` file and fsynced before the call returns, so
a crash or Ctrl-C loses at most the line being written. Reading skips (and counts) a torn
last line; the next append first closes it with a newline. Both live under one cache root.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

CACHE_ENV = "AQUA_CACHE_DIR"


def cache_root(kind: str) -> Path:
    """`$AQUA_CACHE_DIR/<kind>`, else `$XDG_CACHE_HOME/aqua-bench-eval/<kind>`.

    `~/.cache` stands in for an unset XDG_CACHE_HOME. Kinds in use: `audiolm-replies` (local
    models' journals) and `api-replies` (OpenAI-compatible endpoints).
    """
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser() / kind
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "aqua-bench-eval" / kind


def read_records(path: str | os.PathLike, required: str = "key") -> tuple[list[dict], int]:
    """The records of a JSON-lines file that hold `required`, and how many lines were torn."""
    numbered, torn = read_numbered_records(path, required)
    return [record for _, record in numbered], torn


def read_numbered_records(
    path: str | os.PathLike, required: str = "key"
) -> tuple[list[tuple[int, dict]], int]:
    """As `read_records`, each record with its line number (for messages naming the line)."""
    records: list[tuple[int, dict]] = []
    torn = 0
    path = Path(path)
    if not path.is_file():
        return records, torn
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                torn += 1  # only a write cut short by a kill leaves such a line
                continue
            if isinstance(record, dict) and required in record:
                records.append((number, record))
            else:
                torn += 1
    return records, torn


class DurableAppender:
    """Appends JSON records to one file, each batch on disk before `append` returns.

    Safe across threads of one process, and across processes: each batch is one `write` to
    an `O_APPEND` file, so lines of concurrent writers never interleave.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def require_writable(self, what: str) -> None:
        """OutputError naming the file unless it can be created or appended to (no data written)."""
        from eval_common.errors import OutputError

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise OutputError(
                f"{self.path}: cannot write {what} there ({reason}); choose a writable "
                "cache_dir (or $AQUA_CACHE_DIR), or turn the cache off"
            ) from None

    def append(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Write `records`, one line each, and fsync them."""
        data = "".join(json.dumps(dict(r), ensure_ascii=False) + "\n" for r in records)
        if not data:
            return
        payload = data.encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    payload = b"\n" + payload  # close a torn line left by a crash
                os.write(fd, payload)
                os.fsync(fd)
            finally:
                os.close(fd)
