"""Every chat-stub fault mode through both API clients: the exact replies, errors, retries.

These figures are pinned as literals: the HTTP layer may change underneath (connection pool,
keep-alive), what a run records may not.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from lm_eval.api.instance import Instance
from support.chat_stub import StubConfig, start_stub, stub_url

from aqua_tasks.build.iaqd_llm import OpenAIChat
from aqua_tasks.core.generation_failure import failed_reply
from aqua_tasks.errors import EndpointError
from aqua_tasks.models.api.client import OpenAIAudioChatLM
from eval_common.http import RequestFailure, RetryPolicy

KEY = "sk-fault-modes-4b1d"
REFUSED_URL = "http://127.0.0.1:9/v1/chat/completions"  # the discard port: nothing listens
# Item marker -> the stub's actions for its first attempts (then it answers).
FAULTS = {
    "[429]": ["429"],
    "[500]": ["500"],
    "[timeout]": ["timeout"],
    "[no-content]": ["no-content"],
    "[no-choices]": ["no-choices"],
    "[not-json]": ["not-json"],
    "[429 spent]": ["429", "429", "429"],
    "[mixed]": ["500", "no-content"],
}
ALWAYS_FAIL = {"[broken]": 500, "[bad request]": 400}
MARKERS = ["[ok]", *FAULTS, *ALWAYS_FAIL]
ANSWER = "The answer is (a)."


@pytest.fixture(autouse=True)
def local_no_proxy(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("AQUA_FAULT_KEY", KEY)


def request(doc_id: int, marker: str) -> Instance:
    """A one-clip request whose text carries `marker` (1 s of a 440 Hz tone at 16 kHz)."""
    tone = 0.3 * np.sin(2 * np.pi * 440 * np.arange(16000) / 16000).astype(np.float32)
    return Instance(
        request_type="generate_until",
        doc={},
        arguments=(
            f"<audio>\nItem {marker}: what do you hear?",
            {"until": [], "max_gen_toks": 32},
            {"audio": [{"array": tone, "sampling_rate": 16000}]},
        ),
        idx=0,
        metadata=("faults", doc_id, 1),
    )


def lm(url: str, **settings: object) -> OpenAIAudioChatLM:
    common = {"model": "m", "api_key_env": "AQUA_FAULT_KEY", "num_concurrent": 4}
    common |= {"max_retries": 2, "timeout": 1.5, "backoff_base": 0.01, "backoff_max": 1.5}
    return OpenAIAudioChatLM(base_url=url, **{**common, **settings})


def test_every_fault_mode_gives_the_recorded_reply_retries_and_cache(tmp_path, capsys):
    server, stub = start_stub(
        StubConfig(api_key=KEY, faults=FAULTS, always_fail=ALWAYS_FAIL, stall_seconds=3.0)
    )
    requests = [request(n, marker) for n, marker in enumerate(MARKERS)]
    try:
        first = lm(stub_url(server), cache_dir=str(tmp_path))
        replies = first.generate_until(requests, disable_tqdm=True)
        again = lm(stub_url(server), cache_dir=str(tmp_path))
        rerun = again.generate_until(requests, disable_tqdm=True)
    finally:
        server.shutdown()
        server.server_close()
    assert not stub.problems
    auth = "(request auth: Bearer [redacted])"
    assert dict(zip(MARKERS, replies, strict=True)) == {
        "[ok]": ANSWER,
        "[429]": ANSWER,
        "[500]": ANSWER,
        "[timeout]": ANSWER,
        "[no-content]": ANSWER,
        "[no-choices]": failed_reply(
            "reply has no choices[0].message: {'object': 'chat.completion', 'choices': []}"
        ),
        "[not-json]": failed_reply(
            "reply is not a JSON object: '<html>upstream proxy says hello</html>'"
        ),
        "[429 spent]": failed_reply("HTTP 429: rate limited (3 attempts)"),
        "[mixed]": ANSWER,
        "[broken]": failed_reply(f"HTTP 500: the model crashed on this clip {auth} (3 attempts)"),
        "[bad request]": failed_reply(f"HTTP 400: the model crashed on this clip {auth}"),
    }
    usage = first.stats.as_dict()
    failed = [(f["doc_id"], f["message"]) for f in usage.pop("failed_items")]
    assert usage == {
        "requests": 11,
        "from_cache": 0,
        "sent": 6,
        "failed": 5,
        "retries": 10,
        "retries_by_reason": {"429": 3, "5xx": 4, "no content": 2, "timeout": 1},
        "prompt_tokens": 6 * (6 + 25),
        "completion_tokens": 6 * 4,
    }
    assert [doc_id for doc_id, _ in failed] == [5, 6, 7, 9, 10]
    assert KEY not in str(failed) and KEY not in capsys.readouterr().err

    # The rerun answers the six from the cache and asks again for the five that failed
    # (the stub's faults are spent by now, apart from the two items that always fail).
    assert rerun[:5] == replies[:5] and rerun[8] == replies[8]
    assert rerun[5:8] == [ANSWER] * 3 and rerun[9:] == replies[9:]
    assert (again.stats.from_cache, again.stats.sent, again.stats.failed) == (6, 3, 2)
    attempts = {m: sum(m in r.text for r in stub.requests) for m in MARKERS}  # both runs
    assert attempts == {
        "[ok]": 1,
        "[429]": 2,
        "[500]": 2,
        "[timeout]": 2,
        "[no-content]": 2,
        "[no-choices]": 2,
        "[not-json]": 2,
        "[429 spent]": 4,
        "[mixed]": 3,
        "[broken]": 6,
        "[bad request]": 2,
    }
    # Retry-After: 1 is honoured (the backoff alone would wait about 10 ms).
    arrivals = [r.arrived for r in stub.requests if "[429]" in r.text]
    assert arrivals[1] - arrivals[0] >= 1.0


def test_a_wrong_key_and_no_server_stop_the_run_with_the_recorded_line():
    server, stub = start_stub(StubConfig(api_key="sk-the-right-one", model="served"))
    url = stub_url(server)
    try:
        with pytest.raises(EndpointError) as bad_key:
            lm(url, model="served", cache=False).generate_until([request(0, "[ok]")], True)
        assert closed_within(stub)  # the stopped run's connections close too
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(EndpointError) as refused:
        lm(REFUSED_URL, cache=False).generate_until([request(0, "[ok]")], True)
    prefix = f"openai-audio-chat: request to {url} for model"
    assert str(bad_key.value) == (
        f"{prefix} 'served' failed: HTTP 401: Incorrect API key provided; check the API key in "
        "$AQUA_FAULT_KEY (api_key_env names the variable)"
    )
    assert str(refused.value) == (
        f"openai-audio-chat: request to {REFUSED_URL} for model 'm' failed: connection failed: "
        "[Errno 111] Connection refused; is the server running at base_url? (vLLM takes minutes "
        "to load a model before it accepts connections)"
    )


def test_the_model_name_check_gives_the_recorded_line(monkeypatch):
    monkeypatch.setenv("AQUA_RIGHT_KEY", "sk-the-right-one")
    server, _ = start_stub(StubConfig(api_key="sk-the-right-one", model="served"))
    url = stub_url(server)
    try:
        with pytest.raises(EndpointError) as bad_model:
            lm(url, cache=False, api_key_env="AQUA_RIGHT_KEY").generate_until(
                [request(0, "[ok]")], True
            )
    finally:
        server.shutdown()
        server.server_close()
    assert str(bad_model.value) == (
        f"openai-audio-chat: request to {url} for model 'm' failed: HTTP 404: The model `m` does "
        "not exist.; check base_url (the full chat-completions URL) and model (the server's name "
        "for it; vLLM lists them at GET /v1/models)"
    )


def test_the_build_client_gets_the_recorded_replies_retries_and_failures():
    faults = {"[500]": ["500", "429"], "[not-json]": ["not-json"], "[timeout]": ["timeout"]}
    server, stub = start_stub(
        StubConfig(
            require_audio=False, faults=faults, always_fail={"[broken]": 503}, stall_seconds=3.0
        )
    )
    policy = RetryPolicy(max_retries=2, backoff_base=0.0, backoff_max=0.0)
    chat = OpenAIChat(stub_url(server), "m", api_key=KEY, timeout=1.5, policy=policy)

    def ask(marker: str) -> str:
        return chat.complete([{"role": "user", "content": f"Item {marker}"}])

    try:
        assert ask("[500]") == ANSWER and chat.http_retries == 2
        assert ask("[timeout]") == ANSWER and chat.http_retries == 3
        with pytest.raises(RequestFailure) as not_json:
            ask("[not-json]")
        with pytest.raises(RequestFailure) as broken:
            ask("[broken]")
    finally:
        server.shutdown()
        server.server_close()
    assert not_json.value.message == (
        "reply is not a JSON object: '<html>upstream proxy says hello</html>'"
    )
    assert (not_json.value.retryable, not_json.value.attempts) == (False, 1)
    assert broken.value.message == (
        "HTTP 503: the model crashed on this clip (request auth: Bearer [redacted])"
    )
    assert (broken.value.reason, broken.value.attempts, broken.value.status) == ("5xx", 3, 503)
    assert [r.status for r in stub.requests] == [500, 429, 200, 0, 200, 200, 503, 503, 503]


def closed_within(state, seconds: float = 5.0) -> bool:
    """Whether every client connection the stub saw is closed (soon after the client closes)."""
    deadline = time.monotonic() + seconds
    while state.open_connections and time.monotonic() < deadline:
        time.sleep(0.01)
    return state.open_connections == 0


def test_requests_share_one_kept_connection_per_worker_which_close_with_the_run(tmp_path):
    server, stub = start_stub(StubConfig(api_key=KEY, latency=0.02, require_audio=False))
    try:
        replies = lm(stub_url(server), num_concurrent=3, cache=False).generate_until(
            [request(n, f"[ok {n}]") for n in range(12)], True
        )
        assert replies == [ANSWER] * 12
        assert closed_within(stub)  # closed when generate_until returned
        assert len({r.connection for r in stub.requests}) == stub.connections <= 3

        chat = OpenAIChat(stub_url(server), "m", api_key=KEY, connections=2)
        assert [chat.complete([{"role": "user", "content": "hi"}]) for _ in range(3)] == [
            ANSWER
        ] * 3
        assert stub.connections <= 3 + 1 and stub.open_connections == 1
        chat.close()
        assert closed_within(stub)
    finally:
        server.shutdown()
        server.server_close()
