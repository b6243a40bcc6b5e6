"""The same model run through `lm_eval` and `lmms-eval`: aqua score, aqua report and
aqua regress read both logs to the same numbers, and find the two runs comparable.

Runs in the lmms-eval environment (`python -m pytest -q tests_lmms`): one real run per harness
of `aqua-random` (the same seeded replies under both) on the first 8 items of each main track.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from aqua_tasks.audio.clips import canonical_relpath
from aqua_tasks.cli import regress as cli_regress
from aqua_tasks.cli import report as cli_report
from aqua_tasks.cli import score as cli_score
from aqua_tasks.core.data import TRACKS, load_items
from eval_plugins.lmms_eval.aqua import include_path

BIN = Path(sys.executable).parent
LIMIT = 8
TASKS = ",".join(f"aqua_{t}" for t in TRACKS)
MODEL = ("--model", "aqua-random", "--model_args", "seed=3")


def run(*args: object, env: dict | None = None) -> None:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"} | (env or {})
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, env=full_env
    )
    assert done.returncode == 0, f"{args[0]}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


@pytest.fixture(scope="module")
def data(released_dir) -> Path:
    return released_dir


@pytest.fixture(scope="module")
def audio(tmp_path_factory, data) -> Path:
    """0.5 s tones at the clip paths of the items the runs evaluate."""
    root = tmp_path_factory.mktemp("audio")
    tone = 0.1 * np.sin(2 * np.pi * 440 * np.arange(8000) / 16000)
    for track in TRACKS:
        for item in load_items(data, track)[:LIMIT]:
            path = root / canonical_relpath(track, item.audio_filename)
            path.parent.mkdir(parents=True, exist_ok=True)
            sf.write(path, tone, 16000)
    return root


@pytest.fixture(scope="module")
def lm_eval_run(tmp_path_factory, data, audio) -> Path:
    out = tmp_path_factory.mktemp("lm-eval")
    metadata = json.dumps({"data_dir": str(data), "audio_root": str(audio)})
    run(BIN / "lm_eval", *MODEL, "--tasks", TASKS, "--limit", LIMIT, "--metadata", metadata,
        "--log_samples", "--output_path", out)  # fmt: skip
    return out


@pytest.fixture(scope="module")
def lmms_run(tmp_path_factory, data, audio) -> Path:
    out = tmp_path_factory.mktemp("lmms-eval")
    env = {"AQUA_METADATA": json.dumps({"data_dir": str(data), "audio_root": str(audio)})}
    run(BIN / "lmms-eval", "--include_path", include_path(), *MODEL, "--tasks", TASKS,
        "--limit", LIMIT, "--log_samples", "--output_path", out, "--verbosity", "DEBUG",
        env=env)  # fmt: skip
    return out


def score(capsys, *args: object) -> dict:
    assert cli_score.main([*map(str, args), "--json", "--n-boot", "200", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


def test_aqua_score_gives_both_harnesses_logs_the_same_numbers(lm_eval_run, lmms_run, data, capsys):
    lm_eval = score(capsys, lm_eval_run)
    lmms = score(capsys, lmms_run, "--data-dir", data)
    assert (lm_eval["harness"], lmms["harness"]) == ("lm-eval", "lmms-eval")
    assert lmms["results"] == lm_eval["results"] and lmms["intervals"] == lm_eval["intervals"]
    assert lmms["results"]["aqua"]["n_items"] == 3 * LIMIT
    # The figures lmms-eval computed in the run are the ones read back from its log.
    (path,) = lmms_run.rglob("*_results.json")
    recorded = json.loads(path.read_text())["results"]
    for task in TASKS.split(","):
        assert recorded[task]["acc,none"] == lmms["results"][task]["acc"]
        assert recorded[task]["n_items,none"] == LIMIT


def test_aqua_report_rows_agree_and_name_their_harness(
    lm_eval_run, lmms_run, data, tmp_path, capsys
):
    args = [str(lm_eval_run), str(lmms_run), "--data-dir", str(data), "--no-chart", "--json"]
    assert cli_report.main([*args, "--n-boot", "200", "--out", str(tmp_path)]) == 0
    lm_eval, lmms = json.loads(capsys.readouterr().out)["rows"]
    assert (lm_eval["harness"], lmms["harness"]) == ("lm-eval", "lmms-eval")
    assert lm_eval["cells"] == lmms["cells"]


def test_aqua_regress_finds_the_two_harnesses_runs_comparable_and_equal(
    lm_eval_run, lmms_run, data, capsys
):
    args = ["--baseline", str(lm_eval_run), "--candidate", str(lmms_run), "--data-dir", str(data)]
    assert cli_regress.main([*args, "--json", "--n-boot", "200", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "ok" and out["reason"] is None
    assert out["candidate"]["harness"] == "lmms-eval"
    assert all(c["delta_points"] == 0 for c in out["comparisons"] if c["baseline"] is not None)
