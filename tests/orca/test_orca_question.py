"""What `metric: orca` hands the judge as the question: named field, `question`, the prompt."""

from __future__ import annotations

from types import SimpleNamespace

import datasets
import pytest

from eval_plugins.orca_wiring import check_question_field, question_rule
from orca_judge.errors import OrcaMetricError
from orca_judge.metric.payloads import judge_inputs, needs_prompt, question_of
from orca_judge.metric.settings import OrcaMetricSettings

AUTO = OrcaMetricSettings("ckpt")
NAMED = OrcaMetricSettings("ckpt", question_field="q")
NEVER = OrcaMetricSettings("ckpt", question_field="")


def test_named_field_wins_over_question_and_prompt():
    doc = {"q": "What sings?", "question": "other"}
    assert question_of(NAMED, doc, "prompt") == ("What sings?", "doc.q")
    assert not needs_prompt(NAMED, doc)


def test_question_field_then_rendered_prompt_when_nothing_is_named():
    assert question_of(AUTO, {"question": "What sings?"}, "prompt") == (
        "What sings?",
        "doc.question",
    )
    assert needs_prompt(AUTO, {"answer": "x"}) and not needs_prompt(AUTO, {"question": "y"})
    assert question_of(AUTO, {"answer": "x"}, "Q: What sings?\nA:") == (
        "Q: What sings?\nA:",
        "doc_to_text",
    )


def test_empty_name_or_no_doc_sends_no_question():
    assert question_of(NEVER, {"question": "What sings?"}, "prompt") == ("", None)
    assert question_of(AUTO, None, "prompt") == ("", None)
    inputs = judge_inputs(None, reference="the sun", candidate=["sun"], doc=None)
    assert (inputs["question"], inputs["question_from"]) == ("", None)


def test_judge_inputs_record_where_the_question_came_from():
    inputs = judge_inputs(
        AUTO, reference="the sun", candidate="sun", doc={"id": 3}, prompt="What sings (3)?"
    )
    assert inputs["question"] == "What sings (3)?" and inputs["question_from"] == "doc_to_text"
    assert inputs["id"] == "3"


def test_a_named_field_the_docs_lack_fails_before_generation_naming_it():
    listed = SimpleNamespace(eval_docs=[{"q": "a"}, {"x": "b"}, {"x": "c"}])
    with pytest.raises(
        OrcaMetricError, match=r"'q' is missing from 2 doc\(s\), the first at position 1"
    ):
        check_question_field(listed, NAMED, "task 't', metric orca")
    table = SimpleNamespace(eval_docs=datasets.Dataset.from_list([{"question": "a", "id": 1}]))
    with pytest.raises(OrcaMetricError, match=r"'q' is not a doc field \(fields: question, id\)"):
        check_question_field(table, NAMED, "task 't', metric orca")
    check_question_field(table, AUTO, "task 't', metric orca")  # nothing named: nothing to check


def test_results_record_the_rule():
    assert question_rule(NAMED) == "doc.q"
    assert question_rule(AUTO) == "doc.question if present, else doc_to_text"
    assert question_rule(NEVER) is None
