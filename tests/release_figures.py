"""The commands whose figures must not depend on the lm-eval release, and their comparison.

`tests/lm_eval/test_release_figures.py` runs them under lm-eval 0.4.13 (the main suite) and
`tests_lm_eval_next/test_release_figures.py` under the 0.5 line (CI's second lm-eval
environment); both compare with one file of expected figures, so the two releases agree.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

EXPECTED = Path(__file__).parent / "golden" / "lm_eval_release_figures.json"
# name -> lm_eval arguments after the model and --metadata (text-only: no audio is needed).
COMMANDS = {
    "aqua_animal": ["--tasks", "aqua_animal"],
    "aqua_group_limit_8": ["--tasks", "aqua", "--limit", "8"],
}
MODEL = "aqua-always-reject"


def run_command(name: str, data_dir: Path, out: Path) -> dict:
    """Run one command with this environment's lm_eval; its results JSON."""
    metadata = json.dumps({"data_dir": str(data_dir), "audio": False})
    lm_eval = Path(sys.executable).parent / "lm_eval"
    args = [str(lm_eval), "--model", MODEL, "--metadata", metadata, *COMMANDS[name]]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run(
        [*args, "--output_path", str(out / name)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = sorted((out / name).rglob("results_*.json"))
    return json.loads(path.read_text())


def task_figures(results: dict) -> dict[str, dict]:
    """Each task's figures and directions, keyed by task name (groups left out); lm-eval 0.5
    qualifies a group member as `group::task`, 0.4.13 does not. NaN is written as "nan"."""
    figures = {}
    groups = set(results.get("group_subtasks") or {})
    for name, row in results["results"].items():
        if name in groups:  # 0.4.13 pools the tracks there; 0.5 gives a group no figures
            continue
        task = name.rpartition("::")[2]
        values = {
            k: "nan" if isinstance(v, float) and math.isnan(v) else v
            for k, v in row.items()
            if "," in k
        }
        if values:
            directions = results["higher_is_better"].get(name) or {}
            figures[task] = {"figures": values, "higher_is_better": directions}
    return figures
