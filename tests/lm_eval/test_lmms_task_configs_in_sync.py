"""The lmms-eval track YAMLs are generated from the lm-eval ones, and committed in sync."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "generate_lmms_task_configs.py"


def _check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_committed_lmms_eval_task_yamls_are_the_generated_ones():
    proc = _check(REPO)
    assert proc.returncode == 0, proc.stderr
    assert (
        len(list((REPO / "lmms_task_configs").glob("aqua*_*.yaml"))) == 20
    )  # 15 released-track tasks + aqua_mmau + 4 aqua-open


def test_a_drifted_copy_is_named_and_regenerating_fixes_it(tmp_path):
    for folder in ("task_configs", "lmms_task_configs"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    drifted = tmp_path / "lmms_task_configs" / "aqua_music.yaml"
    drifted.write_text(drifted.read_text().replace("prompt: plain", "prompt: cot"))
    (tmp_path / "lmms_task_configs" / "aqua_extra_music.yaml").write_text("task: x\n")
    proc = _check(tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"lmms_task_configs/{name} is stale: run scripts/generate_lmms_task_configs.py"
        for name in ("aqua_extra_music.yaml", "aqua_music.yaml")
    ]
    subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path)], check=True, timeout=120)
    assert _check(tmp_path).returncode == 0
    assert not (tmp_path / "lmms_task_configs" / "aqua_extra_music.yaml").exists()
