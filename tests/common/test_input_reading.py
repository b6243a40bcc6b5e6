"""The one reader of input text: UTF-8 with file and line, plain YAML; every reader uses it."""

from __future__ import annotations

import json

import pytest

from aqua_tasks.build.source import read_records
from aqua_tasks.core.data import load_json_file
from aqua_tasks.errors import AquaDataError, BuildError, RunError
from aqua_tasks.runs import iter_jsonl
from aqua_tasks.runs.discovery import read_json
from aqua_tasks.runs.orca_items import read_docs_file
from eval_common.errors import InputFileError
from eval_common.inputs import iter_json_lines, load_yaml, lone_surrogate_at, read_text
from eval_common.inputs import read_json as read_any
from orca_judge.calibration import load_calibration
from orca_judge.data import load_items
from orca_judge.errors import CalibrationError, DataError

# Line 3 holds a cp1252 "é" (0xe9): column 15 in BAD, 14 in BAD_JSONL.
BAD = b'[\n {"id": 1,\n  "text": "caf\xe9"}\n]\n'
BAD_JSONL = b'{"id": 1}\n\n{"text": "caf\xe9"}\n'


def test_read_text_names_file_line_column_and_byte(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(BAD)
    with pytest.raises(InputFileError) as error:
        read_text(path)
    assert str(error.value) == (
        f"{path}:3: byte 0xe9 at column 15 is not UTF-8; save the file as UTF-8 text"
    )
    path.write_text('{"a": [1, 2}', encoding="utf-8")
    with pytest.raises(InputFileError, match=r"a\.json:1:12: malformed JSON"):
        read_any(path)


@pytest.mark.parametrize(
    ("reader", "suffix", "error"),
    [
        (load_json_file, ".json", AquaDataError),
        (read_json, ".json", RunError),
        (lambda p: list(iter_jsonl(p)), ".jsonl", RunError),
        (read_records, ".json", BuildError),
        (read_records, ".jsonl", BuildError),
        (read_docs_file, ".jsonl", RunError),
        (load_items, ".jsonl", DataError),
        (load_items, ".json", DataError),
        (lambda p: load_calibration(p, p), ".jsonl", CalibrationError),
    ],
)
def test_every_json_reader_names_the_line_of_a_byte_that_is_not_utf8(
    tmp_path, reader, suffix, error
):
    path = tmp_path / f"input{suffix}"
    path.write_bytes(BAD_JSONL if suffix == ".jsonl" else BAD)
    with pytest.raises(error) as raised:
        reader(path)
    column = 14 if suffix == ".jsonl" else 15
    assert str(raised.value) == (
        f"{path}:3: byte 0xe9 at column {column} is not UTF-8; save the file as UTF-8 text"
    )


def test_yaml_tags_are_refused_unless_named_as_scalar_tags(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("a: 1\nf: !function utils.f\n", encoding="utf-8")
    assert load_yaml(path, scalar_tags=("!function",)) == {"a": 1, "f": "utils.f"}
    with pytest.raises(InputFileError, match=r"t\.yaml:2: !function is not allowed: plain YAML"):
        load_yaml(path)


def test_lone_surrogates_are_found_and_pairs_are_not():
    assert lone_surrogate_at("ok \ud800 x") == 3
    assert lone_surrogate_at("ok \U0001f600") is None


# Line 3 holds a bare word where a JSON value belongs: column 11 in MALFORMED, 10 in the JSONL
# (whose first lines are blank, so no reader refuses an earlier record first).
MALFORMED = b'[\n {"id": 1,\n  "text": oops}\n]\n'
MALFORMED_JSONL = b'\n \n{"text": oops}\n'


@pytest.mark.parametrize(
    ("reader", "suffix", "error"),
    [
        (load_json_file, ".json", AquaDataError),
        (read_json, ".json", RunError),
        (lambda p: list(iter_jsonl(p)), ".jsonl", RunError),
        (read_records, ".json", BuildError),
        (read_records, ".jsonl", BuildError),
        (load_items, ".jsonl", DataError),
        (load_items, ".json", DataError),
        (lambda p: load_calibration(p, p), ".jsonl", CalibrationError),
    ],
)
def test_every_json_reader_names_file_line_and_column_of_malformed_json(
    tmp_path, reader, suffix, error
):
    path = tmp_path / f"input{suffix}"
    path.write_bytes(MALFORMED_JSONL if suffix == ".jsonl" else MALFORMED)
    with pytest.raises(error) as raised:
        reader(path)
    column = 10 if suffix == ".jsonl" else 11
    assert str(raised.value) == f"{path}:3:{column}: malformed JSON (Expecting value)"


def test_a_jsonl_value_holding_unicode_line_separators_stays_one_record(tmp_path):
    # U+2028/U+2029 and U+0085 are line breaks to str.splitlines() but plain text to JSON.
    texts = ["what is\u2028heard", "para\u2029graph", "next\x85line"]
    path = tmp_path / "source.jsonl"
    lines = [
        json.dumps({"id": str(i), "question": t}, ensure_ascii=False) for i, t in enumerate(texts)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert [r["question"] for r in read_records(path)] == texts
    assert [n for n, _ in iter_json_lines(path)] == [1, 2, 3]
