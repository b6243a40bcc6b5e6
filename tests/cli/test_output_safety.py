"""Every AQUA command that writes refuses to destroy what it reads or what it did not write.

Each case is one line on stderr with exit 2 and the victim byte for byte unchanged; the run is
a real lm-eval run (`tests/data/legacy_run_0_1_0`), copied so nothing shared is at risk.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aqua_tasks.cli import orca_items as cli_orca_items
from aqua_tasks.cli import regress as cli_regress
from aqua_tasks.cli import report as cli_report
from aqua_tasks.cli import score as cli_score
from eval_common.outputs import MARKER
from eval_plugins.cli import aqua_demo as cli_demo

LEGACY = Path(__file__).parents[1] / "data" / "legacy_run_0_1_0"


@pytest.fixture
def run(tmp_path) -> Path:
    return Path(shutil.copytree(LEGACY, tmp_path / "run"))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def _samples(run: Path) -> Path:
    return next(run.glob("samples_aqua_animal_*.jsonl"))


def test_aqua_score_refuses_a_per_item_file_that_is_a_samples_file_of_the_run(run, capsys):
    before = _snapshot(run)
    assert cli_score.main([str(run), "--per-item", str(_samples(run)), "--n-boot", "10"]) == 2
    err = _one_line(capsys)
    assert err.startswith("aqua score: error: --per-item") and "inside the input folder" in err
    assert _snapshot(run) == before
    assert cli_score.main([str(_samples(run)), "--per-item", str(_samples(run))]) == 2
    assert "is also an input" in _one_line(capsys)
    assert _snapshot(run) == before


def test_aqua_score_per_item_to_a_folder_is_one_line_and_a_new_file_is_written(run, capsys):
    assert cli_score.main([str(run), "--per-item", str(run.parent), "--n-boot", "10"]) == 2
    assert "is a folder; name a file to write" in _one_line(capsys)
    rows = run.parent / "rows.jsonl"
    assert cli_score.main([str(run), "--per-item", str(rows), "--n-boot", "10", "--json"]) == 0
    assert len(rows.read_text().splitlines()) == 24  # 8 items in each of the three tracks
    assert not list(run.parent.glob(".*.tmp"))


def test_orca_lm_eval_items_refuses_to_write_over_its_samples_file(run, capsys):
    samples = _samples(run)
    before = samples.read_bytes()
    assert cli_orca_items.main([str(samples), "--output", str(samples)]) == 2
    assert "is also an input" in _one_line(capsys)
    assert samples.read_bytes() == before


def test_aqua_report_out_that_is_a_file_or_a_foreign_folder_is_refused(run, tmp_path, capsys):
    flags = [str(run), "--no-chart", "--n-boot", "10"]
    (tmp_path / "notes.txt").write_text("mine")
    assert cli_report.main([*flags, "--out", str(tmp_path / "notes.txt")]) == 2
    assert "is a file; name a folder to write" in _one_line(capsys)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    assert cli_report.main([*flags, "--out", str(mine)]) == 2
    assert "thesis.tex" in _one_line(capsys)
    assert _snapshot(mine) == {"thesis.tex": b"years of work"}
    # --overwrite writes the report's files beside the user's, which stay.
    assert cli_report.main([*flags, "--out", str(mine), "--overwrite"]) == 0
    assert {"thesis.tex", "table.md", "table.csv", MARKER} <= set(_snapshot(mine))
    assert (mine / "thesis.tex").read_text() == "years of work"
    # The report's own folder is rewritten without asking; a report inside the run is not.
    assert cli_report.main([*flags, "--out", str(mine)]) == 0
    capsys.readouterr()
    assert cli_report.main([*flags, "--out", str(run / "report")]) == 2
    assert "overlaps the input" in _one_line(capsys)


def test_aqua_regress_summary_that_is_a_folder_or_an_input_is_refused(run, capsys):
    before = _snapshot(run)
    flags = ["--baseline", str(run), "--candidate", str(run), "--n-boot", "10", "--no-progress"]
    assert cli_regress.main([*flags, "--summary", str(run.parent)]) == 2
    assert "--summary" in _one_line(capsys)
    assert cli_regress.main([*flags, "--summary", str(_samples(run))]) == 2
    assert "inside the input folder" in _one_line(capsys)
    assert _snapshot(run) == before
    summary = run.parent / "summary.md"
    summary.write_text("# earlier step\n")
    assert cli_regress.main([*flags, "--summary", str(summary)]) == 0
    text = summary.read_text()
    assert text.startswith("# earlier step\n") and len(text) > len("# earlier step\n")


def test_aqua_demo_out_that_is_a_file_or_a_foreign_folder_is_refused(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert cli_demo.main(["--out", str(tmp_path / "notes.txt")]) == 2
    assert "is a file; name a folder to write" in _one_line(capsys)
    assert cli_demo.main(["--out", str(tmp_path)]) == 2
    err = _one_line(capsys)
    assert "notes.txt" in err and "--overwrite" in err
    assert _snapshot(tmp_path) == {"notes.txt": b"mine"}
