"""RankShare, one process's share of ORCA judging in a multi-process lm-eval run, on its own.

A built task's stand-in holds what lm-eval's holds when `process_results` runs: its
instances, each with its doc, doc position, request index and filtered replies.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from orca_fixtures import tiny_trained_checkpoint

from eval_plugins.orca_wiring import RankShare, doc_inputs
from orca_judge.judge import OrcaJudge
from orca_judge.metric.judge_pass import JudgeSession
from orca_judge.metric.settings import OrcaMetricSettings


def built_task(docs: list[dict]) -> SimpleNamespace:
    instances = [
        SimpleNamespace(doc=d, doc_id=2 * i, idx=0, filtered_resps={"none": d["reply"]})
        for i, d in enumerate(docs)  # this process holds every 2nd doc of the task
    ]
    return SimpleNamespace(
        instances=instances,
        config=SimpleNamespace(task="rated_qa", doc_to_choice=None),
        doc_to_target=lambda doc: doc["answer"],
        doc_to_text=lambda doc: doc["question"],
    )


DOCS = [
    {"question": "Which bird sings?", "answer": "a robin", "reply": "a robin"},
    {"question": "Which bird sings?", "answer": "a robin", "reply": "a robin"},  # the same
    {"question": "Which bird sings?", "answer": "a robin", "reply": "no bird at all"},
]


@pytest.fixture(scope="module")
def settings() -> OrcaMetricSettings:
    return OrcaMetricSettings(str(tiny_trained_checkpoint()), device="cpu")


def test_each_doc_gets_its_prediction_and_position_identical_docs_in_turn(settings, scored):
    calls = scored
    task = built_task(DOCS)
    share = RankShare(task, settings, JudgeSession())
    got = [share.lookup(doc_inputs(task, settings, d, [d["reply"]])) for d in DOCS]
    assert calls == [2]  # one batched pass over the two distinct replies
    assert [position for position, _ in got] == [0, 2, 4]
    assert [p["id"] for _, p in got] == ["0", "2", "4"]
    assert got[0][1]["expected_unit"] == got[1][1]["expected_unit"]
    assert 0 <= got[2][1]["expected_unit"] <= 1
    other = {"question": "Which bird sings?", "answer": "a robin", "reply": "a crow"}
    assert share.lookup(doc_inputs(task, settings, other, ["a crow"])) == (None, None)


def test_a_failed_pass_leaves_the_judging_to_rank_zero_and_says_so(settings, monkeypatch, caplog):
    def failing(self, records, *args, **kwargs):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(OrcaJudge, "score", failing)
    task = built_task(DOCS)
    share = RankShare(task, settings, JudgeSession())
    with caplog.at_level(logging.WARNING, logger="eval_plugins.orca_wiring"):
        found = share.lookup(doc_inputs(task, settings, DOCS[0], [DOCS[0]["reply"]]))
    assert found == (None, None)
    (message,) = [r.getMessage() for r in caplog.records if r.name == "eval_plugins.orca_wiring"]
    assert message == (
        "rated_qa: judging this process's docs failed (CUDA out of memory); ORCA judges them "
        "on rank 0"
    )
