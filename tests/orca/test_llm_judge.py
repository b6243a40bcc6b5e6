"""Prompted LLM judges against the local chat stub: replies, re-asks, faults, cache, commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from orca_fixtures import synthetic_items, tiny_llama_dir, tiny_trained_checkpoint, write_jsonl
from support.chat_stub import (
    StubConfig,
    overlap_rating,
    rating_reply,
    start_stub,
    stub_url,
)

from orca_judge.cli.compare import main as orca_compare
from orca_judge.cli.llm_judge import main as llm_judge_score
from orca_judge.errors import JudgeEndpointError, LlmJudgeError
from orca_judge.prompted.judge import PromptedJudge
from orca_judge.prompted.prompt import PROMPT_VERSION
from orca_judge.prompted.reply import read_reply
from orca_judge.prompted.settings import build_settings, resolve_settings

BIN = Path(sys.executable).parent
WORDS = {"wrong": 1, "poor": 2, "fair": 3, "good": 4, "excellent": 5}


def word_rating(text: str) -> int | str:
    """The stub judge: the rating named by the candidate's quality word; markers misbehave."""
    if "NEVERJSON" in text:  # the re-ask quotes the reply, marker and all
        return "NEVERJSON: I would say 4 out of 5."
    if "BADONCE" in text and "not usable" not in text:
        return "I would say 4 out of 5."
    if "not usable" in text:
        return 3
    candidate = text.split("Candidate answer:")[-1]
    return next((r for w, r in WORDS.items() if w in candidate), overlap_rating(text))


@pytest.fixture
def stub():
    server, state = start_stub(
        StubConfig(
            require_audio=False,
            reply=rating_reply(word_rating),
            faults={"RATELIMIT": ["429"], "SLOWREPLY": ["timeout"]},
            stall_seconds=1.5,
        )
    )
    yield stub_url(server), state
    server.shutdown()


def settings_for(url: str, cache_dir: Path, **extra):
    values = {"base_url": url, "model": "judge-m", "cache_dir": str(cache_dir), "timeout": 0.5}
    return build_settings({**values, **extra}, "test")


def test_a_reply_with_extra_keys_or_a_code_fence_is_read_and_others_are_refused():
    assert read_reply('{"rating": 5, "reason": "same", "confidence": 0.9}').rating == 5
    assert read_reply('```json\n{"rating": "2"}\n```').rating == 2
    assert read_reply('{"rating": 4.0}').rating == 4
    for text, problem in (
        ("4", "not a JSON object"),
        ('{"score": 4}', "no `rating`"),
        ('{"rating": 6}', "expected an integer 1-5"),
        ('{"rating": 4.5}', "expected an integer 1-5"),
        ('{"rating": true}', "expected an integer 1-5"),
    ):
        read = read_reply(text)
        assert read.rating is None and problem in read.problem


def test_settings_come_from_entry_then_metadata_and_typos_are_errors():
    got = resolve_settings(
        {"metric": "llm_judge", "model": "m", "max_attempts": 2},
        {"llm_judge": {"base_url": "http://x/v1/chat/completions", "model": "other"}},
    )
    assert (got.model, got.base_url, got.max_attempts) == ("m", "http://x/v1/chat/completions", 2)
    with pytest.raises(LlmJudgeError, match=r"unknown setting.*modle"):
        resolve_settings({"modle": "m"})
    with pytest.raises(LlmJudgeError, match="no base_url"):
        resolve_settings({"model": "m"})
    with pytest.raises(LlmJudgeError, match="max_attempts='0'"):
        build_settings({"model": "m", "base_url": "u", "max_attempts": "0"}, "t")


