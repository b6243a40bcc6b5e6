"""What the judges read back is checked as a fresh reply is; odd replies, stuck servers, Ctrl-C."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from support.chat_stub import StubConfig, rating_reply, start_stub, stub_url

from aqua_tasks.core.extract.fallback import FAILED, OPTION_CODES_START
from aqua_tasks.errors import EndpointError
from aqua_tasks.task.fallback import FallbackReader
from eval_common.concurrent_calls import run_calls
from eval_common.errors import OutputError
from eval_common.http import RequestFailure, usage_tokens
from orca_judge.errors import LlmJudgeError
from orca_judge.prompted.backends import OpenAIChatBackend
from orca_judge.prompted.judge import PromptedJudge
from orca_judge.prompted.settings import build_settings

ITEM = {"id": "a", "reference": "the sun", "candidate": "the sun"}


@pytest.fixture
def stub():
    server, state = start_stub(StubConfig(require_audio=False, reply=rating_reply(lambda _: 4)))
    yield stub_url(server), state
    server.shutdown()


def judge_for(url: str, cache_dir: Path, **extra) -> PromptedJudge:
    values = {"base_url": url, "model": "judge-m", "cache_dir": str(cache_dir), "timeout": 2}
    return PromptedJudge(build_settings({**values, **extra}, "test"))


def edit_cache(path: Path, **changes) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**entry, **changes}) + "\n" for entry in lines))


@pytest.mark.parametrize(
    "edit", [{"rating": 7}, {"rating": "five"}, {"rating": None}, {"prompt_tokens": -3},
             {"prompt_version": "old"}, {"replies": "text"}],
)  # fmt: skip
def test_an_edited_judge_cache_entry_is_asked_again_never_used(stub, tmp_path, edit):
    url, state = stub
    first = judge_for(url, tmp_path)
    assert first.score([ITEM])[0].rating == 4
    (cache_file,) = tmp_path.glob("*.jsonl")
    edit_cache(cache_file, **edit)
    sent = len(state.requests)
    rerun = judge_for(url, tmp_path)
    judged = rerun.score([ITEM])
    assert judged[0].rating == 4 and not judged[0].from_cache
    assert len(state.requests) == sent + 1
    assert rerun.cache.refused == 1
    assert f"1 cached entry of {cache_file} refused and asked again" in rerun.summary()
    assert f"{cache_file}:1: " in rerun.summary()


def test_a_failed_judgement_is_not_cached_so_a_rerun_asks_it_again(tmp_path):
    replies = iter(["no json here"] * 2 + ['{"rating": 2}'])
    server, state = start_stub(StubConfig(require_audio=False, reply=lambda _: next(replies)))
    url = stub_url(server)
    assert judge_for(url, tmp_path, max_attempts=2).score([ITEM])[0].failed
    rerun = judge_for(url, tmp_path, max_attempts=2).score([ITEM])[0]
    assert rerun.rating == 2 and not rerun.from_cache and len(state.requests) == 3
    server.shutdown()


def test_an_unwritable_cache_is_one_line_before_any_request(stub, tmp_path):
    url, state = stub
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    with pytest.raises(OutputError, match="cannot write the reply cache there"):
        judge_for(url, a_file)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    if os.access(locked, os.W_OK):  # root writes anywhere
        pytest.skip("running as root: a read-only folder is writable")
    with pytest.raises(OutputError, match="Permission denied"):
        judge_for(url, locked / "cache")
    assert state.requests == []


@pytest.mark.parametrize(
    "reply",
    [{"choices": ["rating 5"]}, {"choices": [{"message": "5"}]}, {"choices": {}}, {}],
)
def test_an_odd_200_reply_is_a_retried_failure_not_a_traceback(reply):
    backend = OpenAIChatBackend(build_settings({"base_url": "http://x/v1", "model": "m"}, "t"))
    with pytest.raises(RequestFailure, match=r"no choices\[0\]\.message\.content"):
        backend._read(reply)


def test_odd_usage_counts_are_zero_tokens():
    assert usage_tokens({"prompt_tokens": "many"}, "prompt_tokens") == 0
    assert usage_tokens({"prompt_tokens": -1}, "prompt_tokens") == 0
    assert usage_tokens({"prompt_tokens": True}, "prompt_tokens") == 0
    assert usage_tokens("usage", "prompt_tokens") == 0
    assert usage_tokens({"prompt_tokens": "12"}, "prompt_tokens") == 12
    backend = OpenAIChatBackend(build_settings({"base_url": "http://x/v1", "model": "m"}, "t"))
    reply = {"choices": [{"message": {"content": "{}"}}], "usage": {"prompt_tokens": "many"}}
    assert backend._read(reply).prompt_tokens == 0


def test_a_local_folder_without_a_chat_template_is_refused_before_any_ask(tmp_path):
    from orca_fixtures import tiny_llama_dir

    with pytest.raises(LlmJudgeError, match="has no chat template"):
        PromptedJudge(build_settings({"backend": "hf", "model": str(tiny_llama_dir())}, "t"))


@pytest.fixture
def silent_server():
    """A server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions"
    stop.set()
    for connection in held:
        connection.close()
    listener.close()


