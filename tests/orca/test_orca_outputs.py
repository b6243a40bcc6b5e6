"""The judge's writers never destroy an input or a file they did not write, and a full disk
is one line with nothing half-written left behind."""

from __future__ import annotations

import errno
import os
import pathlib
import shutil

import pytest
from orca_fixtures import synthetic_items, tiny_llama_dir, tiny_trained_checkpoint, write_jsonl

from eval_common.errors import OutputError
from orca_judge import OrcaJudge
from orca_judge.cli import score as cli_score
from orca_judge.cli import train as cli_train
from orca_judge.training.run_folder import RunFolder

TINY = ["--lora-r", "4", "--batch-size", "8", "--grad-accum", "1", "--warmup-steps", "1"]
TINY += ["--eval-every", "2", "--max-steps", "2", "--lr", "1e-3", "--no-progress"]


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _last_error(capsys) -> str:
    # transformers' loading bars may come first on stderr; the reason is the last line.
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def judge() -> OrcaJudge:
    return OrcaJudge.from_pretrained(tiny_trained_checkpoint())


def test_orca_score_refuses_an_output_that_is_its_input(tmp_path, capsys):
    items = write_jsonl(tmp_path / "items.jsonl", synthetic_items(4, 3, "it"))
    before = items.read_bytes()
    argv = ["--checkpoint", str(tiny_trained_checkpoint()), "--input", str(items)]
    assert cli_score.main([*argv, "--output", str(items), "--no-progress"]) == 2
    err = _last_error(capsys)
    assert err.startswith("orca score: error: --output") and "is also an input" in err
    assert items.read_bytes() == before


def test_orca_train_refuses_the_current_folder_as_output(tmp_path, monkeypatch, capsys):
    train = write_jsonl(tmp_path / "train.jsonl", synthetic_items(16, 1, "tr"))
    dev = write_jsonl(tmp_path / "dev.jsonl", synthetic_items(12, 2, "dv"))
    monkeypatch.chdir(tmp_path)
    base = ["--train", str(train), "--dev", str(dev), "--backbone", str(tiny_llama_dir())]
    assert cli_train.main([*base, "--output", ".", *TINY]) == 2
    assert "--output . is the current folder" in _last_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev.jsonl", "train.jsonl"]


def test_orca_train_on_a_full_disk_says_so_and_leaves_no_temporary(tmp_path, monkeypatch, capsys):
    train = write_jsonl(tmp_path / "train.jsonl", synthetic_items(16, 1, "tr"))
    dev = write_jsonl(tmp_path / "dev.jsonl", synthetic_items(12, 2, "dv"))
    base = ["--train", str(train), "--dev", str(dev), "--backbone", str(tiny_llama_dir())]
    monkeypatch.setattr(os, "fsync", _full_disk)
    assert cli_train.main([*base, "--output", str(tmp_path / "judge"), *TINY]) == 2
    assert _last_error(capsys).startswith("orca train: error: disk full writing ")
    assert not [p for p in tmp_path.rglob("*") if ".tmp" in p.name]


def test_the_resume_state_on_a_full_disk_keeps_the_old_one(tmp_path, monkeypatch):
    folder = RunFolder(tmp_path)
    folder.save_state({"config": {}, "step": 1})
    before = folder.state_path.read_bytes()
    monkeypatch.setattr(os, "fsync", _full_disk)
    with pytest.raises(OutputError, match=f"^disk full writing {folder.state_path}$"):
        folder.save_state({"config": {}, "step": 2})
    assert folder.state_path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.pt"]


def test_save_pretrained_replaces_only_its_own_files(judge, tmp_path):
    target = shutil.copytree(tiny_trained_checkpoint(), tmp_path / "judge")
    (target / "notes.txt").write_text("why this judge")
    judge.save_pretrained(target)
    assert (target / "notes.txt").read_text() == "why this judge"
    assert (target / "orca_judge.json").is_file()
    assert OrcaJudge.from_pretrained(target).fingerprint() == judge.fingerprint()


def test_save_pretrained_refuses_a_folder_that_is_not_a_checkpoint(judge, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(OutputError, match=r"thesis\.tex.*overwrite=True"):
        judge.save_pretrained(mine)
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]
    judge.save_pretrained(mine, overwrite=True)
    assert (mine / "thesis.tex").read_text() == "years of work"
    assert (mine / "head.safetensors").is_file()


def test_save_pretrained_on_a_full_disk_keeps_the_old_checkpoint(judge, tmp_path, monkeypatch):
    target = shutil.copytree(tiny_trained_checkpoint(), tmp_path / "judge")
    before = {p.name: p.read_bytes() for p in target.iterdir() if p.is_file()}
    monkeypatch.setattr(pathlib.Path, "write_bytes", _full_disk)
    with pytest.raises(OutputError, match=f"^disk full writing {target}$"):
        judge.save_pretrained(target)
    assert {p.name: p.read_bytes() for p in target.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["judge"]
