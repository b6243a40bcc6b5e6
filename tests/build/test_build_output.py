"""`aqua build` never writes over its source file, and names a file given as its output folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from shared_data import shared_path

from aqua_tasks.cli import build as cli_build

pytestmark = pytest.mark.shared_data("mmau")
MMAU = shared_path("mmau") / "mmau-test-mini.json"


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_aqua_build_refuses_to_write_its_output_over_the_source(tmp_path, capsys):
    source = Path(shutil.copy(MMAU, tmp_path / "mine.json"))
    before = source.read_bytes()
    argv = ["--input", str(source), "--output", str(tmp_path), "--name", "mine.json"]
    assert cli_build.main([*argv, "--limit", "5", "--no-progress"]) == 2
    assert "is also an input" in _error(capsys)
    assert source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json"]


def test_aqua_build_output_that_is_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    argv = ["--input", str(MMAU), "--output", str(tmp_path / "notes.txt"), "--limit", "5"]
    assert cli_build.main([*argv, "--no-progress"]) == 2
    assert "--output" in (err := _error(capsys)) and "is a file; name the folder" in err
    assert (tmp_path / "notes.txt").read_text() == "mine"
