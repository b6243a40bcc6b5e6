"""The one writer's rules: inputs are never outputs, foreign folders need an explicit overwrite,
files are replaced whole, and a full disk is one line with nothing left behind."""

from __future__ import annotations

import errno
import json
import os

import pytest

from eval_common.errors import OutputError
from eval_common.outputs import (
    MARKER,
    append_text,
    check_output_file,
    check_output_folder,
    mark_output_folder,
    write_text,
)


def _files(folder):
    return sorted(p.name for p in folder.iterdir())


def test_an_output_file_that_is_an_input_is_refused_through_a_symlink_too(tmp_path):
    source = tmp_path / "samples.jsonl"
    source.write_text("replies\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(source)
    for out in (source, link):
        with pytest.raises(OutputError, match=r"--per-item .* is also an input .*samples\.jsonl"):
            check_output_file(out, inputs=[source], flag="--per-item")
    assert source.read_text() == "replies\n"


def test_an_output_file_replacing_a_file_of_an_input_folder_is_refused_a_new_one_is_not(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "samples_aqua_animal.jsonl").write_text("replies\n")
    with pytest.raises(OutputError, match="would replace a file inside the input folder"):
        check_output_file(run / "samples_aqua_animal.jsonl", inputs=[run], flag="--per-item")
    assert (
        check_output_file(run / "new.jsonl", inputs=[run], flag="--per-item") == run / "new.jsonl"
    )


def test_a_folder_where_a_file_is_expected_and_a_file_where_a_folder_is_expected(tmp_path):
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(OutputError, match=r"^--summary .* is a folder; name a file to write$"):
        check_output_file(tmp_path, flag="--summary")
    with pytest.raises(OutputError, match=r"^--out .*file\.md is a file; name a folder to write$"):
        check_output_folder(tmp_path / "file.md", command="aqua report", flag="--out")
    with pytest.raises(OutputError, match=r"file\.md is a file, not a folder"):
        check_output_file(tmp_path / "file.md" / "x.json", flag="--output")


def test_the_current_folder_and_its_parents_are_never_an_output_folder(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for out in (".", str(tmp_path)):
        with pytest.raises(OutputError, match="is the current folder or holds it"):
            check_output_folder(out, command="orca train", flag="--output", overwrite=True)


def test_a_foreign_folder_needs_overwrite_its_own_output_does_not(tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(OutputError) as refused:
        check_output_folder(out, command="aqua report", flag="--out", owned=["table.*"])
    message = str(refused.value)
    assert "\n" not in message and "thesis.tex" in message and "--overwrite" in message
    assert check_output_folder(out, command="aqua report", flag="--out", overwrite=True) == out
    mark_output_folder(out, "aqua report")
    assert json.loads((out / MARKER).read_text()) == {"command": "aqua report"}
    assert check_output_folder(out, command="aqua report", flag="--out") == out
    with pytest.raises(OutputError, match="is not aqua demo's own output"):
        check_output_folder(out, command="aqua demo", flag="--out")
    named = tmp_path / "old-report"  # written before the marker existed: only its own names
    named.mkdir()
    (named / "table.md").write_text("| |")
    assert check_output_folder(named, command="aqua report", flag="--out", owned=["table.*"])


def test_a_folder_overlapping_an_input_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "table.md").write_text("an input named like an output")
    for out, inputs in ((run, [run]), (run / "report", [run]), (tmp_path, [tmp_path / "table.md"])):
        with pytest.raises(OutputError, match="overlaps the input"):
            check_output_folder(
                out, command="aqua report", flag="--out", inputs=inputs, owned=["table.md"]
            )
    # A run folder inside the report folder is safe: no name the report writes is touched.
    assert check_output_folder(tmp_path, command="x", flag="--out", inputs=[run], overwrite=True)


def test_a_full_disk_is_one_line_and_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "per_item.jsonl"
    target.write_text("old\n")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputError) as refused:
        write_text(target, "new\n")
    assert str(refused.value) == f"disk full writing {target}"
    assert target.read_text() == "old\n"
    assert _files(tmp_path) == ["per_item.jsonl"]


def test_any_other_failure_also_leaves_no_temporary(tmp_path, monkeypatch):
    def broken(src, dst):
        raise PermissionError(errno.EACCES, "denied")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(PermissionError):
        write_text(tmp_path / "a.json", "{}")
    assert _files(tmp_path) == []


def test_append_adds_to_the_end_and_text_that_cannot_be_encoded_changes_nothing(tmp_path):
    summary = tmp_path / "summary.md"
    append_text(summary, "# one\n")
    append_text(summary, "# two\n")
    assert summary.read_text() == "# one\n# two\n"
    with pytest.raises(UnicodeEncodeError):
        write_text(summary, "\ud800")
    assert summary.read_text() == "# one\n# two\n"
    assert _files(tmp_path) == ["summary.md"]