CTRL_C_CHILD = """
import os, signal, sys, threading, time
from orca_judge.prompted.judge import PromptedJudge
from orca_judge.prompted.settings import build_settings
# A shell running jobs in the background leaves them ignoring SIGINT; a terminal does not.
signal.signal(signal.SIGINT, signal.default_int_handler)
settings = {"base_url": sys.argv[1], "model": "m", "timeout": 60, "cache": "false"}
judge = PromptedJudge(build_settings(settings, "t"))
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
started = time.monotonic()
try:
    judge.score([{"reference": "r", "candidate": "c"}] * 6)
except KeyboardInterrupt:
    print(f"stopped after {time.monotonic() - started:.1f} s", flush=True)
"""


def test_ctrl_c_stops_a_judge_waiting_on_a_silent_server_within_seconds(silent_server):
    # A process of its own, as a user's: it must stop and exit, not wait out the 60 s
    # timeout of the requests in flight.
    import subprocess
    import sys

    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_CHILD, silent_server],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "stopped after" in done.stdout, done.stderr[-2000:]
    assert float(done.stdout.split()[2]) < 5
    assert time.monotonic() - started < 30  # the process exited too


def test_a_wait_on_a_silent_server_says_its_bound_and_keeps_it(silent_server, monkeypatch, capsys):
    import eval_common.http

    monkeypatch.setattr(eval_common.http, "WAIT_NOTED_AFTER", 0.5)
    # Long enough for the first look at the wait (every 5 s).
    settings = {"base_url": silent_server, "model": "m", "timeout": 3, "max_retries": 1}
    reader = FallbackReader({**settings, "cache": False})
    started = time.monotonic()
    assert reader.read_many([(["dog", "cat"], "hmm")]) == [FAILED]
    waited = time.monotonic() - started
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "given up after" in x]
    bound = float(line.split("at most ")[1].split(" s ")[0])
    assert bound == 7 and 6 <= waited <= bound + 1  # 2 tries of 3 s, a backoff of at most 1 s
    assert "timeout 3 s × 2 tries" in line and line.startswith("LLM fallback: waiting for ")


def test_a_run_that_waits_says_so(silent_server):
    waited: list[float] = []
    stop = threading.Event()
    gate = threading.Event()
    results = run_calls(
        [lambda: gate.wait(1.0) and "late", lambda: "now"],
        2,
        stop,
        on_wait=waited.append,
        poll_seconds=0.2,
    )
    assert results == [False, "now"] and waited and all(w > 0 for w in waited)


