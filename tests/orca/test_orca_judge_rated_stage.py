"""A judge-rated curriculum stage: a prompted judge (the local chat stub) rates unrated items."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from orca_fixtures import synthetic_items, tiny_llama_dir, write_jsonl
from support.chat_stub import (
    StubConfig,
    overlap_rating,
    rating_reply,
    start_stub,
    stub_url,
)

from orca_judge.cli import train as cli_train
from orca_judge.cli.llm_judge import main as llm_judge_score
from orca_judge.data import items_fingerprint, load_items
from orca_judge.errors import JudgeEndpointError, LlmJudgeError
from orca_judge.prompted.judge import item_of
from orca_judge.prompted.prompt import PROMPT_VERSION, judge_prompt
from orca_judge.training.plan import load_stages, plan_stages

REPO = Path(__file__).resolve().parents[2]
THREE_STAGE = REPO / "configs" / "orca" / "curriculum-3stage.yaml"
TINY = ["--lora-r", "4", "--batch-size", "4", "--grad-accum", "1", "--warmup-steps", "0"]
TINY += ["--lr", "1e-3", "--no-progress"]
CANDIDATES = ["the sun", "sun", "the moon", "the answer is the sun", "no idea", "a sun"]


def stub_rule(text: str) -> int | str:
    """The stub judge: token-F1 rating (the `--judge` mode's rule); NEVERJSON is never JSON."""
    if "NEVERJSON" in text:  # the re-ask quotes the reply, marker and all
        return "NEVERJSON: I would say 4 out of 5."
    return overlap_rating(text)


def expected_rating(item: dict) -> int:
    return overlap_rating(judge_prompt(item_of(item, 0)))


@pytest.fixture
def stub():
    server, state = start_stub(
        StubConfig(
            require_audio=False,
            reply=rating_reply(stub_rule),
            faults={"RATELIMIT": ["429"]},
        )
    )
    yield stub_url(server), state
    server.shutdown()


def unrated(n: int, prefix: str = "m", markers: dict[int, str] | None = None) -> list[dict]:
    """Candidates without ratings, as orca score reads them; markers go into some candidates."""
    items = []
    for i in range(n):
        candidate = CANDIDATES[i % len(CANDIDATES)]
        if markers and i in markers:
            candidate = f"{markers[i]} {candidate}"
        items.append(
            {
                "id": f"{prefix}-{i}",
                "question": f"Which star is in the song ({prefix} {i % 5})?",
                "reference": "the sun",
                "rationale": "The song names it.",
                "candidate": candidate,
            }
        )
    return items


def write_config(tmp_path: Path, stages: list[dict], **top) -> Path:
    config = {"backbone": str(tiny_llama_dir()), "dev": "dev.jsonl", **top, "stages": stages}
    path = tmp_path / "cur.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def judge_stage(url: str, cache: Path, **extra) -> dict:
    rated_by = {"base_url": url, "model": "judge-m", "cache_dir": str(cache), "timeout": 5}
    return {"name": "s2-judge", "train": "mid.jsonl", "rated_by": {**rated_by, **extra}}


@pytest.mark.parametrize(
    ("stage", "message"),
    [
        ({"rated_by": {"base_url": "http://x/v1/chat/completions"}}, "rated_by: no judge model"),
        ({"rated_by": {"model": "m"}}, "rated_by: no base_url"),
        ({"rated_by": {"model": "m", "base_url": "u", "modle": "x"}}, "unknown setting(s) modle"),
        ({"rated_by": {"model": "m", "base_url": "u", "ratings_field": "r"}}, "ratings_field"),
        ({"rated_by": {"model": "m", "base_url": "u", "concurrency": 0}}, "concurrency=0"),
        ({"rated_by": {"model": "m", "base_url": "u"}, "synthesize": True}, "exclude each other"),
        ({"rated_by": "judge-m"}, "rated_by: expected a mapping"),
        ({"max_failed_share": 0.1}, "max_failed_share is a setting of a stage with rated_by"),
        ({"rated_by": {"model": "m", "base_url": "u"}, "max_failed_share": 2}, "in [0, 1]"),
    ],
)
def test_a_bad_judge_setting_is_refused_naming_the_stage_and_key(tmp_path, stage, message):
    path = write_config(tmp_path, [{"name": "mid", "train": "mid.jsonl", **stage}])
    with pytest.raises(LlmJudgeError) as raised:
        plan_stages(path)
    text = str(raised.value)
    assert text.startswith(f"{path}: stage 'mid': ") and message in text and "\n" not in text


def test_the_command_refuses_a_bad_judge_setting_with_one_line(tmp_path, capsys):
    path = write_config(tmp_path, [{"name": "mid", "train": "mid.jsonl", "rated_by": {"x": 1}}])
    assert cli_train.main(["--config", str(path), "--output", str(tmp_path / "out")]) != 0
    err = capsys.readouterr().err.strip()
    assert "stage 'mid': rated_by: unknown setting(s) x" in err and "\n" not in err


def test_the_judge_rates_every_item_leaves_failures_out_and_a_rerun_asks_only_those(
    stub, tmp_path, capsys
):
    url, state = stub
    items = unrated(12, markers={3: "NEVERJSON", 7: "RATELIMIT"})
    items[5]["ratings"] = [5, 5]  # a file's own ratings are replaced by the judge's
    write_jsonl(tmp_path / "mid.jsonl", items)
    write_jsonl(tmp_path / "dev.jsonl", synthetic_items(8, 2, "dv"))
    path = write_config(tmp_path, [judge_stage(url, tmp_path / "cache", max_attempts=2)])
    (stage,) = load_stages(plan_stages(path)).stages
    wanted = {it["id"]: expected_rating(it) for i, it in enumerate(items) if i != 3}
    assert {it.id: it.ratings for it in stage.train_items} == {k: (r,) for k, r in wanted.items()}
    assert len(set(wanted.values())) >= 4  # the rule gives several ratings, not one
    assert stage.provenance["train_rated_by"] == {
        "model": "judge-m", "backend": "openai", "endpoint": url,
        "prompt_version": PROMPT_VERSION, "n_items": 12, "n_rated": 11, "n_failed": 1,
    }  # fmt: skip
    err = capsys.readouterr().err
    assert "llm-judge judge-m (llm-judge-v1): 12 items: 12 asked" in err and "(429: 1)" in err
    left_out = [line for line in err.splitlines() if "left out of the stage" in line]
    assert left_out == [
        "stage 's2-judge': 1 of 12 failed judgements left out of the stage (m-3: invalid reply "
        "after 2 ask(s): not a JSON object: 'NEVERJSON: I would say 4 out of 5.')"
    ]
    assert state.attempts[next(k for k, n in state.attempts.items() if n == 2)] == 2
    sent = len(state.requests)
    assert sent == 12 + 1 + 1  # every item once, the 429's retry, the invalid reply's re-ask
    again = load_stages(plan_stages(path)).stages[0]
    # The cache answers every rated item; the failed judgement was not cached: asked again.
    assert len(state.requests) == sent + 2
    assert again.train_items == stage.train_items and again.provenance == stage.provenance
    assert "11 from cache" in capsys.readouterr().err


def test_more_failed_judgements_than_the_stage_allows_refuse_it_in_one_line(stub, tmp_path):
    url, _ = stub
    write_jsonl(tmp_path / "mid.jsonl", unrated(10, markers=dict.fromkeys(range(3), "NEVERJSON")))
    write_jsonl(tmp_path / "dev.jsonl", synthetic_items(8, 2, "dv"))
    stage = {**judge_stage(url, tmp_path / "cache", max_attempts=1), "max_failed_share": 0.25}
    with pytest.raises(JudgeEndpointError) as raised:
        load_stages(plan_stages(write_config(tmp_path, [stage])))
    text = str(raised.value)
    assert text.startswith("stage 's2-judge': 3 of 10 judgements by 'judge-m' failed (30%), ")
    assert "more than max_failed_share 0.25 allows (m-0: invalid reply" in text
    assert "\n" not in text
    stage["max_failed_share"] = 0.3  # at the share allowed, the stage trains without them
    (loaded,) = load_stages(plan_stages(write_config(tmp_path, [stage]))).stages
    assert len(loaded.train_items) == 7


def test_orca_llm_judge_fills_the_cache_a_judge_rated_stage_then_reads(stub, tmp_path):
    url, state = stub
    write_jsonl(tmp_path / "mid.jsonl", unrated(6))
    write_jsonl(tmp_path / "dev.jsonl", synthetic_items(8, 2, "dv"))
    spec = f"base_url={url},model=judge-m,cache_dir={tmp_path / 'cache'}"
    assert llm_judge_score(["--input", str(tmp_path / "mid.jsonl"), "--judge", spec]) == 0
    sent = len(state.requests)
    assert sent == 6
    path = write_config(tmp_path, [judge_stage(url, tmp_path / "cache")])
    (stage,) = load_stages(plan_stages(path)).stages
    assert len(state.requests) == sent and len(stage.train_items) == 6


def test_the_shipped_three_stage_config_plans_synthetic_then_judge_rated_then_human():
    plans = plan_stages(THREE_STAGE, overrides={"backbone": "models/smollm2-135m"})
    assert [p.name for p in plans] == ["s1-synthetic", "s2-judge-rated", "s3-human"]
    assert [bool(p.synthesize) for p in plans] == [True, False, False]
    assert [p.rated_by is not None for p in plans] == [False, True, False]
    assert plans[1].rated_by.settings.base_url == "http://localhost:8000/v1/chat/completions"
    assert plans[1].rated_by.max_failed_share == 0.2


@pytest.mark.slow
def test_orca_train_runs_synthetic_then_judge_rated_then_human_and_records_the_judge(
    stub, tmp_path, capsys
):
    url, state = stub
    middle = unrated(16, markers={2: "NEVERJSON", 9: "RATELIMIT"})
    early = synthetic_items(12, 1, "a")
    for i, item in enumerate(early):  # orca synthesize needs distinct references
        item["reference"] = f"the sun and {['a bird', 'a song', 'the moon'][i % 3]}"
    write_jsonl(tmp_path / "early.jsonl", early)
    write_jsonl(tmp_path / "mid.jsonl", middle)
    write_jsonl(tmp_path / "human.jsonl", synthetic_items(12, 3, "h"))
    write_jsonl(tmp_path / "dev.jsonl", synthetic_items(12, 2, "dv"))
    stages = [
        {"name": "s1-synthetic", "train": "early.jsonl", "synthesize": True},
        judge_stage(url, tmp_path / "cache", max_attempts=1),
        {"name": "s3-human", "train": "human.jsonl"},
    ]
    path = write_config(tmp_path, stages, max_steps=1, eval_every=1)
    argv = ["--config", str(path), "--output", str(tmp_path / "out"), *TINY, "--json"]
    assert cli_train.main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    record = {
        "model": "judge-m", "backend": "openai", "endpoint": url,
        "prompt_version": PROMPT_VERSION, "n_items": 16, "n_rated": 15, "n_failed": 1,
    }  # fmt: skip
    s1, s2, s3 = summary["stages"]
    assert s2["data"]["train_rated_by"] == record and s2["train_items"] == 15
    assert "train_rated_by" not in s1["data"] and "train_rated_by" not in s3["data"]
    # The stage trained on the judge's ratings: its run state fingerprints exactly those items.
    rated = [{**it, "ratings": [expected_rating(it)]} for i, it in enumerate(middle) if i != 2]
    run_log = tmp_path / "out-stages" / "s2-judge-run" / "log.jsonl"
    start = json.loads(run_log.read_text().splitlines()[0])
    assert start["event"] == "start" and start["data"]["train_rated_by"] == record
    import torch

    run_state = torch.load(run_log.with_name("state.pt"), weights_only=True)
    assert run_state["data"]["train_items_sha256"] == items_fingerprint(load_items(rated))
    stored = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert stored["curriculum"][1]["data"]["train_rated_by"] == record
    middle_checkpoint = json.loads(
        (tmp_path / "out-stages" / "s2-judge" / "metrics.json").read_text()
    )
    assert middle_checkpoint["data"]["train_rated_by"] == record
    # A second run of the curriculum asks the judge only the item it failed on (never cached).
    sent = len(state.requests)
    argv = ["--config", str(path), "--output", str(tmp_path / "again"), *TINY]
    assert cli_train.main(argv) == 0
    assert len(state.requests) == sent + 1
    text = capsys.readouterr().out
    assert (
        f"data of s2-judge: train rated by judge-m ({PROMPT_VERSION}: 15 rated, 1 failed "
        f"judgements left out) from {tmp_path / 'mid.jsonl'} (15 items)"
    ) in text
