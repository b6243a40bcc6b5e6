"""The AQUA protocol metrics on hand-computed cases."""

import math

import pytest

from aqua_tasks.core.data import load_items
from aqua_tasks.core.scoring import metric_value, score_reply, summarize
from aqua_tasks.reports.tables import format_table


def _row(clip: str, item_type: str, correct: bool, parsed: bool = True, excluded: bool = False):
    return {
        "clip": clip,
        "type": item_type,
        "correct": correct,
        "parsed": parsed,
        "excluded": excluded,
    }


def test_conditional_accuracy_counts_only_clips_with_a_correct_solvable_answer():
    rows = [
        _row("c1", "Solvable", True),
        _row("c1", "AAD", True),
        _row("c1", "IASD", False),
        _row("c1", "IAQD", True),
        _row("c2", "Solvable", True),
        _row("c2", "AAD", False),
        _row("c2", "IASD", False),
        _row("c2", "IAQD", True),
        _row("c3", "Solvable", False),
        _row("c3", "AAD", True),
        _row("c3", "IASD", True),
        _row("c3", "IAQD", True, parsed=False),
    ]
    m = summarize(rows)
    assert m["acc"] == pytest.approx(2 / 3)
    assert m["acc_aad"] == pytest.approx(2 / 3)
    assert m["ca_aad"] == pytest.approx(1 / 2)  # c1 right, c2 wrong; c3 not conditioned
    assert m["ca_iasd"] == 0.0
    assert m["ca_iaqd"] == 1.0
    assert m["n_ca_aad"] == 2
    assert m["joint_aad"] == pytest.approx(1 / 3)
    assert m["joint_iaqd"] == pytest.approx(2 / 3)
    assert m["unparsed_rate"] == pytest.approx(1 / 12)
    assert m["n_items"] == 12 and m["n_solvable"] == 3 and m["n_unconditioned"] == 0


def test_clip_without_its_solvable_item_is_counted_not_conditioned():
    rows = [_row("c1", "AAD", True), _row("c1", "IASD", True), _row("c2", "Solvable", False)]
    m = summarize(rows)
    assert m["n_unconditioned"] == 2
    assert m["acc_aad"] == 1.0
    assert math.isnan(m["ca_aad"]) and m["n_ca_aad"] == 0


def test_excluded_items_leave_every_metric_and_are_counted():
    rows = [_row("c1", "Solvable", True), _row("c1", "AAD", False, excluded=True)]
    m = summarize(rows)
    assert m["n_excluded"] == 1 and m["n_items"] == 1
    assert math.isnan(m["acc_aad"])


def test_item_with_duplicate_options_scores_by_option_text_and_can_be_excluded(released_dir):
    items = load_items(released_dir, "animal")
    item = next(i for i in items if "duplicate_options" in i.flags)
    twice = next(o for o in item.options if item.options.count(o) > 1)
    second_copy = [k for k, o in enumerate(item.options) if o == twice][1]
    verdict = score_reply(item, f"({chr(ord('a') + second_copy)})")
    assert verdict.parsed and verdict.chosen_option == twice and not verdict.correct
    assert score_reply(item, item.answer).correct
    assert verdict.flags == ("duplicate_options",) and not verdict.excluded
    assert score_reply(item, item.answer, exclude_defective=True).excluded


def test_music_iasd_items_listing_the_true_instrument_are_flagged_and_keep_released_gold(
    released_dir,
):
    items = {i.id: i for i in load_items(released_dir, "music")}
    flagged = sorted(i.id for i in items.values() if "true_class_listed" in i.flags)
    assert flagged == [186, 230, 258, 322, 678, 866, 1118]
    assert items[186].answer == "None of the above"


def test_empty_reply_is_unparsed_and_wrong(released_dir):
    item = load_items(released_dir, "vocal")[0]
    verdict = score_reply(item, "   ")
    assert not verdict.parsed and not verdict.correct
    assert summarize([metric_value(verdict)])["unparsed_rate"] == 1.0


def test_table_has_the_paper_columns_and_dashes_for_undefined_rates():
    m = summarize([_row("c1", "Solvable", False), _row("c1", "AAD", True)])
    table = format_table({"animal": m})
    assert table.splitlines()[0].startswith("| track | Ori | AAD | IASD | IAQD |")
    assert "| animal | 0.0 | — |" in table
