"""One statistics module and one conditioning helper: values equal to the earlier code's."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from aqua_tasks.core import intervals, stats
from aqua_tasks.core.data import UNANSWERABLE_TYPES, load_items
from aqua_tasks.core.docs import clip_indices
from aqua_tasks.core.scoring import (
    ALL_METRICS,
    ItemOutcome,
    as_outcome,
    clip_outcomes,
    item_outcome,
    metric_value,
    pack_outcome,
    score_reply,
    summarize,
    unpack_outcome,
)
from aqua_tasks.gate import paired as regress
from aqua_tasks.task.aggregations import aggregate_acc, aggregate_ca_aad, task_summary
from aqua_tasks.task.definition import build_docs, process_results

Z = 1.959963984540054  # the 97.5 % normal quantile


def hand_wilson(k: int, n: int) -> tuple[float, float]:
    """The closed form the intervals were computed with before, clipped to [0, 1]."""
    p = k / n
    denominator = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / denominator
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 10), (10, 10), (0, 360), (360, 360)])
def test_wilson_at_none_and_all_successes_equals_the_hand_formula_within_0_and_1(k, n):
    low, high = stats.wilson_interval(k, n)
    assert (low, high) == pytest.approx(hand_wilson(k, n), rel=1e-12, abs=1e-15)
    assert 0.0 <= low <= k / n <= high <= 1.0
    assert (low == 0.0) == (k == 0) and (high == pytest.approx(1.0)) == (k == n)


@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_equals_scipys_wilson_interval(level):
    from scipy.stats import binomtest

    for n in (1, 2, 7, 40, 361):
        for k in range(0, n + 1, max(1, n // 9)):
            ci = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
            want = (max(0.0, ci.low), min(1.0, ci.high))
            assert stats.wilson_interval(k, n, level) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_wilson_of_no_trials_is_nan_and_bad_counts_are_refused():
    assert all(math.isnan(v) for v in stats.wilson_interval(0, 0))
    assert stats.wilson_interval(240, 360) == pytest.approx(hand_wilson(240, 360), rel=1e-12)
    with pytest.raises(ValueError, match=r"successes must be in 0\.\.n"):
        stats.wilson_interval(11, 10)
    with pytest.raises(ValueError, match="level"):
        stats.wilson_interval(1, 10, level=1.5)


def test_old_module_names_are_the_statistics_modules_functions():
    assert intervals.wilson_interval is stats.wilson_interval
    assert intervals.bootstrap_ca_interval is stats.bootstrap_ca_interval
    for name in ("mcnemar_exact_p", "discordant_pairs", "holm", "conditional_accuracy"):
        assert getattr(regress, name) is getattr(stats, name)
    assert regress.paired_bootstrap_ca is stats.paired_bootstrap_ca
    assert regress.BootstrapResult is stats.BootstrapResult


# Values written by the three separate bootstraps before they shared one engine.
def test_ca_interval_from_the_shared_engine_equals_the_earlier_values():
    rng = np.random.default_rng(1)
    solvable = rng.random(300) < 0.8
    variant = rng.random(300) < 0.4
    assert stats.bootstrap_ca_interval(solvable, variant, seed=3) == (
        0.3401639344262295,
        0.46342201022816676,
    )


def test_paired_bootstraps_from_the_shared_engine_equal_the_earlier_values():
    solvable = [True] * 30 + [False] * 10
    base_var = [True] * 20 + [False] * 20
    cand_var = [True] * 5 + [False] * 35
    assert stats.paired_bootstrap_ca(
        solvable, base_var, solvable, cand_var, n_boot=1000, seed=[3, 7]
    ) == stats.BootstrapResult(
        -0.5, -0.6875538793103447, -0.3333333333333333, 0.001998001998001998, 1000, 1000
    )
    base = [0.5] * 12
    cand = [0.5 - 0.1 * (i % 2) - 0.05 * (i % 3 == 0) for i in range(12)]
    groups = [i % 5 for i in range(12)]
    assert stats.paired_bootstrap_mean(
        base, cand, groups, n_boot=500, seed=[1, 2]
    ) == stats.BootstrapResult(
        -0.06666666666666664,
        -0.08076923076923075,
        -0.05416666666666665,
        0.003992015968063872,
        500,
        500,
    )


def test_resample_totals_sums_the_drawn_rows_of_each_column():
    table = np.column_stack([np.ones(7), np.arange(7.0)])
    totals = stats.resample_totals(table, n_boot=50, seed=0)
    assert totals.shape == (50, 2) and (totals[:, 0] == 7).all()
    assert (totals[:, 1] >= 0).all() and (totals[:, 1] <= 42).all()
    assert np.array_equal(totals, stats.resample_totals(table, n_boot=50, seed=0))
    with pytest.raises(ValueError, match="n_boot"):
        stats.resample_totals(table, n_boot=0)
    with pytest.raises(ValueError, match="non-empty"):
        stats.resample_totals(np.zeros((0, 2)), n_boot=5)


def _released_values(released_dir) -> list:
    """Verdicts of a reply mix (letters, texts, rejections, noise) over the animal track."""
    verdicts = []
    for n, item in enumerate(load_items(released_dir, "animal")):
        pick = (item.answer_index + (n * n + n // 4) % 3 // 2) % len(item.options)
        letter = chr(ord("a") + pick)
        shapes = (f"({letter})", f"It is {item.options[pick]}.", "", f"**{letter.upper()}**")
        verdicts.append(score_reply(item, shapes[n % 7 % 4], exclude_defective=True))
    return verdicts


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        (math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k] for k in a
    )


def test_compact_outcome_round_trips_through_summarize_to_the_dict_forms_metrics(released_dir):
    verdicts = _released_values(released_dir)
    as_dicts = [metric_value(v) | {"choice": v.choice, "reason": v.reason} for v in verdicts]
    compact = [item_outcome(v) for v in verdicts]
    logged = json.loads(json.dumps(compact))  # as lm-eval writes and a reader loads them
    assert logged[0] == list(compact[0]) and len(logged[0]) == 5
    reference = summarize(as_dicts)
    assert reference["n_items"] > 0 and 0 < reference["ca_aad"] < 1
    assert _same(summarize(compact), reference) and _same(summarize(logged), reference)
    condition = {o.clip: not o.correct for o in compact if o.type == "Solvable"}
    assert _same(summarize(compact, condition), summarize(as_dicts, condition))
    assert intervals.metric_intervals(logged) == intervals.metric_intervals(as_dicts)
    with pytest.raises(ValueError, match="5-entry"):
        as_outcome(["clip", "AAD", True])


def test_packed_outcome_holds_the_exact_clip_index_and_summarises_like_the_named_forms(
    released_dir,
):
    items = load_items(released_dir, "animal")
    verdicts = _released_values(released_dir)
    indices = clip_indices(items)
    assert sorted(indices.values()) == list(range(len({i.audio_filename for i in items})))
    outcomes = [item_outcome(v) for v in verdicts]
    packed = [pack_outcome(indices[i.clip_key], o) for i, o in zip(items, outcomes, strict=True)]
    assert all(type(p) is int for p in json.loads(json.dumps(packed)))
    assert max(packed) < 100_000  # five digits under each of a line's 18 metrics
    for item, outcome, value in zip(items, outcomes, packed, strict=True):
        assert unpack_outcome(value) == outcome._replace(clip=indices[item.clip_key])
    as_dicts = [metric_value(v) | {"choice": v.choice, "reason": v.reason} for v in verdicts]
    reference = summarize(as_dicts)
    assert reference["n_excluded"] > 0 and _same(summarize(packed), reference)
    assert intervals.metric_intervals(packed) == intervals.metric_intervals(as_dicts)
    # Another run's Solvable answers, keyed by clip index, condition exactly as by name.
    by_name = {o.clip: not o.correct for o in outcomes if o.type == "Solvable"}
    by_index = {indices[i.clip_key]: by_name[i.audio_filename] for i in items}
    assert _same(summarize(packed, by_index), summarize(as_dicts, by_name))


def test_lm_eval_logs_the_packed_outcome_of_each_doc_under_every_metric(released_dir):
    docs = build_docs("music", data_dir=str(released_dir), settings={"audio": False})
    items = load_items(released_dir, "music")
    indices = clip_indices(items)
    for doc, item in zip(docs[:40], items, strict=False):
        values = process_results(doc, ["(b)"])
        assert set(values) == set(ALL_METRICS) and len(set(values.values())) == 1
        verdict = score_reply(item, "(b)")
        assert doc["clip_index"] == indices[item.clip_key]
        assert values["acc"] == pack_outcome(doc["clip_index"], item_outcome(verdict))


@pytest.mark.parametrize(
    ("clip_index", "outcome", "message"),
    [
        (-1, ItemOutcome("c", "AAD", True, True, False), "clip_index"),
        (True, ItemOutcome("c", "AAD", True, True, False), "clip_index"),
        (3, ItemOutcome("c", "Other", True, True, False), "type"),
    ],
)
def test_pack_outcome_refuses_what_it_cannot_hold_exactly(clip_index, outcome, message):
    with pytest.raises(ValueError, match=message):
        pack_outcome(clip_index, outcome)


@pytest.mark.parametrize("value", [-5, True, 1.5, "12"])
def test_a_logged_value_that_is_no_outcome_is_refused_by_name(value):
    with pytest.raises(ValueError, match=r"per-item AQUA value|packed AQUA outcome"):
        as_outcome(value)


def test_clip_outcomes_align_each_unanswerable_item_with_its_clips_solvable_answer():
    values = [
        ItemOutcome("c1", "Solvable", True, True, False),
        ItemOutcome("c1", "AAD", False, True, False),
        ItemOutcome("c2", "AAD", True, True, False),
        ItemOutcome("c2", "Solvable", False, True, False),
        ItemOutcome("c3", "AAD", True, True, False),  # no Solvable item: unconditioned
        ItemOutcome("c4", "Solvable", True, True, True),  # excluded
    ]
    outcomes = clip_outcomes(values)
    assert outcomes.own_solvable == {"c1": True, "c2": False}
    aad = outcomes.conditioned["AAD"]
    assert aad.clips == ("c1", "c2")
    assert aad.solvable_right.tolist() == [True, False]
    assert aad.variant_right.tolist() == [False, True]
    assert outcomes.n_unconditioned == 1 and outcomes.n_excluded == 1
    other = clip_outcomes(values, {"c1": False, "c2": True, "c3": True})
    assert other.conditioned["AAD"].clips == ("c1", "c2", "c3")
    assert other.conditioned["AAD"].solvable_right.tolist() == [False, True, True]
    assert all(other.conditioned[t].clips == () for t in UNANSWERABLE_TYPES if t != "AAD")


def test_regress_refuses_runs_whose_item_ids_name_different_clips():
    def row(i, clip, item_type, correct=True):
        return {"id": i, "clip": clip, "type": item_type, "correct": correct}

    base = [row(0, "c1", "Solvable"), row(1, "c1", "AAD"), row(2, "c2", "Solvable")]
    cand = [row(0, "c1", "Solvable"), row(1, "c2", "AAD"), row(2, "c2", "Solvable")]
    for r in base + cand:
        r |= {"parsed": True, "excluded": False}
    with pytest.raises(ValueError, match="different clips or types"):
        regress.compare_task("t", base, cand, n_boot=10, seed=0)


def test_the_18_aggregations_of_a_task_summarise_its_items_once(released_dir):
    values = [item_outcome(v) for v in _released_values(released_dir)]
    task_summary.cache_clear()
    from aqua_tasks.task import aggregations

    results = {m: getattr(aggregations, f"aggregate_{m}")(list(values)) for m in ALL_METRICS}
    assert task_summary.cache_info().misses == 1 and task_summary.cache_info().hits == 17
    assert _same(results, summarize(values))
    # Another task's items are another key: summarised afresh, never the first one's figures.
    flipped = [v._replace(correct=not v.correct) for v in values]
    assert aggregate_acc(flipped) == pytest.approx(1 - results["acc"])
    assert aggregate_ca_aad(values) == results["ca_aad"]
