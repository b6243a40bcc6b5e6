"""Rule-rated synthetic candidates for an earlier curriculum stage (orca synthesize)."""

import json
import subprocess
import sys
from collections import Counter

import pytest
from shared_data import shared_path

from orca_judge.cli import synthesize as cli_synthesize
from orca_judge.data import OrcaItem, load_items, normalize_question
from orca_judge.training.heldout import split_heldout
from orca_judge.training.synthetic import NON_ANSWERS, RATINGS, build_synthetic_items

HUMAN = shared_path("orca-human")


def _item(i, question, reference, candidate="x"):
    return OrcaItem(
        id=f"q{i}",
        question=question,
        reference=reference,
        candidate=candidate,
        rationale=f"why {i}",
        transcript=f"said {i}",
        ratings=(3,),
    )


ITEMS = [
    _item(0, "What animal barks?", "A dog"),
    _item(1, "what animal barks", "A dog", candidate="a cat"),  # same question, other spelling
    _item(2, "Which instrument plays first?", "Piano"),
    _item(3, "Describe the scene.", "A man speaks while a crowd cheers loudly"),
    _item(4, "How many knocks?", "3"),
]


def test_one_candidate_of_each_kind_per_question_with_its_rule_rating():
    built, summary = build_synthetic_items(ITEMS, seed=1)
    assert summary.questions == 4  # "What animal barks?" and "what animal barks" are one
    assert summary.per_kind == {
        "reference": 4,
        "other-reference": 4,
        "non-answer": 4,
        "partial": 1,  # only the eight-word reference has four or more words
    }
    assert summary.total == len(built) == 13
    by_kind = Counter(it.id.split("#")[1] for it in built)
    assert by_kind == Counter(summary.per_kind)
    for it in built:
        kind = it.id.split("#")[1]
        assert it.ratings == RATINGS[kind]
        source = next(s for s in ITEMS if s.id == it.id.split("#")[0])
        # question, reference, rationale and transcript come from the source item
        assert (it.question, it.reference, it.rationale, it.transcript) == (
            source.question,
            source.reference,
            source.rationale,
            source.transcript,
        )
        if kind == "reference":
            assert it.reference.casefold() in it.candidate.casefold()
        elif kind == "other-reference":
            assert it.reference.casefold() not in it.candidate.casefold()
            others = [s.reference for s in ITEMS if s.reference != it.reference]
            assert any(o.casefold() in it.candidate.casefold() for o in others)
        elif kind == "non-answer":
            assert it.candidate in NON_ANSWERS
        else:
            assert it.candidate == "A man speaks while"


def test_deterministic_per_seed_and_different_across_seeds():
    a, _ = build_synthetic_items(ITEMS, seed=3)
    b, _ = build_synthetic_items(ITEMS, seed=3)
    c, _ = build_synthetic_items(ITEMS, seed=4)
    assert a == b
    assert [it.as_dict() for it in a] != [it.as_dict() for it in c]


def test_sentence_frames_keep_names_and_lower_case_words():
    built, _ = build_synthetic_items([*ITEMS, _item(9, "Who?", "BBC Radio")], seed=0)
    framed = {it.candidate for it in built if it.id.endswith("#reference")}
    # seed 0 puts both cases in a sentence frame, so the loop below checks something
    assert {"Based on the audio, a dog.", "It is piano.", "It is BBC Radio."} <= framed
    for text in framed:
        if text.startswith(("The answer is", "It is", "Based on the audio")):
            assert "A dog" not in text and "Piano" not in text  # lower-cased in a sentence
        if "bbc" in text.casefold():
            assert "BBC Radio" in text  # an acronym keeps its capitals


def test_kinds_can_be_chosen_and_bad_input_is_refused():
    built, summary = build_synthetic_items(ITEMS, kinds=["non-answer"])
    assert summary.per_kind == {"non-answer": 4} and len(built) == 4
    with pytest.raises(ValueError, match="unknown synthetic kind"):
        build_synthetic_items(ITEMS, kinds=["paraphrase"])
    with pytest.raises(ValueError, match="two distinct references"):
        build_synthetic_items([ITEMS[0], ITEMS[1]])


@pytest.mark.shared_data("orca-human")
def test_built_from_the_training_file_the_heldout_split_is_unchanged():
    """Synthetic questions are the training file's, so they add none the held-out could hold."""
    train = load_items(HUMAN / "train.jsonl", require_ratings=True)
    dev = load_items(HUMAN / "dev.jsonl", require_ratings=True)
    built, summary = build_synthetic_items(train, seed=0)
    assert summary.questions == len({normalize_question(it.question) for it in train})
    assert {normalize_question(it.question) for it in built} <= {
        normalize_question(it.question) for it in train
    }
    (plain,), held = split_heldout([train], [dev], 0.5, 0)
    (_, with_stage), held_too = split_heldout([built, train], [dev, dev], 0.5, 0)
    assert [it.id for it in held] == [it.id for it in held_too]
    assert plain == with_stage


