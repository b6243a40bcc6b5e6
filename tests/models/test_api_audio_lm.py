"""`openai-audio-chat` against a local chat server that decodes every clip and injects faults."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from lm_eval.api.instance import Instance
from support.chat_stub import StubConfig, start_stub, stub_url

from aqua_tasks.audio.clips import load_audio, probe_audio
from aqua_tasks.core.generation_failure import failure_message
from aqua_tasks.errors import EndpointError
from aqua_tasks.models.api.client import OpenAIAudioChatLM
from aqua_tasks.models.api.payload import chat_messages, digest_part, wav_bytes
from aqua_tasks.task.definition import build_docs, doc_to_audio, doc_to_text
from eval_common.http import RetryPolicy, parse_retry_after, retry_delay
from eval_common.reply_cache import ReplyCache, cache_key, default_cache_dir

BIN = Path(sys.executable).parent
UNUSED_URL = "http://127.0.0.1:9/v1/chat/completions"  # never contacted
KEY = "sk-test-7f3a9c1e5b2d4680-never-written"
TASKS = ("aqua_animal", "aqua_music")
LIMIT = 6
TASK_GEN_KWARGS = {"until": [], "max_gen_toks": 1024, "do_sample": False, "temperature": 0.0}
# Run A: the Python API in a child process, killed mid-run (a crash, not a clean exit).
CRASH_SCRIPT = """
import json, sys
import lm_eval
from lm_eval.tasks import TaskManager
from eval_plugins.lm_eval.aqua.task_folder import task_config_dir
from eval_plugins.lm_eval.registration import register_all
register_all()
lm_eval.simple_evaluate(
    model="openai-audio-chat", model_args=sys.argv[1], tasks=sys.argv[2].split(","),
    limit=int(sys.argv[3]),
    task_manager=TaskManager(
        include_path=str(task_config_dir()), include_defaults=False,
        metadata=json.loads(sys.argv[4]),
    ),
)
"""


def child_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **extra}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


@pytest.fixture(scope="module")
def docs(released_dir, released_audio_root) -> dict[str, list[dict]]:
    """The first LIMIT docs of each task, as the run sees them (clips at 16-44.1 kHz)."""
    settings = {"audio_root": str(released_audio_root)}
    return {
        task: build_docs(task.removeprefix("aqua_"), data_dir=str(released_dir), settings=settings)[
            :LIMIT
        ]
        for task in TASKS
    }


def question(doc: dict) -> str:
    """The text part the server receives for a doc (the prompt after its audio placeholder)."""
    return doc_to_text(doc).removeprefix("<audio>\n")


def samples_of(folder: Path, task: str) -> list[dict]:
    (path,) = folder.rglob(f"samples_{task}_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_crash_resume_retries_and_failures_through_aqua_eval(
    tmp_path, docs, released_dir, released_audio_root
):
    cache_dir, out = tmp_path / "cache", tmp_path / "out"
    metadata = json.dumps({"data_dir": str(released_dir), "audio_root": str(released_audio_root)})
    texts = {question(d): (task, d) for task, ds in docs.items() for d in ds}
    assert len(texts) == len(TASKS) * LIMIT  # every item is identifiable by its text

    def model_args(url: str, **extra: object) -> str:
        settings = {"base_url": url, "model": "stub-audio", "cache_dir": cache_dir, **extra}
        return ",".join(f"{k}={v}" for k, v in settings.items())

    # Run A: one request at a time; the stub holds the 4th, then the client is killed.
    server, crashed = start_stub(StubConfig(api_key=KEY, latency=0.01, hold_after=3))
    crash_args = [model_args(stub_url(server)), ",".join(TASKS), str(LIMIT), metadata]
    child = subprocess.Popen(
        [sys.executable, "-c", CRASH_SCRIPT, *crash_args],
        env=child_env(OPENAI_API_KEY=KEY),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not crashed.held.wait(timeout=0.2):
            assert child.poll() is None, child.communicate()[1][-3000:]
        child.kill()
        crash_out, crash_err = child.communicate(timeout=60)
    finally:
        crashed.release.set()
        server.shutdown()
    assert child.returncode != 0
    (cache_file,) = cache_dir.glob("*.jsonl")
    assert len(ReplyCache(cache_file)) == 3  # each reply was durable before the next request
    done_first = set(crashed.succeeded_keys)
    assert len(done_first) == 3

    # Run B: the same command through aqua eval, 4 at a time, with faults on fresh items.
    fresh = [r.text for r in crashed.requests if r.key not in done_first]
    fresh += [t for t in texts if t not in fresh and t not in {r.text for r in crashed.requests}]
    rate_limited, overloaded, stalled, broken = fresh[:4]
    config = StubConfig(
        api_key=KEY,
        latency=0.02,
        faults={rate_limited: ["429"], overloaded: ["500"], stalled: ["timeout"]},
        always_fail={broken: 500},
        stall_seconds=4,
    )
    server, stub = start_stub(config)
    try:
        settings = model_args(
            stub_url(server),
            num_concurrent=4,
            max_retries=2,
            timeout=3,  # ordinary replies take ms; slack for a loaded CI machine
            backoff_base=0.01,
            backoff_max=2,
        )
        proc = subprocess.run(
            [
                *(str(BIN / "aqua"), "eval", "--model", "openai-audio-chat"),
                *("--model_args", settings),
                *("--tasks", ",".join(TASKS), "--limit", str(LIMIT), "--metadata", metadata),
                *("--output_path", str(out), "--log_samples"),
            ],
            env=child_env(OPENAI_API_KEY=KEY),
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr[-4000:]

    # Only what run A had not completed was sent again; together they cover every item.
    done_second = set(stub.succeeded_keys)
    assert not done_first & done_second
    assert len(done_first | done_second) == len(texts) - 1  # all but the broken item
    assert {r.text for r in stub.requests} == set(texts) - {
        r.text for r in crashed.requests if r.key in done_first
    }

    # Every clip arrived as 16 kHz mono WAV holding the source clip, resampled.
    assert not crashed.problems and not stub.problems
    for request in crashed.requests + stub.requests:
        task, doc = texts[request.text]
        (clip,) = request.clips
        (source,) = doc_to_audio(doc)
        info = probe_audio(source.path)
        assert (clip.sampling_rate, clip.channels) == (16000, 1)
        assert len(clip.samples) == pytest.approx(info.duration * 16000, abs=1)
        assert np.abs(clip.samples - load_audio(source.path)).max() < 1e-4

    # Retries: Retry-After honoured; each fault cost one retry, the broken item all of them.
    arrivals = [r.arrived for r in stub.requests if r.text == rate_limited]
    assert len(arrivals) == 2 and arrivals[1] - arrivals[0] >= 1.0
    assert sum(r.text == broken for r in stub.requests) == 3

    results = json.loads(next(out.rglob("results_*.json")).read_text())
    usage = results["config"]["api_usage"]
    sent_ok = [r for r in stub.requests if r.status == 200]
    broken_task, broken_doc = texts[broken]
    assert usage["requests"] == len(texts) and usage["from_cache"] == 3
    assert usage["sent"] == len(sent_ok) == len(texts) - 4 and usage["failed"] == 1
    assert usage["retries"] == 5
    assert usage["retries_by_reason"] == {"429": 1, "5xx": 3, "timeout": 1}
    assert usage["prompt_tokens"] == sum(r.usage["prompt_tokens"] for r in sent_ok)
    assert usage["completion_tokens"] == sum(r.usage["completion_tokens"] for r in sent_ok)
    broken_id = docs[broken_task].index(broken_doc)  # --limit runs the first docs in order
    assert [(f["task"], f["doc_id"]) for f in usage["failed_items"]] == [(broken_task, broken_id)]
    assert results["config"]["api_endpoint"] == stub_url(server)

    # The failed item is kept as an unparsed error; the run's other replies are answers.
    for task in TASKS:
        metrics = {k.split(",")[0]: v for k, v in results["results"][task].items()}
        assert metrics["n_items"] == LIMIT
        assert metrics["unparsed_rate"] == (1 / LIMIT if task == broken_task else 0.0)
    (sample,) = [s for s in samples_of(out, broken_task) if s["doc_id"] == broken_id]
    message = failure_message(sample["resps"][0][0])
    assert message == (
        "HTTP 500: the model crashed on this clip (request auth: Bearer [redacted]) (3 attempts)"
    )
    assert f"{broken_task} doc {broken_id}: HTTP 500" in proc.stderr
    assert "1 request(s) failed after retries" in proc.stderr

    # The key is in no file the runs wrote and in no output they printed.
    for path in [*out.rglob("*"), *cache_dir.rglob("*")]:
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
    for text in (crash_out, crash_err, proc.stdout, proc.stderr):
        assert KEY not in text


def requests_for(docs: dict[str, list[dict]], count: int) -> list[Instance]:
    chosen = [(task, n, doc) for task, ds in docs.items() for n, doc in enumerate(ds)][:count]
    return [
        Instance(
            request_type="generate_until",
            doc=doc,
            arguments=(doc_to_text(doc), dict(TASK_GEN_KWARGS), {"audio": doc_to_audio(doc)}),
            idx=0,
            metadata=(task, n, 1),
        )
        for task, n, doc in chosen
    ]


def test_wrong_key_wrong_model_or_no_server_stop_the_run_with_one_line(tmp_path, docs, monkeypatch):
    requests = requests_for(docs, 8)
    server, stub = start_stub(StubConfig(api_key="sk-the-right-one", model="served-model"))
    monkeypatch.setenv("AQUA_TEST_KEY", KEY)
    url = stub_url(server)
    common = {"num_concurrent": 2, "cache": False, "api_key_env": "AQUA_TEST_KEY"}
    common |= {"max_retries": 2, "backoff_base": 0.01, "timeout": 5}
    try:
        lm = OpenAIAudioChatLM(base_url=url, model="served-model", **common)
        with pytest.raises(EndpointError) as bad_key:
            lm.generate_until(requests, disable_tqdm=True)
        assert len(stub.requests) == 0  # refused before the body was read
        monkeypatch.setenv("AQUA_TEST_KEY", "sk-the-right-one")
        lm = OpenAIAudioChatLM(base_url=url, model="no-such-model", **common)
        with pytest.raises(EndpointError) as bad_model:
            lm.generate_until(requests, disable_tqdm=True)
    finally:
        server.shutdown()
        server.server_close()
    message = str(bad_key.value)
    assert "\n" not in message and KEY not in message
    assert "HTTP 401: Incorrect API key provided" in message and "$AQUA_TEST_KEY" in message
    assert "HTTP 404: The model `no-such-model` does not exist." in str(bad_model.value)
    assert "GET /v1/models" in str(bad_model.value)

    lm = OpenAIAudioChatLM(base_url=url, model="served-model", **common)  # server now down
    with pytest.raises(EndpointError, match=r"connection failed.*is the server running"):
        lm.generate_until(requests, disable_tqdm=True)


def test_audio_url_parts_reach_the_server_as_16khz_wav_and_replies_keep_request_order(
    tmp_path, docs
):
    requests = requests_for(docs, 8)
    nan_clip = {"array": np.full(1600, np.nan, dtype=np.float32), "sampling_rate": 16000}
    requests.insert(
        3,
        Instance(
            request_type="generate_until",
            doc=requests[0].doc,
            arguments=("<audio>\nbroken clip", dict(TASK_GEN_KWARGS), {"audio": [nan_clip]}),
            idx=0,
            metadata=("aqua_animal", 99, 1),
        ),
    )
    config = StubConfig(latency=0.01, reply=lambda r: f"reply to {r.text[:30]}")
    server, stub = start_stub(config)
    try:
        lm = OpenAIAudioChatLM(
            base_url=stub_url(server),
            model="m",
            audio_format="audio_url",
            num_concurrent=4,
            cache_dir=str(tmp_path),
            system_prompt="You are a careful listener.",
        )
        replies = lm.generate_until(requests, disable_tqdm=True)
    finally:
        server.shutdown()
    assert not stub.problems and len(stub.requests) == 8  # the NaN clip was never sent
    message = "audio not sent (the request's audio array): audio holds NaN or infinite samples"
    assert failure_message(replies.pop(3)) == message
    del requests[3]
    assert replies == [f"reply to {question(r.doc)[:30]}" for r in requests]
    assert lm.stats.failed_items == [{"task": "aqua_animal", "doc_id": 99, "message": message}]


def test_cache_key_changes_with_model_settings_or_audio_and_torn_lines_are_skipped(
    tmp_path, docs, monkeypatch
):
    (request,) = requests_for(docs, 1)
    lm = OpenAIAudioChatLM(
        base_url="http://127.0.0.1:9/v1/chat/completions", model="m", cache_dir=str(tmp_path)
    )

    def key(lm: OpenAIAudioChatLM, clip: object, gen: dict = TASK_GEN_KWARGS) -> str:
        return cache_key({"body": lm._body(request.args[0], [wav_bytes(clip)], gen, digest_part)})

    (clip,) = request.args[2]["audio"]
    base = key(lm, clip)
    other_model = OpenAIAudioChatLM(base_url=lm.base_url, model="m2", cache=False)
    other_prompt = OpenAIAudioChatLM(
        base_url=lm.base_url, model="m", system_prompt="x", cache=False
    )
    louder = {"array": clip["array"] * 0.5, "sampling_rate": 16000}
    assert (
        len(
            {
                base,
                key(other_model, clip),
                key(other_prompt, clip),
                key(lm, louder),
                key(lm, clip, {**TASK_GEN_KWARGS, "max_gen_toks": 8}),
            }
        )
        == 5
    )
    assert key(lm, clip) == base

    monkeypatch.setenv("AQUA_CACHE_DIR", str(tmp_path / "shared"))
    assert default_cache_dir() == tmp_path / "shared" / "api-replies"
    cache = ReplyCache(tmp_path / "c.jsonl")
    cache.put("a", {"reply": "one"})
    with (tmp_path / "c.jsonl").open("a") as handle:
        handle.write('{"key": "b", "repl')  # a crash mid-write
    cache = ReplyCache(tmp_path / "c.jsonl")
    assert cache.skipped_lines == 1 and cache.get("a")["reply"] == "one"
    cache.put("c", {"reply": "three"})
    assert ReplyCache(tmp_path / "c.jsonl").get("c")["reply"] == "three"


def test_backoff_grows_with_jitter_and_honours_retry_after():
    policy = RetryPolicy(max_retries=5, backoff_base=1.0, backoff_max=8.0)
    rng = random.Random(0)
    for retry, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 8.0)]:
        delays = {retry_delay(retry, policy, None, rng) for _ in range(20)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays) and len(delays) > 1
    assert retry_delay(1, policy, 5.0, rng) >= 5.0
    assert retry_delay(1, policy, 600.0, rng) == 8.0  # capped at backoff_max
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    http_date = (now + timedelta(seconds=30)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert parse_retry_after(http_date, now) == 30.0
    assert parse_retry_after("2", now) == 2.0 and parse_retry_after("soon", now) is None


def test_model_args_are_checked_with_one_clear_error():
    with pytest.raises(ValueError, match=r"full chat-completions URL.*/v1/chat/completions"):
        OpenAIAudioChatLM(base_url="http://localhost:8000/v1", model="m")
    with pytest.raises(ValueError, match="needs model="):
        OpenAIAudioChatLM(base_url="http://localhost:8000/v1/chat/completions")
    with pytest.raises(ValueError, match="audio_format='mp3'"):
        OpenAIAudioChatLM(base_url="http://h/v1/chat/completions", model="m", audio_format="mp3")
    with pytest.raises(ValueError, match=r"unknown model argument\(s\) tokenizer_backend"):
        OpenAIAudioChatLM.create_from_arg_string(
            "base_url=http://h/v1/chat/completions,model=m,tokenizer_backend=none"
        )
    lm = OpenAIAudioChatLM.create_from_arg_string(
        "base_url=http://h/v1/chat/completions,model=m,cache=false",
        {"batch_size": 1, "device": None},
    )
    assert lm.num_concurrent == 1 and lm.cache is None


def test_apply_chat_template_history_becomes_the_messages_with_the_clip_in_the_user_turn():
    lm = OpenAIAudioChatLM(base_url=UNUSED_URL, model="m", system_prompt="ignored", cache=False)
    context = lm.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "<audio>\nQ?"}]
    )
    messages = chat_messages(context, [b"wav"], lambda wav: {"type": "clip"}, lm.system_prompt)
    assert messages == [
        {"role": "system", "content": "Be brief."},  # lm-eval's --system_instruction wins
        {"role": "user", "content": [{"type": "clip"}, {"type": "text", "text": "Q?"}]},
    ]
    plain = chat_messages("Q?", [b"a", b"b"], lambda wav: {"type": wav.decode()}, "Sys")
    assert plain[0] == {"role": "system", "content": "Sys"}
    assert plain[1]["content"] == [{"type": "a"}, {"type": "b"}, {"type": "text", "text": "Q?"}]
    with pytest.raises(ValueError, match="2 '<audio>' placeholders for 1 clips"):
        chat_messages("<audio><audio>Q", [b"a"], lambda wav: {})
