"""benchmarks/orca_seed_table.py on the tiny Llama: runs, figures from metrics.json, resume.

Two training seeds on one split of synthetic rated items, 4 steps each: the table's rows are
the held-out figures each checkpoint's metrics.json holds, a rerun reads the finished runs
instead of training again, and `--check` fails on a missed target.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from orca_fixtures import synthetic_items, tiny_llama_dir, write_jsonl

pytestmark = pytest.mark.slow
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "orca_seed_table.py"


def run_table(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(SCRIPT), "--config", str(tmp / "tiny.yaml"), "--data-dir",
               str(tmp / "data"), "--out", str(tmp / "runs"), "--seeds", "0", "1",
               "--split-seeds", "3", *args]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def tiny_recipe(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("seed_table")
    (tmp / "data").mkdir()
    write_jsonl(tmp / "data" / "train.jsonl", synthetic_items(48, 1, "t"))
    write_jsonl(tmp / "data" / "dev.jsonl", synthetic_items(40, 2, "d"))
    (tmp / "tiny.yaml").write_text(
        f"backbone: {tiny_llama_dir()}\nlikelihood: multinomial\nlora_r: 4\nlora_alpha: 4\n"
        "batch_size: 8\ngrad_accum: 1\nlr: 1.0e-3\nmax_steps: 4\nwarmup_steps: 1\n"
        "eval_every: 2\npatience: 0\ntrain: train.jsonl\ndev: dev.jsonl\n"
    )
    return tmp


@pytest.fixture(scope="module")
def first(tiny_recipe) -> dict:
    done = run_table(tiny_recipe, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_each_row_is_its_checkpoints_heldout_figures_with_time_and_memory(tiny_recipe, first):
    rows = first["runs"]
    assert [(r["split_seed"], r["seed"]) for r in rows] == [(3, 0), (3, 1)]
    for row in rows:
        folder = tiny_recipe / "runs" / f"split-3-seed-{row['seed']}"
        heldout = json.loads((folder / "metrics.json").read_text())["heldout"]
        assert row["items"] == heldout["items"] > 0
        for name in ("rho", "tau", "mae_mu", "mae_var"):
            assert row[name] == pytest.approx(heldout["raw"][name])
        assert row["wall_s"] > 0 and row["peak_rss_mb"] > 50 and row["resumed"] is False
    # Two seeds train two different judges (LoRA init and data order differ).
    assert rows[0]["mae_mu"] != rows[1]["mae_mu"]
    total = first["summary"]["all"]
    rhos = [r["rho"] for r in rows]
    assert total["runs"] == 2 and total["worst_rho"] == min(rhos)
    assert total["spread_rho"] == pytest.approx(max(rhos) - min(rhos))
    assert total["worst_mae_mu"] == max(r["mae_mu"] for r in rows)
    assert first["summary"]["split 3"] == total


def test_a_rerun_reads_the_finished_runs_and_check_fails_on_a_missed_target(tiny_recipe, first):
    logs = sorted((tiny_recipe / "runs").glob("*.log"))
    sizes = [p.stat().st_size for p in logs]
    done = run_table(tiny_recipe, "--json", "--check", "--target-rho", "1.01")
    assert done.returncode == 1, done.stderr
    again = json.loads(done.stdout)
    assert again["runs"] == first["runs"]  # read, not trained again: same figures and times
    assert [p.stat().st_size for p in logs] == sizes
    assert again["missed"][0].startswith("worst ρ ") and again["missed"][0].endswith("< 1.01")
    table = run_table(tiny_recipe, "--max-spread", "1", "--target-rho", "-1", "--check")
    assert table.returncode == 0 and "| 3 | 1 |" in table.stdout
    assert table.stdout.strip().endswith("targets met")


def test_a_record_of_another_recipe_is_refused_not_reused(tiny_recipe, first, tmp_path):
    changed = tmp_path / "tiny.yaml"
    changed.write_text((tiny_recipe / "tiny.yaml").read_text().replace("lr: 1.0e-3", "lr: 2.0e-3"))
    done = run_table(tiny_recipe, "--config", str(changed))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()[-1:]
    assert "split-3-seed-0.json: made by another recipe (config_sha256 " in line
    assert line.endswith("use another --out")


def test_runs_on_other_training_data_train_again(tiny_recipe, tmp_path):
    """Same config, flags and data folder, one training item more: neither a committed row nor
    a run record of the old data is reused."""
    data = tmp_path / "data"
    shutil.copytree(tiny_recipe / "data", data)
    results = tmp_path / "results.json"
    common = ("--data-dir", str(data), "--results", str(results), "--seeds", "0")
    assert run_table(tiny_recipe, "--out", str(tmp_path / "a"), *common).returncode == 0
    write_jsonl(data / "train.jsonl", synthetic_items(49, 1, "t"))
    done = run_table(tiny_recipe, "--out", str(tmp_path / "b"), *common)
    assert done.returncode == 0 and "training split 3 seed 0" in done.stderr
    assert len(json.loads(results.read_text())["runs"]) == 2  # one row per data
    stale = run_table(tiny_recipe, "--out", str(tmp_path / "a"), *common)
    assert stale.returncode != 0 and "Traceback" not in stale.stderr
    line = stale.stderr.strip().splitlines()[-1]
    assert "split-3-seed-0.json: made by another recipe (training_data {'main': {'train': " in line


def test_a_missing_data_file_or_a_flag_the_table_sets_is_one_line(tiny_recipe, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.jsonl").write_bytes(
        (tiny_recipe / "data" / "train.jsonl").read_bytes()
    )
    done = run_table(
        tiny_recipe, "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "o")
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "cannot read " in done.stderr and "dev.jsonl" in done.stderr.strip().splitlines()[-1]
    for extra in (["--seed", "5"], ["--train=other.jsonl"]):
        done = run_table(tiny_recipe, "--out", str(tmp_path / "o"), "--", *extra)
        flag = extra[0].split("=")[0]
        assert (
            done.returncode == 2 and f"{flag} after --: give it as the table's own" in done.stderr
        )


def test_a_truncated_record_is_one_line_naming_it(tiny_recipe, first, tmp_path):
    out = tmp_path / "runs"
    out.mkdir()
    (out / "split-3-seed-0.json").write_text('{"recipe": {"con')
    done = run_table(tiny_recipe, "--out", str(out))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "split-3-seed-0.json: unreadable record" in done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target-rho", "nan", "--check"], "--target-rho: expected a finite number"),
        (["--max-spread", "inf"], "--max-spread: expected a finite number"),
    ],
)
def test_a_nan_target_is_refused_before_any_training(tiny_recipe, tmp_path, args, message):
    done = run_table(tiny_recipe, "--out", str(tmp_path / "fresh"), *args)
    assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "fresh").exists()


def test_out_naming_a_file_is_refused(tiny_recipe, tmp_path):
    (tmp_path / "file").write_text("")
    done = run_table(tiny_recipe, "--out", str(tmp_path / "file"))
    assert done.returncode == 2 and "a file, not a folder" in done.stderr


def test_results_keep_finished_runs_across_sittings(tiny_recipe, first, tmp_path):
    results = tmp_path / "orca_seed_table.json"
    assert run_table(tiny_recipe, "--results", str(results)).returncode == 0
    rows = json.loads(results.read_text())["runs"]
    assert [(r["recipe"]["split_seed"], r["recipe"]["seed"]) for r in rows] == [(3, 0), (3, 1)]
    assert all(r["recipe"]["config_sha256"] and r["items"] > 0 for r in rows)
    # A fresh checkout: no run folder, only the committed rows; nothing is trained again.
    done = run_table(tiny_recipe, "--out", str(tmp_path / "empty"), "--results", str(results),
                     "--json")  # fmt: skip
    assert done.returncode == 0 and "training" not in done.stderr
    assert [r["rho"] for r in json.loads(done.stdout)["runs"]] == [r["rho"] for r in rows]
    # An edited row is refused, naming the file and run.
    rows[1]["rho"] = 7
    results.write_text(json.dumps({"runs": rows}))
    done = run_table(tiny_recipe, "--out", str(tmp_path / "empty"), "--results", str(results))
    assert done.returncode != 0 and "run 2: rho missing or out of range" in done.stderr


def test_a_run_is_resumed_when_its_run_state_or_a_curriculum_stage_was_left(tmp_path):
    """A curriculum interrupted in an earlier stage leaves only `<run>-stages/`: its wall time
    is then a part's, and the row must say so (it once read as a whole run)."""
    spec = importlib.util.spec_from_file_location("orca_seed_table", SCRIPT)
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    folder = tmp_path / "split-1-seed-1"
    assert table.started_before(folder) is False
    (tmp_path / "split-1-seed-1-stages").mkdir()
    assert table.started_before(folder) is False  # an empty folder holds no work
    (tmp_path / "split-1-seed-1-stages" / "s0-synthetic-run").mkdir()
    assert table.started_before(folder) is True
    other = tmp_path / "split-1-seed-2"
    (tmp_path / "split-1-seed-2-run").mkdir()
    assert table.started_before(other) is True
