"""Calls to a server made a few at a time, that show a stall and stop at once on Ctrl-C.

A judge or fallback model's requests run in worker threads. Two things a plain thread pool
gets wrong for a user watching a run: a server that accepts and never answers shows nothing
for minutes (a timeout of 60 s, retried, per request), and Ctrl-C waits for every request in
flight to time out. Here a waiting run says so (`on_wait`, every few seconds, with how long
nothing finished), and an interrupt sets `stop`, closes the connections (`abort`: in-flight
reads end now) and leaves without joining the workers; what finished before stays finished.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from threading import Event
from typing import TypeVar

T = TypeVar("T")
POLL_SECONDS = 5.0


def run_calls(
    calls: Sequence[Callable[[], T]],
    workers: int,
    stop: Event,
    *,
    on_done: Callable[[T], None] | None = None,
    on_wait: Callable[[float], None] | None = None,
    abort: Callable[[], None] | None = None,
    poll_seconds: float = POLL_SECONDS,
) -> list[T]:
    """Each call's result, in order; the first call's exception is raised (the rest stop).

    `on_done(result)` runs as each call finishes (a progress bar); `on_wait(seconds)` runs
    every `poll_seconds` in which nothing finished, with the seconds since something last did.
    """
    results: list[T | None] = [None] * len(calls)
    executor = ThreadPoolExecutor(max_workers=max(1, workers))
    interrupted = False
    try:
        futures: dict[Future, int] = {executor.submit(call): i for i, call in enumerate(calls)}
        pending = set(futures)
        last_finished = time.monotonic()
        while pending:
            done, pending = wait(pending, timeout=poll_seconds, return_when=FIRST_EXCEPTION)
            if not done:
                if on_wait is not None:
                    on_wait(time.monotonic() - last_finished)
                continue
            last_finished = time.monotonic()
            for future in done:
                error = future.exception()
                if error is not None:
                    raise error
                results[futures[future]] = result = future.result()
                if on_done is not None:
                    on_done(result)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        stop.set()
        if interrupted and abort is not None:
            abort()
        # On an interrupt the workers are not joined: each ends as its connection closes.
        executor.shutdown(wait=not interrupted, cancel_futures=True)
    return results  # type: ignore[return-value]
