"""`metric: orca` under a real `lmms-eval` command line, with the tiny offline judge.

One shared CLI run (module fixture) over two test tasks built from ORCA human-rated dev items:
`orca_lmms` (docs have `question`; metric_list only) and `orca_lmms_own` (its own
process_results; docs have no `question`, so the judge's question is the rendered prompt).
`orca-replay` answers with the rated candidates, so the judge's per-item scores must equal
scoring the same items with OrcaJudge directly.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from orca_fixtures import tiny_trained_checkpoint

from eval_plugins.startup_hook import ENV_SWITCH, LMMS_TRIGGERS, LmEvalImportHook

TASKS_DIR = Path(__file__).parent / "tasks"
N_ITEMS = 6
LMMS_EVAL = str(Path(sys.executable).parent / "lmms-eval")
GENERATION_STARTED = "Running generate_until requests"


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory, orca_human_dev) -> Path:
    """The test task YAMLs with their docs: the first ORCA dev items (and without `question`)."""
    folder = tmp_path_factory.mktemp("lmms_tasks")
    for path in TASKS_DIR.iterdir():
        if path.suffix in (".yaml", ".py"):
            shutil.copyfile(path, folder / path.name)
    rows = [json.loads(line) for line in orca_human_dev.read_text().splitlines()[:N_ITEMS]]
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    renamed = [{**{k: v for k, v in r.items() if k != "question"}, "prompt_text": r["question"]}
               for r in rows]  # fmt: skip
    (folder / "items_no_question.jsonl").write_text("".join(json.dumps(r) + "\n" for r in renamed))
    return folder


def run_lmms_eval(task_dir: Path, out: Path, checkpoint: str) -> subprocess.CompletedProcess:
    env = {
        **{k: v for k, v in os.environ.items() if k != ENV_SWITCH},
        "ORCA_CHECKPOINT": checkpoint,
    }
    cmd = [
        LMMS_EVAL, "--model", "orca-replay", "--model_args", f"path={task_dir / 'items.jsonl'}",
        "--tasks", "orca_lmms,orca_lmms_own", "--include_path", str(task_dir),
        "--output_path", str(out), "--log_samples",
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)


@pytest.fixture(scope="module")
def judge() -> Path:
    return tiny_trained_checkpoint()


@pytest.fixture(scope="module")
def run(task_dir, judge, tmp_path_factory) -> dict:
    """One lmms-eval run of both tasks: its results, samples and per-item judge files."""
    out = tmp_path_factory.mktemp("lmms_out")
    proc = run_lmms_eval(task_dir, out, str(judge))
    results = sorted(out.glob("*/*_results.json"))
    assert proc.returncode == 0 and results, proc.stdout[-3000:] + proc.stderr[-5000:]
    folder = results[0].parent

    def rows(pattern: str) -> list[list[dict]]:
        return [
            [json.loads(line) for line in p.read_text().splitlines()]
            for p in sorted(folder.glob(pattern))
        ]

    return {
        "results": json.loads(results[0].read_text()),
        "per_item": {t: rows(f"orca_{t}_none_*.jsonl") for t in ("orca_lmms", "orca_lmms_own")},
        "samples": {t: rows(f"*_samples_{t}.jsonl")[0] for t in ("orca_lmms", "orca_lmms_own")},
        "output": proc.stdout + proc.stderr,
        "folder": folder,
    }


@pytest.fixture(scope="module")
def direct(judge, task_dir) -> dict:
    """The same items scored by OrcaJudge directly (as orca score does), by id."""
    from orca_judge.judge import OrcaJudge

    records = [json.loads(line) for line in (task_dir / "items.jsonl").read_text().splitlines()]
    predictions = OrcaJudge.from_pretrained(str(judge), device="cpu").score(records)
    return {r["id"]: p for r, p in zip(records, predictions, strict=True)}


def test_judge_scores_equal_scoring_the_items_directly(run, direct):
    expected = sum(p.clamped_unit for p in direct.values()) / N_ITEMS
    disagreement = sum(p.variance_unit for p in direct.values()) / N_ITEMS
    for task in ("orca_lmms", "orca_lmms_own"):
        figures = run["results"]["results"][task]
        assert figures["orca,none"] == pytest.approx(expected, abs=1e-5)
        assert figures["orca_disagreement,none"] == pytest.approx(disagreement, abs=1e-5)
        assert figures["orca_with_question,none"] == 1.0
        assert figures["orca_stderr,none"] == "N/A"  # the judge never runs again for a stderr
        (rows,) = run["per_item"][task]
        assert {r["inputs"]["id"]: r["orca"] for r in rows} == pytest.approx(
            {i: p.clamped_unit for i, p in direct.items()}, abs=1e-5
        )
    # ratings_field: agreement with the human ratings, from the same pass.
    assert not math.isnan(run["results"]["results"]["orca_lmms"]["orca_rho,none"])


def test_one_judge_pass_per_task_and_filter(run):
    for task, passes in run["per_item"].items():
        assert len(passes) == 1, task  # a pass writes its per-item file once
        assert [r["index"] for r in passes[0]] == list(range(N_ITEMS))
        assert {r["filter"] for r in passes[0]} == {"none"}


def test_the_question_the_judge_saw_is_recorded(run, task_dir):
    docs = [json.loads(line) for line in (task_dir / "items.jsonl").read_text().splitlines()]
    questions = {d["id"]: d["question"] for d in docs}
    sources = {"orca_lmms": "doc.question", "orca_lmms_own": "doc_to_text"}
    for task, source in sources.items():
        (rows,) = run["per_item"][task]
        assert {r["inputs"]["id"]: r["inputs"]["question"] for r in rows} == questions
        assert {r["inputs"]["question_from"] for r in rows} == {source}
        assert all("question" in r["seen"] for r in rows)
        sample = run["samples"][task][0]
        assert sample["orca"]["inputs"]["question_from"] == source
    recorded = run["results"]["configs"]["orca_lmms"]["metadata"]["orca_inputs"]
    assert recorded["question"] == "doc.question if present, else doc_to_text"
    assert recorded["form"].startswith("doc-aware (lmms-eval")


def test_a_task_with_its_own_process_results_keeps_it_and_gets_orca(run, task_dir):
    docs = [json.loads(line) for line in (task_dir / "items.jsonl").read_text().splitlines()]
    words = sum(len(d["candidate"].split()) for d in docs) / N_ITEMS
    figures = run["results"]["results"]["orca_lmms_own"]
    assert figures["reply_words,none"] == pytest.approx(words)
    assert "orca,none" in figures


def test_a_bad_checkpoint_fails_before_generation_with_one_line(task_dir, tmp_path):
    proc = run_lmms_eval(task_dir, tmp_path, str(tmp_path / "no-such-judge"))
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("lmms-eval: error: task 'orca_lmms")
    assert "cannot load ORCA judge checkpoint" in last and "no-such-judge" in last
    assert GENERATION_STARTED not in proc.stdout + proc.stderr
    assert not list(tmp_path.glob("*/*_results.json"))


PROBE = (
    "import json, sys; "
    "print(json.dumps(any(type(f).__name__ == 'LmEvalImportHook' for f in sys.meta_path)))"
)


def test_the_switch_turns_the_hook_off_for_lmms_eval_too():
    # The metric resolving from the YAML in the shared run above is the switch-on case.
    env = {k: v for k, v in os.environ.items() if k != ENV_SWITCH}
    watching = []
    for value in (None, "0"):
        probe_env = env if value is None else {**env, ENV_SWITCH: value}
        proc = subprocess.run(
            [sys.executable, "-c", PROBE], capture_output=True, text=True, env=probe_env, check=True
        )
        watching.append(json.loads(proc.stdout))
    assert watching == [True, False]


def test_an_unsupported_lmms_eval_version_is_a_no_op_with_one_warning(monkeypatch, caplog):
    from eval_plugins.lmms_eval import compat
    from eval_plugins.lmms_eval import plugin as lmms_eval_plugin

    called = []
    monkeypatch.setattr(compat, "lmms_eval_version", lambda: "0.7.99")
    for action in LMMS_TRIGGERS.values():
        monkeypatch.setattr(lmms_eval_plugin, action, called.append)
    hook = LmEvalImportHook()
    with caplog.at_level(logging.WARNING, logger="eval_plugins.startup_hook"):
        for name in LMMS_TRIGGERS:
            hook.fire(name, types.ModuleType(name))
    assert called == [] and not hook.pending
    messages = [r.getMessage() for r in caplog.records]
    (warning,) = [m for m in messages if "start-up hook is off" in m]
    assert (
        "lmms-eval 0.7.99 is not a version this package supports (==0.7.3, tested with 0.7.3)"
        in warning
    )


def test_aqua_regress_and_the_orca_report_read_the_lmms_eval_run_with_its_judge_files(
    run, tmp_path
):
    # The per-item judge files (orca_*.jsonl) are this run's, not another harness's.
    folder = run["folder"]
    regress = subprocess.run(
        [str(Path(sys.executable).parent / "aqua"), "regress", "--baseline", str(folder),
         "--candidate", str(folder), "--json", "--no-progress"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert regress.returncode == 0, regress.stderr[-2000:]
    out = json.loads(regress.stdout)
    assert out["status"] == "ok" and out["baseline"]["harness"] == "lmms-eval"
    assert {c["task"] for c in out["comparisons"] if c["metric"] == "orca,none"} == {
        "orca_lmms",
        "orca_lmms_own",
    }
    report = subprocess.run(
        [str(Path(sys.executable).parent / "aqua"), "report", "--orca-run", str(folder),
         "--out", str(tmp_path / "report")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr[-2000:]
    # With its chart: the environment has the plot extra (matplotlib).
    for name in ("orca_calibration_orca_lmms.md", "orca_calibration_orca_lmms.png"):
        assert (tmp_path / "report" / name).stat().st_size > 0


def test_no_checkpoint_under_lmms_eval_names_the_task_yamls_metadata(task_dir, tmp_path):
    proc = run_lmms_eval(task_dir, tmp_path, "")
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert "no judge checkpoint" in last and "--metadata" not in last
    assert "`metadata: {orca: {checkpoint: ...}}` in the task YAML or ORCA_CHECKPOINT" in last
