"""lm-eval's loggers record what our results step wrote: W&B offline, the Hub tracker locally.

lm-eval's `run` command hands the dict `simple_evaluate` returns (after our `evaluate()`
wrapper pooled the all-tracks rows and ORCA aggregated its figures) to the W&B logger and to
the `EvaluationTracker`, then prints its tables from the same dict. One plain `lm_eval` run
with `--wandb_args mode=offline` and `--hf_hub_log_args push_*_to_hub=False` (a Hub token
set, the Hub switched off) is read back here: what W&B recorded, the tracker's results file
and the printed table must agree on every figure.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from orca_fixtures import tiny_trained_checkpoint, write_jsonl

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
CLIPS = 10  # per track
# aqua-random answers a seeded random option: some Solvable items right, so CAs are defined.
SEED = 3
TRACK_TASKS = ("aqua_animal", "aqua_music", "aqua_vocal")
JUDGE_FIGURES = ("orca", "orca_disagreement", "orca_with_question")

USER_TASK = """\
task: my_qa
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Q: {{{{question}}}}\\nA:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: []
  max_gen_toks: 16
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
  - metric: orca
    checkpoint: {checkpoint}
metadata:
  version: 1.0
"""


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory, released_dir) -> dict:
    """One plain `lm_eval` run: AQUA's tracks and a user task judged by ORCA, both loggers on."""
    pytest.importorskip("wandb")  # the `wandb` extra, part of `test`
    root = tmp_path_factory.mktemp("loggers")
    qa = [
        {
            "id": f"q{i}",
            "question": f"What is the bird singing {i}?",
            "answer": "the sun",
            "options": ["a cough", "the sun"],
        }
        for i in range(3)
    ]
    tasks = root / "tasks"
    tasks.mkdir()
    data = write_jsonl(root / "qa.jsonl", qa)
    (tasks / "my_qa.yaml").write_text(
        USER_TASK.format(data=data, checkpoint=tiny_trained_checkpoint())
    )
    wandb_dir = root / "wandb"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        # A nightly job's Hub token: with pushing off, the tracker must not use it.
        "HF_TOKEN": "hf_not_a_real_token",
        "WANDB_MODE": "offline",
        "WANDB_CONFIG_DIR": str(wandb_dir / "config"),
        "WANDB_CACHE_DIR": str(wandb_dir / "cache"),
        "WANDB_DATA_DIR": str(wandb_dir / "data"),
    }
    args = [
        BIN / "lm_eval", "--model", "aqua-random", "--model_args", f"seed={SEED}",
        "--tasks", "aqua_*,my_qa", "--include_path", tasks, "--limit", 4 * CLIPS,
        "--metadata", json.dumps({"data_dir": str(released_dir), "audio": False}),
        "--log_samples", "--output_path", root / "out",
        "--wandb_args", f"project=aqua-nightly,name=nightly,mode=offline,dir={wandb_dir}",
        "--hf_hub_log_args",
        "hub_results_org=aqua-ci,details_repo_name=aqua-details,"
        "push_results_to_hub=False,push_samples_to_hub=False",
    ]  # fmt: skip
    proc = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, env=env
    )
    (root / "stdout.txt").write_text(proc.stdout)  # what lm-eval printed, for a failure's reader
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    (results_file,) = sorted((root / "out").rglob("results_*.json"))
    return {
        "proc": proc,
        "saved": json.loads(results_file.read_text()),
        "results_file": results_file,
        "wandb_dir": wandb_dir,
    }


@pytest.fixture(scope="module")
def wandb_run(logged_run):
    from wandb_runs import read_offline_run

    return read_offline_run(logged_run["wandb_dir"])


def printed_rows(stdout: str) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(row name, filter, metric) -> (value, stderr) of lm-eval's printed Markdown tables."""
    rows, name = {}, ""
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 9 or cells[0] in ("Tasks", "Groups") or set(cells[2]) <= {"-", ":"}:
            continue  # not a row, a header or the line under it
        name = cells[0].lstrip("- ") or name
        rows[(name, cells[2], cells[4])] = (cells[6], cells[8])
    return rows


def figures(row: dict) -> dict[str, object]:
    """`metric,filter` -> value of one results row (no alias, name or sample_len)."""
    return {k: v for k, v in row.items() if "," in k}


