"""The network half of the LLM fallback (`aqua-rules+llm`): ask a chat model, cache, count.

A reply the rules leave unparsed is shown to the run's fallback model (`--metadata
'{"fallback": {...}}'`: an OpenAI-compatible endpoint, or `backend: hf`, a local chat model
folder) through the prompted judge's backends (`orca_judge.prompted.backends`: temperature 0,
HTTP retries with backoff on 429/5xx). The prompt and the reading of its strict-JSON reply
are pure (`core.extract.fallback`). An invalid reply is re-asked with the reason, up to
`max_attempts` asks; after that, or when the request still fails, the reply stays unparsed
and is counted as a failed fallback, never a crash. Readings the model gave are cached on
disk by model and settings + prompt version + endpoint + options + reply, so a rerun sends
nothing for them; a failed reading (transport, or invalid replies to every ask) is never
cached, so a rerun asks again and its outcome never depends on the cache's state. A cached
reading is checked as a fresh one (this prompt version, a code for one of the reply's
options): one that fails is counted and asked again.

Generation comes first and is the expensive part, so the endpoint is checked before it: one
small question (`check_endpoint`: key, model, reply form) when the docs are built, and a run
whose reader cannot read stops there with one line. A reader that still fails after
generation (the server refuses every request, or every request of a batch failed) never
loses a reply: it stops asking, every reply it did not read counts as a failed fallback
(`n_fallback_failed`, left unparsed), lm-eval writes its samples, and `failures()` gives the
line `aqua eval` ends with (exit 1) and plain lm_eval logs.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aqua_tasks.core.extract.fallback import (
    FAILED,
    FALLBACK_PROMPT_VERSION,
    NONE,
    OPTION_CODES_START,
    PROBE_OPTIONS,
    PROBE_REPLY,
    fallback_messages,
    re_ask,
    read_fallback_reply,
)
from aqua_tasks.errors import EndpointError
from eval_common.concurrent_calls import run_calls
from eval_common.durable_jsonl import cache_root
from eval_common.http import RequestFailure, WaitNotes, redact
from eval_common.reply_cache import ReplyCache, cache_file_name, cache_key, cache_note
from orca_judge.prompted.backends import ChatBackend, form_problem, make_backend
from orca_judge.prompted.settings import LlmJudgeSettings, build_settings

WHERE = "--metadata fallback"


@dataclass
class FallbackStats:
    """What the fallback did in this process: replies asked, from cache, failed, re-asks."""

    asked: int = 0  # replies that needed the model (not from a cache)
    from_cache: int = 0
    failed: int = 0  # invalid after every ask, or the request failed
    failed_unusable: int = 0  # of those: invalid replies to every ask (the server answered)
    unread: int = 0  # of those: not asked at all, the reader having failed before
    invalid_replies: int = 0
    requests: int = 0


def default_cache_dir() -> Path:
    """`$AQUA_CACHE_DIR/llm-fallback`, else `$XDG_CACHE_HOME/aqua-bench-eval/llm-fallback`."""
    return cache_root("llm-fallback")


def cached_reading_problem(entry: Mapping) -> str | None:
    """Why a fallback cache entry cannot be a reading (None: it can; options checked on use)."""
    if entry.get("prompt_version") != FALLBACK_PROMPT_VERSION:
        return f"prompt_version {entry.get('prompt_version')!r}, not {FALLBACK_PROMPT_VERSION}"
    reading = entry.get("reading")
    if isinstance(reading, bool) or not isinstance(reading, int) or reading < NONE:
        return f"reading {reading!r} is not a fallback code"
    return None


def check_fallback_settings(settings: Mapping) -> None:
    """LlmJudgeError naming the first fallback setting of a wrong type or range."""
    build_settings(dict(settings), WHERE)


def settings_text(settings: Mapping) -> str:
    """The fallback settings as the docs of a run carry them (canonical JSON)."""
    return json.dumps(dict(settings), sort_keys=True)


class FallbackReader:
    """Reads unparsed replies with a chat model into fallback codes (`core.extract.fallback`)."""

    def __init__(self, settings: Mapping, backend: ChatBackend | None = None) -> None:
        self.settings: LlmJudgeSettings = build_settings(dict(settings), WHERE)
        self.backend = backend or make_backend(self.settings)
        self.cache: ReplyCache | None = None
        if self.settings.cache:
            folder = Path(self.settings.cache_dir) if self.settings.cache_dir else None
            name = cache_file_name(f"{self.settings.backend}-{self.settings.model}")
            self.cache = ReplyCache(
                (folder or default_cache_dir()) / name, check=cached_reading_problem
            )
        self.stats = FallbackStats()
        # This process's readings, transport failures included: a reply the batch before
        # `process_results` failed to read is not asked again item by item.
        self._memory: dict[str, int] = {}
        where = self.settings.endpoint() or self.settings.model
        policy = getattr(self.backend, "policy", None)  # a local model has no network wait
        self._waits = WaitNotes(
            "LLM fallback", where, self.settings.timeout, self.settings.max_retries, policy
        )
        self._lock = threading.Lock()
        self._reached = threading.Event()
        self.checked = False
        # Why the reader stopped asking, once it failed after generation (None: it reads).
        self.broken: str | None = None

    def check_endpoint(self) -> None:
        """EndpointError unless the model reads one small test reply in the form asked for:
        called before any generation, so a wrong key, model or reader costs no reply."""
        if self.checked:
            return

        def problem_of(text: str) -> str | None:
            read = read_fallback_reply(text, len(PROBE_OPTIONS))
            return None if read.reading is not None else str(read.problem)

        messages = fallback_messages(PROBE_OPTIONS, PROBE_REPLY)
        try:
            problem = form_problem(
                self.backend, messages, problem_of, re_ask, self.settings.max_attempts
            )
        except RequestFailure as failure:
            raise self._endpoint_error(failure.message, failure.status) from None
        self.checked = problem is None
        if self.checked:
            return
        raise EndpointError(
            f"LLM fallback: {self.settings.model!r} answered the test reply checked before "
            f"generation {self.settings.max_attempts} times, never in the form asked for "
            f"({problem}); choose a model that follows the JSON instruction"
        )

    def key(self, options: Sequence[str], reply: str) -> str:
        """The cache key: model and settings, prompt version, endpoint, options, reply."""
        return cache_key(
            {
                "kind": "aqua-fallback",
                "reader": self.settings.identity(),
                "prompt_version": FALLBACK_PROMPT_VERSION,
                "endpoint": self.settings.endpoint(),
                "options": list(options),
                "reply": reply,
            }
        )

    def _ask(self, options: Sequence[str], reply: str, stop: threading.Event) -> int:
        key = self.key(options, reply)
        with self._lock:
            if key in self._memory:
                return self._memory[key]
            if self.broken is not None:  # failed before: the reply stays unparsed, unasked
                self.stats.failed += 1
                self.stats.unread += 1
                self._memory[key] = FAILED
                return FAILED
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None and cached["reading"] >= OPTION_CODES_START + len(options):
            self.cache.refuse(key, f"reading {cached['reading']} for {len(options)} options")
            cached = None
        if cached is not None:
            with self._lock:
                self.stats.from_cache += 1
                self._memory[key] = cached["reading"]
            return cached["reading"]
        with self._lock:
            self.stats.asked += 1
        reading, transport_failed = self._asked(options, reply, stop)
        with self._lock:
            self.stats.failed += reading == FAILED
            self.stats.failed_unusable += reading == FAILED and not transport_failed
            self._memory[key] = reading
        if self.cache is not None and reading != FAILED:
            self.cache.put(key, {"prompt_version": FALLBACK_PROMPT_VERSION, "reading": reading})
        return reading

    def _asked(self, options: Sequence[str], reply: str, stop: threading.Event) -> tuple[int, bool]:
        """The model's reading (FAILED after the last invalid reply), and a transport failure."""
        messages = fallback_messages(options, reply)
        for _ in range(self.settings.max_attempts):
            try:
                with self._lock:
                    self.stats.requests += 1
                answer = self.backend.complete(messages, stop)
            except RequestFailure as failure:
                if failure.fatal or (failure.reason == "connection" and not self._reached.is_set()):
                    stop.set()
                    raise
                return FAILED, True
            self._reached.set()
            read = read_fallback_reply(answer.text, len(options))
            if read.reading is not None:
                return read.reading, False
            with self._lock:
                self.stats.invalid_replies += 1
            messages = re_ask(messages, answer.text, str(read.problem))
        return FAILED, False

    def read_many(
        self, pairs: Sequence[tuple[Sequence[str], str]], *, all_failed_is_error: bool = False
    ) -> list[int]:
        """One fallback code per (options, reply), in order, asked concurrently.

        When the server refuses every request, or (`all_failed_is_error`) every request of the
        batch failed, the reader stops asking (`broken`, said once on stderr): this batch's
        and every later unread reply reads FAILED, so the run ends with all its replies kept.
        """
        stop = threading.Event()
        failed_before, asked_before = self.stats.failed, self.stats.asked
        unusable_before = self.stats.failed_unusable
        workers = 1 if self.settings.backend == "hf" else self.settings.concurrency
        calls = [functools.partial(self._ask, options, reply, stop) for options, reply in pairs]
        try:
            readings = run_calls(
                calls, workers, stop, on_wait=self._waits.note, abort=self.backend.close
            )
        except RequestFailure as failure:
            self._stop_asking(self._endpoint_error(failure.message, failure.status))
            return [call() for call in calls]  # read ones from memory, the others FAILED
        asked = self.stats.asked - asked_before
        if all_failed_is_error and asked > 1 and self.stats.failed - failed_before == asked:
            unusable = self.stats.failed_unusable - unusable_before
            if unusable == asked:
                self._stop_asking(EndpointError(
                    f"LLM fallback: {self.settings.model!r} answered all {asked} replies it was "
                    f"asked to read, but never in the form asked for ({self.settings.max_attempts}"
                    " asks each); choose a model that follows the JSON instruction"
                ))  # fmt: skip
            else:
                self._stop_asking(
                    self._endpoint_error(f"all {asked} fallback requests failed", None)
                )
        return readings

    def _stop_asking(self, error: EndpointError) -> None:
        with self._lock:
            if self.broken is not None:
                return
            self.broken = str(error)
        print(f"{error}; {KEPT}", file=sys.stderr)

    def failure(self) -> str | None:
        """The line a run ends with when this reader failed after generation, else None."""
        if self.broken is None:
            return None
        return (
            f"{self.broken}; {self.stats.failed} replies left unparsed (n_fallback_failed); {KEPT}"
        )

    def _endpoint_error(self, message: str, status: int | None) -> EndpointError:
        hint = {
            401: f"check the API key in ${self.settings.api_key_env} (fallback.api_key_env)",
            403: f"the key in ${self.settings.api_key_env} has no access to this model",
            404: "check fallback.base_url (the full chat-completions URL) and fallback.model",
        }.get(status or 0, "is the server at fallback.base_url running?")
        return EndpointError(
            f"LLM fallback: request to {self.settings.base_url or self.settings.model} for model "
            f"{self.settings.model!r} failed: {redact(message, self.backend.secret)}; {hint}"
        )

    def summary(self) -> str:
        """One line: replies asked, from cache, failed; requests and re-asks."""
        s = self.stats
        return (
            f"LLM fallback {self.settings.model} ({FALLBACK_PROMPT_VERSION}): {s.asked} replies "
            f"asked, {s.from_cache} from cache, {s.failed} failed; {s.requests} requests, "
            f"{s.invalid_replies} invalid replies re-asked or given up" + cache_note(self.cache)
        )


# What a reader that failed after generation leaves: every reply, and a way to read them.
KEPT = (
    "the replies are kept in the samples: read them again without generating with "
    "--model aqua-replay --model_args path=<this run's --output_path> and the same --tasks and "
    "--metadata (readings already made are cached)"
)

_READERS: dict[str, FallbackReader] = {}
_READERS_LOCK = threading.Lock()


def reader_for(settings: str | Mapping) -> FallbackReader:
    """The process's one reader of these settings (a doc's `fallback` text or a mapping)."""
    text = settings if isinstance(settings, str) else settings_text(settings)
    with _READERS_LOCK:
        if text not in _READERS:
            _READERS[text] = FallbackReader(json.loads(text))
        return _READERS[text]


def failures() -> list[str]:
    """The lines of this process's readers that failed after generation (see `failure`)."""
    with _READERS_LOCK:
        readers = list(_READERS.values())
    return [line for reader in readers if (line := reader.failure()) is not None]