def test_cli_writes_a_trainable_file_and_never_replaces_one(tmp_path, capsys):
    source = tmp_path / "rated.jsonl"
    source.write_text("".join(json.dumps(it.as_dict()) + "\n" for it in ITEMS))
    out = tmp_path / "stage" / "synthetic.jsonl"
    assert cli_synthesize.main([str(source), "--output", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["candidates"] == 13 and report["questions"] == 4 and report["source_items"] == 5
    written = load_items(out, require_ratings=True)
    assert [it.as_dict() for it in written] == [
        it.as_dict() for it in build_synthetic_items(ITEMS, seed=0)[0]
    ]
    before = out.read_bytes()
    assert cli_synthesize.main([str(source), "--output", str(out)]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert out.read_bytes() == before
    again = [str(source), "--output", str(out), "--seed", "5", "--overwrite"]
    assert cli_synthesize.main(again) == 0
    assert out.read_bytes() != before
    assert cli_synthesize.main([str(source), "--output", str(tmp_path / "x.json")]) == 2
    assert "expected a .jsonl file name" in capsys.readouterr().err
    (tmp_path / "dir.jsonl").mkdir()
    assert cli_synthesize.main([str(source), "--output", str(tmp_path / "dir.jsonl")]) == 2
    assert "is a folder; name a file" in capsys.readouterr().err
    (tmp_path / "empty.jsonl").write_text("\n")
    fresh = str(tmp_path / "fresh.jsonl")
    assert cli_synthesize.main([str(tmp_path / "empty.jsonl"), "--output", fresh]) == 2
    assert "empty.jsonl: holds no items" in capsys.readouterr().err


def test_cli_names_the_bad_line_of_its_input(tmp_path):
    source = tmp_path / "rated.jsonl"
    source.write_text(json.dumps(ITEMS[0].as_dict()) + "\n" + '{"question": "q"}\n')
    script = f"{sys.executable} -m orca_judge.cli.main synthesize"
    done = subprocess.run(
        [*script.split(), str(source), "--output", str(tmp_path / "s.jsonl")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert f"{source}:2: missing required field 'reference'" in done.stderr
    assert not (tmp_path / "s.jsonl").exists()


def test_the_abstention_kinds_pair_an_abstention_reference_with_each_kind_of_answer():
    from orca_judge.training.synthetic import (
        ABSTAINING_CANDIDATES,
        ABSTENTION_KINDS,
        ABSTENTION_REFERENCES,
        DEFAULT_KINDS,
    )

    plain, _ = build_synthetic_items(ITEMS, seed=1)
    built, summary = build_synthetic_items(ITEMS, seed=1, kinds=DEFAULT_KINDS + ABSTENTION_KINDS)
    assert summary.per_kind["abstention"] == summary.per_kind["answer-to-abstention"] == 4
    # The default kinds are built as before: asking for more adds items, changes none.
    assert {it.id: it for it in plain}.items() <= {it.id: it for it in built}.items()
    for it in built:
        source = next(s for s in ITEMS if s.id == it.id.split("#")[0])
        kind = it.id.split("#")[1]
        if kind not in ABSTENTION_KINDS:
            continue
        # The source's question (a training question), an abstention as the reference.
        assert it.question == source.question and it.reference in ABSTENTION_REFERENCES
        assert it.transcript == source.transcript and "cannot be told" in it.rationale
        if kind == "abstention":
            assert it.candidate in ABSTAINING_CANDIDATES and it.ratings == (5, 5, 5)
        else:
            assert source.reference.casefold().rstrip(".") in it.candidate.casefold()
            assert it.ratings == (1, 1, 1)


def test_a_stage_names_its_kinds_and_records_them(tmp_path):
    from orca_judge.training.plan import synthesized_record, synthetic_kinds
    from orca_judge.training.synthetic import DEFAULT_KINDS

    assert synthetic_kinds(True, "s0") == DEFAULT_KINDS and synthetic_kinds(False, "s0") == ()
    kinds = synthetic_kinds(["reference", "abstention", "abstention"], "s0")
    assert kinds == ("reference", "abstention")
    assert synthesized_record(DEFAULT_KINDS) == "rule-rated (orca synthesize)"  # as before
    assert synthesized_record(kinds) == "rule-rated (orca synthesize --kinds reference abstention)"
    with pytest.raises(ValueError, match=r"^s0: expected true, false or a list of kinds from"):
        synthetic_kinds(["refusal"], "s0")
    with pytest.raises(ValueError, match=r"^s0: expected true, false or a list of kinds"):
        synthetic_kinds([], "s0")


def test_a_non_answer_is_wrong_against_a_reference_and_right_against_an_abstention():
    # One wording, two ratings: only the reference tells them apart, so the judge must read it
    # (with disjoint wordings it learned that "I don't know." is always wrong).
    from orca_judge.data import OrcaItem
    from orca_judge.training.synthetic import NON_ANSWERS, REFUSAL

    sources = [
        OrcaItem(
            id=f"q{i}",
            question=f"Which sound is heard in clip {i}?",
            reference=f"sound number {i}",
            rationale="",
            transcript="",
            candidate="",
            ratings=(3,),
        )
        for i in range(300)
    ]
    built, _ = build_synthetic_items(sources, kinds=("non-answer", "abstention"))
    rated = {(it.candidate, it.id.split("#")[1], it.ratings) for it in built}
    for wording in NON_ANSWERS:
        assert (wording, "non-answer", (1, 1, 1)) in rated
        as_abstention = (wording, "abstention", (5, 5, 5)) in rated
        # A refusal does not say the audio lacks the answer: never an abstention.
        assert as_abstention is (wording != REFUSAL), wording