def wandb_key(task: str, key: str) -> str:
    # lm-eval's W&B logger drops the default filter's ",none" from every key.
    return f"{task}/{key.removesuffix(',none')}"


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def test_wandb_records_every_figure_of_the_saved_results(logged_run, wandb_run):
    saved = logged_run["saved"]["results"]
    assert set(saved) == {*TRACK_TASKS, "my_qa", "aqua"}
    for task, row in saved.items():
        for key, value in figures(row).items():
            recorded = wandb_run.summary[wandb_key(task, key)]
            assert same(recorded, value), (task, key, recorded, value)
    pooled = saved["aqua"]
    # Our rows, not lm-eval's: pooled counts as integers, a standard error for every rate.
    assert wandb_run.summary["aqua/n_items"] == 3 * 4 * CLIPS
    assert wandb_run.summary["aqua/n_ca_aad"] == sum(saved[t]["n_ca_aad,none"] for t in TRACK_TASKS)
    assert isinstance(wandb_run.summary["aqua/ca_aad_stderr"], float)
    assert "aqua/n_items_stderr" not in wandb_run.summary
    # Pooled over clips: Σ right / Σ conditioned, which no mean of the tracks' CAs gives here.
    n_ca = [saved[t]["n_ca_aad,none"] for t in TRACK_TASKS]
    right = sum(saved[t]["ca_aad,none"] * n for t, n in zip(TRACK_TASKS, n_ca, strict=True))
    assert wandb_run.summary["aqua/ca_aad"] == pytest.approx(right / sum(n_ca))
    assert wandb_run.summary["aqua/ca_aad"] != pytest.approx(
        sum(saved[t]["ca_aad,none"] for t in TRACK_TASKS) / 3
    )
    assert pooled["alias"] == wandb_run.summary["aqua/alias"]
    for figure in JUDGE_FIGURES:
        assert wandb_run.history[f"my_qa/{figure}"] == saved["my_qa"][f"{figure},none"]
    assert 0 < wandb_run.summary["my_qa/orca"] < 1


def test_wandb_tables_and_printed_tables_show_the_same_rows(logged_run, wandb_run):
    printed = printed_rows(logged_run["proc"].stdout)
    saved = logged_run["saved"]
    alias = saved["results"]["aqua"]["alias"]
    groups = wandb_run.tables["evaluation/group_eval_results"]
    tasks = wandb_run.tables["evaluation/eval_results"]
    assert {r["Groups"] for r in groups} == {"aqua"}
    assert {r["Tasks"] for r in tasks} == {*TRACK_TASKS, "my_qa"}
    logged = [(r["Groups"], r) for r in groups] + [(r["Tasks"], r) for r in tasks]
    checked = 0
    for task, row in logged:
        if row["Metric"] in ("name", "sample_len"):  # lm-eval logs them, never prints them
            continue
        key = (alias if task == "aqua" else task, row["Filter"], row["Metric"])
        value, stderr = printed[key]
        want = saved["results"][task][f"{row['Metric']},{row['Filter']}"]
        assert row["Value"] == str(want), key
        # lm-eval's own table formatting (4 decimals; pytablewriter may re-format a column).
        if isinstance(want, int | float):
            assert round(float(value), 4) == round(want, 4), key
        else:
            assert value == str(want), key
        logged_stderr = row["Stderr"].strip()
        if logged_stderr.replace(".", "", 1).isdigit():
            assert round(float(stderr), 4) == round(float(logged_stderr), 4), key
        else:
            assert logged_stderr == stderr, key
        checked += 1
    assert checked == len(printed)
    assert any(m == "orca" for _, _, m in printed) and any(t == alias for t, _, _ in printed)


def test_wandb_results_artifact_is_the_saved_results(logged_run, wandb_run):
    # lm-eval logs the whole results dict as the artifact `results`.
    logged = json.loads(wandb_run.artifacts["results"]["results.json"].read_text())
    saved = logged_run["saved"]
    for part in ("results", "groups", "group_subtasks", "higher_is_better", "versions"):
        assert json.dumps(logged[part], sort_keys=True) == json.dumps(saved[part], sort_keys=True)


def test_hub_tracker_writes_our_rows_locally_and_reaches_for_no_hub(logged_run):
    proc, saved = logged_run["proc"], logged_run["saved"]
    assert "Logging to W&B failed" not in proc.stderr  # lm-eval says so at INFO level only
    assert "Could not save" not in proc.stderr and "Hugging Face Hub" not in proc.stderr
    assert "pushed" not in proc.stderr.lower()
    pooled = saved["results"]["aqua"]
    assert saved["groups"]["aqua"] == pooled
    assert pooled["n_items,none"] == 3 * 4 * CLIPS and isinstance(pooled["acc_stderr,none"], float)
    assert saved["group_subtasks"]["aqua"] == list(TRACK_TASKS)
    assert {f"{f},none" for f in JUDGE_FIGURES} <= set(saved["results"]["my_qa"])
    # The tracker's task hashes come from the samples it was given, our per-item judge file
    # lies beside its samples, and our table was printed after lm-eval's.
    assert set(saved["task_hashes"]) == {*TRACK_TASKS, "my_qa"}
    folder = logged_run["results_file"].parent
    assert len(list(folder.glob("samples_*.jsonl"))) == 4
    assert len(list(folder.glob("orca_my_qa_none_*.jsonl"))) == 1
    assert "|aqua (animal+music+vocal pooled over clips)|" in proc.stdout


def test_wandb_args_without_wandb_installed_is_a_one_line_error(monkeypatch):
    from aqua_tasks.errors import LoggerUnavailable
    from eval_plugins.lm_eval.cli_run import check_loggers

    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` fails
    with pytest.raises(LoggerUnavailable, match=re.escape("pip install 'aqua-bench-eval[wandb]'")):
        check_loggers("project=p")
    check_loggers(None)
