"""Calls to a server made a few at a time, that show a stall and stop at once on Ctrl-C.

A judge or fallback model's requests run in worker threads. Two things a plain thread pool
gets wrong for a user watching a run: a server that accepts and never answers shows nothing
for minutes (a timeout of 60 s, retried, per request), and Ctrl-C waits for every request in
flight to time out — at the interrupt and again when the interpreter exits, which joins a
pool's threads. Here a waiting run says so (`on_wait`, every few seconds, with how long
nothing finished), and an interrupt sets `stop`, closes the connections (`abort`) and leaves
at once: the workers are daemon threads, which neither the interrupt nor the exit waits for.
What finished before stays finished.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
POLL_SECONDS = 5.0


def run_calls(
    calls: Sequence[Callable[[], T]],
    workers: int,
    stop: threading.Event,
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
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(calls)):
        todo.put(index)
    finished: queue.SimpleQueue[tuple[int, T | None, BaseException | None]] = queue.SimpleQueue()

    def work() -> None:
        while not stop.is_set():
            try:
                index = todo.get_nowait()
            except queue.Empty:
                return
            try:
                finished.put((index, calls[index](), None))
            except BaseException as error:  # handed to the caller's thread
                finished.put((index, None, error))

    for _ in range(max(1, min(workers, len(calls)))):
        threading.Thread(target=work, daemon=True).start()
    results: list[T | None] = [None] * len(calls)
    pending = len(calls)
    last_finished = time.monotonic()
    interrupted = False
    try:
        while pending:
            try:
                index, result, error = finished.get(timeout=poll_seconds)
            except queue.Empty:
                if on_wait is not None:
                    on_wait(time.monotonic() - last_finished)
                continue
            last_finished = time.monotonic()
            pending -= 1
            if error is not None:
                raise error
            results[index] = result
            if on_done is not None:
                on_done(result)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        stop.set()  # workers take no new call; those in flight end with their request
        if interrupted and abort is not None:
            abort()
    return results  # type: ignore[return-value]
