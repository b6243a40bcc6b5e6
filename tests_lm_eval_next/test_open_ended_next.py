"""The open-ended AQUA tasks under lm-eval's 0.5 line give the figures lm-eval 0.4.13 gives:
the same command run by both releases (0.4.13's `lm_eval` is the main environment's, named by
AQUA_LM_EVAL_REFERENCE, which .ci/run sets), every figure, standard error and direction."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from orca_fixtures import tiny_trained_checkpoint

pytestmark = pytest.mark.shared_data("aqua-bench")
REFERENCE = "AQUA_LM_EVAL_REFERENCE"
TASK = "aqua-open_animal"


def run(lm_eval: str, metadata: str, out: Path) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    args = ["--model", "aqua-first-option", "--tasks", TASK, "--limit", "12"]
    done = subprocess.run(
        [lm_eval, *args, "--metadata", metadata, "--output_path", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = sorted(out.rglob("results_*.json"))
    results = json.loads(path.read_text())
    return {"row": results["results"][TASK], "directions": results["higher_is_better"][TASK]}


def comparable(value: object) -> object:
    return "nan" if isinstance(value, float) and math.isnan(value) else value


@pytest.mark.skipif(not os.environ.get(REFERENCE), reason=f"{REFERENCE} names no lm_eval 0.4.13")
def test_an_open_task_gives_the_figures_of_lm_eval_0_4_13(released_dir, tmp_path):
    metadata = json.dumps(
        {"data_dir": str(released_dir), "audio": False, "judge": str(tiny_trained_checkpoint())}
    )
    ours = run(str(Path(sys.executable).parent / "lm_eval"), metadata, tmp_path / "next")
    reference = run(os.environ[REFERENCE], metadata, tmp_path / "0.4.13")
    assert {k: comparable(v) for k, v in ours["row"].items()} == {
        k: comparable(v) for k, v in reference["row"].items()
    }
    assert ours["directions"] == reference["directions"]
    assert ours["row"]["n_items,none"] == 12 and ours["row"]["orca_with_question,none"] == 1.0
