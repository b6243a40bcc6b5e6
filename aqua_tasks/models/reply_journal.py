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

from eval_common.durable_jsonl import DurableAppender, cache_root, read_records
from eval_common.outputs import write_text

logger = logging.getLogger(__name__)

JOURNAL_FORMAT = 1


def default_cache_dir() -> Path:
    """Where journals go by default: `$AQUA_CACHE_DIR/audiolm-replies`, else the user's
    cache folder (`durable_jsonl.cache_root`)."""
    return cache_root("audiolm-replies")


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
        # One file per process rank: ranks of a data-parallel run never write the same file.
        self.path = self.folder / f"replies-rank{rank}.jsonl"
        self._appender = DurableAppender(self.path)
        self._appender.require_writable("the reply journal")  # before the model generates
        described = self.folder / "setting.json"
        if not described.exists():
            # For people looking at the folder; keys never depend on this file.
            write_text(described, json.dumps(dict(setting), indent=2, sort_keys=True) + "\n")
        self.replies: dict[str, str] = {}
        self.torn = 0
        for path in sorted(self.folder.glob("replies-rank*.jsonl")):
            records, torn = read_records(path)
            # A reply read back is text, as generated; anything else is not one (re-generated).
            complete = [r for r in records if isinstance(r.get("reply"), str)]
            torn += len(records) - len(complete)
            self.replies.update((str(r["key"]), r["reply"]) for r in complete)
            if torn:
                logger.warning("%s: ignored %d incomplete or unreadable line(s)", path, torn)
            self.torn += torn

    def get(self, key: str) -> str | None:
        """The stored reply for a request key, or None."""
        return self.replies.get(key)

    def put(self, entries: Iterable[tuple[str, str]]) -> None:
        """Store replies and force them to disk before returning."""
        entries = list(entries)
        self._appender.append({"key": key, "reply": reply} for key, reply in entries)
        self.replies.update(entries)
