"""`metric: orca` over docs with bad ratings: one judge pass (none at all), one report.

The harnesses call the aggregation once per figure; a pass that fails must fail once per
(task, filter), not re-run the judge and re-report for each of the six figures.
"""

from __future__ import annotations

import json
import logging
import math

import pytest
from orca_fixtures import synthetic_items, tiny_trained_checkpoint

from orca_judge.judge import OrcaJudge
from orca_judge.metric.aggregate import SitedValues, aggregate
from orca_judge.metric.judge_pass import JudgeSession, session_scope
from orca_judge.metric.payloads import AGREEMENT_FIGURES, FIGURES, judge_inputs, payloads
from orca_judge.metric.settings import OrcaMetricSettings

N_ITEMS = 6


@pytest.fixture(scope="module")
def checkpoint() -> str:
    return str(tiny_trained_checkpoint())


def aggregate_every_figure(checkpoint: str, docs: list[dict], folder) -> dict[str, float]:
    """The harness's calls: one aggregation per figure, in one evaluation's judge session."""
    entry = {"checkpoint": checkpoint, "ratings_field": "ratings", "output_dir": str(folder)}
    settings = OrcaMetricSettings(checkpoint, ratings_field="ratings")
    figures = (*FIGURES, *AGREEMENT_FIGURES)
    per_doc = [
        payloads(
            judge_inputs(settings, reference=d["reference"], candidate=d["candidate"], doc=d),
            entry,
            doc_aware=True,
            figures=figures,
        )
        for d in docs
    ]
    with session_scope(JudgeSession()) as session:
        values = {
            f: aggregate(SitedValues([p[f] for p in per_doc], "rated_qa", "none")) for f in figures
        }
    values["failures"] = session.failures
    return values


def test_bad_ratings_stop_the_pass_once_before_the_judge_runs(checkpoint, scored, tmp_path, caplog):
    docs = synthetic_items(N_ITEMS, 3, "r")
    docs[2]["ratings"] = [4, 7]
    with caplog.at_level(logging.ERROR, logger="orca_judge.metric.aggregate"):
        values = aggregate_every_figure(checkpoint, docs, tmp_path)
    assert scored == []  # the judge never ran, for none of the six figures
    assert all(math.isnan(v) for k, v in values.items() if k != "failures")
    (failure,) = values["failures"]
    (logged,) = [r.getMessage() for r in caplog.records]
    assert logged == failure
    assert "rated_qa/none: ORCA judge failed (ratings_field 'ratings': " in failure
    assert "field 'ratings' has 7; ratings must be integers 1..5" in failure
    (pending,) = tmp_path.glob("orca_pending_rated_qa_none_*.jsonl")
    assert len(pending.read_text().splitlines()) == N_ITEMS and str(pending) in failure


def test_good_ratings_are_judged_in_one_pass_for_every_figure(checkpoint, scored, tmp_path):
    values = aggregate_every_figure(checkpoint, synthetic_items(N_ITEMS, 3, "r"), tmp_path)
    assert scored == [N_ITEMS] and values["failures"] == []
    assert 0 <= values["orca"] <= 1 and not math.isnan(values["orca_rho"])
    assert len(list(tmp_path.glob("orca_rated_qa_none_*.jsonl"))) == 1


def test_predictions_made_where_docs_were_collected_are_reused_in_doc_order(
    checkpoint, scored, tmp_path
):
    """A run of several processes: each doc's payloads arrive judged, rank by rank."""
    docs = synthetic_items(N_ITEMS, 3, "r")
    one = aggregate_every_figure(checkpoint, docs, tmp_path / "one")
    (one_file,) = (tmp_path / "one").glob("orca_rated_qa_none_*.jsonl")
    entry = {"checkpoint": checkpoint, "ratings_field": "ratings", "output_dir": str(tmp_path)}
    settings = OrcaMetricSettings(checkpoint, ratings_field="ratings")
    inputs = [
        judge_inputs(settings, reference=d["reference"], candidate=d["candidate"], doc=d, index=i)
        for i, d in enumerate(docs)
    ]
    judge = OrcaJudge.from_pretrained(checkpoint)
    made = [p.to_dict() for p in judge.score([{**x, "id": x["id"]} for x in inputs])]
    figures = (*FIGURES, *AGREEMENT_FIGURES)
    # Gathered as two processes hold them: docs 0, 2, 4 then 1, 3, 5.
    gathered = [0, 2, 4, 1, 3, 5]
    per_doc = [
        payloads(inputs[i], entry, doc_aware=True, figures=figures, scored=made[i])
        for i in gathered
    ]
    calls_before = len(scored)
    with session_scope(JudgeSession()):
        values = {
            f: aggregate(SitedValues([p[f] for p in per_doc], "rated_qa", "none")) for f in figures
        }
    assert len(scored) == calls_before  # the aggregation scored nothing
    assert values == pytest.approx({k: v for k, v in one.items() if k != "failures"}, rel=1e-6)
    (two_file,) = tmp_path.glob("orca_rated_qa_none_*.jsonl")
    ids = [json.loads(line)["inputs"]["id"] for line in two_file.read_text().splitlines()]
    assert ids == [json.loads(line)["inputs"]["id"] for line in one_file.read_text().splitlines()]
