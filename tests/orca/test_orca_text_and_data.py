"""Input templates, truncation, data validation, the length filter and question-disjoint splits."""

import json

import pytest
from orca_fixtures import synthetic_items, tiny_tokenizer_dir, write_jsonl

from orca_judge.data import OrcaItem, filter_by_length, load_items, question_disjoint_split
from orca_judge.errors import DataError
from orca_judge.template import encode, format_text

ITEM = {
    "question": "Q?",
    "reference": "R",
    "rationale": "because",
    "transcript": "said X",
    "candidate": "C",
}


def test_reference_template_reproduces_the_published_string():
    assert (
        format_text(ITEM)
        == " |context: because |question: Q? |correct answer: R |candidate answer: C"
    )


def test_reference_template_puts_the_transcript_inside_the_context_block():
    text = format_text(ITEM, use_transcript=True)
    assert text.startswith(" |context: |transcription: said X because |question: Q?")


def test_empty_blocks_follow_the_reference_and_flags_remove_blocks():
    # The reference's string: " |context: " + rationale + …, whatever the rationale holds.
    item = {**ITEM, "rationale": "", "transcript": ""}
    assert (
        format_text(item, use_transcript=True)
        == " |context:  |question: Q? |correct answer: R |candidate answer: C"
    )
    # "|transcription: " + t + " " + rationale, with an empty rationale.
    assert format_text({**ITEM, "rationale": ""}, use_transcript=True).startswith(
        " |context: |transcription: said X  |question: Q?"
    )
    assert "rationale" not in format_text(item, "paper")
    assert (
        format_text(ITEM, use_question=False, use_rationale=False)
        == " |correct answer: R |candidate answer: C"
    )
    assert "transcript" not in format_text({**ITEM, "transcript": ""}, "paper", use_transcript=True)


def test_paper_template_follows_question_reference_rationale_transcript_candidate_order():
    text = format_text(ITEM, "paper", use_transcript=True)
    assert (
        text == "question: Q?\nreference: R\nrationale: because\ntranscript: said X\ncandidate: C"
    )


def test_truncation_shortens_context_but_keeps_the_whole_candidate():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_tokenizer_dir())
    item = {
        **ITEM,
        "rationale": "the speaker says the next word is sun " * 40,
        "candidate": "a man speaks and a musical instrument is played",
    }
    full = encode(tok, item, template="reference", max_tokens=10_000, add_special_tokens=False)
    cut = encode(tok, item, template="reference", max_tokens=60, add_special_tokens=False)
    assert not full.truncated and len(full.input_ids) > 60
    assert cut.truncated and len(cut.input_ids) <= 60
    assert tok.decode(cut.input_ids).endswith("|candidate answer: " + item["candidate"])


def test_truncating_a_multibyte_rationale_ends_quickly_on_whole_characters():
    # Cutting token ids inside a multi-byte character decodes to U+FFFD, which re-encodes
    # longer: the old token-based cut never converged on such items (real Chinese rationales).
    import signal

    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_tokenizer_dir())
    rationale = "音频开始处传来命令，随后紧张的音乐立刻转变为火车奔驰的声音。" * 3
    item = {**ITEM, "rationale": rationale, "candidate": "the answer is good"}

    def give_up(*_):
        raise TimeoutError("encode did not finish in 10 s")

    previous = signal.signal(signal.SIGALRM, give_up)
    signal.alarm(10)
    try:
        cut = encode(tok, item, template="reference", max_tokens=60, add_special_tokens=False)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    text = tok.decode(cut.input_ids)
    assert cut.truncated and 55 <= len(cut.input_ids) <= 60
    kept = text.split(" |context: ")[1].split(" |question: ")[0]
    assert kept and rationale.startswith(kept) and "\ufffd" not in text
    assert text.endswith("|candidate answer: the answer is good")


