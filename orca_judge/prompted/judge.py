"""A prompted LLM judge: one 1-5 rating per item, re-asked on invalid replies, cached on disk.

Each item is asked with the versioned prompt (`prompt.py`) at temperature 0. An invalid reply
(not JSON, no integer `rating` 1-5) is answered with the reason and asked again, up to
`max_attempts` asks; after that, or when the request still fails after the HTTP retries, the
item is a **failed judgement**: counted, listed, given no rating (never a default one).
Ratings the model gave are cached under a key of judge model + settings + prompt version +
endpoint + item, so a rerun sends nothing for them; a failed judgement (invalid replies to
every ask, or a request that failed in transport) is never cached: a rerun asks it again, so
"fix the endpoint and rerun" always holds. A cached entry is checked as a fresh reply is
(a rating 1-5, counts and texts of their types, this prompt version): one that fails is
counted and asked again, never used.
A status that will fail every item (401, 403, 404) or a server never reached stops the run.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eval_common.cli import progress
from eval_common.concurrent_calls import run_calls
from eval_common.durable_jsonl import cache_root
from eval_common.http import RequestFailure, WaitNotes, redact
from eval_common.reply_cache import (
    ReplyCache,
    cache_file_name,
    cache_key,
    cache_note,
    count_problem,
)
from orca_judge.errors import JudgeEndpointError
from orca_judge.prompted.backends import ChatBackend, form_problem, make_backend
from orca_judge.prompted.prompt import PROMPT_VERSION, first_messages, re_ask
from orca_judge.prompted.reply import read_reply, unit
from orca_judge.prompted.settings import LlmJudgeSettings

ITEM_FIELDS = ("question", "reference", "rationale", "transcript", "candidate")
# The item a run's judge rates before any generation (key, model, reply form).
PROBE_ITEM = {
    "id": "probe",
    "question": "Which animal is heard in the clip?",
    "reference": "a dog barking",
    "rationale": "",
    "transcript": "",
    "candidate": "A dog is barking.",
}
FAILURES_LISTED = 10


@dataclass
class Judgement:
    """One item's judgement: a rating (and its [0, 1] form), or why it failed."""

    id: str
    rating: int | None
    rating_unit: float | None
    reason: str = ""
    failure: str | None = None  # set on a failed judgement
    asks: int = 0
    from_cache: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    replies: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether the judge gave no rating for this item."""
        return self.rating is None

    def to_dict(self) -> dict[str, Any]:
        """The per-item row written by the command and the metric."""
        return {**asdict(self), "failed": self.failed}


@dataclass
class JudgeStats:
    """What one judge did: items asked, served from cache, failed; retries; tokens."""

    items: int = 0
    sent: int = 0  # items that needed the judge model (not from cache)
    from_cache: int = 0
    failed: int = 0
    invalid_replies: int = 0  # replies re-asked or given up on
    http_retries: int = 0
    retries_by_reason: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


def cached_judgement_problem(entry: Mapping[str, Any]) -> str | None:
    """Why a judge cache entry cannot be used as a judgement (None: it can)."""
    if entry.get("prompt_version") != PROMPT_VERSION:
        return f"prompt_version {entry.get('prompt_version')!r}, not {PROMPT_VERSION}"
    rating = entry.get("rating")
    if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 5:
        return f"rating {rating!r} is not an integer 1-5"
    if problem := count_problem(entry, "asks", "prompt_tokens", "completion_tokens"):
        return problem
    replies = entry.get("replies", [])
    if not isinstance(entry.get("reason", ""), str) or not (
        isinstance(replies, list) and all(isinstance(r, str) for r in replies)
    ):
        return "reason or replies are not text"
    return None


def default_cache_dir() -> Path:
    """`$AQUA_CACHE_DIR/llm-judge`, else `$XDG_CACHE_HOME/aqua-bench-eval/llm-judge`."""
    return cache_root("llm-judge")


def item_of(record: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The judge's view of a record: its id (else its position) and the text fields."""
    rid = record.get("id")
    return {
        "id": str(index) if rid is None else str(rid),
        **{name: str(record.get(name) or "") for name in ITEM_FIELDS},
    }


