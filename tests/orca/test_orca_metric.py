"""`metric: orca` in real lm-eval runs: aqua eval, plain lm_eval, predict-only + orca score."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from orca_fixtures import THIRD_PARTY_YAML, synthetic_items, tiny_trained_checkpoint, write_jsonl

from aqua_tasks.runs.orca_items import orca_records, read_judge_samples
from orca_judge.cli.score import main as orca_score
from orca_judge.errors import OrcaMetricError
from orca_judge.metric.settings import OrcaMetricSettings, resolve_settings

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
N_QA = 6


def run_cli(*args: object, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **(env or {})}
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, env=full_env
    )


def results_of(folder: Path) -> dict:
    files = sorted(folder.rglob("results_*.json"))
    assert files, f"no results under {folder}"
    return json.loads(files[-1].read_text())


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> dict:
    """A judge, a third-party style task (aqua eval and plain-lm_eval forms), human items."""
    root = tmp_path_factory.mktemp("orca_metric")
    judge = tiny_trained_checkpoint()
    qa = write_jsonl(
        root / "qa.jsonl",
        [
            {"id": f"q{i}", "question": f"What is the bird singing {i}?", "answer": "the sun"}
            for i in range(N_QA)
        ],
    )
    for folder, name, metric in (
        ("tasks", "tiny_qa", "orca"),
        ("tasks", "tiny_qa_copy", "orca"),
        ("plain", "tiny_qa_plain", "!function eval_plugins.lm_eval.metric.orca"),
    ):
        (root / folder).mkdir(exist_ok=True)
        text = THIRD_PARTY_YAML.format(name=name, data=qa, metric=metric, checkpoint=judge)
        if folder == "plain":  # no run wrapper: the entry names where per-item files go
            text = text.replace(
                f"checkpoint: {judge}\n",
                f"checkpoint: {judge}\n    output_dir: {root / 'plain_items'}\n",
            )
        (root / folder / f"{name}.yaml").write_text(text)
    human = write_jsonl(root / "human.jsonl", synthetic_items(16, 7, "h"))
    # An ensemble of the judge and a copy nudged towards rating 5, named like any checkpoint.
    from orca_judge import OrcaJudge
    from orca_judge.checkpoint.ensemble import write_ensemble

    nudged = OrcaJudge.from_pretrained(judge)
    with torch.no_grad():
        nudged.model.head.bias[4] += 2.0
    write_ensemble([judge, nudged.save_pretrained(root / "nudged")], root / "ensemble")
    (root / "ens_tasks").mkdir()
    (root / "ens_tasks" / "tiny_qa_ens.yaml").write_text(
        THIRD_PARTY_YAML.format(name="tiny_qa_ens", data=qa, metric="orca",
                                checkpoint=root / "ensemble")
    )  # fmt: skip
    return {"root": root, "judge": judge, "qa": qa, "human": human}


@pytest.fixture(scope="module")
def runs(work) -> dict[str, subprocess.CompletedProcess]:
    """All lm-eval runs of this module, started together (each is mostly start-up time)."""
    root, judge, human = work["root"], work["judge"], work["human"]
    human_args = [
        "--model", "orca-replay", "--model_args", f"path={human}", "--tasks", "orca_human",
        "--metadata", json.dumps({"orca_data": str(human), "orca": {"checkpoint": str(judge)}}),
        "--log_samples",
    ]  # fmt: skip
    # The wrong-checkpoint run gets its own copy of the task, pointing at no judge.
    wrong_dir = root / "wrong_tasks"
    wrong_dir.mkdir()
    (wrong_dir / "tiny_qa.yaml").write_text(
        (root / "tasks" / "tiny_qa.yaml").read_text().replace(str(judge), str(root / "no-judge"))
    )
    commands = {
        "aqua": (
            [BIN / "aqua", "eval", "--model", "dummy", "--tasks", "tiny_qa,tiny_qa_copy",
             "--include_path", root / "tasks", "--output_path", root / "aqua", "--log_samples"],
            {},
        ),
        "plain": (
            [BIN / "lm_eval", "--model", "dummy", "--tasks", "tiny_qa_plain",
             "--include_path", root / "plain", "--output_path", root / "plain_run"],
            # The start-up hook off: plain lm-eval as it is, the metric through !function only.
            {"AQUA_LM_EVAL_HOOK": "0"},
        ),
        "human": ([BIN / "aqua", "eval", *human_args, "--output_path", root / "human"], {}),
        "predict": (
            [BIN / "aqua", "eval", *human_args, "--predict_only",
             "--output_path", root / "predict"],
            {},
        ),
        "ensemble": (
            [BIN / "lm_eval", "--model", "dummy", "--tasks", "tiny_qa_ens", "--include_path",
             root / "ens_tasks", "--output_path", root / "ens", "--log_samples"],
            {},
        ),
        # Plain lm_eval: the start-up hook checks the judge before any generation too.
        "wrong": (
            [BIN / "lm_eval", "--model", "dummy", "--tasks", "tiny_qa",
             "--include_path", wrong_dir, "--output_path", root / "wrong", "--log_samples"],
            {},
        ),
    }  # fmt: skip
    with ThreadPoolExecutor(len(commands)) as pool:
        futures = {k: pool.submit(run_cli, *args, env=env) for k, (args, env) in commands.items()}
        return {k: f.result() for k, f in futures.items()}


@pytest.fixture(scope="module")
def judge(work):
    from orca_judge import OrcaJudge

    return OrcaJudge.from_pretrained(work["judge"])


def _ok(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_settings_come_from_entry_then_metadata_and_only_the_checkpoint_from_environment():
    # Per-field variables are no settings: only ORCA_CHECKPOINT is read.
    env = {"ORCA_CHECKPOINT": "env-ckpt", "ORCA_BATCH_SIZE": "4", "ORCA_CLAMP": "off"}
    meta = {"orca": {"checkpoint": "meta-ckpt", "device": "cpu"}}
    s = resolve_settings({"metric": "orca", "checkpoint": "entry-ckpt", "clamp": "off"}, meta, env)
    assert (s.checkpoint, s.device, s.batch_size, s.clamp) == ("entry-ckpt", "cpu", None, False)
    assert resolve_settings({}, meta, env).clamp is True
    assert resolve_settings({}, meta, env).checkpoint == "meta-ckpt"
    assert resolve_settings({}, None, env).checkpoint == "env-ckpt"
    with pytest.raises(OrcaMetricError, match="no judge checkpoint"):
        resolve_settings({"metric": "orca"}, None, {})
    with pytest.raises(OrcaMetricError, match=r"unknown setting.*chekpoint"):
        resolve_settings({"chekpoint": "x"}, None, env)
    with pytest.raises(OrcaMetricError, match="batch_size"):
        resolve_settings({"batch_size": 0}, None, env)


def test_third_party_yaml_gets_orca_figures_from_one_pass_per_task_and_filter(runs, work, judge):
    _ok(runs["aqua"])
    results = results_of(work["root"] / "aqua")
    files = sorted((work["root"] / "aqua").rglob("orca_*.jsonl"))
    # Two tasks x two filters: one judge pass (and one per-item file) each.
    assert len(files) == 4
    for task in ("tiny_qa", "tiny_qa_copy"):
        for filter_name, reply in (("whole", "lol"), ("first_letter", "l")):
            (path,) = [p for p in files if p.name.startswith(f"orca_{task}_{filter_name}_")]
            rows = rows_of(path)
            assert [r["inputs"]["candidate"] for r in rows] == [reply] * N_QA
            assert all(r["seen"][0] == "question" for r in rows)
            records = [r["inputs"] for r in rows]
            preds = judge.score(records)
            assert [r["clamped_unit"] for r in rows] == pytest.approx(
                [p.clamped_unit for p in preds], abs=1e-5
            )
            got = results["results"][task]
            mean = sum(p.clamped_unit for p in preds) / N_QA
            assert got[f"orca,{filter_name}"] == pytest.approx(mean, abs=1e-5)
            var = sum(p.variance_unit for p in preds) / N_QA
            assert got[f"orca_disagreement,{filter_name}"] == pytest.approx(var, abs=1e-5)
            assert got[f"orca_with_question,{filter_name}"] == 1.0
    inputs = results["configs"]["tiny_qa"]["metadata"]["orca_inputs"]
    assert inputs["question"] == "doc.question if present, else doc_to_text"
    assert {r["inputs"]["question_from"] for r in rows_of(files[0])} == {"doc.question"}


def test_an_ensemble_folder_is_a_checkpoint_like_any_other_for_metric_orca(runs, work):
    from orca_judge import load_judge

    _ok(runs["ensemble"])
    ensemble = load_judge(work["root"] / "ensemble")
    got = results_of(work["root"] / "ens")["results"]["tiny_qa_ens"]
    (path,) = sorted((work["root"] / "ens").rglob("orca_tiny_qa_ens_whole_*.jsonl"))
    rows = rows_of(path)
    assert {r["judge"]["fingerprint"] for r in rows} == {ensemble.fingerprint()}
    preds = ensemble.score([r["inputs"] for r in rows])
    assert [r["expected"] for r in rows] == pytest.approx([p.expected for p in preds], abs=1e-5)
    assert got["orca,whole"] == pytest.approx(sum(p.clamped_unit for p in preds) / N_QA, abs=1e-5)
    assert got["orca_disagreement,whole"] == pytest.approx(
        sum(p.variance_unit for p in preds) / N_QA, abs=1e-5
    )


def test_plain_lm_eval_function_form_records_that_the_judge_saw_no_question(runs, work, judge):
    _ok(runs["plain"])
    assert "start-up hook" not in runs["plain"].stderr  # switched off: silent
    got = results_of(work["root"] / "plain_run")["results"]["tiny_qa_plain"]
    assert got["orca_with_question,whole"] == 0.0
    (path,) = sorted((work["root"] / "plain_items").glob("orca_tiny_qa_plain_whole_*.jsonl"))
    rows = rows_of(path)
    assert all(r["seen"] == ["reference", "candidate"] for r in rows)
    preds = judge.score([{"question": "", "reference": "the sun", "candidate": "lol"}] * N_QA)
    assert got["orca,whole"] == pytest.approx(preds[0].clamped_unit, abs=1e-5)


def test_human_task_and_predict_only_then_orca_score_give_the_same_numbers(runs, work, capsys):
    _ok(runs["human"])
    _ok(runs["predict"])
    got = results_of(work["root"] / "human")["results"]["orca_human"]
    (per_item,) = sorted((work["root"] / "human").rglob("orca_orca_human_none_*.jsonl"))
    (samples,) = sorted((work["root"] / "predict").rglob("samples_orca_human_*.jsonl"))
    assert not list((work["root"] / "predict").rglob("orca_*.jsonl"))  # nothing judged
    items = orca_records(
        read_judge_samples(samples).items, OrcaMetricSettings("-", ratings_field="ratings")
    )
    later = write_jsonl(work["root"] / "later.jsonl", items)
    # orca score's own entry point, in this process (the run above already paid for start-up).
    capsys.readouterr()
    args = ["--checkpoint", str(work["judge"]), "--input", str(later), "--json", "--no-progress"]
    assert orca_score(args) == 0
    scored = json.loads(capsys.readouterr().out)
    in_run = {r["id"]: r["clamped_unit"] for r in rows_of(per_item)}
    after = {p["id"]: p["clamped_unit"] for p in scored["predictions"]}
    assert after == pytest.approx(in_run, abs=1e-6)
    assert got["orca,none"] == pytest.approx(sum(after.values()) / len(after), abs=1e-6)
    assert got["orca_rho,none"] == pytest.approx(scored["report"]["clamped"]["rho"], abs=1e-6)
    assert got["orca_mae,none"] == pytest.approx(scored["report"]["clamped"]["mae_mu"], abs=1e-6)
    # The replayed answers are the rated candidates, and the judge follows the raters.
    assert [i["candidate"] for i in items] == [i["candidate"] for i in rows_of(work["human"])]
    assert got["orca_rho,none"] > 0.5


def test_wrong_checkpoint_fails_before_any_generation(runs, work):
    proc = runs["wrong"]
    # Plain lm_eval reports it as its own errors: a traceback, exit 1, before any generation.
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "no-judge" in proc.stderr.strip().splitlines()[-1]
    assert "task 'tiny_qa', metric orca" in proc.stderr
    assert "Running generate_until requests" not in proc.stderr
    assert not list((work["root"] / "wrong").rglob("samples_*.jsonl"))
