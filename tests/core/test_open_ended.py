"""Open-ended AQUA: questions without options, references, the rule-based stance, the figures."""

from __future__ import annotations

import math

import pytest

from aqua_tasks.core.data import AquaItem
from aqua_tasks.core.open_ended import (
    ABSTAINS,
    ABSTENTION_REFERENCE,
    ANSWERS,
    REFUSES,
    JudgeRule,
    judged_outcomes,
    names_reference,
    open_figures,
    open_question,
    open_stderrs,
    pool_open,
    rationale_of,
    reference_of,
    reply_stance,
    rule_outcomes,
)
from aqua_tasks.errors import AquaDataError


def item(item_type: str, question: str, answer: str = "Dog", subtype: str = "") -> AquaItem:
    options = ("Rooster", "Crow", "Dog", "Pig", "Sheep")
    if answer not in options:
        options = (*options[:4], answer)
    return AquaItem(
        id=7,
        track="animal",
        variant="main",
        type=item_type,
        subtype=subtype,
        question=question,
        options=options,
        answer=answer,
        answer_index=options.index(answer),
        audio_filename="a.wav",
        true_class="Dog",
    )


def test_the_open_question_is_the_stem_without_options_or_guidance():
    solvable = item(
        "Solvable",
        "Which animal can be heard in the recording? (a) Rooster (b) Crow (c) Dog (d) Pig "
        "(e) Sheep\nPlease select one from the options provided.",
    )
    assert open_question(solvable) == "Which animal can be heard in the recording?"
    assert reference_of(solvable) == ("Dog", "class")
    assert rationale_of(solvable) == "The sound in the recording is Dog."


def test_an_iaqd_item_has_the_abstention_as_its_reference():
    iaqd = item(
        "IAQD",
        "In which place is the animal you heard likely located? (a) Library (b) Beach "
        "(c) Hospital (d) Cafe (e) Unanswerable\nSelect your answer.",
        answer="Unanswerable",
        subtype="place",
    )
    assert open_question(iaqd) == "In which place is the animal you heard likely located?"
    assert reference_of(iaqd) == (ABSTENTION_REFERENCE, "abstention")
    assert "Dog" in rationale_of(iaqd) and "(place)" in rationale_of(iaqd)


def test_aad_and_iasd_have_no_open_form():
    aad = item("AAD", "Which animal? (a) Crow (b) None of the above", answer="None of the above")
    with pytest.raises(AquaDataError, match="AAD has no open form"):
        reference_of(aad)


def test_a_question_that_is_only_options_is_refused():
    with pytest.raises(AquaDataError, match="no text before its options"):
        open_question(item("Solvable", "(a) Rooster (b) Crow (c) Dog (d) Pig (e) Sheep"))


@pytest.mark.parametrize(
    "reply",
    [
        "It cannot be determined from the audio.",
        "I can't tell where the animal is from this recording.",
        "There is not enough information in the clip to say.",
        "The audio alone does not reveal the place.",
        "Unknown.",
        "I don't know.",
        "<think>The clip is a dog barking; nothing says where.</think>Impossible to determine.",
        "No hay información suficiente: Antwort: keine davon",
        "无法确定",
    ],
)
def test_abstentions_are_read_as_abstaining(reply):
    assert reply_stance(reply) == ABSTAINS


@pytest.mark.parametrize(
    "reply",
    [
        "Dog",
        "A dog barking.",
        "Probably on a farm, since roosters live there.",
        "<think>I can't tell at first, but it is a bark.</think>It is a dog.",
    ],
)
def test_answers_are_read_as_answering(reply):
    assert reply_stance(reply) == ANSWERS


@pytest.mark.parametrize(
    "reply",
    [
        "I cannot hear the audio, so I cannot tell.",
        "No audio was provided with the question.",
        "",
    ],
)
def test_refusals_win_over_abstention(reply):
    # A model that never took in the clip made no judgement of the question.
    assert reply_stance(reply) == REFUSES


def test_the_judge_rule_counts_an_expected_rating_at_the_threshold_as_right():
    rule = JudgeRule(4.0)
    assert rule.correct(0.75) and not rule.correct(0.7499)
    assert JudgeRule.from_setting(None) == JudgeRule(4.0)
    assert JudgeRule.from_setting("3").correct(0.5)
    assert rule.describe() == "expected judge rating >= 4"
    for bad in (0.5, 6, "high", True):
        with pytest.raises(AquaDataError, match="judge_threshold"):
            JudgeRule.from_setting(bad)


