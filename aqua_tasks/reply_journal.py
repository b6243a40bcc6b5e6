"""Replies of a local audio LM written to disk as they are produced, so no generation is lost.

One folder per *model setting* (the model's identity, dtype, device type, library versions);
inside it one append-only JSON-lines file per process rank. Each line holds the key of one
request (prompt, generation settings, digest of the audio content) and its reply. A run that
is stopped (a bad item, out of memory, Ctrl-C, a killed process) keeps every completed batch;
the same command run again reads them back and generates only what is missing. A changed
model, dtype, prompt, generation setting or clip gives other keys, so stale replies are never
reused. Batch size and process count are not part of the key: they change greedy replies
only by numerical noise (measured in docs/ci.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

JOURNAL_FORMAT = 1
CACHE_ENV = "AQUA_CACHE_DIR"


def default_cache_dir() -> Path:
    """Where journals go by default: `$AQUA_CACHE_DIR`, else the user's cache folder."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser() / "audiolm-replies"
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "aqua-bench-eval" / "audiolm-replies"


def digest_json(value: Any) -> str:
    """SHA-256 of a JSON-serialisable value in a canonical form."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def local_model_files(folder: str | os.PathLike) -> list[list[Any]]:
    """Name, size and modification time of every file of a local checkpoint folder."""
    root = Path(folder)
    rows = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        stat = path.stat()
        rows.append([path.relative_to(root).as_posix(), stat.st_size, stat.st_mtime_ns])
    return rows


def request_key(
    prompt: str, audio_digests: Sequence[str], until: Sequence[str], max_new_tokens: int
) -> str:
    """The key of one request: what the model reads and how long it may answer."""
    fields = {"prompt": prompt, "audio": list(audio_digests), "until": list(until)}
    return digest_json({**fields, "max_new_tokens": max_new_tokens})


class ReplyJournal:
    """Append-only store of (request key → reply) for one model setting."""

    def __init__(self, folder: str | os.PathLike, setting: Mapping[str, Any], rank: int = 0):
        self.folder = Path(folder) / digest_json({"format": JOURNAL_FORMAT, **setting})[:24]
        self.folder.mkdir(parents=True, exist_ok=True)
        described = self.folder / "setting.json"
        if not described.exists():
            # For people looking at the folder; keys never depend on this file.
            described.write_text(json.dumps(dict(setting), indent=2, sort_keys=True) + "\n")
        self.replies: dict[str, str] = {}
        self.torn = 0
        for path in sorted(self.folder.glob("replies-rank*.jsonl")):
            self._read(path)
        self.path = self.folder / f"replies-rank{rank}.jsonl"
        self._handle = self.path.open("a", encoding="utf-8")
        if self._handle.tell() and not self._ends_with_newline():
            self._handle.write("\n")  # a killed write left half a line: start a fresh one

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def _read(self, path: Path) -> None:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                self.replies[str(row["key"])] = str(row["reply"])
            except (ValueError, KeyError, TypeError):
                self.torn += 1  # only a write cut short by a kill leaves such a line
        if self.torn:
            logger.warning("%s: ignored %d incomplete line(s)", path, self.torn)

    def get(self, key: str) -> str | None:
        """The stored reply for a request key, or None."""
        return self.replies.get(key)

    def put(self, entries: Iterable[tuple[str, str]]) -> None:
        """Store replies and force them to disk before returning."""
        lines = []
        for key, reply in entries:
            self.replies[key] = reply
            lines.append(json.dumps({"key": key, "reply": reply}, ensure_ascii=False) + "\n")
        if lines:
            self._handle.write("".join(lines))
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file (replies stay on disk)."""
        self._handle.close()
