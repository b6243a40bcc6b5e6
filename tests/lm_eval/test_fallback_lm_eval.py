"""The LLM fallback (`extractor: aqua-rules+llm`) end to end: lm-eval, a local stub, the gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fallback_fixtures import BROKEN, LIMIT, start_fallback_stub, write_fallback_replies
from support.chat_stub import StubConfig, stand_in_reading, start_stub, stub_url

from aqua_tasks.core.extract.fallback import PROBE_REPLY

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def saved_replies(tmp_path_factory, released_dir) -> Path:
    return write_fallback_replies(released_dir, tmp_path_factory.mktemp("fallback_replies"))


@pytest.fixture(scope="module")
def stub():
    server, state = start_fallback_stub()
    yield server, state
    server.shutdown()


def run_cli(*args: object, cache: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "AQUA_CACHE_DIR": str(cache),
        **(env or {}),
    }
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, env=env
    )


def _eval(saved: Path, released: Path, out: Path, cache: Path, fallback: dict | None):
    metadata = {"data_dir": str(released), "audio": False}
    if fallback is not None:
        metadata |= {"extractor": "aqua-rules+llm", "fallback": fallback}
    proc = run_cli(
        BIN / "lm_eval",
        "--model",
        "aqua-replay",
        "--model_args",
        f"path={saved}",
        "--tasks",
        "aqua_animal",
        "--limit",
        LIMIT,
        "--metadata",
        json.dumps(metadata),
        "--output_path",
        out,
        "--log_samples",
        cache=cache,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def _samples(out: Path) -> dict[int, dict]:
    (path,) = sorted(out.rglob("samples_aqua_animal_*.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {int(r["doc"]["id"]): r for r in rows}


def _results(out: Path) -> dict:
    (path,) = sorted(out.rglob("results_*.json"))
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory, saved_replies, released_dir, stub):
    server, state = stub
    root = tmp_path_factory.mktemp("fallback_runs")
    cache = root / "cache"
    settings = {"base_url": stub_url(server), "model": "stub-reader", "max_retries": 1}
    rules = _eval(saved_replies, released_dir, root / "rules", cache, None)
    first = _eval(saved_replies, released_dir, root / "fallback", cache, settings)
    sent_first = len(state.requests)
    rerun = _eval(saved_replies, released_dir, root / "rerun", cache, settings)
    rerun_texts = [r.text for r in state.requests[sent_first:]]
    return {
        "root": root,
        "cache": cache,
        "procs": (rules, first, rerun),
        "sent_first": sent_first,
        "rerun_texts": rerun_texts,
        "state": state,
    }


def test_fallback_counts_show_in_the_lm_eval_table_and_results(runs):
    results = _results(runs["root"] / "fallback")
    row = results["results"]["aqua_animal"]
    # ids 0 and 5 read as the gold option, id 1 as a rejection after its re-ask; id 9 failed.
    assert row["n_fallback,none"] == 3 and row["n_fallback_failed,none"] == 1
    table = runs["procs"][1].stdout
    assert "n_fallback" in table and "n_fallback_failed" in table
    manifest = results["configs"]["aqua_animal"]["metadata"]["aqua_manifest"]
    assert manifest["extractor"] == "aqua-rules+llm"
    assert manifest["fallback_model"] == "openai:stub-reader"
    assert manifest["fallback_prompt_version"] == "aqua-fallback-v1"
    rules_row = _results(runs["root"] / "rules")["results"]["aqua_animal"]
    assert "n_fallback,none" not in rules_row
    # Four of the six unparsed replies stay unparsed with the rules only; two with the fallback.
    assert rules_row["unparsed_rate,none"] == pytest.approx(6 / LIMIT)
    assert row["unparsed_rate,none"] == pytest.approx(3 / LIMIT)


def test_rule_read_replies_are_unchanged_and_each_reading_is_logged(runs):
    rules = _samples(runs["root"] / "rules")
    fallback = _samples(runs["root"] / "fallback")
    read = {0: 7, 1: 4, 5: 9, 9: 1, 13: 2, 17: 0}  # logged readings (see extract.fallback)
    for item_id, sample in fallback.items():
        assert sample["n_fallback"] == read.get(item_id, 0), item_id
        if item_id not in read:
            assert sample["acc"] == rules[item_id]["acc"], item_id
    assert json.loads(fallback[0]["doc"]["fallback"])["model"] == "stub-reader"


def test_fallback_requests_retry_a_429_and_re_ask_an_invalid_reply(runs):
    state = runs["state"]
    statuses = [(r.status, r.text[:40]) for r in state.requests[: runs["sent_first"]]]
    assert sum(s == 429 for s, _ in statuses) == 1
    assert sum(text.startswith("That reply is not usable") for _, text in statuses) == 1
    # The broken item: the first attempt and one retry (max_retries 1), both 500.
    assert sum(s == 500 for s, _ in statuses) == 2


def test_a_rerun_asks_only_what_failed_in_transport(runs):
    # Besides the test reply every run's reader answers before generation.
    asked = [text for text in runs["rerun_texts"] if PROBE_REPLY not in text]
    assert len(asked) == len(runs["rerun_texts"]) - 1
    assert asked and all(BROKEN in text for text in asked)
    rerun = _results(runs["root"] / "rerun")["results"]["aqua_animal"]
    assert rerun["n_fallback,none"] == 3 and rerun["n_fallback_failed,none"] == 1


def test_aqua_score_and_report_keep_the_fallback_figures_apart(runs):
    out = runs["root"] / "fallback"
    score = run_cli(BIN / "aqua", "score", out, "--json", cache=runs["cache"])
    assert score.returncode == 0, score.stderr
    payload = json.loads(score.stdout)
    assert payload["extractor"]["aqua_animal"] == "aqua-rules+llm (3 read by the fallback)"
    assert payload["results"]["aqua_animal"]["unparsed_rate"] == pytest.approx(3 / LIMIT)
    rules_only = run_cli(
        BIN / "aqua", "score", out, "--extractor", "aqua-rules", "--json", cache=runs["cache"]
    )
    assert json.loads(rules_only.stdout)["results"]["aqua_animal"]["unparsed_rate"] == (
        pytest.approx(6 / LIMIT)
    )
    report = run_cli(
        BIN / "aqua", "report", out, "--out", runs["root"] / "report", cache=runs["cache"]
    )
    assert report.returncode == 0, report.stderr
    assert "aqua-rules+llm (3 read by the fallback)" in report.stdout


def test_regress_refuses_a_rules_only_baseline_against_a_fallback_run(runs):
    root = runs["root"]
    proc = run_cli(
        BIN / "aqua",
        "regress",
        "--baseline",
        root / "rules",
        "--candidate",
        root / "fallback",
        cache=runs["cache"],
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0] == (
        "aqua regress: not comparable: aqua_animal: read differently (baseline rules only; "
        "candidate rules + LLM fallback openai:stub-reader, aqua-fallback-v1): a run read with "
        "an LLM fallback is compared only with one of the same fallback model and prompt"
    )
    same = run_cli(
        BIN / "aqua",
        "regress",
        "--baseline",
        root / "fallback",
        "--candidate",
        root / "rerun",
        cache=runs["cache"],
    )
    assert same.returncode == 0, same.stderr


# Markers of the five replies the rules leave unparsed (the empty one is never sent); the
# test reply checked before generation has none of them.
UNPARSED_MARKERS = ("Maybe", "Hard to say", "Hmm, no idea", "lol")


def _stand_in(request) -> str:
    return stand_in_reading(request.text)


def _prose_after_the_test_reply(request) -> str:
    if PROBE_REPLY in request.text:
        return stand_in_reading(request.text)
    return "I think the animal in the clip is a dog, most likely."


@pytest.fixture(scope="module")
def failing_readers(tmp_path_factory, saved_replies, released_dir):
    """Runs whose fallback reader fails: before generation (401; prose) and after it."""
    root = tmp_path_factory.mktemp("failing_readers")
    stubs = {
        "key": StubConfig(require_audio=False, api_key="right", reply=_stand_in),
        "prose": StubConfig(require_audio=False, reply=lambda request: "It is surely a dog."),
        "key_later": StubConfig(
            require_audio=False,
            reply=_stand_in,
            always_fail=dict.fromkeys(UNPARSED_MARKERS, 401),
        ),
        "prose_later": StubConfig(require_audio=False, reply=_prose_after_the_test_reply),
    }
    servers = {name: start_stub(config)[0] for name, config in stubs.items()}
    commands = {
        (name, prog): [
            *([BIN / "aqua", "eval"] if prog == "aqua" else [BIN / "lm_eval"]),
            "--model",
            "aqua-replay",
            "--model_args",
            f"path={saved_replies}",
            "--tasks",
            "aqua_animal",
            "--limit",
            LIMIT,
            "--log_samples",
            "--output_path",
            root / f"{name}-{prog}",
            "--metadata",
            json.dumps(
                {
                    "data_dir": str(released_dir),
                    "audio": False,
                    "extractor": "aqua-rules+llm",
                    "fallback": {
                        "base_url": stub_url(server),
                        "model": "stub-reader",
                        "max_retries": 0,
                        "api_key_env": "STUB_KEY",
                    },
                }
            ),
        ]
        for name, server in servers.items()
        for prog in ("aqua", "lm_eval")
        if prog == "aqua" or name == "key_later"
    }
    env = {"STUB_KEY": "wrong"}
    try:
        with ThreadPoolExecutor(len(commands)) as pool:
            futures = {
                key: pool.submit(run_cli, *argv, cache=root / "cache", env=env)
                for key, argv in commands.items()
            }
            procs = {key: future.result() for key, future in futures.items()}
    finally:
        for server in servers.values():
            server.shutdown()
    return root, procs


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("key", "failed: HTTP 401"),
        ("prose", "answered the test reply checked before generation 3 times, never in the form"),
    ],
)
def test_a_reader_that_cannot_read_stops_the_run_before_any_generation(
    failing_readers, name, expected
):
    root, procs = failing_readers
    proc = procs[(name, "aqua")]
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Running generate_until requests" not in proc.stderr
    assert not (root / f"{name}-aqua").exists()
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("aqua eval: error: LLM fallback: ") and expected in last, last


@pytest.mark.parametrize(
    ("name", "prog", "status"),
    [("key_later", "aqua", 1), ("key_later", "lm_eval", 0), ("prose_later", "aqua", 1)],
)
def test_a_reader_that_fails_after_generation_loses_no_reply(failing_readers, name, prog, status):
    root, procs = failing_readers
    proc = procs[(name, prog)]
    assert proc.returncode == status, proc.stderr[-3000:]
    samples = _samples(root / f"{name}-{prog}")
    assert len(samples) == int(LIMIT)
    assert sorted(i for i, s in samples.items() if s["n_fallback"]) == [0, 1, 5, 9, 13]
    assert {s["n_fallback"] for s in samples.values() if s["n_fallback"]} == {1}  # failed
    row = _results(root / f"{name}-{prog}")["results"]["aqua_animal"]
    assert row["n_fallback_failed,none"] == 5 and row["n_fallback,none"] == 0
    assert row["unparsed_rate,none"] == pytest.approx(6 / int(LIMIT))
    kept = "the replies are kept in the samples: read them again without generating"
    assert kept in proc.stderr
    if prog == "aqua":
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("aqua eval: error: LLM fallback: ") and kept in last
        assert "5 replies left unparsed (n_fallback_failed)" in last