def values_and_units():
    # Three clips: right+abstains, right+answers, wrong+abstains; one unjudged Solvable item.
    values = [
        {"id": 0, "clip": 0, "type": "Solvable", "stance": ANSWERS, "rule_correct": True},
        {"id": 1, "clip": 0, "type": "IAQD", "stance": ABSTAINS, "rule_correct": True},
        {"id": 2, "clip": 1, "type": "Solvable", "stance": ANSWERS, "rule_correct": True},
        {"id": 3, "clip": 1, "type": "IAQD", "stance": ANSWERS, "rule_correct": False},
        {"id": 4, "clip": 2, "type": "Solvable", "stance": ABSTAINS, "rule_correct": False},
        {"id": 5, "clip": 2, "type": "IAQD", "stance": REFUSES, "rule_correct": False},
        {"id": 6, "clip": 3, "type": "Solvable", "stance": ANSWERS, "rule_correct": False},
    ]
    values = [v | {"threshold": 4.0} for v in values]
    # Expected correctness (unit scale): right is >= .75 (a mean rating of 4).
    units = [1.0, 0.9, 0.8, 0.1, 0.2, 0.95, None]
    return values, units


def test_open_figures_follow_the_judge_and_the_rules_by_hand():
    values, units = values_and_units()
    judged = judged_outcomes(values, units, JudgeRule(4.0))
    figures = open_figures(values, judged)
    # Ori: Solvable judged right on clips 0 and 1 of 4 (clip 3 unjudged counts as wrong).
    assert figures["acc"] == 0.5
    # IAQD judged right: clips 0 and 2 (the judge rewarded clip 2's refusal: the rule does not).
    assert figures["acc_iaqd"] == pytest.approx(2 / 3)
    assert figures["ca_iaqd"] == 0.5 and figures["n_ca_iaqd"] == 2
    assert figures["joint_iaqd"] == pytest.approx(1 / 3)
    # By rule alone: Solvable right on clips 0 and 1, IAQD right on clip 0 (it abstains).
    assert figures["acc_rule"] == 0.5
    assert figures["acc_iaqd_rule"] == pytest.approx(1 / 3)
    assert figures["ca_iaqd_rule"] == 0.5 and figures["n_ca_iaqd_rule"] == 2
    assert figures["abstains_solvable"] == 0.25 and figures["refuses_iaqd"] == pytest.approx(1 / 3)
    assert figures["n_items"] == 7 and figures["n_solvable"] == 4 and figures["n_unjudged"] == 1
    # Judge and rules agree on 5 of the 6 judged items (not on clip 2's refusal).
    assert figures["judge_rule_agree"] == pytest.approx(5 / 6)
    assert [o.correct for o in rule_outcomes(values)] == [v["rule_correct"] for v in values]


def test_a_solvable_reply_is_right_by_rule_when_it_names_the_class_alone():
    classes = ["Rooster", "Crow", "Dog", "Pig", "Sea lion", "Lion"]
    assert names_reference("A dog barking.", "Dog", classes)
    assert names_reference("<think>a crow? no</think>Dogs.", "Dog", classes)
    assert not names_reference("A dog or a pig.", "Dog", classes)
    assert not names_reference("It cannot be determined whether it is a dog.", "Dog", classes)
    assert not names_reference("Hotdog stand noise", "Dog", classes)
    assert names_reference("A sea lion barking.", "Sea lion", classes)
    assert not names_reference("A lion roaring.", "Sea lion", classes)


def test_stderrs_are_binomial_for_shares():
    values, units = values_and_units()
    judged = judged_outcomes(values, units, JudgeRule(4.0))
    stderrs = open_stderrs(values, judged, n_boot=200)
    # The sample standard error of a share (n - 1), as the multiple-choice figures have it.
    assert stderrs["acc"] == pytest.approx(math.sqrt(0.5 * 0.5 / 3))
    assert stderrs["abstains_solvable"] == pytest.approx(math.sqrt(0.25 * 0.75 / 3))
    assert stderrs["ca_iaqd"] >= 0


def test_pooling_keeps_each_tasks_clips_apart():
    values, units = values_and_units()
    judged = judged_outcomes(values, units, JudgeRule(4.0))
    pooled_values, pooled = pool_open({"a": (values, judged), "b": (values, judged)})
    figures = open_figures(pooled_values, pooled)
    assert figures["n_items"] == 14 and figures["n_ca_iaqd"] == 4
    assert figures["ca_iaqd"] == open_figures(values, judged)["ca_iaqd"]


def test_judgements_must_match_the_items():
    values, units = values_and_units()
    with pytest.raises(AquaDataError, match="7 items but 6 judgements"):
        judged_outcomes(values, units[:-1], JudgeRule())
