"""Realistic replies: answer first with justification, non-answers, and MMAU's string_match.

Every expected outcome below was decided by hand from the rules in docs/extraction.md (and,
for `mmau-string-match`, from MMAU's published rule) before the extractors were run on it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from aqua_tasks.core.extract import (
    DEFAULT_EXTRACTOR,
    EXTRACTOR_ALIASES,
    EXTRACTOR_NAMES,
    EXTRACTOR_VERSIONS,
    extract,
    extract_aqua_rules,
    extract_mmau,
    extract_string_match,
    get_extractor_name,
    rescoring_notice,
    string_match,
)
from aqua_tasks.runs import read_run, score_items

LEGACY = Path(__file__).parents[1] / "data" / "legacy_run_0_1_0"

ANIMAL_AAD = ["Dog", "Cat", "Cow", "Pig", "None of the above"]
ANIMAL_SOLVABLE = ["Cat", "Dog", "Cow", "Pig", "Sheep"]
ANIMAL_ROOSTER = ["Rooster", "Crow", "Dog", "Pig", "Sheep"]
ANIMAL_GOAT = ["Horse", "Pig", "Sheep", "Goat", "None of the above"]
ANIMAL_IAQD = ["Brown", "Black", "White", "Grey", "Unanswerable"]
MUSIC_AAD = ["Violin", "Flute", "Piano", "Drum set", "None of the above"]
MUSIC_SOLVABLE = ["Acoustic Guitar", "Harmonica", "Piano", "Drum set", "Keyboard"]
MUSIC_PIANO = ["Acoustic Guitar", "Flute", "Violin", "Piano", "Keyboard"]
VOCAL_SOLVABLE = ["Coughs", "Sniffs", "Throat clearings", "Laughter", "Sighs"]
VOCAL_AAD = ["Coughs", "Sneezes", "Laughter", "Sniffs", "None of the above"]
VOCAL_LAUGH = ["Coughs", "Sneezes", "Laughter", "Sniffs", "Sighs"]
COLOURS_IASD = ["Red", "Blue", "Green", "Yellow", "None of the above"]


def outcome(reply: str, options: list[str]) -> tuple[str | None, bool]:
    result = extract_aqua_rules(reply, options)
    return result.letter, result.parsed


# ---- section 1: clear answers that used to be lost -------------------------------------

ANSWER_FIRST = [
    # the four shapes of the issue
    ("(e) None of the above\n\nWhat I hear is a harmonica, which is not one of the listed "
     "instruments (violin, flute, piano, drums).", MUSIC_AAD, "E"),
    ("(a) Coughs\n\nThe short explosive bursts are coughing; sniffing and throat clearing sound "
     "different.", VOCAL_SOLVABLE, "A"),
    ("**(d) Goat**\n\nThe bleating rules out the other options (horse, pig, sheep).",
     ANIMAL_GOAT, "D"),
    ("(b) Sneeze\n\nThe sharp burst is a sneeze rather than a cough, a laugh or a sniff.",
     VOCAL_AAD, "B"),
    # more styles of answer-then-justification
    ("Answer: (c) Cow\n\nThe low, sustained moo is typical of cattle; a dog would bark and a pig "
     "would grunt.", ANIMAL_AAD, "C"),
    ("(e) None of the above.\n\n- (a) Dog: no barking\n- (b) Cat: no meowing\n- (c) Cow: no "
     "mooing\n- (d) Pig: no grunting\nThe clip is a rooster crowing.", ANIMAL_AAD, "E"),
    ("Cow.\n\nIt is a low moo; dogs and cats sound nothing like this.", ANIMAL_AAD, "C"),
    ("### Answer\n**(B) Cat**\n\n### Why\nThe high-pitched meow is distinctive. A dog barks, a "
     "cow moos.", ANIMAL_AAD, "B"),
    ("Sneezes — the burst is sudden and followed by a sniffle, not a cough.", VOCAL_AAD, "B"),
    ("(d) Piano. A guitar would be plucked and a flute would be breathy, but this is struck.",
     MUSIC_PIANO, "D"),
    ("The answer is (a) Coughs. Sniffs are softer and throat clearings are longer.",
     VOCAL_SOLVABLE, "A"),
    ("Laughter. Coughing and sneezing are ruled out because the sound is rhythmic and voiced.",
     VOCAL_LAUGH, "C"),
    ("1. **(e) Unanswerable**\n2. The audio cannot reveal the colour of the dog.",
     ANIMAL_IAQD, "E"),
    ("E. None of the above — the instrument is a harmonica, which isn't listed.", MUSIC_AAD, "E"),
    ("Goat. Not a sheep: the bleat is higher and more nasal.", ANIMAL_GOAT, "D"),
    ("- **Answer:** (e) None of the above\n- **Reason:** the clip is a harmonica; violin, flute "
     "and piano are absent.", MUSIC_AAD, "E"),
    ("**Coughs**\n\n* Sneezes: no, too long\n* Sniffs: no, too loud", VOCAL_AAD, "A"),
    ("Option C (Cow). Dogs bark and pigs grunt; this is a moo.", ANIMAL_AAD, "C"),
    ("I believe it's (d) Pig — the grunting is unmistakable, unlike a cow's moo.",
     ANIMAL_AAD, "D"),
    ("(b) Cat\n\nDogs bark, cows moo and pigs grunt; what I hear is a meow.", ANIMAL_AAD, "B"),
    ("Piano.\nReasoning: the notes decay after each hammer strike, which a violin or a flute "
     "cannot do.", MUSIC_AAD, "C"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "options", "letter"), ANSWER_FIRST)
def test_committing_first_line_wins_over_justifying_mentions(reply, options, letter):
    assert outcome(reply, options) == (letter, True)


NEGATION_AND_CONTRAST = [
    ("It is not a cough, a sniff or a laugh; it is a sneeze.", VOCAL_AAD, "B"),
    ("The recording rules out horse, pig and sheep, so it must be a goat.", ANIMAL_GOAT, "D"),
    ("Rather than a dog or a cat, this sounds like a cow.", ANIMAL_AAD, "C"),
    ("Neither the dog nor the cat fits; the low moo is a cow.", ANIMAL_AAD, "C"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "options", "letter"), NEGATION_AND_CONTRAST)
def test_negation_covers_a_whole_list_of_options(reply, options, letter):
    assert outcome(reply, options) == (letter, True)


HYPOTHETICALS = [
    ("A violin would sound brighter; this mellow, breathy tone is a flute.", MUSIC_AAD, "B"),
    ("If it were a piano we would hear hammers. It is a flute.", MUSIC_AAD, "B"),
    ("Were it a cow, the sound would be lower. What I hear is a pig.", ANIMAL_AAD, "D"),
    ("A sneeze would be sharper. This is a cough.", VOCAL_AAD, "A"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "options", "letter"), HYPOTHETICALS)
def test_options_in_would_or_if_clauses_are_not_choices(reply, options, letter):
    assert outcome(reply, options) == (letter, True)


def test_reply_with_only_hypothetical_options_is_unparsed():
    assert outcome("A dog would bark and a cat would meow.", ANIMAL_AAD) == (None, False)


@pytest.mark.parametrize(
    ("reply", "letter"),
    [("The rooster is crowing loudly.", "A"), ("A rooster crowing at dawn.", "A"),
     ("Crowing.", "B"), ("A crow cawing, not a rooster.", "B")],
)  # fmt: skip
def test_verb_form_of_one_option_does_not_make_another_options_reply_ambiguous(reply, letter):
    assert outcome(reply, ANIMAL_ROOSTER) == (letter, True)


@pytest.mark.parametrize(
    "reply",
    ["The instrument being played here is clearly a guitar.",
     "What we hear in this recording is somebody strumming a guitar."],
)  # fmt: skip
def test_plain_sentence_naming_one_option_by_its_head_noun_is_read(reply):
    result = extract_aqua_rules(reply, MUSIC_SOLVABLE)
    assert (result.letter, result.reason) == ("A", "head word of option 'Acoustic Guitar'")


def test_negated_head_noun_is_not_a_choice():
    reply = "The instrument being played here is clearly not a guitar."
    assert outcome(reply, MUSIC_SOLVABLE) == (None, False)


SELF_CORRECTIONS = [
    ("(a) Dog. Actually, on a second listen, it is a cat.", "B"),
    ("It's a cat. Wait, no — the pitch is too low; it's a cow.", "C"),
    ("Final answer: (b)\n\nCorrection: the final answer is (c).", "C"),
    ("(c) Cow\n\nThe sound is long and low. Final answer: (d) Pig", "D"),
    ("The answer is (a). Actually, I take that back — it's (d).", "D"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "letter"), SELF_CORRECTIONS)
def test_explicit_later_commitment_wins_over_the_first_line(reply, letter):
    assert outcome(reply, ANIMAL_AAD) == (letter, True)


@pytest.mark.parametrize(
    ("reply", "options"),
    [("(a) Dog or (b) Cat — hard to tell.", ANIMAL_AAD),
     ("It might be a dog, or perhaps a cat.", ANIMAL_AAD),
     ("Either a cough or a sneeze.", VOCAL_AAD)],
)  # fmt: skip
def test_hedges_between_two_options_stay_unparsed(reply, options):
    result = extract_aqua_rules(reply, options)
    assert (result.choice, result.parsed) == (None, False)
    assert result.reason.startswith("ambiguous")


# ---- section 2: answers, answerability judgements, no answer ---------------------------

NO_ANSWER = [
    ("Error: rate limited", "error"),
    ("ERROR 429: Too Many Requests", "error"),
    ("Traceback (most recent call last):\n  File \"serve.py\", line 12\nRuntimeError: CUDA out "
     "of memory", "error"),
    ("Request failed with status code 503 (Service Unavailable).", "error"),
    ("The audio file could not be processed.", "error"),
    ("Sorry, I cannot process audio.", "refusal"),
    ("I can't hear audio.", "refusal"),
    ("As a text-based AI, I am unable to listen to audio files, so I cannot tell which animal it "
     "is.", "refusal"),
    ("No audio was provided with your question.", "refusal"),
    ("I'm sorry, but I don't have the ability to play or analyze audio recordings.", "refusal"),
    ("lol", "no-commitment"),
    ("Hmm, ok.", "no-commitment"),
    ("I don't know.", "no-commitment"),
    ("I'm not sure.", "no-commitment"),
    ("No idea, sorry!", "no-commitment"),
    ("Hello! How can I help you today?", "no-commitment"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "reason"), NO_ANSWER)
@pytest.mark.parametrize("options", [ANIMAL_AAD, ANIMAL_IAQD, ANIMAL_SOLVABLE])
def test_non_answers_are_unparsed_with_their_reason(reply, reason, options):
    result = extract_aqua_rules(reply, options)
    assert (result.choice, result.parsed) == (None, False)
    assert result.reason.split(":")[0] == reason


ANSWERABILITY = [
    ("It cannot be determined from the audio.", ANIMAL_IAQD),
    ("None of these match: the clip is a harmonica.", MUSIC_AAD),
    ("The audio does not say anything about the dog's colour, so the question is unanswerable.",
     ANIMAL_IAQD),
    ("None of the options match the audio.", ANIMAL_AAD),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "options"), ANSWERABILITY)
def test_answerability_judgement_chooses_the_rejection_option(reply, options):
    assert outcome(reply, options) == ("E", True)


def test_ai_disclaimer_with_a_judgement_is_a_judgement_not_a_refusal():
    reply = "As an AI, I think none of the options fit this recording."
    assert outcome(reply, ANIMAL_AAD) == ("E", True)


def test_refusal_followed_by_a_committed_option_is_an_answer():
    assert outcome("I can't hear audio, but if I had to guess: (c) Cow.", ANIMAL_AAD) == ("C", True)


def test_i_dont_know_no_longer_earns_the_rejection_option():
    # It used to map to "None of the above" and so earned credit on absent-answer items.
    assert extract_aqua_rules("I don't know.", ANIMAL_AAD).choice is None
    assert outcome("I don't know, but none of the above fits.", ANIMAL_AAD) == ("E", True)


@pytest.mark.parametrize(
    ("reply", "options", "letter"),
    [("The sound is a dog barking.", ANIMAL_SOLVABLE, "B"),
     ("Vocal sound: laughter.", VOCAL_LAUGH, "C")],
)  # fmt: skip
def test_plain_answers_still_read(reply, options, letter):
    assert outcome(reply, options) == (letter, True)


def test_non_option_answer_is_still_wrong_not_unparsed():
    assert outcome("Trombone", COLOURS_IASD) == (None, True)


# ---- section 3: MMAU's string_match, pinned by hand-computed cases ---------------------

MUSIC_SHARED = ["Acoustic guitar", "Electric guitar", "Bass guitar", "Piano"]
BOOKS = ["Book", "Art book", "Science book", "None of the above"]
VOCAL_MAIN = ["Laughter", "Sighs", "Coughs", "Throat clearings", "Sneezes"]
PLACES = ["Library", "Beach", "Hospital", "Cafe", "Unanswerable"]
DUPLICATES = [
    "Pilot",
    "Doctor",
    "Pilot",
    "Pilot",
    "Cannot be determined from the given information",
]

STRING_MATCH = [
    ("Dog", ANIMAL_AAD, "A"), ("dog.", ANIMAL_AAD, "A"), ("(a)", ANIMAL_AAD, None),
    ("A", ANIMAL_AAD, None), ("The answer is dog", ANIMAL_AAD, None),  # "the" is E's token
    ("It is a dog", ANIMAL_AAD, "A"), ("None of the above", ANIMAL_AAD, "E"),
    ("none of the above.", ANIMAL_AAD, "E"), ("Dog or cat", ANIMAL_AAD, None),
    ("a dog, not a cat", ANIMAL_AAD, None), ("", ANIMAL_AAD, None), ("   ", ANIMAL_AAD, None),
    ("DOG!", ANIMAL_AAD, "A"), ("cow", ANIMAL_AAD, "C"), ("Cows", ANIMAL_AAD, None),
    ("pig", ANIMAL_AAD, "D"), ("(c) Cow", ANIMAL_AAD, "C"), ("**Pig**", ANIMAL_AAD, "D"),
    ("dog-like", ANIMAL_AAD, "A"), ("hotdog", ANIMAL_AAD, None),
    ("Acoustic Guitar", MUSIC_SOLVABLE, "A"), ("guitar", MUSIC_SOLVABLE, None),
    ("acoustic guitar and piano", MUSIC_SOLVABLE, None), ("Drum set", MUSIC_SOLVABLE, "D"),
    ("drum", MUSIC_SOLVABLE, None), ("drums set", MUSIC_SOLVABLE, None),
    ("Keyboard", MUSIC_SOLVABLE, "E"), ("The piano", MUSIC_SOLVABLE, "C"),
    ("piano/keyboard", MUSIC_SOLVABLE, None), ("HARMONICA.", MUSIC_SOLVABLE, "B"),
    ("acoustic guitar", MUSIC_SHARED, "A"), ("guitar", MUSIC_SHARED, None),
    ("an electric guitar", MUSIC_SHARED, "B"),
    ("electric guitar, not acoustic", MUSIC_SHARED, None),
    ("bass guitar (c)", MUSIC_SHARED, "C"), ("Piano", MUSIC_SHARED, "D"),
    ("guitar piano", MUSIC_SHARED, None),
    ("book", BOOKS, "A"), ("art book", BOOKS, "B"), ("an art book", BOOKS, "B"),
    ("science book", BOOKS, "C"), ("art and science book", BOOKS, None),
    ("none of the above", BOOKS, "D"), ("the book", BOOKS, None),
    ("coughs", VOCAL_MAIN, "C"), ("coughing", VOCAL_MAIN, None),
    ("Throat clearings", VOCAL_MAIN, "D"), ("throat clearing", VOCAL_MAIN, None),
    ("Sighs.", VOCAL_MAIN, "B"), ("laughter and sighs", VOCAL_MAIN, None),
    ("(e) Sneezes", VOCAL_MAIN, "E"),
    ("E", ANIMAL_AAD, None), ("(e)", ANIMAL_AAD, None), ("Answer: E", ANIMAL_AAD, None),
    ("e) none of the above", ANIMAL_AAD, "E"),
    ("drum_set", MUSIC_SOLVABLE, None), ("Drum-set", MUSIC_SOLVABLE, "D"),
    ("keyboard's", MUSIC_SOLVABLE, "E"),
    ("Café", PLACES, None), ("cafe", PLACES, "D"), ("Unanswerable", PLACES, "E"),
    ("It is unanswerable.", PLACES, "E"),
    ("Pilot", DUPLICATES, "A"), ("doctor", DUPLICATES, "B"),
    ("Cannot be determined", DUPLICATES, None),
    ("cannot be determined from the given information", DUPLICATES, "E"),
    ("drum set", ["Drum set", "Set drum", "Piano", "Flute"], None),  # two options pass
]  # fmt: skip


def test_there_are_at_least_fifty_string_match_cases():
    assert len(STRING_MATCH) >= 50


@pytest.mark.parametrize(("reply", "options", "letter"), STRING_MATCH)
def test_mmau_string_match_reproduces_hand_computed_outcomes(reply, options, letter):
    result = extract(reply, options, extractor="mmau-string-match")
    assert result.letter == letter
    assert result.parsed is (letter is not None)
    if letter is None:
        # An empty reply is a generation error under every extractor.
        expected = "error: empty reply" if not reply.strip() else "no-commitment"
        assert result.reason.startswith(expected)


def test_string_match_judges_gold_as_mmau_does():
    assert string_match("it is a dog", "Dog", ANIMAL_AAD) is True
    assert string_match("the dog", "Dog", ANIMAL_AAD) is False  # "the" belongs to option E
    assert string_match("", "Dog", ANIMAL_AAD) is False
    # Both options pass with the same tokens: correct for MMAU, but no single choice.
    assert string_match("set drum", "Drum set", ["Drum set", "Set drum", "Piano"]) is True
    assert extract_string_match("set drum", ["Drum set", "Set drum", "Piano"]).choice is None


# ---- names, aliases, versions ----------------------------------------------------------


def test_default_extractor_has_an_honest_name_and_mmau_is_its_alias(caplog):
    assert DEFAULT_EXTRACTOR == "aqua-rules"
    assert EXTRACTOR_ALIASES == {"mmau": "aqua-rules"}
    assert {"aqua-rules", "aqua-rules+llm", "official", "mmau-string-match", "mmau"} == set(
        EXTRACTOR_NAMES
    )
    assert EXTRACTOR_VERSIONS["mmau"] == EXTRACTOR_VERSIONS["aqua-rules"] == "3.2"
    assert extract_mmau is extract_aqua_rules
    # A documented name of recorded runs, not a deprecation: one debug line, no warning.
    with caplog.at_level(logging.DEBUG, logger="aqua_tasks.core.extract"):
        assert get_extractor_name(" MMAU ") == "aqua-rules"
    assert [r.getMessage().count("\n") for r in caplog.records] == [0]
    assert caplog.records[0].levelno == logging.DEBUG
    assert "aqua-rules" in caplog.records[0].getMessage()
    assert get_extractor_name("mmau-string-match") == "mmau-string-match"


def test_alias_and_default_give_the_same_extraction():
    reply = "(b) Sneeze\n\nThe sharp burst is a sneeze rather than a cough, a laugh or a sniff."
    assert extract(reply, VOCAL_AAD, extractor="mmau") == extract(reply, VOCAL_AAD)


def test_rescoring_notice_is_one_line_for_old_names_and_versions_only():
    notice = rescoring_notice("mmau", "1.0")
    assert notice is not None and "\n" not in notice
    assert "'mmau' 1.0" in notice and "'aqua-rules' 3.2" in notice
    assert rescoring_notice("aqua-rules", "3.2") is None
    assert rescoring_notice("official", None) is None
    assert "'aqua-rules' 1.0" in rescoring_notice("aqua-rules", "1.0")


def test_run_recorded_under_the_old_name_is_rescored_with_current_code():
    items = read_run(LEGACY).aqua_items
    assert {i.extractor for i in items} == {"mmau"}
    old = score_items(items)
    new = score_items(items, extractor="aqua-rules")
    assert [(v.choice, v.correct, v.parsed) for v in old] == [
        (v.choice, v.correct, v.parsed) for v in new
    ]