def test_jsonl_loading_validates_and_accepts_empty_candidates_and_unrated_items(tmp_path):
    records = [{**ITEM, "id": "a", "candidate": "", "ratings": [1]}, {**ITEM, "id": "b"}]
    items = load_items(write_jsonl(tmp_path / "x.jsonl", records))
    assert items[0].candidate == "" and items[0].ratings == (1,)
    assert items[1].ratings is None
    with pytest.raises(DataError, match="'ratings' is missing"):
        load_items(tmp_path / "x.jsonl", require_ratings=True)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"ratings": [1, 6]}, r"x\.jsonl:2: field 'ratings' has 6"),
        ({"ratings": None}, r"x\.jsonl:2: field 'ratings' is null"),
        ({"ratings": []}, r"x\.jsonl:2: field 'ratings' must be a non-empty list"),
        ({"candidate": None}, r"x\.jsonl:2: missing required field 'candidate'"),
        ({"question": 3}, r"x\.jsonl:2: field 'question' must be a string"),
    ],
)
def test_bad_items_raise_errors_naming_file_line_and_field(tmp_path, bad, message):
    good = {**ITEM, "ratings": [3]}
    path = write_jsonl(tmp_path / "x.jsonl", [good, {**good, **bad}])
    with pytest.raises(DataError, match=message):
        load_items(path, require_ratings=True)


def test_invalid_json_line_is_reported_with_its_line_number(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({**ITEM, "ratings": [3]}) + "\n{not json\n")
    with pytest.raises(DataError, match=r"x\.jsonl:2:2: malformed JSON"):
        load_items(path)


def test_json_file_and_datasets_dataset_load_like_jsonl(tmp_path):
    import datasets

    records = synthetic_items(4, seed=1)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(records))
    from_json = load_items(path)
    from_ds = load_items(datasets.Dataset.from_list(records))
    assert from_json == from_ds and [it.id for it in from_json] == [r["id"] for r in records]


def test_human_targets_use_mean_and_sample_variance_on_the_unit_scale():
    item = OrcaItem(id="x", question="q", reference="r", candidate="c", ratings=(1, 3, 5))
    assert item.human_mean_unit == pytest.approx(0.5)
    assert item.human_var_unit == pytest.approx(0.25)
    assert (
        OrcaItem(id="y", question="q", reference="r", candidate="c", ratings=(4,)).human_var_unit
        == 0
    )


def test_length_filter_counts_removed_items():
    items = load_items([{**ITEM, "rationale": "x" * n, "ratings": [2]} for n in (10, 990, 2000)])
    kept, removed = filter_by_length(items, 1000)
    assert [len(it.rationale) for it in kept] == [10] and removed == 2
    assert filter_by_length(items, None) == (items, 0)


def test_question_disjoint_split_holds_out_only_unseen_questions():
    items = load_items([{**ITEM, "question": f"q{i % 10}", "ratings": [3]} for i in range(50)])
    a, b = question_disjoint_split(items, 0.5, seed=3, exclude_questions={"q0", "q1"})
    qa, qb = {it.question for it in a}, {it.question for it in b}
    assert not qa & qb and len(a) + len(b) == 50
    assert {"q0", "q1"} <= qa and len(qb) == 4


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_file_with_a_repeated_item_id_is_refused_naming_the_ids(tmp_path, suffix):
    records = synthetic_items(4, seed=2, prefix="dup")
    records[3]["id"] = records[1]["id"]
    path = tmp_path / f"items{suffix}"
    if suffix == ".jsonl":
        write_jsonl(path, records)
    else:
        path.write_text(json.dumps(records))
    with pytest.raises(DataError, match=rf"items\{suffix}: item ids occur more than once: 'dup"):
        load_items(path)
    # Unique ids, the same file otherwise: accepted.
    records[3]["id"] = "dup-unique"
    path.write_text(json.dumps(records)) if suffix == ".json" else write_jsonl(path, records)
    assert [it.id for it in load_items(path)][3] == "dup-unique"


def test_orca_score_refuses_an_input_with_a_repeated_id_in_one_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    records = synthetic_items(3, seed=2, prefix="dup")
    records[2]["id"] = records[0]["id"]
    write_jsonl(tmp_path / "in.jsonl", records)
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "orca"),
            "score",
            "--checkpoint",
            str(tmp_path / "none"),
            "--input",
            str(tmp_path / "in.jsonl"),
            "--output",
            str(tmp_path / "out.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("orca score: error: ") and "occur more than once" in line
