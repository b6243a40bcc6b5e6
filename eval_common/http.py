"""POST JSON to a chat-completions server with retries: backoff, jitter, `Retry-After`.

`HttpSession` keeps a pool of connections alive (httpx2, the maintained continuation of
httpx), shared by a run's worker threads, so a request to a busy or distant server pays no
TCP and TLS handshake of its own. Every message this module produces has the API key
scrubbed from it: servers sometimes echo the header back.
"""

from __future__ import annotations

import email.utils
import functools
import json
import random
import ssl
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, TypeVar

import httpx2

# Statuses worth another try: rate limit, request timeout, conflict and every server error.
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})
# Statuses that will not change for the next item either: wrong key, no access, wrong URL or
# model name. The run stops on them instead of failing every item the same way.
FATAL_STATUSES = frozenset({401, 403, 404})
MAX_MESSAGE_CHARS = 500
REDACTED = "[redacted]"


# What one attempt returns (the reply, or what the caller read from it).
T = TypeVar("T")


class RequestFailure(Exception):
    """One attempt failed; `retryable` says whether another attempt may succeed."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        reason: str = "error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.reason = reason  # a short label for the run's retry counts: 429, 5xx, timeout, …
        self.attempts = 1

    @property
    def fatal(self) -> bool:
        """Whether this status means the whole run is misconfigured (key, URL, model)."""
        return self.status in FATAL_STATUSES


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before another attempt."""

    max_retries: int = 5
    backoff_base: float = 1.0  # seconds before the first retry (before jitter)
    backoff_max: float = 60.0  # cap of one wait, also of a server's Retry-After

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries={self.max_retries}: expected 0 or more")
        if self.backoff_base < 0 or self.backoff_max < self.backoff_base:
            raise ValueError(
                f"backoff_base={self.backoff_base}, backoff_max={self.backoff_max}: expected "
                "0 <= backoff_base <= backoff_max (seconds)"
            )

    def silent_server_seconds(self, timeout: float) -> float:
        """The longest one request waits on a server that accepts it and never answers:
        every try times out, with the longest backoff between tries."""
        waits = (min(self.backoff_max, self.backoff_base * 2**k) for k in range(self.max_retries))
        return (self.max_retries + 1) * timeout + sum(waits)


# A reply slower than this is a wait worth explaining (a chat reply takes seconds at most).
WAIT_NOTED_AFTER = 10.0


