"""Open-ended AQUA (`aqua-open_*`) end to end through the real `lm_eval` command line.

A tiny judge trained on the open tasks' own judge inputs (tests/open_fixtures.py) scores the
baselines' replies; the judge's figures are checked against its per-item file, the rules'
figures against counts made by hand from the released files.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from open_fixtures import open_judge_checkpoint

from aqua_tasks.task.open_ended import build_open_docs

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]
BIN = Path(sys.executable).parent  # console scripts of this environment, from any shell
LIMIT = 40  # per track: 20 clips, each asked its Solvable and its IAQD question
TRACKS = ("animal", "music", "vocal")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)


def results_of(output_path: Path) -> dict:
    (path,) = sorted(output_path.rglob("results_*.json"))
    return json.loads(path.read_text())


def metrics_of(results: dict, task: str) -> dict:
    row = results["results"][task]
    return {k.split(",")[0]: v for k, v in row.items() if "," in k and "_stderr," not in k}


@pytest.fixture(scope="module")
def judge(released_dir) -> Path:
    return open_judge_checkpoint(released_dir)


def run_open(
    tmp: Path,
    model: str,
    judge: Path,
    data_dir: Path,
    model_args: str = "",
    tasks: str = "aqua-open_*",
    **settings,
) -> Path:
    out = tmp / model
    metadata = {
        "data_dir": str(data_dir),
        "audio": False,
        "judge": str(judge),
        "orca": {"backbone": str(judge.parent / "backbone")},
        **settings,
    }
    done = run_cli(
        str(BIN / "lm_eval"),
        "--model",
        model,
        *(["--model_args", model_args] if model_args else []),
        "--tasks",
        tasks,
        "--metadata",
        json.dumps(metadata),
        "--limit",
        str(LIMIT),
        "--output_path",
        str(out),
        "--log_samples",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (out / "stderr.txt").write_text(done.stderr)
    return out


@pytest.fixture(scope="module")
def reject_run(tmp_path_factory, judge, released_dir) -> Path:
    return run_open(tmp_path_factory.mktemp("open"), "aqua-always-reject", judge, released_dir)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, judge, released_dir) -> Path:
    return run_open(tmp_path_factory.mktemp("open"), "aqua-first-option", judge, released_dir)


def solvable_docs(data_dir: Path, track: str) -> list[dict]:
    """The Solvable docs among the first LIMIT docs of a track's open task."""
    docs, _ = build_open_docs(track, data_dir=str(data_dir), settings={"audio": False})
    return [d for d in docs[:LIMIT] if d["type"] == "Solvable"]


def judge_rows(run: Path, task: str) -> list[dict]:
    (path,) = sorted(run.rglob(f"orca_{task}_none_*.jsonl"))  # one judge pass per task
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_always_abstaining_is_right_on_iaqd_and_wrong_on_solvable(reject_run):
    results = results_of(reject_run)
    for track in TRACKS:
        got = metrics_of(results, f"aqua-open_{track}")
        assert got["n_items"] == LIMIT and got["n_solvable"] == LIMIT // 2
        # The judge and the rules agree: every abstention is right only where nothing is heard.
        assert got["acc"] == 0 and got["acc_iaqd"] == 1
        assert got["acc_rule"] == 0 and got["acc_iaqd_rule"] == 1
        assert got["abstains_solvable"] == 1 and got["abstains_iaqd"] == 1
        # No Solvable answer is right, so no clip conditions CA: undefined, not 0 or 1.
        assert math.isnan(got["ca_iaqd"]) and got["n_ca_iaqd"] == 0
        assert got["judge_rule_agree"] == 1 and got["n_unjudged"] == 0
    pooled = metrics_of(results, "aqua-open")
    assert pooled["n_items"] == 3 * LIMIT and pooled["acc_iaqd"] == 1


