"""`scorer: orca` and `scorer: llm_judge` under lm-eval's 0.5 line: a third-party
generate_until task judged on lm-eval's public scoring pipeline (the real `lm_eval` CLI, the
tiny trained judge, the local chat stub as the prompted judge's model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from orca_fixtures import tiny_trained_checkpoint
from support.chat_stub import StubConfig, overlap_rating, rating_reply, start_stub, stub_url

BIN = Path(sys.executable).parent
N_QA = 6
TASK_YAML = """\
task: tiny_qa
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
  max_gen_toks: 32
scorer: {scorer}
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
  - metric: {scorer}
{settings}
metadata:
  version: 1.0
"""


def write_task(root: Path, scorer: str, settings: dict[str, str]) -> Path:
    root.mkdir(exist_ok=True)
    data = root / "qa.jsonl"
    rows = [
        {"id": f"q{i}", "question": f"What is the bird singing {i}?", "answer": "the sun"}
        for i in range(N_QA)
    ]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    lines = "\n".join(f"    {key}: {value}" for key, value in settings.items())
    (root / "tasks").mkdir()
    (root / "tasks" / "tiny_qa.yaml").write_text(
        TASK_YAML.format(data=data, scorer=scorer, settings=lines)
    )
    return root / "tasks"


def lm_eval(tasks: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    args = ["--model", "dummy", "--tasks", "tiny_qa", "--include_path", str(tasks)]
    return subprocess.run(
        [str(BIN / "lm_eval"), *args, "--output_path", str(out), "--log_samples"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def results_and_replies(out: Path) -> tuple[dict, list[str]]:
    (results,) = sorted(out.rglob("results_*.json"))
    (samples,) = sorted(out.rglob("samples_tiny_qa_*.jsonl"))
    replies = []
    for line in samples.read_text().splitlines():
        reply = json.loads(line)["filtered_resps"]
        while isinstance(reply, list):  # one reply per request (and per repeat)
            reply = reply[0]
        replies.append(reply)
    return json.loads(results.read_text())["results"]["tiny_qa"], replies


def test_scorer_orca_reports_the_judges_own_figures_on_every_reply(tmp_path):
    from orca_judge import OrcaJudge

    checkpoint = tiny_trained_checkpoint()
    tasks = write_task(
        tmp_path, "orca", {"checkpoint": str(checkpoint), "output_dir": str(tmp_path / "items")}
    )
    done = lm_eval(tasks, tmp_path / "out")
    assert done.returncode == 0, done.stderr[-3000:]
    row, replies = results_and_replies(tmp_path / "out")
    records = [
        {"id": f"q{i}", "question": f"What is the bird singing {i}?", "reference": "the sun",
         "candidate": reply}
        for i, reply in enumerate(replies)
    ]  # fmt: skip
    predictions = OrcaJudge.from_pretrained(checkpoint).score(records)
    expected = sum(p.clamped_unit for p in predictions) / len(predictions)
    assert row["orca,none"] == pytest.approx(expected, abs=1e-6)
    assert row["orca_with_question,none"] == 1.0
    assert row["orca_stderr,none"] == "N/A" and row["exact_match,none"] == 0.0
    (per_item,) = sorted((tmp_path / "items").glob("orca_tiny_qa_none_*.jsonl"))
    assert len(per_item.read_text().splitlines()) == N_QA


def test_scorer_orca_refuses_a_bad_checkpoint_before_any_generation(tmp_path):
    tasks = write_task(tmp_path, "orca", {"checkpoint": str(tmp_path / "no-judge")})
    done = lm_eval(tasks, tmp_path / "out")
    assert done.returncode != 0
    assert "cannot load ORCA judge checkpoint" in done.stderr
    assert "Running generate_until requests" not in done.stderr


def test_scorer_llm_judge_rates_every_reply_through_the_endpoint(tmp_path):
    server, state = start_stub(StubConfig(require_audio=False, reply=rating_reply(overlap_rating)))
    try:
        settings = {
            "base_url": stub_url(server),
            "model": "judge",
            "output_dir": str(tmp_path / "items"),
            "cache_dir": str(tmp_path / "cache"),
        }
        done = lm_eval(write_task(tmp_path, "llm_judge", settings), tmp_path / "out")
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-3000:]
    row, _ = results_and_replies(tmp_path / "out")
    (per_item,) = sorted((tmp_path / "items").glob("llm_judge_tiny_qa_none_*.jsonl"))
    rows = [json.loads(line) for line in per_item.read_text().splitlines()]
    assert len(rows) == N_QA == len(state.requests) - 1  # and the test item before generation
    ratings = [(r["rating"] - 1) / 4 for r in rows]
    assert row["llm_judge,none"] == pytest.approx(sum(ratings) / len(ratings))
    assert row["llm_judge_failed,none"] == 0.0


def test_a_bare_metric_orca_is_refused_before_generation_naming_the_scorer(tmp_path):
    # lm-eval 0.5's default scorer never hands a metric the doc: the judge would not see the
    # question, a different figure under the same name.
    tasks = write_task(tmp_path, "orca", {"checkpoint": str(tmp_path / "judge")})
    yaml = tasks / "tiny_qa.yaml"
    yaml.write_text(yaml.read_text().replace("scorer: orca\n", ""))
    done = lm_eval(tasks, tmp_path / "out")
    assert done.returncode != 0 and "Running generate_until requests" not in done.stderr
    assert "with `scorer: orca` on the task (lm-eval 0.5)" in done.stderr.splitlines()[-1]


@pytest.mark.skipif(
    not os.environ.get("AQUA_LM_EVAL_REFERENCE"), reason="AQUA_LM_EVAL_REFERENCE names no 0.4.13"
)
def test_scorer_orca_gives_the_figures_of_metric_orca_under_lm_eval_0_4_13(tmp_path):
    checkpoint = tiny_trained_checkpoint()
    tasks = write_task(tmp_path / "next", "orca", {"checkpoint": str(checkpoint)})
    reference_tasks = tmp_path / "0.4.13"
    reference_tasks.mkdir()
    (reference_tasks / "tiny_qa.yaml").write_text(
        (tasks / "tiny_qa.yaml").read_text().replace("scorer: orca\n", "")
    )
    assert lm_eval(tasks, tmp_path / "out").returncode == 0
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    args = ["--model", "dummy", "--tasks", "tiny_qa", "--include_path", str(reference_tasks)]
    done = subprocess.run(
        [os.environ["AQUA_LM_EVAL_REFERENCE"], *args, "--output_path", str(tmp_path / "ref")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ours, _ = results_and_replies(tmp_path / "out")
    (path,) = sorted((tmp_path / "ref").rglob("results_*.json"))
    reference = json.loads(path.read_text())["results"]["tiny_qa"]
    assert ours == reference


def aqua_eval(tasks: Path, out: Path, metadata: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    args = ["--model", "dummy", "--tasks", "tiny_qa", "--include_path", str(tasks)]
    return subprocess.run(
        [str(BIN / "aqua"), "eval", *args, "--output_path", str(out), "--log_samples",
         "--metadata", json.dumps(metadata)],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip


def test_aqua_eval_hands_the_scorer_its_metadata_and_exits_1_when_the_judge_fails(tmp_path):
    from orca_judge import OrcaJudge

    checkpoint = tiny_trained_checkpoint()
    metadata = {"orca": {"checkpoint": str(checkpoint)}}  # the entry names no checkpoint
    tasks = write_task(tmp_path / "ok", "orca", {"output_dir": str(tmp_path / "items")})
    done = aqua_eval(tasks, tmp_path / "ok" / "out", metadata)
    assert done.returncode == 0, done.stderr[-3000:]
    row, replies = results_and_replies(tmp_path / "ok" / "out")
    records = [
        {"question": f"What is the bird singing {i}?", "reference": "the sun", "candidate": r}
        for i, r in enumerate(replies)
    ]
    predictions = OrcaJudge.from_pretrained(checkpoint).score(records)
    expected = sum(p.clamped_unit for p in predictions) / len(predictions)
    assert row["orca,none"] == pytest.approx(expected, abs=1e-6)
    # A judge that fails after generation (here: ratings out of range in the docs): samples
    # kept, NaN figures, and `aqua eval` ends with the failure and exit 1, as on lm-eval 0.4.13.
    bad = write_task(tmp_path / "bad", "orca", {"ratings_field": "ratings"})
    data = tmp_path / "bad" / "qa.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    data.write_text("".join(json.dumps({**r, "ratings": [3, 9]}) + "\n" for r in rows))
    done = aqua_eval(bad, tmp_path / "bad" / "out", metadata)
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("aqua eval: error: tiny_qa/none: orca judge failed ("), last
    row, replies = results_and_replies(tmp_path / "bad" / "out")
    assert len(replies) == N_QA and row["orca,none"] != row["orca,none"]  # NaN
