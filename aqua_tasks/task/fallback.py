"""The network half of the LLM fallback (`aqua-rules+llm`): ask a chat model, cache, count.

A reply the rules leave unparsed is shown to the run's fallback model (`--metadata
'{"fallback": {...}}'`: an OpenAI-compatible endpoint, or `backend: hf`, a local chat model
folder) through the prompted judge's backends (`orca_judge.prompted.backends`: temperature 0,
HTTP retries with backoff on 429/5xx). The prompt and the reading of its strict-JSON reply
are pure (`core.extract.fallback`). An invalid reply is re-asked with the reason, up to
`max_attempts` asks; after that, or when the request still fails, the reply stays unparsed
and is counted as a failed fallback, never a crash. Readings the model gave are cached on
disk by model and settings + prompt version + endpoint + options + reply, so a rerun sends
nothing for them; a transport failure is not cached. A server that refuses every request
(401/403/404, never reached), or a batch whose every request failed, stops with one line.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from aqua_tasks.core.extract.fallback import (
    FAILED,
    FALLBACK_PROMPT_VERSION,
    fallback_messages,
    re_ask,
    read_fallback_reply,
)
from aqua_tasks.errors import EndpointError
from eval_common.durable_jsonl import cache_root
from eval_common.http import RequestFailure, redact
from eval_common.reply_cache import ReplyCache, cache_file_name, cache_key
from orca_judge.prompted.backends import ChatBackend, make_backend
from orca_judge.prompted.settings import LlmJudgeSettings, build_settings

WHERE = "--metadata fallback"


@dataclass
class FallbackStats:
    """What the fallback did in this process: replies asked, from cache, failed, re-asks."""

    asked: int = 0  # replies that needed the model (not from a cache)
    from_cache: int = 0
    failed: int = 0  # invalid after every ask, or the request failed
    invalid_replies: int = 0
    requests: int = 0


def default_cache_dir() -> Path:
    """`$AQUA_CACHE_DIR/llm-fallback`, else `$XDG_CACHE_HOME/aqua-bench-eval/llm-fallback`."""
    return cache_root("llm-fallback")


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
            self.cache = ReplyCache((folder or default_cache_dir()) / name)
        self.stats = FallbackStats()
        # This process's readings, transport failures included: a reply the batch before
        # `process_results` failed to read is not asked again item by item.
        self._memory: dict[str, int] = {}
        self._lock = threading.Lock()
        self._reached = threading.Event()

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
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            with self._lock:
                self.stats.from_cache += 1
                self._memory[key] = int(cached["reading"])
            return int(cached["reading"])
        with self._lock:
            self.stats.asked += 1
        reading, transport_failed = self._asked(options, reply, stop)
        with self._lock:
            self.stats.failed += reading == FAILED
            self._memory[key] = reading
        if self.cache is not None and not transport_failed:
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

        EndpointError when the server refuses every request, or (`all_failed_is_error`) when
        every request of the batch failed: a run then stops once, not item by item.
        """
        stop = threading.Event()
        failed_before, asked_before = self.stats.failed, self.stats.asked
        workers = 1 if self.settings.backend == "hf" else self.settings.concurrency
        try:
            with ThreadPoolExecutor(max_workers=workers) as executor:
                readings = list(executor.map(lambda p: self._ask(p[0], p[1], stop), pairs))
        except RequestFailure as failure:
            raise self._endpoint_error(failure.message, failure.status) from None
        asked = self.stats.asked - asked_before
        if all_failed_is_error and asked > 1 and self.stats.failed - failed_before == asked:
            raise self._endpoint_error(f"all {asked} fallback requests failed", None)
        return readings

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
            f"{s.invalid_replies} invalid replies re-asked or given up"
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
