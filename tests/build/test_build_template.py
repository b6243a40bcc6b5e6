"""`aqua build` on the real MMAU test-mini with the template generator: layout, rules, defects."""

from __future__ import annotations

import json
import time

import pytest
from shared_data import shared_data, shared_path

from aqua_tasks.build.api import MMAU_OUTPUT, build_file
from aqua_tasks.build.builder import manifest_path
from aqua_tasks.build.categories import default_bank, eligible_categories
from aqua_tasks.build.source import FieldMap, read_source
from aqua_tasks.build.text import is_rejection_like, option_key, terms
from aqua_tasks.cli import build as cli_build

MMAU = shared_path("mmau") / "mmau-test-mini.json"
DEMO_ID = "6aee68bf-6629-442b-981d-ae8195597c8e"
PASTED_ID = "7a1dcecc-d303-4759-940b-5d02d2a8c77e"


@pytest.fixture(scope="module")
def source():
    shared_data("mmau")
    return {item.id: item for item in read_source(MMAU)}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    shared_data("mmau")
    out = tmp_path_factory.mktemp("mmau")
    started = time.perf_counter()
    result = build_file(MMAU, out, config=None)
    seconds = time.perf_counter() - started
    assert seconds < 15  # about 0.5 s on one core
    return out, result


@pytest.fixture(scope="module")
def clips(built):
    entries = json.loads((built[0] / MMAU_OUTPUT).read_text(encoding="utf-8"))
    assert len(entries) % 4 == 0
    return {entries[i]["source_id"]: entries[i : i + 4] for i in range(0, len(entries), 4)}


def test_every_clip_is_four_consecutive_entries_in_the_released_layout(clips, source):
    number = 0
    for source_id, group in clips.items():
        item = source[source_id]
        assert [e["type"] for e in group] == ["Solvable", "AAD", "IASD", "IAQD"]
        assert {e["audio_filename"] for e in group} == {item.audio}
        assert {e["audio_id"] for e in group} == {f"./test-mini-audios/{source_id}.wav"}
        for entry in group:
            assert entry["id"] == number
            number += 1
            assert entry["answer"] in entry["options"]
            listed = " ".join(f"({'abcde'[i]}) {o}" for i, o in enumerate(entry["options"]))
            assert entry["question"].endswith(listed) and "\n" not in entry["question"]
            assert entry["task"] == item.metadata["task"]  # the source's metadata is kept
            assert entry["difficulty"] == item.metadata["difficulty"]
        assert "subtype" not in group[0] and group[1]["subtype"] == "Standard"


def test_demo_item_is_unchanged_as_solvable(clips):
    solvable, aad, iasd, iaqd = clips[DEMO_ID]
    assert solvable["question"] == (
        "Based on the given audio, identify the source of the music. "
        "(a) Radio (b) Fire truck (c) Construction site (d) Airplane"
    )
    assert solvable["answer"] == "Radio"
    assert sorted(aad["options"][:-1]) == ["Airplane", "Construction site", "Fire truck"]
    assert aad["options"][-1] == aad["answer"] == "None of the above"
    assert iasd["subtype"] in default_bank().categories and len(iasd["options"]) == 4
    assert iaqd["options"][-1] == iaqd["answer"] == "Unanswerable"


def test_aad_removes_every_copy_of_the_answer_and_keeps_one_rejection(clips, source):
    for source_id, (solvable, aad, _, _) in clips.items():
        gold = option_key(solvable["answer"])
        assert gold not in {option_key(o) for o in aad["options"]}, source_id
        assert [is_rejection_like(o) for o in aad["options"]].count(True) == 1
        real = {option_key(c) for c in source[source_id].choices} - {gold}
        kept = {option_key(o) for o in aad["options"][:-1]}
        assert kept <= real and len(kept) >= 1


def test_iasd_category_shares_no_term_with_the_item(clips, source):
    bank = default_bank()
    for source_id, (_, _, iasd, _) in clips.items():
        item = source[source_id]
        category = bank.categories[iasd["subtype"]]
        assert iasd["options"][-1] == iasd["answer"] == "None of the above"
        assert len(iasd["options"]) == 4 and set(iasd["options"][:-1]) <= set(category.options)
        item_terms = terms((item.question, *item.choices, item.answer))
        assert not category.terms & item_terms, (source_id, category.name)
        assert iasd["question"].startswith(item.question.strip())


def test_overlap_check_ignores_case_and_inflection():
    bank = default_bank()
    names = {c.name for c in eligible_categories(bank, ["Which RIVERS flow here?", "Dogs"])}
    assert "river" not in names and "animal" not in names  # "Dog" is an animal option
    assert "architect" in names
    assert "emotion" not in {c.name for c in eligible_categories(bank, ["speaker's emotions"])}


def test_iaqd_has_four_new_options_and_unanswerable(clips, source):
    for source_id, (solvable, *_, iaqd) in clips.items():
        choices = {option_key(c) for c in source[source_id].choices}
        assert len(iaqd["options"]) == 5 and iaqd["options"][-1] == "Unanswerable"
        assert len({option_key(o) for o in iaqd["options"]}) == 5
        assert not choices & {option_key(o) for o in iaqd["options"]}
        assert option_key(iaqd["question"]) != option_key(solvable["question"])