def test_invalid_replies_429s_and_timeouts_are_handled_and_a_rerun_is_served_from_cache(
    stub, tmp_path
):
    url, state = stub
    items = [
        {"id": "ok", "reference": "the sun", "candidate": "the answer is excellent"},
        {"id": "reask", "reference": "the sun", "candidate": "BADONCE good"},
        {"id": "never", "reference": "the sun", "candidate": "NEVERJSON"},
        {"id": "429", "reference": "the sun", "candidate": "RATELIMIT poor"},
        {"id": "slow", "reference": "the sun", "candidate": "SLOWREPLY fair"},
    ]
    judge = PromptedJudge(settings_for(url, tmp_path, max_attempts=2))
    judged = {j.id: j for j in judge.score(items)}
    assert {k: j.rating for k, j in judged.items()} == {
        "ok": 5, "reask": 3, "never": None, "429": 2, "slow": 3,
    }  # fmt: skip
    assert judged["reask"].asks == 2 and judged["never"].asks == 2
    assert "invalid reply after 2 ask(s)" in judged["never"].failure
    assert judge.stats.failed == 1 and judge.stats.invalid_replies == 3
    assert judge.stats.retries_by_reason == {"429": 1, "timeout": 1}
    assert judge.describe()["prompt_version"] == PROMPT_VERSION
    sent = len(state.requests)
    rerun = PromptedJudge(settings_for(url, tmp_path, max_attempts=2))
    again = rerun.score(items)
    # Ratings come from the cache; the failed judgement was not cached and is asked again.
    assert len(state.requests) == sent + 2
    assert [j.rating for j in again] == [5, 3, None, 2, 3]
    assert rerun.stats.from_cache == 4 and rerun.stats.failed == 1
    # Another prompt version, model or endpoint never reads these judgements.
    item = {"question": "", "reference": "x", "rationale": "", "transcript": "", "candidate": "y"}
    other = PromptedJudge(settings_for(url, tmp_path, model="judge-2"))
    moved = PromptedJudge(settings_for(url + "/", tmp_path))
    assert len({judge.key(item), other.key(item), moved.key(item)}) == 3


def test_a_refused_key_stops_the_judge_with_one_line(tmp_path, monkeypatch):
    server, _ = start_stub(StubConfig(require_audio=False, api_key="right"))
    monkeypatch.setenv("JUDGE_KEY", "wrong")
    judge = PromptedJudge(settings_for(stub_url(server), tmp_path, api_key_env="JUDGE_KEY"))
    with pytest.raises(JudgeEndpointError, match=r"HTTP 401.*\$JUDGE_KEY"):
        judge.score([{"id": "a", "reference": "r", "candidate": "c"}])
    server.shutdown()


def test_a_local_hf_chat_model_is_asked_through_its_chat_template(tmp_path):
    from transformers import AutoTokenizer

    model_dir = tmp_path / "chat-model"
    AutoTokenizer.from_pretrained(tiny_llama_dir())  # built offline
    import shutil

    shutil.copytree(tiny_llama_dir(), model_dir)
    tok = AutoTokenizer.from_pretrained(model_dir)
    tok.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    tok.save_pretrained(model_dir)
    settings = build_settings(
        {"backend": "hf", "model": str(model_dir), "max_tokens": 4, "max_attempts": 2,
         "cache_dir": str(tmp_path / "cache")},
        "test",
    )  # fmt: skip
    judge = PromptedJudge(settings)
    judged = judge.score([{"id": "a", "reference": "the sun", "candidate": "the sun"}])
    # Random weights never write the JSON: two asks, then a counted failed judgement.
    assert judged[0].failed and judged[0].asks == 2 and judged[0].prompt_tokens > 0
    assert judge.stats.failed == 1
    rerun = PromptedJudge(settings)  # a failed judgement is not cached: asked again
    again = rerun.score([{"id": "a", "reference": "the sun", "candidate": "the sun"}])[0]
    assert again.failed and not again.from_cache and again.asks == 2
    with pytest.raises(LlmJudgeError, match="not a folder"):
        PromptedJudge(build_settings({"backend": "hf", "model": str(tmp_path / "no")}, "t"))


