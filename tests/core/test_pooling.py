"""All-tracks figures pooled over clips, and lm-eval's results fixed up after its aggregation.

The synthetic runs below are the issue's example: three tracks of 360 clips whose Solvable
item is right on 180 / 120 / 60 clips, IAQD right on 180 / 60 / 30 of those (CA 1.0 / 0.5 /
0.5). lm-eval's size-weighted group mean prints (1 + 0.5 + 0.5) / 3 = 0.667; pooled over
clips the CA is (180 + 60 + 30) / 360 = 0.75.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from aqua_tasks.core.pooling import (
    all_tracks_rows,
    pool_condition,
    pool_outcomes,
    pool_summaries,
    released_pools,
)
from aqua_tasks.core.scoring import ALL_METRICS, COUNT_METRICS, ItemOutcome, pack_outcome, summarize
from aqua_tasks.core.stats import binomial_stderr, bootstrap_ca_stderr
from aqua_tasks.reports.run_metrics import aqua_rows
from aqua_tasks.reports.tables import paper_table
from eval_plugins.lm_eval import compat
from eval_plugins.lm_eval.aqua.results import fix_aqua_results

TASKS = ("aqua_animal", "aqua_music", "aqua_vocal")
CLIPS = 360


def track_values(solvable_right: int, iaqd_right: int, aad_right: int = 0) -> list[int]:
    """Packed per-item values of one track: clip c's Solvable is right iff c < solvable_right;
    its IAQD iff c < iaqd_right; its AAD iff c < aad_right; IASD always wrong."""
    values = []
    for clip in range(CLIPS):
        for item_type, right in (
            ("Solvable", clip < solvable_right),
            ("AAD", clip < aad_right),
            ("IASD", False),
            ("IAQD", clip < iaqd_right),
        ):
            values.append(pack_outcome(clip, ItemOutcome(clip, item_type, right, True, False)))
    return values


@pytest.fixture(scope="module")
def issue_example() -> dict[str, list[int]]:
    return {
        "aqua_animal": track_values(180, 180, aad_right=90),
        "aqua_music": track_values(120, 60),
        "aqua_vocal": track_values(60, 30),
    }


def lm_eval_results(outcomes: dict[str, list[int]], *, group: bool) -> dict:
    """The results dict lm-eval 0.4.13 builds for these tasks (group: `--tasks aqua`)."""
    table = {}
    for task, values in outcomes.items():
        summary = summarize(values)
        row = {"alias": task, "name": task, "sample_len": len(values)}
        for metric in ALL_METRICS:
            row[f"{metric},none"] = summary[metric]
            row[f"{metric}_stderr,none"] = "N/A"
        table[task] = row
    directions = {t: dict.fromkeys(ALL_METRICS, True) for t in outcomes}
    results = {
        "results": table,
        "group_subtasks": {t: [] for t in outcomes},
        "higher_is_better": directions,
        "versions": dict.fromkeys(outcomes, 1.0),
    }
    if group:
        sizes = [table[t]["sample_len"] for t in outcomes]
        mean = {
            f"{m},none": float(np.average([table[t][f"{m},none"] for t in outcomes], weights=sizes))
            for m in ("acc", "ca_aad", "ca_iasd", "ca_iaqd", "unparsed_rate")
        }
        row = {"alias": "aqua", "name": "aqua", "sample_len": sum(sizes), **mean}
        results["results"]["aqua"] = dict(row)
        results["groups"] = {"aqua": dict(row)}
        results["group_subtasks"]["aqua"] = list(outcomes)
        results["higher_is_better"]["aqua"] = dict.fromkeys(ALL_METRICS, True)
    return results


def test_pooled_ca_of_the_issue_example_is_075_where_lm_eval_prints_0667(issue_example):
    given = lm_eval_results(issue_example, group=True)
    assert given["results"]["aqua"]["ca_iaqd,none"] == pytest.approx(2 / 3)
    fixed = fix_aqua_results(given, {t: {"none": v} for t, v in issue_example.items()})
    for table in ("results", "groups"):
        row = fixed[table]["aqua"]
        assert row["ca_iaqd,none"] == pytest.approx(270 / 360)
        assert row["n_ca_iaqd,none"] == 360
        assert row["acc,none"] == pytest.approx(360 / 1080)
        assert row["ca_aad,none"] == pytest.approx(90 / 360)
        assert row["ca_iasd,none"] == 0.0
        assert row["joint_iaqd,none"] == pytest.approx(270 / 1080)
        assert row["acc_aad,none"] == pytest.approx(90 / 1080)
        assert row["n_items,none"] == 4320 and row["n_solvable,none"] == 1080
        assert row["sample_len"] == 4320 and "pooled" in row["alias"]
        # Binomial standard error of a rate, over its pooled n (lm-eval's n - 1 convention).
        p = 360 / 1080
        assert row["acc_stderr,none"] == pytest.approx(math.sqrt(p * (1 - p) / 1079))
        # CA's clip-bootstrap stderr is near the binomial one over its 360 clips.
        assert 0.015 < row["ca_iaqd_stderr,none"] < 0.03
    # The given dict is left as lm-eval wrote it.
    assert given["results"]["aqua"]["ca_iaqd,none"] == pytest.approx(2 / 3)


def test_an_undefined_track_ca_leaves_the_pooled_ca_defined_and_nan_needs_zero_clips():
    outcomes = {
        "aqua_animal": track_values(40, 10),
        "aqua_music": track_values(0, 0),  # no Solvable right: CA undefined
        "aqua_vocal": track_values(10, 5),
    }
    given = lm_eval_results(outcomes, group=True)
    assert math.isnan(given["results"]["aqua_music"]["ca_iaqd,none"])
    fixed = fix_aqua_results(given, {t: {"none": v} for t, v in outcomes.items()})
    assert fixed["results"]["aqua"]["ca_iaqd,none"] == pytest.approx(15 / 50)
    assert fixed["results"]["aqua"]["n_ca_iaqd,none"] == 50
    assert fixed["results"]["aqua_music"]["ca_iaqd_stderr,none"] == "N/A"
    nothing = {t: track_values(0, 0) for t in TASKS}
    fixed = fix_aqua_results(
        lm_eval_results(nothing, group=True), {t: {"none": v} for t, v in nothing.items()}
    )
    assert math.isnan(fixed["results"]["aqua"]["ca_iaqd,none"])
    assert fixed["results"]["aqua"]["n_ca_iaqd,none"] == 0


def test_tracks_selected_without_the_group_get_an_all_tracks_row(issue_example):
    given = lm_eval_results(issue_example, group=False)
    fixed = fix_aqua_results(given, {t: {"none": v} for t, v in issue_example.items()})
    assert fixed["results"]["aqua"]["ca_iaqd,none"] == pytest.approx(0.75)
    assert fixed["groups"]["aqua"]["ca_iaqd,none"] == pytest.approx(0.75)
    assert fixed["group_subtasks"]["aqua"] == list(TASKS)
    assert "aqua" not in given["results"] and "groups" not in given
    # One track is no all-tracks figure.
    one = {"aqua_vocal": issue_example["aqua_vocal"]}
    fixed = fix_aqua_results(
        lm_eval_results(one, group=False), {"aqua_vocal": {"none": one["aqua_vocal"]}}
    )
    assert set(fixed["results"]) == {"aqua_vocal"}


def test_counts_are_integers_without_direction_or_stderr_and_rates_get_stderrs(issue_example):
    given = lm_eval_results(issue_example, group=False)
    fixed = fix_aqua_results(given, {t: {"none": v} for t, v in issue_example.items()})
    for name in (*TASKS, "aqua"):
        row = fixed["results"][name]
        for metric in COUNT_METRICS:
            assert type(row[f"{metric},none"]) is int
            assert f"{metric}_stderr,none" not in row
            assert fixed["higher_is_better"][name][metric] is None
        assert fixed["higher_is_better"][name]["acc"] is True
        assert fixed["higher_is_better"][name]["unparsed_rate"] is False
    vocal = fixed["results"]["aqua_vocal"]
    assert vocal["acc_stderr,none"] == pytest.approx(binomial_stderr(60, 360))
    assert vocal["unparsed_rate_stderr,none"] == 0.0
    # bootstrap_iters=0 asks lm-eval for no stderr at all: none is filled in.
    bare = fix_aqua_results(given, {t: {"none": v} for t, v in issue_example.items()}, n_boot=0)
    assert bare["results"]["aqua_vocal"]["acc_stderr,none"] == "N/A"


def test_pooling_from_summaries_alone_is_exact_for_ori_and_ca(issue_example):
    rows = [summarize(v) for v in issue_example.values()]
    pooled = pool_summaries(rows)
    assert pooled["ca_iaqd"] == pytest.approx(0.75) and pooled["n_ca_iaqd"] == 360
    assert pooled["acc"] == pytest.approx(1 / 3) and pooled["n_solvable"] == 1080
    assert math.isnan(pooled["joint_iaqd"])  # needs per-type counts a summary lacks
    from_items = summarize(pool_outcomes(issue_example))
    for metric in ("acc", "ca_aad", "ca_iasd", "ca_iaqd", "unparsed_rate", "n_ca_iaqd"):
        assert pooled[metric] == pytest.approx(from_items[metric])


def test_paper_table_pools_a_group_row_lm_eval_averaged(issue_example):
    given = lm_eval_results(issue_example, group=True)
    rows = aqua_rows(given)
    assert list(rows) == [*TASKS, "aqua"]
    assert rows["aqua"]["ca_iaqd"] == pytest.approx(0.75) and rows["aqua"]["n_ca_iaqd"] == 360
    assert "| aqua | 33.3 | 25.0 | 0.0 | 75.0 | 1080 | 360 | 360 | 360 | 0.0 |" in paper_table(
        given
    )
    # Ablation tracks pool into their own row, after them.
    cot = {t.replace("aqua_", "aqua-cot_"): v for t, v in issue_example.items()}
    rows = aqua_rows(lm_eval_results({**issue_example, **cot}, group=False))
    assert list(rows) == [*sorted(cot), "aqua-cot", *TASKS, "aqua"]


def test_all_tracks_rows_pair_each_setting_with_its_tracks():
    assert all_tracks_rows(["aqua_music", "aqua_animal", "aqua-cot_vocal", "other"]) == {
        "aqua": ["aqua_animal", "aqua_music"]
    }


def test_clips_of_different_tracks_never_pair_when_pooled():
    # Clip index 0 exists in both tracks; each Solvable answer conditions its own track only.
    right = [
        pack_outcome(0, ItemOutcome(0, "Solvable", True, True, False)),
        pack_outcome(0, ItemOutcome(0, "IAQD", True, True, False)),
    ]
    wrong = [
        pack_outcome(0, ItemOutcome(0, "Solvable", False, True, False)),
        pack_outcome(0, ItemOutcome(0, "IAQD", True, True, False)),
    ]
    pooled = summarize(pool_outcomes({"aqua_animal": right, "aqua_music": wrong}))
    assert pooled["ca_iaqd"] == 1.0 and pooled["n_ca_iaqd"] == 1 and pooled["n_solvable"] == 2


def test_ca_bootstrap_stderr_is_near_the_binomial_one_and_nan_when_undefined():
    solvable = np.array([True] * 200 + [False] * 100)
    variant = np.array([True] * 150 + [False] * 150)
    se = bootstrap_ca_stderr(solvable, variant, n_boot=2000, seed=1)
    assert se == pytest.approx(math.sqrt(0.75 * 0.25 / 200), rel=0.15)
    assert bootstrap_ca_stderr(solvable, variant, n_boot=2000, seed=1) == se  # seeded
    assert math.isnan(bootstrap_ca_stderr([False, False], [True, True]))
    assert math.isnan(binomial_stderr(1, 1))


def test_evaluate_hooks_compose(issue_example, monkeypatch):
    from lm_eval import evaluator

    calls = []

    def evaluate(lm, task_dict, bootstrap_iters=100000):
        calls.append("evaluate")
        return lm_eval_results(issue_example, group=False)

    def finish(task_dict, results, bootstrap_iters):
        calls.append(("finish", bootstrap_iters))
        return fix_aqua_results(results, {t: {"none": v} for t, v in issue_example.items()})

    monkeypatch.setattr(evaluator, "evaluate", evaluate)
    monkeypatch.setattr(compat, "HOOKS", dataclasses.replace(compat.HOOKS))
    compat.patch_evaluation(prepare=lambda task_dict: calls.append("prepare"))
    compat.patch_evaluation(finish=finish)
    compat.patch_evaluation()  # a bare call keeps both hooks
    results = evaluator.evaluate(None, {}, bootstrap_iters=0)
    assert calls == ["prepare", "evaluate", ("finish", 0)]
    assert results["results"]["aqua"]["n_items,none"] == 4320


def test_another_runs_solvable_answers_condition_each_track_on_its_own_clips():
    # CoT CA conditioned on the plain run (aqua score --condition-on), pooled: clip 0 of
    # animal is right in the plain run, clip 0 of music is not.
    iaqd = [pack_outcome(0, ItemOutcome(0, "IAQD", True, True, False))]
    solvable = [pack_outcome(0, ItemOutcome(0, "Solvable", False, True, False))]
    per_task = {"aqua-cot_animal": solvable + iaqd, "aqua-cot_music": solvable + iaqd}
    condition = pool_condition({"aqua-cot_animal": {0: True}, "aqua-cot_music": {0: False}})
    pooled = summarize(pool_outcomes(per_task), condition)
    assert pooled["ca_iaqd"] == 1.0 and pooled["n_ca_iaqd"] == 1


def test_released_pools_keep_a_built_track_out_of_the_all_row_and_say_so():
    tasks = ["aqua_animal", "aqua_mmau", "aqua_music", "aqua-cot_mmau", "aqua-cot_vocal"]
    pools, notes = released_pools(tasks)
    assert pools == {"aqua": ["aqua_animal", "aqua_music"]}
    assert notes == [
        "All (aqua) pools the released tracks only (animal+music); aqua_mmau has its own columns",
        "All (aqua-cot) pools the released tracks only (no All row); aqua-cot_mmau has its own "
        "columns",
    ]
