"""Bad AQUA input files (question files, samples, results) get one line naming file and line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aqua_tasks.cli import audio as cli_audio
from aqua_tasks.cli import score as cli_score
from aqua_tasks.core.data import load_items
from aqua_tasks.errors import AquaDataError

LEGACY = Path(__file__).parents[1] / "data" / "legacy_run_0_1_0"
ANIMAL = "AQUA-Bench-Animal-Sounds-Track.json"


def _one_error_line(capsys, prog: str) -> str:
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"{prog}: error: "), err
    return err.removeprefix(f"{prog}: error: ").rstrip("\n")


def test_a_samples_file_with_a_byte_that_is_not_utf8_names_file_line_and_byte(tmp_path, capsys):
    run = shutil.copytree(LEGACY, tmp_path / "run")
    samples = next(run.glob("samples_aqua_music_*.jsonl"))
    lines = samples.read_bytes().split(b"\n")
    # Latin-1 "é" inside the second row's reply: what an editor saving as cp1252 leaves.
    lines[1] = lines[1].replace(b'"resps"', b'"r\xe9sps"', 1)
    samples.write_bytes(b"\n".join(lines))
    column = lines[1].index(b"\xe9") + 1
    assert cli_score.main([str(run), "--n-boot", "20", "--no-progress"]) == 2
    assert _one_error_line(capsys, "aqua score") == (
        f"{samples}:2: byte 0xe9 at column {column} is not UTF-8; save the file as UTF-8 text"
    )


def test_an_authors_results_file_that_is_not_utf8_names_the_line(released_dir, tmp_path, capsys):
    entries = json.loads((released_dir / ANIMAL).read_text(encoding="utf-8"))[:8]
    text = json.dumps([{**e, "response": "(a)"} for e in entries], indent=1).encode()
    path = tmp_path / "animal_results.json"
    path.write_bytes(text.replace(b'"(a)"', b'"(a) \xff"', 1))
    line = text[: text.index(b'"(a)"')].count(b"\n") + 1
    assert cli_score.main([str(path), "--track", "animal", "--no-progress"]) == 2
    assert _one_error_line(capsys, "aqua score").startswith(f"{path}:{line}: byte 0xff at column ")


@pytest.fixture
def data_dir_with(released_dir, tmp_path):
    """A copy of the released files with the Animal track's file replaced by `content`."""

    def make(content: bytes) -> Path:
        folder = shutil.copytree(released_dir, tmp_path / "data")
        (folder / ANIMAL).write_bytes(content)
        return folder

    return make


def test_an_empty_question_file_is_refused_naming_it(data_dir_with, capsys):
    folder = data_dir_with(b"[]\n")
    with pytest.raises(AquaDataError, match=r"holds no questions \(an empty list\)"):
        load_items(folder, "animal")
    argv = ["check", "--data-dir", str(folder), "--tracks", "animal", "--no-progress"]
    assert cli_audio.main(argv) == 2
    assert _one_error_line(capsys, "aqua audio") == (
        f"{folder / ANIMAL}: holds no questions (an empty list); expected the entries"
    )


def test_a_question_file_that_is_not_utf8_names_file_and_line(data_dir_with, capsys):
    folder = data_dir_with(b'[\n {"id": 1,\n  "question": "Which anim\xe4l?"}\n]\n')
    argv = ["check", "--data-dir", str(folder), "--tracks", "animal", "--no-progress"]
    assert cli_audio.main(argv) == 2
    assert _one_error_line(capsys, "aqua audio") == (
        f"{folder / ANIMAL}:3: byte 0xe4 at column 26 is not UTF-8; save the file as UTF-8 text"
    )
