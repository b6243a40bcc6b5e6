"""A local OpenAI-compatible audio chat server for tests, benchmarks and dry runs.

It decodes every clip it receives (`input_audio` or an `audio_url` data URL), refuses any
that is not a 16 kHz mono WAV, and can add latency and inject faults (429 with
`Retry-After`, 500, a reply slower than the client's timeout) per item, so a client's
retries, failure handling and cache can be exercised end to end without a model. With
`require_audio=False` and `reply=rating_reply(rate)` it stands in for a prompted judge model:
it answers each chat with the JSON rating `rate` gives its text (or with `rate`'s text as it
is, an invalid reply).

    python tests/support/chat_stub.py --port 8000   # then base_url=http://127.0.0.1:8000/v1/chat/completions
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import hashlib
import io
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import soundfile as sf

EXPECTED_RATE = 16000
DATA_URL_PREFIX = "data:audio/wav;base64,"
# Fault actions, applied to an item's attempts in order: a status, a stall past the timeout,
# or an HTTP 200 that carries no usable reply (see `StubConfig.faults`).
FAULTS = ("429", "500", "timeout", "no-content", "no-choices", "not-json")


@dataclass
class ReceivedClip:
    """One decoded clip: its WAV header facts and samples."""

    sampling_rate: int
    channels: int
    samples: np.ndarray  # float32, first channel


@dataclass
class ReceivedRequest:
    """What the stub saw in one request."""

    text: str  # all text parts of the last user turn, joined
    clips: list[ReceivedClip]
    key: str  # digest of the text and the clips' bytes: the same item gives the same key
    arrived: float  # time.monotonic()
    status: int = 200
    usage: dict[str, int] = field(default_factory=dict)  # what the reply reported
    connection: int = 0  # which client connection carried it (1, 2, … in order of opening)


@dataclass
class StubConfig:
    """How the stub behaves."""

    api_key: str | None = None  # when set, any other Authorization gets 401
    model: str | None = None  # when set, any other model gets 404
    latency: float = 0.0  # seconds added to every request
    reply: Callable[[ReceivedRequest], str] = lambda request: "The answer is (a)."
    # Why generation stopped, per request: "length" stands for a reply cut at max_tokens.
    finish_reason: Callable[[ReceivedRequest], str] = lambda request: "stop"
    # Item marker (a substring of its text) -> actions for its first attempts, then success:
    # "429", "500", "timeout", or an HTTP 200 with "no-content" (`content: null`),
    # "no-choices" (a JSON object without `choices`) or "not-json" (a text body).
    faults: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # Item marker -> status returned on every attempt (the message echoes the Authorization
    # header, as careless servers do, so clients can be checked for scrubbing it).
    always_fail: Mapping[str, int] = field(default_factory=dict)
    stall_seconds: float = 2.0  # how long a "timeout" action keeps the client waiting
    hold_after: int | None = None  # after this many replies, hold further requests
    require_audio: bool = True  # False: text-only chats are served too (aqua build's IAQD)


class StubState:
    """Counters and records of a running stub (read by the test or benchmark)."""

    def __init__(self, config: StubConfig) -> None:
        self.config = config
        self.lock = threading.Lock()
        self.requests: list[ReceivedRequest] = []
        self.problems: list[str] = []  # audio or payload faults found in requests
        self.attempts: Counter = Counter()  # by item key
        self.replied = 0
        self.connections = 0  # client connections opened so far
        self.open_connections = 0  # of those, not yet closed by the client
        self.held = threading.Event()  # set when a request is held (see hold_after)
        self.release = threading.Event()

    @property
    def succeeded_keys(self) -> list[str]:
        """Keys of the requests that got a 200 reply, in arrival order."""
        with self.lock:
            return [r.key for r in self.requests if r.status == 200]


def decode_clip(part: Mapping[str, Any]) -> tuple[bytes, ReceivedClip]:
    """The WAV bytes and decoded clip of an `input_audio` or `audio_url` part; ValueError."""
    if part.get("type") == "input_audio":
        audio = part.get("input_audio") or {}
        if audio.get("format") != "wav":
            raise ValueError(f"input_audio.format is {audio.get('format')!r}, expected 'wav'")
        data = str(audio.get("data", ""))
    elif part.get("type") == "audio_url":
        url = str((part.get("audio_url") or {}).get("url", ""))
        if not url.startswith(DATA_URL_PREFIX):
            raise ValueError(f"audio_url is not a WAV data URL: {url[:40]!r}")
        data = url[len(DATA_URL_PREFIX) :]
    else:
        raise ValueError(f"not an audio part: {part.get('type')!r}")
    try:
        raw = base64.b64decode(data, validate=True)
    except binascii.Error as error:
        raise ValueError(f"audio data is not base64: {error}") from None
    info = sf.info(io.BytesIO(raw))
    if info.format != "WAV":
        raise ValueError(f"audio is {info.format}, expected WAV")
    samples, rate = sf.read(io.BytesIO(raw), dtype="float32", always_2d=True)
    clip = ReceivedClip(sampling_rate=rate, channels=samples.shape[1], samples=samples[:, 0])
    if rate != EXPECTED_RATE or clip.channels != 1:
        raise ValueError(f"audio is {rate} Hz with {clip.channels} channels, expected 16 kHz mono")
    return raw, clip


def read_request(
    body: Mapping[str, Any], require_audio: bool = True
) -> tuple[ReceivedRequest, list[str]]:
    """The text and clips of a chat-completions body, with the problems found in it."""
    problems: list[str] = []
    messages = body.get("messages") or []
    users = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
    content = users[-1].get("content") if users else None
    texts: list[str] = []
    clips: list[ReceivedClip] = []
    digest = hashlib.sha256()
    for part in content if isinstance(content, list) else [{"type": "text", "text": content}]:
        if part.get("type") == "text":
            texts.append(str(part.get("text", "")))
            digest.update(texts[-1].encode())
            continue
        try:
            raw, clip = decode_clip(part)
        except (ValueError, RuntimeError) as error:  # soundfile raises RuntimeError subclasses
            problems.append(str(error))
            continue
        clips.append(clip)
        digest.update(raw)
    if not clips and require_audio:
        problems.append("request carries no audio")
    text = "".join(texts)
    return ReceivedRequest(text, clips, digest.hexdigest(), time.monotonic()), problems


class _Handler(BaseHTTPRequestHandler):
    state: StubState  # set per server by `start_stub`
    # Keep-alive, as model servers speak: a client's connection reuse is then measurable.
    # Every reply has a Content-Length and every request body is read before replying.
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes; without TCP_NODELAY (which model servers set) a
    # kept connection waits for the client's delayed ACK, 40 ms, between them.
    disable_nagle_algorithm = True

    def log_message(self, *args: object) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        with self.state.lock:
            self.state.connections += 1
            self.state.open_connections += 1
            self.connection_number = self.state.connections

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.state.lock:
                self.state.open_connections -= 1

    def _send(
        self, status: int, payload: Mapping[str, Any], headers: Mapping | None = None
    ) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, headers: Mapping | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        # A client that gave up (its timeout) has closed the socket: nothing to tell it.
        with contextlib.suppress(OSError):
            self.wfile.write(data)

    def _error(self, status: int, message: str, headers: Mapping | None = None) -> None:
        self._send(status, {"error": {"message": message, "code": status}}, headers)

    def do_POST(self) -> None:
        state, config = self.state, self.state.config
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)  # read first: on a kept connection the next request follows
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._error(404, f"no route {self.path}")
        body = json.loads(raw or b"{}")
        if config.api_key and self.headers.get("Authorization") != f"Bearer {config.api_key}":
            return self._error(401, "Incorrect API key provided")
        if config.model and body.get("model") != config.model:
            return self._error(404, f"The model `{body.get('model')}` does not exist.")
        request, problems = read_request(body, config.require_audio)
        request.connection = self.connection_number
        with state.lock:
            state.requests.append(request)
            state.problems.extend(problems)
            attempt = state.attempts[request.key]
            state.attempts[request.key] += 1
        time.sleep(config.latency)
        if problems:
            request.status = 400
            return self._error(400, "; ".join(problems))
        action = self._fault(request.text, attempt)
        if action is not None:
            return self._fail(request, action)
        with state.lock:
            hold = config.hold_after is not None and state.replied >= config.hold_after
        if hold:
            state.held.set()
            state.release.wait()
            request.status = 503
            return self._error(503, "stub released")
        reply = config.reply(request)
        with state.lock:
            state.replied += 1
        seconds = sum(len(c.samples) for c in request.clips) / EXPECTED_RATE
        usage = {
            "prompt_tokens": len(request.text.split()) + round(25 * seconds),
            "completion_tokens": len(reply.split()),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        request.usage = usage
        self._send(
            200,
            {
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply},
                        "finish_reason": config.finish_reason(request),
                    }
                ],
                "usage": usage,
            },
        )

    def _fault(self, text: str, attempt: int) -> str | None:
        config = self.state.config
        for marker, status in config.always_fail.items():
            if marker in text:
                return str(status) + "!"
        for marker, actions in config.faults.items():
            if marker in text and attempt < len(actions):
                return actions[attempt]
        return None

    def _fail(self, request: ReceivedRequest, action: str) -> None:
        if action == "no-content":  # a 200 whose message has `content: null`
            request.status = 200
            message = {"role": "assistant", "content": None}
            return self._send(200, {"choices": [{"index": 0, "message": message}]})
        if action == "no-choices":
            request.status = 200
            return self._send(200, {"object": "chat.completion", "choices": []})
        if action == "not-json":
            request.status = 200
            return self._send_bytes(200, b"<html>upstream proxy says hello</html>", "text/html")
        if action == "timeout":
            request.status = 0
            time.sleep(self.state.config.stall_seconds)
            return self._error(504, "stalled")
        status = int(action.rstrip("!"))
        request.status = status
        if action.endswith("!"):
            auth = self.headers.get("Authorization", "")
            return self._error(status, f"the model crashed on this clip (request auth: {auth})")
        headers = {"Retry-After": "1"} if status == 429 else {}
        return self._error(status, "rate limited" if status == 429 else "overloaded", headers)


def rating_reply(
    rate: Callable[[str], int | str], reason: str = "stub judge"
) -> Callable[[ReceivedRequest], str]:
    """A judge model's replies: `{"rating": rate(text), "reason": ...}`, or rate's text as is.

    `text` is the last user turn (the item's prompt, or a re-ask after an invalid reply).
    """

    def reply(request: ReceivedRequest) -> str:
        rating = rate(request.text)
        if isinstance(rating, str):
            return rating
        return json.dumps({"rating": rating, "reason": reason, "confidence": "high"})

    return reply


def overlap_rating(text: str) -> int:
    """A stand-in judge's rating: 1 + 4 x token-F1 of the `Candidate answer:` line against the
    `Correct answer:` line (lower-cased words), rounded; 3 when the text has neither line."""
    lines = {
        key: line.partition(":")[2]
        for line in text.splitlines()
        for key in ("correct", "candidate")
        if line.lower().startswith(f"{key} answer:")
    }
    if len(lines) < 2:
        return 3
    reference, candidate = (
        Counter(re.findall(r"\w+", lines[k].lower())) for k in ("correct", "candidate")
    )
    common = sum((reference & candidate).values())
    if not common:
        return 1
    precision, recall = common / sum(candidate.values()), common / sum(reference.values())
    return 1 + round(4 * 2 * precision * recall / (precision + recall))


def stand_in_reading(text: str) -> str:
    """A stand-in fallback reader's JSON reply to the LLM fallback's prompt (not a model).

    It reads the prompt's `Options:` and the reply between `<<<` and `>>>`: the one option
    whose text the reply names (whole words, any case) is its letter; `none of`, `neither`
    or `not listed` is a rejection; `cannot hear` / `can't hear` a refusal; else `none`. A
    re-ask (the prompt is not shown again) is answered `none`.
    """
    options = re.findall(r"^\(([a-z])\) (.+)$", text.partition("Reply:")[0], re.MULTILINE)
    reply = text.partition("<<<")[2].partition(">>>")[0].lower()
    named = [
        letter
        for letter, option in options
        if re.search(rf"\b{re.escape(option.lower())}\b", reply)
    ]
    if len(named) == 1:
        answer = named[0]
    elif re.search(r"none of|neither|not listed", reply):
        answer = "rejection"
    elif re.search(r"cannot hear|can't hear", reply):
        answer = "refusal"
    else:
        answer = "none"
    return json.dumps({"answer": answer})


def start_stub(
    config: StubConfig, host: str = "127.0.0.1", port: int = 0
) -> tuple[ThreadingHTTPServer, StubState]:
    """Serve the stub in a daemon thread; the server (call `.shutdown()`) and its state."""
    state = StubState(config)
    handler = type("StubHandler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


def stub_url(server: ThreadingHTTPServer) -> str:
    """The stub's chat-completions URL."""
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/v1/chat/completions"


# --- run as a script -----------------------------------------------------------------

PROG = "python tests/support/chat_stub.py"


def build_parser() -> argparse.ArgumentParser:
    """The chat stub's argument parser."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added per request")
    parser.add_argument(
        "--judge",
        action="store_true",
        help="stand in for a prompted judge model: serve text-only chats and reply with a JSON "
        "rating (1 + 4 x token-F1 of the candidate answer against the correct answer)",
    )
    parser.add_argument(
        "--fallback",
        action="store_true",
        help="stand in for the LLM fallback's reader (extractor aqua-rules+llm): serve text-only "
        'chats and reply {"answer": ...} naming the one option the reply names (not a model)',
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the stub in the foreground until Ctrl-C."""
    args = build_parser().parse_args(argv)
    config = StubConfig(latency=args.latency)
    if args.judge:
        config = StubConfig(
            latency=args.latency,
            require_audio=False,
            reply=rating_reply(overlap_rating),
        )
    if args.fallback:
        config = StubConfig(
            latency=args.latency,
            require_audio=False,
            reply=lambda request: stand_in_reading(request.text),
        )
    server, state = start_stub(config, args.host, args.port)
    print(f"serving {stub_url(server)} (Ctrl-C stops)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()
    print(f"{len(state.requests)} requests, {len(state.problems)} with audio problems")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


if __name__ == "__main__":
    raise SystemExit(main())