def test_the_first_class_baseline_gets_the_share_counted_by_hand(first_run, released_dir):
    results = results_of(first_run)
    total_right = 0
    for track in TRACKS:
        task = f"aqua-open_{track}"
        got = metrics_of(results, task)
        solvable = solvable_docs(released_dir, track)
        right = sum(d["classes"][0] == d["reference"] for d in solvable)
        total_right += right
        assert got["acc_rule"] == pytest.approx(right / (LIMIT // 2))
        assert got["acc_iaqd_rule"] == 0 and got["abstains_iaqd"] == 0
        assert got["n_ca_iaqd_rule"] == right and (right == 0 or got["ca_iaqd_rule"] == 0)
        # The judge's figures are its per-item ratings under the recorded threshold (4).
        ids = {str(d["id"]) for d in solvable}
        rows = [r for r in judge_rows(first_run, task) if r["inputs"]["id"] in ids]
        assert len(rows) == len(solvable)
        judged_right = [1 + 4 * r["expected_unit"] >= 4 for r in rows]
        assert got["acc"] == pytest.approx(sum(judged_right) / len(rows))
        # A class name is never an abstention: the judge says so too.
        assert got["acc_iaqd"] == 0
    pooled = metrics_of(results, "aqua-open")
    assert pooled["acc_rule"] == pytest.approx(total_right / (3 * LIMIT // 2))
    config = results["configs"]["aqua-open_animal"]["metadata"]
    assert config["aqua_manifest"]["judge_rule"] == "expected judge rating >= 4"
    assert config["aqua_manifest"]["prompt_style"] == "open-v1"
    assert config["orca_inputs"]["rationale"] == "rationale"


def test_the_run_says_which_items_have_no_open_form(first_run):
    stderr = (first_run / "stderr.txt").read_text()
    assert "aqua-open_animal: 720 AAD/IASD items are not asked" in stderr


def test_a_reply_is_the_open_question_with_its_guidance(first_run):
    (samples,) = sorted(first_run.rglob("samples_aqua-open_animal_*.jsonl"))
    first = json.loads(samples.read_text().splitlines()[0])
    prompt = first["arguments"]["gen_args_0"]["arg_0"]
    assert prompt == (
        "<audio>\nWhich animal can be heard in the recording?\n"
        "Answer in a few words. If the question cannot be answered from the audio, say so."
    )
    assert first["target"] == first["doc"]["reference"] and "options" not in first["doc"]


@pytest.fixture(scope="module")
def lenient_run(tmp_path_factory, judge, released_dir) -> Path:
    out = tmp_path_factory.mktemp("open")
    return run_open(
        out, "aqua-first-option", judge, released_dir, tasks="aqua-open_animal", judge_threshold=1
    )


def test_the_threshold_is_a_recorded_setting(lenient_run):
    results = results_of(lenient_run)
    # Every expected rating is at least 1: every judged answer counts as right.
    assert metrics_of(results, "aqua-open_animal")["acc"] == 1
    manifest = results["configs"]["aqua-open_animal"]["metadata"]["aqua_manifest"]
    assert manifest["judge_rule"] == "expected judge rating >= 1"


def run_folder(run: Path) -> Path:
    (folder,) = [p for p in run.iterdir() if p.is_dir()]
    return folder


def test_aqua_regress_gates_open_runs_by_judge_and_by_rules(first_run, reject_run):
    done = run_cli(
        str(BIN / "aqua"),
        "regress",
        "--baseline",
        str(run_folder(first_run)),
        "--candidate",
        str(run_folder(reject_run)),
        "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| aqua-open_animal")]
    names = [tuple(cell.strip() for cell in row.split("|")[1:3]) for row in rows]
    assert names == [
        ("aqua-open_animal", "Ori (acc)"),
        ("aqua-open_animal", "CA IAQD"),
        ("aqua-open_animal", "joint IAQD"),
        ("aqua-open_animal rules", "Ori (acc)"),
        ("aqua-open_animal rules", "CA IAQD"),
        ("aqua-open_animal rules", "joint IAQD"),
        ("aqua-open_animal", "ORCA judge"),
    ]


def test_aqua_regress_refuses_runs_judged_under_another_threshold(first_run, lenient_run):
    done = run_cli(
        str(BIN / "aqua"),
        "regress",
        "--baseline",
        str(run_folder(first_run)),
        "--candidate",
        str(run_folder(lenient_run)),
        "--no-progress",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "aqua-open_animal: asked or judged differently (baseline prompt open-v1, threshold "
        "4.0; candidate prompt open-v1, threshold 1.0)" in done.stdout + done.stderr
    )


def test_a_run_without_a_judge_stops_before_generating(tmp_path, released_dir):
    done = run_cli(
        str(BIN / "lm_eval"),
        "--model",
        "aqua-always-reject",
        "--tasks",
        "aqua-open_animal",
        "--metadata",
        json.dumps({"data_dir": str(released_dir), "audio": False}),
        "--limit",
        "4",
    )
    assert done.returncode != 0
    assert "no judge checkpoint" in done.stderr


def test_replaying_an_open_run_gives_its_figures(reject_run, tmp_path, judge, released_dir):
    (folder,) = [p for p in reject_run.iterdir() if p.is_dir()]
    out = run_open(tmp_path, "aqua-replay", judge, released_dir, model_args=f"path={folder}")
    want, got = results_of(reject_run)["results"], results_of(out)["results"]
    for task in ("aqua-open_animal", "aqua-open", "aqua-open_vocal"):
        assert metrics_of({"results": got}, task) == pytest.approx(
            metrics_of({"results": want}, task), nan_ok=True
        )


def test_aqua_report_puts_the_open_row_beside_the_runs_figures(first_run, tmp_path):
    (folder,) = [p for p in first_run.iterdir() if p.is_dir()]
    done = run_cli(
        str(BIN / "aqua"),
        "report",
        str(folder),
        "--out",
        str(tmp_path / "rep"),
        "--no-chart",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    rows = {r["track"]: r for r in json.loads(done.stdout)["open_ended"]}
    results = results_of(first_run)
    for track in TRACKS:
        want = metrics_of(results, f"aqua-open_{track}")
        assert rows[track]["figures"]["acc"] == pytest.approx(want["acc"])
        assert rows[track]["figures"]["acc_rule"] == pytest.approx(want["acc_rule"])
        assert rows[track]["mc_task"] is None  # this run asked no multiple-choice task
    assert (tmp_path / "rep" / "open_ended.md").read_text().count("| aqua-first") == 0
