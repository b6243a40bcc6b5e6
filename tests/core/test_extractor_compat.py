"""Runs recorded under the default extractor's old name and version keep working everywhere."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every test runs the real command lines
LEGACY = Path(__file__).parents[1] / "data" / "legacy_run_0_1_0"
BIN = Path(sys.executable).parent


def _run(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300)


def _as_recorded_by_current_code(target: Path) -> Path:
    """The legacy run with its extractor recorded as today's runs record it."""
    shutil.copytree(LEGACY, target)
    for file in target.iterdir():
        text = file.read_text(encoding="utf-8")
        text = text.replace('"extractor": "mmau"', '"extractor": "aqua-rules"')
        text = text.replace('"extractor_version": "1.0"', '"extractor_version": "3.2"')
        file.write_text(text, encoding="utf-8")
    return target


def test_aqua_score_names_the_rescoring_of_an_old_extractor_record():
    proc = _run(BIN / "aqua", "score", LEGACY, "--json", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert (
        "aqua score: recorded extractor 'mmau' 1.0 re-scored with 'aqua-rules' 3.2 "
        "(current code)" in proc.stderr
    )
    payload = json.loads(proc.stdout)
    assert set(payload["extractor"].values()) == {"aqua-rules"}


def test_aqua_score_per_item_rows_name_the_canonical_extractor(tmp_path):
    rows_file = tmp_path / "rows.jsonl"
    proc = _run(BIN / "aqua", "score", LEGACY, "--per-item", rows_file, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert len(rows) == 24
    assert {r["extractor"] for r in rows} == {"aqua-rules"}


def test_regress_compares_an_old_baseline_with_a_run_recorded_under_the_new_name(tmp_path):
    candidate = _as_recorded_by_current_code(tmp_path / "candidate")
    proc = _run(
        BIN / "aqua", "regress", "--baseline", LEGACY, "--candidate", candidate, "--no-progress"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "re-scored with 'aqua-rules' 3.2" in proc.stderr


def test_regress_still_refuses_runs_scored_by_different_extractors(tmp_path):
    candidate = tmp_path / "candidate"
    shutil.copytree(LEGACY, candidate)
    for file in candidate.iterdir():
        text = file.read_text(encoding="utf-8").replace(
            '"extractor": "mmau"', '"extractor": "official"'
        )
        file.write_text(text, encoding="utf-8")
    proc = _run(
        BIN / "aqua", "regress", "--baseline", LEGACY, "--candidate", candidate, "--no-progress"
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "extractor" in proc.stdout + proc.stderr
