"""lmms-eval's loggers record the judge figures as lmms-eval saved and printed them.

lmms-eval 0.7.3 hands the W&B logger the results dict `cli_evaluate_single` returned, after
its `EvaluationTracker` saved the same dict; ORCA's figures are in it from the aggregation
(there is no results step of ours under lmms-eval, and no pooled `aqua` row: see
docs/lmms_eval.md). One run with `--wandb_args mode=offline` and `--hf_hub_log_args
push_*_to_hub=False` (a Hub token set, the Hub switched off) is read back here. Not
`--wandb_log_samples`: lmms-eval's tracker removes each sample's `arguments` while saving
it, before the W&B logger reads them, so that logger fails on every generation task (and
says so at INFO level only).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from conftest import lmms_eval, lmms_results
from orca_fixtures import tiny_trained_checkpoint

pytest.importorskip("wandb")  # the `wandb` extra; scripts/install-lmms-eval-env.sh installs it
TASKS_DIR = Path(__file__).parent / "tasks"
N_ITEMS = 4
JUDGE_FIGURES = ("orca", "orca_disagreement", "orca_with_question", "orca_rho")


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory, orca_human_dev) -> dict:
    """One lmms-eval run of a task judged by ORCA, with W&B offline and the Hub tracker local."""
    root = tmp_path_factory.mktemp("lmms_loggers")
    tasks = root / "tasks"
    tasks.mkdir()
    for name in ("orca_lmms.yaml", "utils.py"):
        shutil.copyfile(TASKS_DIR / name, tasks / name)
    items = orca_human_dev.read_text().splitlines()[:N_ITEMS]
    (tasks / "items.jsonl").write_text("\n".join(items) + "\n")
    wandb_dir = root / "wandb"
    env = {
        "ORCA_CHECKPOINT": str(tiny_trained_checkpoint()),
        # A nightly job's Hub token: with pushing off, the tracker must not use it.
        "HF_TOKEN": "hf_not_a_real_token",
        "WANDB_MODE": "offline",
        "WANDB_CONFIG_DIR": str(wandb_dir / "config"),
        "WANDB_CACHE_DIR": str(wandb_dir / "cache"),
        "WANDB_DATA_DIR": str(wandb_dir / "data"),
    }
    proc = lmms_eval(
        "--model", "orca-replay", "--model_args", f"path={tasks / 'items.jsonl'}",
        "--tasks", "orca_lmms", "--include_path", tasks,
        "--output_path", root / "out", "--log_samples",
        "--wandb_args", f"project=aqua-nightly,name=nightly,mode=offline,dir={wandb_dir}",
        "--hf_hub_log_args",
        "hub_results_org=aqua-ci,details_repo_name=aqua-details,"
        "push_results_to_hub=False,push_samples_to_hub=False",
        env=env,
    )  # fmt: skip
    (root / "output.txt").write_text(proc.stdout + proc.stderr)  # for a failure's reader
    from wandb_runs import read_offline_run

    return {
        "proc": proc,
        "saved": lmms_results(root / "out"),
        "wandb": read_offline_run(wandb_dir),
    }


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def test_wandb_records_the_judge_figures_lmms_eval_saved(logged_run):
    saved, run = logged_run["saved"]["results"]["orca_lmms"], logged_run["wandb"]
    for figure in JUDGE_FIGURES:
        # lmms-eval's W&B logger drops the default filter's ",none" from every key.
        assert same(run.summary[f"orca_lmms/{figure}"], saved[f"{figure},none"]), figure
        assert run.summary[f"orca_lmms/{figure}_stderr"] == saved[f"{figure}_stderr,none"]
    assert 0 < run.summary["orca_lmms/orca"] < 1
    rows = {r["Metric"]: r for r in run.tables["evaluation/eval_results"]}
    for figure in JUDGE_FIGURES:
        assert rows[figure]["Value"] == str(saved[f"{figure},none"])
        assert rows[figure]["Stderr"] == "N/A"  # the judge never runs again for a stderr
    logged = json.loads(run.artifacts["results"]["results.json"].read_text())
    assert logged["results"] == logged_run["saved"]["results"]


def test_printed_table_shows_the_figures_wandb_recorded(logged_run):
    printed = logged_run["proc"].stdout
    run = logged_run["wandb"]
    for figure in ("orca", "orca_disagreement"):
        value = run.summary[f"orca_lmms/{figure}"]
        assert f"|{figure}" in printed.replace(" ", "") and f"{value:.4f}" in printed, figure


def test_hub_tracker_writes_locally_and_reaches_for_no_hub(logged_run):
    output = logged_run["proc"].stdout + logged_run["proc"].stderr
    assert "Logging to Weights and Biases failed" not in output  # said at INFO level only
    assert "Could not save" not in output and "pushed" not in output.lower()
    assert {f"{f},none" for f in JUDGE_FIGURES} <= set(logged_run["saved"]["results"]["orca_lmms"])
