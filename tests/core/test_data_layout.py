"""Question files are validated on load: inline options agree with `options`, ids are integers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aqua_tasks.core.data import TRACK_FILE_STEMS, VARIANT_SUFFIXES, load_items, load_json_file
from aqua_tasks.errors import AquaDataError

ANIMAL = TRACK_FILE_STEMS["animal"]


@pytest.mark.parametrize("variant", sorted(VARIANT_SUFFIXES))
@pytest.mark.parametrize("track", sorted(TRACK_FILE_STEMS))
def test_every_released_file_loads_under_the_layout_checks(released_dir, track, variant):
    items = load_items(released_dir, track, variant)
    assert len(items) == 1440 and len({i.id for i in items}) == 1440


@pytest.fixture(scope="module")
def animal_entries(released_dir) -> list[dict]:
    return load_json_file(released_dir / f"{ANIMAL}.json")


def _write_edited(folder: Path, entries: list[dict], index: int, **changes: object) -> Path:
    edited = [dict(e) for e in entries]
    edited[index].update(changes)
    (folder / f"{ANIMAL}.json").write_text(json.dumps(edited), encoding="utf-8")
    return folder


def _refusal(folder: Path) -> str:
    with pytest.raises(AquaDataError) as error:
        load_items(folder, "animal")
    return str(error.value)


def test_inline_labels_disagreeing_with_options_are_refused_naming_file_item_and_field(
    animal_entries, tmp_path
):
    entry = animal_entries[5]
    # The same options, two of them swapped in the list only: the question still says (a) X (b) Y.
    swapped = [entry["options"][1], entry["options"][0], *entry["options"][2:]]
    folder = _write_edited(tmp_path, animal_entries, 5, options=swapped)
    message = _refusal(folder)
    assert message == (
        f"{folder / (ANIMAL + '.json')}: entry 5 (id {entry['id']}): field 'question' "
        f"inline option (a) is {entry['options'][0]!r} but options[0] is {swapped[0]!r}"
    )


def test_a_question_listing_fewer_inline_options_than_options_is_refused(animal_entries, tmp_path):
    entry = animal_entries[0]
    question = entry["question"].replace(f" (e) {entry['options'][4]}", "")
    message = _refusal(_write_edited(tmp_path, animal_entries, 0, question=question))
    assert message.endswith("field 'question' lists 4 inline options but 'options' has 5")


def test_a_question_without_inline_options_is_refused(animal_entries, tmp_path):
    message = _refusal(_write_edited(tmp_path, animal_entries, 3, question="What is heard?"))
    assert "entry 3" in message and "lists no inline options" in message


@pytest.mark.parametrize("bad_id", [0.7, "3", True, None, 2.0])
def test_an_id_that_is_not_a_json_integer_is_refused_not_truncated(
    animal_entries, tmp_path, bad_id
):
    message = _refusal(_write_edited(tmp_path, animal_entries, 2, id=bad_id))
    assert message.endswith(f"entry 2: field 'id' must be an integer, got {bad_id!r}")
