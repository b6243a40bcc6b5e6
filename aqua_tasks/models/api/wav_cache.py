"""The WAV bytes a run sends for each clip file, made once per file and kept in a bounded LRU.

AQUA asks four questions of every clip (Solvable, AAD, IASD, IAQD, one after the other in
the released files) and a run over several variants asks them again. Decoding, resampling
and encoding a clip is CPU work under the GIL, which serializes the concurrent requests, so
each clip is made once: requests in flight for a clip that is being made wait for it instead
of making it again. A file is known by its path and `os.stat` identity (device, inode, size,
mtime and ctime in ns), so a file rewritten in place is made afresh; a file that changes
while it is read is sent as read but not kept. Only clip files (`LazyAudio`) are kept; an
in-memory array is encoded per request, as before. The bytes are those of `wav_bytes`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

from aqua_tasks.audio.clips import TARGET_SAMPLING_RATE, LazyAudio
from aqua_tasks.models.api.payload import wav_bytes

# 64 MiB: ≈ 400 AQUA clips (5 s at 16 kHz, 16-bit: 160 kB each), more than a track's 360.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
ClipKey = tuple[str, int, int, int, int, int, int, int]


def clip_key(clip: Mapping[str, Any], rate: int = TARGET_SAMPLING_RATE) -> ClipKey | None:
    """What identifies a clip file's WAV at `rate` Hz; None for an array or an unreadable file."""
    if not isinstance(clip, LazyAudio):
        return None
    try:
        stat = os.stat(clip.path)
    except OSError:
        return None  # made uncached, so the error reads as it always did
    return (
        clip.path,
        stat.st_dev,
        stat.st_ino,
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ctime_ns,
        clip.sampling_rate,
        rate,
    )


class WavCache:
    """`wav_bytes` of clip files, least recently used dropped first beyond `max_bytes`."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative integer, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self.size_bytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[ClipKey, bytes] = OrderedDict()
        self._making: dict[ClipKey, Future[bytes]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def wav(self, clip: Mapping[str, Any], rate: int = TARGET_SAMPLING_RATE) -> bytes:
        """`wav_bytes(clip, rate)`, made once per clip file while it stays unchanged."""
        key = clip_key(clip, rate)
        if key is None:
            return wav_bytes(clip, rate)
        with self._lock:
            kept = self._entries.get(key)
            if kept is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return kept
            making = self._making.get(key)
            if making is None:
                mine: Future[bytes] = Future()
                self._making[key] = mine
                self.misses += 1
            else:
                self.hits += 1
        if making is not None:
            return making.result()  # the same bytes, or the same error, as its maker's
        try:
            wav = wav_bytes(clip, rate)
        except BaseException as error:
            with self._lock:
                del self._making[key]
            mine.set_exception(error)
            raise
        unchanged = clip_key(clip, rate) == key
        with self._lock:
            del self._making[key]
            if unchanged:
                self._keep(key, wav)
        mine.set_result(wav)
        return wav

    def _keep(self, key: ClipKey, wav: bytes) -> None:
        if len(wav) > self.max_bytes:
            return
        self._entries[key] = wav
        self.size_bytes += len(wav)
        while self.size_bytes > self.max_bytes:
            _, dropped = self._entries.popitem(last=False)
            self.size_bytes -= len(dropped)


class WavPrefetch:
    """Makes the clips of the requests just ahead of the workers, in a thread of its own.

    The workers of a run spend most of their time waiting on the server; making the next
    requests' clips then keeps that CPU work off their path. It runs at most `lookahead`
    requests ahead of the last one a worker started, so the clips it makes are still in the
    cache when they are asked for.
    """

    def __init__(
        self, cache: WavCache, clips: list[list[Mapping[str, Any]]], lookahead: int
    ) -> None:
        self._cache = cache
        self._clips = clips
        self._lookahead = lookahead
        self._started = 0
        self._closed = False
        self._turn = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="wav-prefetch", daemon=True)

    def start(self) -> None:
        """Begin making clips (nothing to do when the cache keeps none)."""
        if self._cache.max_bytes and self._lookahead > 0:
            self._thread.start()

    def close(self) -> None:
        """Stop making clips; returns once the clip being made is done."""
        with self._turn:
            self._closed = True
            self._turn.notify()
        if self._thread.is_alive():
            self._thread.join()  # at most the clip being made

    def started(self) -> None:
        """A worker took the next request."""
        with self._turn:
            self._started += 1
            self._turn.notify()

    def _run(self) -> None:
        for index, clips in enumerate(self._clips):
            with self._turn:
                self._turn.wait_for(
                    lambda index=index: self._closed or index < self._started + self._lookahead
                )
                if self._closed:
                    return
            for clip in clips:
                # A failure is not kept: the request that needs the clip makes it again and
                # reports why (or, while this thread is making it, gets the same error).
                if isinstance(clip, LazyAudio):
                    with contextlib.suppress(Exception):
                        self._cache.wav(clip)