def test_llm_judge_score_writes_per_item_ratings_and_agreement(stub, tmp_path, capsys):
    url, state = stub
    items = str(write_jsonl(tmp_path / "items.jsonl", synthetic_items(12, 3, "s")))
    out = str(tmp_path / "ratings.jsonl")
    spec = f"base_url={url},model=judge-m,cache_dir={tmp_path / 'cache'}"
    assert (
        llm_judge_score(["--input", items, "--output", out, "--judge", spec, "--no-progress"]) == 0
    )
    rows = [json.loads(line) for line in Path(out).read_text().splitlines()]
    expected = [WORDS[r["candidate"].split()[-1]] for r in synthetic_items(12, 3, "s")]
    assert [r["rating"] for r in rows] == expected
    assert rows[0]["rating_unit"] == (expected[0] - 1) / 4 and rows[0]["failed"] is False
    printed = capsys.readouterr()
    assert "rated 12 of 12 items (0 failed judgements)" in printed.out
    # Items with the same texts (ids aside) share one judgement.
    assert "agreement (n=12)" in printed.out and "12 items:" in printed.err
    sent = len(state.requests)
    assert llm_judge_score(["--input", items, "--judge", spec, "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)["report"]
    assert len(state.requests) == sent and report["stats"]["from_cache"] == 12
    assert llm_judge_score(["--input", items, "--judge", "model=m"]) == 2


def test_orca_compare_prints_orca_a_prompted_judge_and_a_constant_side_by_side(
    stub, tmp_path, capsys
):
    url, _ = stub
    items = str(write_jsonl(tmp_path / "human.jsonl", synthetic_items(16, 7, "h")))
    spec = (
        f"name=stub-judge,base_url={url},model=judge-m,cache_dir={tmp_path / 'cache'},"
        "price_prompt=0.5,price_completion=1.5"
    )
    argv = ["--items", items, "--orca", str(tiny_trained_checkpoint()), "--llm-judge", spec,
            "--constant", "3"]  # fmt: skip
    assert orca_compare(argv) == 0
    table = capsys.readouterr().out
    assert "stub-judge" in table and "constant 3" in table and "orca" in table
    assert orca_compare([*argv, "--json"]) == 0
    rows = {r["kind"]: r for r in json.loads(capsys.readouterr().out)["judges"]}
    assert set(rows) == {"orca", "llm_judge", "constant"}
    assert rows["llm_judge"]["rho"] > 0.8 and rows["llm_judge"]["n"] == 16
    assert rows["llm_judge"]["tokens_per_1k"] > 0 and rows["llm_judge"]["cost_per_1k"] > 0
    assert rows["constant"]["rho"] is None  # a constant has no ranking; JSON has no NaN
    assert rows["constant"]["mae_mu"] > 0 and rows["orca"]["cost_per_1k"] is None
    assert -1 <= rows["orca"]["rho"] <= 1 and rows["orca"]["items_per_s"] > 0
    # The rerun's judgements all came from the cache: no live speed to report.
    assert rows["llm_judge"]["from_cache"] == 16 and rows["llm_judge"]["items_per_s"] is None


LLM_TASK = """\
task: tiny_judged
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 8
metric_list:
  - metric: llm_judge
    {settings}
metadata:
  version: 1.0
"""


@pytest.mark.slow
def test_metric_llm_judge_under_plain_lm_eval_then_a_rerun_from_the_cache(stub, tmp_path):
    url, state = stub
    data = write_jsonl(
        tmp_path / "qa.jsonl",
        [{"id": f"q{i}", "question": f"What sings {i}?", "answer": "the sun"} for i in range(5)],
    )
    cache = tmp_path / "cache"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "JUDGE_KEY": "k"}
    runs = {}
    for form, settings, extra in (
        ("entry", f"base_url: {url}\n    model: judge-m\n    api_key_env: JUDGE_KEY\n"
                  f"    cache_dir: {cache}", []),
        ("metadata", "api_key_env: JUDGE_KEY",
         ["--metadata", json.dumps({"llm_judge": {"base_url": url, "model": "judge-m",
                                                  "cache_dir": str(cache)}})]),
    ):  # fmt: skip
        folder = tmp_path / form
        folder.mkdir()
        (folder / "tiny_judged.yaml").write_text(LLM_TASK.format(data=data, settings=settings))
        before = len(state.requests)
        proc = subprocess.run(
            [str(BIN / "lm_eval"), "--model", "dummy", "--tasks", "tiny_judged",
             "--include_path", str(folder), "--output_path", str(tmp_path / f"out-{form}"),
             "--log_samples", *extra],
            capture_output=True, text=True, timeout=600, env=env,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        results = json.loads(next((tmp_path / f"out-{form}").rglob("results_*.json")).read_text())
        runs[form] = (results, len(state.requests) - before, proc.stderr)
    results, sent, err = runs["entry"]
    figures = results["results"]["tiny_judged"]
    # The dummy model's reply shares no word with "the sun": every item rated 1.
    assert figures["llm_judge,none"] == 0.0 and figures["llm_judge_failed,none"] == 0.0
    # Five items and the test item every run's judge rates before generation (never cached).
    assert sent == 5 + 1 and "5 asked, 0 from cache" in err
    recorded = results["configs"]["tiny_judged"]["metadata"]["llm_judge_inputs"]
    assert recorded["prompt_version"] == PROMPT_VERSION and recorded["model"] == "judge-m"
    rows = list((tmp_path / "out-entry").rglob("llm_judge_tiny_judged_*.jsonl"))
    assert rows and len(rows[0].read_text().splitlines()) == 5
    # Settings through --metadata; the same judge, prompt and items: served from the cache.
    results, sent, err = runs["metadata"]
    assert sent == 1 and "0 asked, 5 from cache" in err
    assert results["results"]["tiny_judged"]["llm_judge,none"] == 0.0


@pytest.mark.parametrize(
    ("price", "message"),
    [
        ("-0.5", "price_prompt: expected a finite number with 0 <= price_prompt, got -0.5"),
        ("nan", "price_prompt: expected a finite number with 0 <= price_prompt, got nan"),
    ],
)
def test_orca_compare_refuses_a_negative_or_nan_price(tmp_path, capsys, price, message):
    items = str(write_jsonl(tmp_path / "human.jsonl", synthetic_items(4, 7, "h")))
    spec = f"base_url=http://127.0.0.1:9/v1/chat/completions,model=m,price_prompt={price},"
    assert orca_compare(["--items", items, "--llm-judge", spec + "price_completion=1"]) == 2
    assert capsys.readouterr().err.strip() == f"orca compare: error: --llm-judge m: {message}"


def test_orca_compare_refuses_an_empty_item_file(tmp_path, capsys):
    (tmp_path / "empty.jsonl").write_text("")
    assert orca_compare(["--items", str(tmp_path / "empty.jsonl"), "--constant", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("orca compare: error: ") and "no items" in err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (StubConfig(require_audio=False, api_key="right"), "HTTP 401"),
        (StubConfig(require_audio=False, reply=lambda _: "Quite good, I would say."),
         "answered the test item checked before generation 3 times, never in the form"),
    ],
)  # fmt: skip
def test_a_judge_that_cannot_rate_stops_the_run_before_any_generation(tmp_path, config, expected):
    server, state = start_stub(config)
    data = write_jsonl(tmp_path / "qa.jsonl", [{"id": "q", "question": "Q?", "answer": "a"}])
    settings = f"base_url: {stub_url(server)}\n    model: judge-m\n    api_key_env: JUDGE_KEY"
    (tmp_path / "tiny_judged.yaml").write_text(LLM_TASK.format(data=data, settings=settings))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "JUDGE_KEY": "k"}
    try:
        proc = subprocess.run(
            [str(BIN / "aqua"), "eval", "--model", "dummy", "--tasks", "tiny_judged",
             "--include_path", str(tmp_path), "--output_path", str(tmp_path / "out")],
            capture_output=True, text=True, timeout=600, env=env,
        )  # fmt: skip
    finally:
        server.shutdown()
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Running generate_until requests" not in proc.stderr
    assert expected in proc.stderr.strip().splitlines()[-1]
    assert len(state.requests) <= 3  # the test item only (and its re-asks)