class PromptedJudge:
    """Rates candidate answers 1-5 against the reference with a chat model."""

    def __init__(self, settings: LlmJudgeSettings, backend: ChatBackend | None = None) -> None:
        self.settings = settings
        self.backend = backend or make_backend(settings)
        self.cache: ReplyCache | None = None
        if settings.cache:
            folder = Path(settings.cache_dir) if settings.cache_dir else default_cache_dir()
            self.cache = ReplyCache(
                folder / cache_file_name(f"{settings.backend}-{settings.model}"),
                check=cached_judgement_problem,
            )
        self.stats = JudgeStats()
        where = self.settings.endpoint() or self.settings.model
        policy = getattr(self.backend, "policy", None)  # a local model has no network wait
        self._waits = WaitNotes(
            "llm-judge", where, self.settings.timeout, self.settings.max_retries, policy
        )
        self._lock = threading.Lock()
        self._reached = threading.Event()

    def check_endpoint(self) -> None:
        """JudgeEndpointError unless the model rates one small test item in the form asked for;
        never cached. A run calls it before any generation, so a wrong key, model or judge
        costs no reply."""

        def problem_of(text: str) -> str | None:
            read = read_reply(text)
            return None if read.rating is not None else str(read.problem)

        messages = first_messages(PROBE_ITEM)
        try:
            problem = form_problem(
                self.backend, messages, problem_of, re_ask, self.settings.max_attempts
            )
        except RequestFailure as failure:
            raise self._endpoint_error(failure.message, failure.status) from None
        if problem is None:
            return
        raise JudgeEndpointError(
            f"llm_judge: {self.settings.model!r} answered the test item checked before "
            f"generation {self.settings.max_attempts} times, never in the form asked for "
            f"({problem}); choose a model that follows the rating instruction"
        )

    def describe(self) -> dict[str, Any]:
        """Which judge, with which prompt: recorded with every figure and per-item row."""
        return {
            **self.settings.identity(),
            "endpoint": self.settings.endpoint(),
            "prompt_version": PROMPT_VERSION,
            "cache": str(self.cache.path) if self.cache is not None else None,
        }

    def key(self, item: Mapping[str, Any]) -> str:
        """The cache key: judge model and settings, prompt version, endpoint, item text."""
        return cache_key(
            {
                "kind": "llm-judge",
                "judge": self.settings.identity(),
                "prompt_version": PROMPT_VERSION,
                "endpoint": self.settings.endpoint(),
                "item": {name: item[name] for name in ITEM_FIELDS},
            }
        )

    def _ask(self, item: dict[str, Any], stop: threading.Event) -> Judgement:
        key = self.key(item)
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            return Judgement(
                item["id"],
                cached["rating"],
                unit(cached["rating"]),
                cached.get("reason", ""),
                None,
                cached.get("asks", 0),
                True,
                cached.get("prompt_tokens", 0),
                cached.get("completion_tokens", 0),
                list(cached.get("replies", [])),
            )
        judged = Judgement(item["id"], None, None)
        messages = first_messages(item)
        for _ in range(self.settings.max_attempts):
            if stop.is_set():
                judged.failure = "not asked: the run stopped"
                return judged
            try:
                reply = self.backend.complete(messages, stop)
            except RequestFailure as failure:
                if failure.fatal or (failure.reason == "connection" and not self._reached.is_set()):
                    stop.set()
                    raise
                more = f" ({failure.attempts} attempts)" if failure.attempts > 1 else ""
                judged.failure = redact(failure.message, self.backend.secret) + more
                return judged  # not cached: a rerun asks again
            self._reached.set()
            judged.asks += 1
            judged.prompt_tokens += reply.prompt_tokens
            judged.completion_tokens += reply.completion_tokens
            judged.replies.append(reply.text)
            read = read_reply(reply.text)
            if read.rating is not None:
                judged.rating, judged.rating_unit, judged.reason = (
                    read.rating,
                    unit(read.rating),
                    read.reason,
                )
                judged.failure = None
                break
            with self._lock:
                self.stats.invalid_replies += 1
            judged.failure = f"invalid reply after {judged.asks} ask(s): {read.problem}"
            messages = re_ask(messages, reply.text, str(read.problem))
        if self.cache is not None and not judged.failed:
            kept = ("rating", "reason", "asks", "prompt_tokens", "completion_tokens", "replies")
            entry = {k: v for k, v in judged.to_dict().items() if k in kept}
            self.cache.put(key, {"prompt_version": PROMPT_VERSION, **entry})
        return judged

    def score(
        self, records: Sequence[Mapping[str, Any]], progress_bar: bool = False
    ) -> list[Judgement]:
        """One judgement per record, in order; JudgeEndpointError when the endpoint refuses all."""
        items = [item_of(r, i) for i, r in enumerate(records)]
        self.stats = JudgeStats()  # per call: a session's second pass reports its own
        self._waits.minutes_said = 0
        retries_before = Counter(self.backend.stats.by_reason)
        started = time.perf_counter()
        stop = threading.Event()
        workers = 1 if self.settings.backend == "hf" else self.settings.concurrency
        bar = progress(None, "llm-judge", progress_bar, total=len(items), unit="item")
        try:
            results = run_calls(
                [functools.partial(self._ask, item, stop) for item in items],
                workers,
                stop,
                on_done=lambda _: bar.update(1),
                on_wait=lambda seconds: self._note_waiting(bar, seconds, retries_before),
                abort=self.backend.close,
            )
        except RequestFailure as failure:
            raise self._endpoint_error(failure.message, failure.status) from None
        finally:
            bar.close()
        judged = list(results)
        self._count(judged, time.perf_counter() - started, retries_before)
        return judged

    def _note_waiting(self, bar: Any, seconds: float, before: Counter) -> None:
        """Say that replies are awaited: on the bar, and on stderr (`WaitNotes`)."""
        retries = Counter(self.backend.stats.by_reason) - before
        said = ", ".join(f"{k}: {v}" for k, v in sorted(retries.items())) or "none yet"
        bar.set_postfix_str(f"waiting {seconds:.0f} s for a reply; retries {said}")
        self._waits.note(seconds, said)

    def _count(self, judged: Sequence[Judgement], seconds: float, before: Counter) -> None:
        s = self.stats
        s.items += len(judged)
        s.from_cache += sum(j.from_cache for j in judged)
        s.sent += sum(not j.from_cache for j in judged)
        s.failed += sum(j.failed for j in judged)
        s.prompt_tokens += sum(j.prompt_tokens for j in judged)
        s.completion_tokens += sum(j.completion_tokens for j in judged)
        s.retries_by_reason = dict(Counter(self.backend.stats.by_reason) - before)
        s.http_retries = sum(s.retries_by_reason.values())
        s.seconds += seconds

    def _endpoint_error(self, message: str, status: int | None) -> JudgeEndpointError:
        hint = {
            401: f"check the API key in ${self.settings.api_key_env} (api_key_env names it)",
            403: f"the key in ${self.settings.api_key_env} has no access to this model",
            404: "check base_url (the full chat-completions URL) and model (the server's name)",
        }.get(status or 0, "is the server running at base_url?")
        return JudgeEndpointError(
            f"llm_judge: request to {self.settings.base_url} for model {self.settings.model!r} "
            f"failed: {redact(message, self.backend.secret)}; {hint}"
        )

    def summary(self) -> str:
        """One line: items, sent, from cache, failed, retries, tokens."""
        s = self.stats
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(s.retries_by_reason.items()))
        return (
            f"llm-judge {self.settings.model} ({PROMPT_VERSION}): {s.items} items: {s.sent} "
            f"asked, {s.from_cache} from cache, {s.failed} failed judgements; "
            f"{s.invalid_replies} invalid replies re-asked or given up; {s.http_retries} HTTP "
            f"retries{f' ({reasons})' if reasons else ''}; tokens {s.prompt_tokens} prompt, "
            f"{s.completion_tokens} completion" + cache_note(self.cache)
        )

    def print_failures(self, judged: Sequence[Judgement]) -> None:
        """List the failed judgements (the first few) on stderr."""
        failed = [j for j in judged if j.failed]
        for j in failed[:FAILURES_LISTED]:
            print(f"  {j.id}: {j.failure}", file=sys.stderr)
        if len(failed) > FAILURES_LISTED:
            print(f"  ... and {len(failed) - FAILURES_LISTED} more", file=sys.stderr)

    def close(self) -> None:
        """Release the backend."""
        self.backend.close()