def test_each_defect_class_is_handled_and_counted(built, clips, source):
    manifest = built[1].manifest
    assert manifest["counts"] == {
        "source_items": 1000,
        "built_clips": 991,
        "skipped_clips": 9,
        "entries": 3964,
    }
    assert manifest["skipped"] == {"answer_is_rejection": 8, "question_in_choices": 1}
    assert manifest["repaired"] == {
        "duplicate_answer": 16,
        "duplicate_choice": 27,
        "whitespace_stripped": 6,
    }
    assert manifest["noted"] == {"aad_rejection_choice_dropped": 15, "aad_single_distractor": 27}
    log = {r["source_id"]: r for r in manifest["items"]}
    assert log[PASTED_ID] == {
        "position": source[PASTED_ID].position,
        "source_id": PASTED_ID,
        "action": "skipped",
        "reasons": ["question_in_choices"],
    }
    assert PASTED_ID not in clips
    rejecting = [i for i in source.values() if is_rejection_like(i.answer)]
    assert len(rejecting) == 8 and all(
        log[i.id]["reasons"] == ["answer_is_rejection"] for i in rejecting
    )
    duplicated = [i for i in source.values() if len(set(i.choices)) < len(i.choices)]
    assert len(duplicated) == 27
    for item in duplicated:
        solvable = clips[item.id][0]
        assert solvable["options"] == list(dict.fromkeys(c.strip() for c in item.choices))
        assert "duplicate_choice" in log[item.id]["reasons"]
    two = [i for i in source.values() if len(i.choices) == 2]
    assert len(two) == 27
    assert all(len(clips[i.id][1]["options"]) == 2 for i in two)  # one distractor + NOTA
    none_choice = [
        i for i in source.values() if any(is_rejection_like(c) for c in i.choices) and i.id in clips
    ]
    assert all(
        not any(is_rejection_like(o) for o in clips[i.id][1]["options"][:-1]) for i in none_choice
    )
    assert sum(manifest["iasd_categories"].values()) == 991
    assert manifest["source"]["sha256"] and manifest["config"]["seed"] == 0
    assert manifest["generator"]["name"] == "template"
    assert manifest["iaqd"] == {"attempts": 991, "cached_replies": 0, "written_by_template": 991}


def test_same_input_and_seed_give_identical_bytes_another_seed_differs(built, tmp_path):
    out, _ = built
    assert (
        cli_build.main(["--input", str(MMAU), "--output", str(tmp_path / "a"), "--no-progress"])
        == 0
    )
    assert (tmp_path / "a" / MMAU_OUTPUT).read_bytes() == (out / MMAU_OUTPUT).read_bytes()
    again = manifest_path(tmp_path / "a" / MMAU_OUTPUT).read_bytes()
    assert again == manifest_path(out / MMAU_OUTPUT).read_bytes()
    build_file(MMAU, tmp_path / "b", config=None, limit=50)
    other = json.loads((tmp_path / "b" / MMAU_OUTPUT).read_text())
    assert other == json.loads((out / MMAU_OUTPUT).read_text())[: len(other)]  # per-clip RNG
    assert (
        cli_build.main(
            [
                "--input",
                str(MMAU),
                "--output",
                str(tmp_path / "c"),
                "--seed",
                "7",
                "--limit",
                "50",
                "--no-progress",
            ]
        )
        == 0
    )
    assert (tmp_path / "c" / MMAU_OUTPUT).read_bytes() != (
        tmp_path / "b" / MMAU_OUTPUT
    ).read_bytes()


def test_other_benchmarks_build_from_named_fields_and_letter_answers(tmp_path, capsys):
    rows = [
        {
            "qid": "q1",
            "wav": "clips/1.wav",
            "prompt": "What is playing?",
            "opts": ["Piano", "Violin", "Flute"],
            "gold": "B",
            "extra": 1,
        },
        {
            "qid": "q2",
            "wav": "clips/2.wav",
            "prompt": "Who speaks?",
            "opts": ["A man", "A woman"],
            "gold": "(c)",
        },
    ]
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    flags = [
        "--source",
        "mc",
        "--input",
        str(path),
        "--output",
        str(tmp_path / "o"),
        "--id-field",
        "qid",
        "--audio-field",
        "wav",
        "--question-field",
        "prompt",
        "--choices-field",
        "opts",
        "--answer-field",
        "gold",
        "--answer-format",
        "letter",
        "--no-progress",
        "--json",
    ]
    assert cli_build.main(flags) == 2  # no --name
    assert "needs --name" in capsys.readouterr().err
    assert cli_build.main([*flags, "--name", "AQUA-Mine.json", "--guidance", "Pick one."]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["skipped"] == {"answer_not_in_choices": 1}  # (c) of two choices
    entries = json.loads((tmp_path / "o" / "AQUA-Mine.json").read_text())
    assert [e["audio_filename"] for e in entries] == ["clips/1.wav"] * 4
    assert entries[0]["answer"] == "Violin" and entries[0]["extra"] == 1
    assert entries[0]["question"].endswith("(c) Flute\nPick one.")
    with pytest.raises(ValueError, match="answer_format='word'"):
        FieldMap(answer_format="word")
