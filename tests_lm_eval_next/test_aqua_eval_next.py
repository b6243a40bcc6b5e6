"""`aqua eval` under lm-eval's 0.5 line: lm-eval's own command line (public entry point) with
this package registered, then the table pooled over clips read back from the saved samples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.shared_data("aqua-bench")
BIN = Path(sys.executable).parent


def aqua_eval(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run(
        [str(BIN / "aqua"), "eval", *args], capture_output=True, text=True, timeout=600, env=env
    )


def test_aqua_eval_prints_the_pooled_all_tracks_row(released_dir, tmp_path):
    metadata = json.dumps({"data_dir": str(released_dir), "audio": False})
    done = aqua_eval(
        "--model", "aqua-always-reject", "--tasks", "aqua_*", "--limit", "8",
        "--metadata", metadata, "--output_path", str(tmp_path), "--log_samples",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    table = done.stdout[done.stdout.index("AQUA-Bench (pooled over clips") :]
    # Always reject: every Solvable item wrong, so no clip conditions a CA (n = 0).
    assert "| aqua | 0.0 [0.0, 39.0] | — | — | — | 6 | 0 | 0 | 0 | 0.0 |" in table
    for track in ("animal", "music", "vocal"):
        assert f"| aqua_{track} | 0.0 [0.0, 65.8] | — | — | — | 2 | 0 | 0 | 0 | 0.0 |" in table


def test_an_unknown_task_is_one_line_and_exit_two(released_dir):
    metadata = json.dumps({"data_dir": str(released_dir), "audio": False})
    done = aqua_eval(
        "--model", "aqua-always-reject", "--tasks", "aqua_aminal", "--metadata", metadata
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        "aqua eval: error: task(s) not found: aqua_aminal; `lm_eval ls tasks` lists the task "
        "names (a user folder goes in --include_path)"
    )