@dataclass
class WaitNotes:
    """What a client says on stderr while it waits on replies, so a wait never looks stuck:
    once, how long a silent server can hold it (`policy` None: a local model, no network
    wait); then a line every minute."""

    who: str  # "llm-judge", "LLM fallback"
    where: str  # the endpoint, or the model
    timeout: float
    max_retries: int
    policy: RetryPolicy | None
    bound_said: bool = False
    minutes_said: int = 0

    def note(self, seconds: float, retries: str = "") -> None:
        """Called while waiting, `seconds` since a reply last arrived; `retries`: so far."""
        if self.policy is not None and seconds >= WAIT_NOTED_AFTER and not self.bound_said:
            self.bound_said = True
            bound = self.policy.silent_server_seconds(self.timeout)
            said = f"{bound:.0f} s" if bound < 120 else f"{bound / 60:.1f} min"
            print(
                f"{self.who}: waiting for {self.where}; a server that never answers is given up "
                f"after at most {said} per request (timeout {self.timeout:g} s × "
                f"{self.policy.max_retries + 1} tries, with backoff; lower `timeout` or "
                "`max_retries` to give up sooner); Ctrl-C stops",
                file=sys.stderr,
            )
        minute = int(seconds // 60)
        if minute > self.minutes_said:
            self.minutes_said = minute
            so_far = f"; retries so far: {retries}" if retries else ""
            print(
                f"{self.who}: no reply from {self.where} for {seconds:.0f} s (timeout "
                f"{self.timeout:g} s, {self.max_retries} retries per ask){so_far}; Ctrl-C stops "
                "and keeps what finished",
                file=sys.stderr,
            )


def redact(text: str, secret: str | None) -> str:
    """`text` with every occurrence of `secret` replaced (nothing to do without a secret)."""
    return text.replace(secret, REDACTED) if secret else text


def retry_delay(
    retry: int, policy: RetryPolicy, retry_after: float | None, rng: random.Random
) -> float:
    """Seconds to wait before retry number `retry` (1, 2, …): jittered exponential backoff.

    The jitter spreads concurrent clients that were refused together; a server's
    `Retry-After` is a lower bound, capped at `backoff_max`.
    """
    ceiling = min(policy.backoff_max, policy.backoff_base * 2 ** (retry - 1))
    delay = ceiling * rng.uniform(0.5, 1.0)
    if retry_after is not None:
        delay = max(delay, min(retry_after, policy.backoff_max))
    return delay


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """A `Retry-After` header as seconds from now (delta-seconds or an HTTP date), else None."""
    if not value:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def server_message(body: bytes) -> str:
    """The human-readable error in a server's reply body (OpenAI and vLLM shapes, else text)."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, Mapping):
        error = data.get("error")
        for candidate in (
            error.get("message") if isinstance(error, Mapping) else error,
            data.get("message"),
            data.get("detail"),
        ):
            if isinstance(candidate, str) and candidate.strip():
                text = candidate.strip()
                break
    text = " ".join(text.split())
    return text[:MAX_MESSAGE_CHARS] or "no message"


def _http_failure(response: httpx2.Response, secret: str | None) -> RequestFailure:
    status = response.status_code
    message = redact(f"HTTP {status}: {server_message(response.content)}", secret)
    retryable = status in RETRYABLE_STATUSES or status >= 500
    return RequestFailure(
        message,
        status=status,
        retryable=retryable,
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
        reason="429" if status == 429 else "5xx" if status >= 500 else str(status),
    )


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # The system's trust store, as urllib reads it. Loading it takes tens of milliseconds:
    # once per process, and one context serves every connection of every session.
    return httpx2.create_ssl_context()


class HttpSession:
    """Kept-alive connections that POST JSON; one per run, shared by its worker threads.

    `timeout` bounds each network operation (connect, every read and write); waiting for a
    free connection is not bounded, since a run never has more requests in flight than
    `connections`. Close it (or use it as a context manager) when the run is done.
    """

    def __init__(self, timeout: float, connections: int = 1) -> None:
        self.timeout = timeout
        self._client = httpx2.Client(
            verify=_tls_context(),
            timeout=httpx2.Timeout(timeout, pool=None),
            limits=httpx2.Limits(
                max_connections=connections, max_keepalive_connections=connections
            ),
        )

    def __enter__(self) -> HttpSession:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close every kept connection."""
        self._client.close()

    def post_json(
        self, url: str, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> dict[str, Any]:
        """One POST of `body` as JSON; the decoded JSON reply, or RequestFailure."""
        secret = _bearer_secret(headers)
        data = json.dumps(body).encode("utf-8")
        try:
            response = self._client.post(
                url, content=data, headers={"Content-Type": "application/json", **headers}
            )
        except httpx2.TimeoutException:
            raise RequestFailure(
                f"no reply within timeout={self.timeout:g} s", retryable=True, reason="timeout"
            ) from None
        except httpx2.RequestError as error:  # refused, reset, cut off, a broken reply
            detail = str(error) or type(error).__name__  # e.g. [Errno 111] Connection refused
            raise RequestFailure(
                redact(f"connection failed: {detail}", secret),
                retryable=True,
                reason="connection",
            ) from None
        if not response.is_success:
            raise _http_failure(response, secret)
        raw = response.content
        try:
            reply = json.loads(raw)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            snippet = " ".join(raw[:200].decode("utf-8", errors="replace").split())
            raise RequestFailure(redact(f"reply is not a JSON object: {snippet!r}", secret))
        return reply


def _bearer_secret(headers: Mapping[str, str]) -> str | None:
    value = headers.get("Authorization", "")
    return value.removeprefix("Bearer ").strip() or None


def post_with_retries(
    send: Callable[[], T],
    policy: RetryPolicy,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[RequestFailure], None] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> tuple[T, int]:
    """`send()` until it succeeds: (its result, retries used); the last RequestFailure otherwise.

    Only retryable failures are tried again, at most `policy.max_retries` times; `stop()`
    ends the waiting early (another request found the run misconfigured).
    """
    rng = rng or random.Random()
    retries = 0
    while True:
        try:
            return send(), retries
        except RequestFailure as failure:
            failure.attempts = retries + 1
            if not failure.retryable or retries >= policy.max_retries or stop():
                raise
            retries += 1
            if on_retry is not None:
                on_retry(failure)
            sleep(retry_delay(retries, policy, failure.retry_after, rng))


def usage_tokens(usage: object, name: str) -> int:
    """`usage[name]` of an OpenAI-style reply as a token count; 0 where it is missing or odd.

    Servers differ in what they put there (null, a string, nothing); the count is bookkeeping,
    so an unreadable one is zero rather than a failed request.
    """
    value = usage.get(name) if isinstance(usage, Mapping) else None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