class Reader:
    """A fallback reader on the stub, its cache in `folder`."""

    def __init__(self, url: str, folder: Path, **extra) -> None:
        settings = {"base_url": url, "model": "reader", "cache_dir": str(folder), **extra}
        self.reader = FallbackReader(settings)


def test_a_cached_fallback_reading_out_of_range_is_asked_again(tmp_path):
    server, _ = start_stub(StubConfig(require_audio=False, reply=lambda _: '{"answer": "b"}'))
    url, pair = stub_url(server), (["dog", "cat"], "hmm, maybe the cat")
    assert Reader(url, tmp_path).reader.read_many([pair]) == [OPTION_CODES_START + 1]
    (cache_file,) = tmp_path.glob("*.jsonl")
    for edit in ({"reading": 99}, {"reading": "b"}, {"reading": FAILED}, {"prompt_version": 0}):
        edit_cache(cache_file, **edit)
        again = Reader(url, tmp_path).reader
        assert again.read_many([pair]) == [OPTION_CODES_START + 1]
        assert again.stats.asked == 1 and "refused and asked again" in again.summary()
    server.shutdown()


def test_a_fallback_model_that_never_answers_in_form_fails_the_same_way_on_a_rerun(tmp_path):
    server, state = start_stub(StubConfig(require_audio=False, reply=lambda _: "It is b."))
    url = stub_url(server)
    pairs = [(["dog", "cat"], f"hmm {n}") for n in range(3)]
    more = [(["dog", "cat"], "hmm, later")]
    for _ in range(2):  # nothing cached: the rerun fails as the first run did
        reader = Reader(url, tmp_path, max_attempts=1).reader
        with pytest.raises(EndpointError, match="never in the form asked for"):
            reader.check_endpoint()  # before generation: the run stops there
        assert reader.read_many(pairs, all_failed_is_error=True) == [FAILED] * 3
        # After generation it stops asking; every reply kept, unread ones FAILED too.
        assert reader.read_many(more) == [FAILED] and reader.stats.unread == 1
        line = reader.failure()
        assert "never in the form asked for" in line and "4 replies left unparsed" in line
    assert len(state.requests) == 2 * (1 + 3)
    server.shutdown()


def test_fallback_settings_are_typed_when_the_task_is_built(tmp_path):
    from aqua_tasks.task.definition import build_docs

    with pytest.raises(LlmJudgeError, match="max_tokens='abc': expected an integer"):
        build_docs(
            "animal",
            extractor="aqua-rules+llm",
            fallback={"base_url": "http://127.0.0.1:9/v1", "model": "m", "max_tokens": "abc"},
            data_dir=str(tmp_path),
        )


@pytest.mark.parametrize(
    "values, message",
    [({"max_tokens": float("inf")}, "max_tokens=inf: expected an integer >= 1"),
     ({"timeout": "1e308"}, "timeout='1e308': expected seconds > 0, at most 86400")],
)  # fmt: skip
def test_infinite_or_overflowing_judge_settings_are_one_line_not_a_traceback(values, message):
    with pytest.raises(LlmJudgeError, match=message):
        build_settings({"base_url": "http://x/v1", "model": "m", **values}, "t")


def test_orca_metric_settings_refuse_infinity():
    from orca_judge.errors import OrcaMetricError
    from orca_judge.metric.settings import _as_batch_size, _as_threshold

    with pytest.raises(OrcaMetricError, match="'batch_size': expected an integer >= 1"):
        _as_batch_size(float("inf"))
    with pytest.raises(OrcaMetricError, match="'clamp_threshold': expected a number >= 0"):
        _as_threshold("inf")


def test_endpoint_model_arguments_refuse_top_p_above_1_and_huge_timeouts():
    from aqua_tasks.errors import ModelArgumentError
    from aqua_tasks.models.model_args import finite_number

    with pytest.raises(ModelArgumentError, match="top_p=5"):
        finite_number("top_p", 5, maximum=1)
    assert finite_number("top_p", "0.9", maximum=1) == 0.9
