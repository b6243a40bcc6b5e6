"""One reader per harness turns a logged row into a `RunItem`; ORCA items are built from them.

`tests/data/lmms_replay_legacy` is a real lmms-eval run that replayed the replies of
`tests/data/legacy_run_0_1_0` (a real lm-eval run): the same replies to the same items.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from aqua_tasks.core.prompts import render_prompt, render_question
from aqua_tasks.errors import RunError, TrackMismatchError
from aqua_tasks.runs import (
    RunItem,
    orca_records,
    read_judge_samples,
)
from aqua_tasks.runs.lm_eval_samples import read_samples_file
from aqua_tasks.runs.lmms_eval_logs import read_lmms_samples_file
from aqua_tasks.runs.model import reply_text
from orca_judge.metric.payloads import judge_inputs
from orca_judge.metric.settings import OrcaMetricSettings

DATA = Path(__file__).parents[1] / "data"
LEGACY = DATA / "legacy_run_0_1_0"
LEGACY_STAMP = "2026-12-01T03-08-18.454234"
LMMS = DATA / "lmms_replay_legacy"
LMMS_STAMP = "20261201_180306"
# Where a row was read and what only one harness logs (lmms-eval logs no doc: it is rebuilt,
# and the lm-eval fixture was run before the extractor was renamed from `mmau`).
HARNESS_FIELDS = {"source", "file", "doc", "doc_hash", "prompt", "extractor", "manifest"}


def _comparable(item: RunItem) -> dict:
    # The lm-eval fixture's docs hold the clips' paths relative to the authors' home
    # ('./u2619111/…'), the released files absolute ('/work/u2619111/…'): the same clip.
    clip = Path(item.item.audio_filename).name
    fields = {k: v for k, v in vars(item).items() if k not in HARNESS_FIELDS}
    return fields | {"item": replace(item.item, audio_filename=clip)}


def legacy_items(track: str = "animal"):
    return read_samples_file(LEGACY / f"samples_aqua_{track}_{LEGACY_STAMP}.jsonl")


def lmms_items(released_dir: Path, track: str = "animal"):
    path = LMMS / f"{LMMS_STAMP}_samples_aqua_{track}.jsonl"
    return read_lmms_samples_file(path, data_dir=released_dir).items


@pytest.mark.parametrize("track", ["animal", "music", "vocal"])
def test_an_lmms_eval_row_and_an_lm_eval_sample_give_the_same_item(released_dir, track):
    lm_eval, lmms = legacy_items(track), lmms_items(released_dir, track)
    assert len(lm_eval) == len(lmms) == 8
    for a, b in zip(lm_eval, lmms, strict=True):
        assert _comparable(a) == _comparable(b)
        # lmms-eval logs the prompt without the audio placeholder lm-eval's holds.
        assert (a.prompt, b.prompt) == (render_prompt(b.doc), render_question(b.doc))
    first = lmms[0]
    assert (first.task, first.item.id, first.doc_id, first.line) == (f"aqua_{track}", 0, 0, 1)
    assert first.target.startswith("(") and first.reply


def test_the_first_item_of_each_reader_carries_what_was_logged(released_dir):
    a, b = legacy_items()[0], lmms_items(released_dir)[0]
    assert (a.reply, a.target, a.filter) == ("(a) Rooster", "(c) Dog", "none")
    assert (b.reply, b.target, b.filter) == ("(a) Rooster", "(c) Dog", "none")
    assert a.prompt.startswith("<audio>\nWhich animal can be heard in the recording? (a) Rooster")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("(b) Dog", "(b) Dog"), (["(b) Dog"], "(b) Dog"), ([["x"]], "x"), (None, ""), ([None], "")],
)
def test_a_logged_reply_unwraps_to_its_text(value, expected):
    assert reply_text(value, "f.jsonl:3", "filtered_resps") == expected


@pytest.mark.parametrize("value", [{"a": 1}, ["a", "b"], [], 3])
def test_a_logged_reply_that_is_not_one_text_is_refused_naming_the_field(value):
    with pytest.raises(RunError, match=r"^f\.jsonl:3: field 'response' must be one reply"):
        reply_text(value, "f.jsonl:3", "response")


def test_lm_eval_scores_the_first_of_its_replies_and_keeps_another_tasks_non_text(tmp_path):
    rows = [json.loads(x) for x in (LEGACY / f"samples_aqua_animal_{LEGACY_STAMP}.jsonl").open()]
    rows[0]["filtered_resps"] = ["(b) Crow", "(c) Dog"]  # two repeats: the first is scored
    aqua = tmp_path / "samples_aqua_animal_2026-12-02T00-00-00.jsonl"
    aqua.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_samples_file(aqua)[0].reply == "(b) Crow"
    other = {"doc_id": 0, "doc": {"q": "?"}, "target": 1, "filtered_resps": [[-1.5, False]]}
    mc = tmp_path / "samples_mc_2026-12-02T00-00-00.jsonl"
    mc.write_text(json.dumps(other) + "\n")
    (item,) = read_samples_file(mc)
    assert (item.task, item.item, item.reply, item.target) == ("mc", None, "", 1)


def test_an_ablation_samples_file_whose_docs_are_of_another_track_is_refused(tmp_path):
    renamed = tmp_path / f"samples_aqua-cot_music_{LEGACY_STAMP}.jsonl"
    renamed.write_bytes((LEGACY / f"samples_aqua_animal_{LEGACY_STAMP}.jsonl").read_bytes())
    with pytest.raises(TrackMismatchError, match=r"aqua-cot_music \(track music\) but its docs"):
        read_samples_file(renamed)


def _records_from_raw_samples(path: Path, settings: OrcaMetricSettings | None) -> list[dict]:
    """The records straight from the logged JSON, as `metric: orca` would have judged them."""
    records = []
    for index, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        sample = json.loads(line)
        record = judge_inputs(
            settings,
            reference=sample["target"],
            candidate=sample["filtered_resps"][0],
            doc=sample["doc"],
            index=index,
            prompt=sample["arguments"]["gen_args_0"]["arg_0"],
        )
        records.append({**record, "id": record["id"] or str(index)})
    return records


@pytest.mark.parametrize("doc_less", [False, True])
def test_orca_items_from_run_items_are_the_logged_samples_records(doc_less):
    path = LEGACY / f"samples_aqua_music_{LEGACY_STAMP}.jsonl"
    settings = None if doc_less else OrcaMetricSettings("-", question_field="")
    read = read_judge_samples(path)
    assert read.harness == "lm-eval" and read.notes == ()
    assert orca_records(read.items, settings) == _records_from_raw_samples(path, settings)


def test_orca_items_of_both_harnesses_come_from_the_same_items(released_dir):
    settings = OrcaMetricSettings("-")
    lm_eval = read_judge_samples(LEGACY / f"samples_aqua_vocal_{LEGACY_STAMP}.jsonl")
    lmms = read_judge_samples(
        LMMS / f"{LMMS_STAMP}_samples_aqua_vocal.jsonl", data_dir=released_dir
    )
    assert lmms.harness == "lmms-eval"
    assert orca_records(lmms.items, settings) == orca_records(lm_eval.items, settings)
    first = orca_records(lmms.items, settings)[0]
    assert first["question_from"] == "doc.question" and first["id"] == "0"


def test_orca_items_refuse_a_sample_that_logs_no_reference(tmp_path):
    sample = {"doc_id": 0, "doc": {"question": "?"}, "filtered_resps": ["a dog"]}
    path = tmp_path / "samples_clip_qa_2026-12-02T00-00-00.jsonl"
    path.write_text(json.dumps(sample) + "\n")
    with pytest.raises(ValueError, match=r"clip_qa_2026-12-02T00-00-00\.jsonl:1: logs no 'target'"):
        orca_records(read_judge_samples(path).items, None)
