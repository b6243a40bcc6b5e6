"""Answer extraction: the mmau extractor's rules, the authors' rule, and every released item."""

from __future__ import annotations

import time

import pytest

from aqua_tasks.core.data import TRACKS, VARIANT_SUFFIXES, load_items
from aqua_tasks.core.extract import (
    DEFAULT_REJECTIONS,
    EXTRACTOR_NAMES,
    EXTRACTOR_VERSIONS,
    Extraction,
    extract,
    extract_mmau,
    extract_official,
    get_extractor_name,
)

# Option lists as they appear in the released files.
ANIMAL_AAD = ["Dog", "Cat", "Cow", "Pig", "None of the above"]
ANIMAL_SOLVABLE = ["Cat", "Dog", "Cow", "Pig", "Sheep"]
MUSIC_SOLVABLE = ["Acoustic Guitar", "Harmonica", "Piano", "Drum set", "Keyboard"]
MUSIC_IAQD = ["Library", "Beach", "Hospital", "Cafe", "Unanswerable"]
VOCAL_SOLVABLE = ["Laughter", "Sighs", "Coughs", "Throat clearings", "Sneezes"]
COLOURS_IASD = ["Red", "Blue", "Green", "Yellow", "None of the above"]
DESIGN1_IAQD = [
    "Library",
    "Beach",
    "Hospital",
    "Cafe",
    "Cannot be determined from the given information",
]
DESIGN1 = ("No correct answer", "Cannot be determined from the given information")
DESIGN2_AAD = ["Flute", "Saxophone", "Drum set", "Keyboard", "All answers are incorrect"]
DESIGN2 = ("All answers are incorrect", "Insufficient information to answer")


def chosen(reply: str, options: list[str], rejections=DEFAULT_REJECTIONS) -> str | None:
    return extract_mmau(reply, options, rejections).letter


# ---- option letters --------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    ["(e)", "E", "e)", "**(E)**", "Answer: E", "option e", "E.", "[E]", "（Ｅ）", "\\boxed{E}",
     "The answer is e.", "Option E is correct.", "E is correct.", "<answer>(e)</answer>"],
)  # fmt: skip
def test_option_letter_in_any_case_and_wrapping_selects_it(reply):
    result = extract_mmau(reply, ANIMAL_AAD)
    assert (result.choice, result.parsed) == (4, True)
    assert "(e)" in result.reason


@pytest.mark.parametrize("reply", ["(a)", "A)", "a)", "Answer: a", "A.", "a", "The answer is a."])
def test_wrapped_or_answered_a_is_the_letter_a(reply):
    assert chosen(reply, ANIMAL_SOLVABLE) == "A"


@pytest.mark.parametrize(
    ("reply", "letter"),
    [("a dog barks", "B"), ("A dog barks in the clip.", "B"), ("I think it is a cow", "C"),
     ("The answer is a dog", "B"), ("A Cow.", "C")],
)  # fmt: skip
def test_article_a_and_pronoun_i_are_not_option_letters(reply, letter):
    assert chosen(reply, ANIMAL_SOLVABLE) == letter


def test_letters_inside_words_do_not_count():
    # "Keyboard" ends in d and "Harmonica" in a; the authors' rule reads those as letters.
    assert chosen("Keyboard", MUSIC_SOLVABLE) == "E"
    assert chosen("Harmonica", MUSIC_SOLVABLE) == "B"
    assert chosen("The Piano.", MUSIC_SOLVABLE) == "C"


# ---- option text -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "options", "letter"),
    [("coughs", VOCAL_SOLVABLE, "C"), ("COUGHS!", VOCAL_SOLVABLE, "C"),
     ("**Coughs**", VOCAL_SOLVABLE, "C"), ("Someone coughing.", VOCAL_SOLVABLE, "C"),
     ("sneeze", VOCAL_SOLVABLE, "E"), ("The person sneezed", VOCAL_SOLVABLE, "E"),
     ("a cow", ANIMAL_SOLVABLE, "C"), ("Cows.", ANIMAL_SOLVABLE, "C"),
     ("sheep", ANIMAL_SOLVABLE, "E"), ("cats", ANIMAL_SOLVABLE, "A"),
     ("The person is laughing.", VOCAL_SOLVABLE, "A"),
     ("clearing his throat", VOCAL_SOLVABLE, "D"), ("drums", MUSIC_SOLVABLE, "D"),
     ("acoustic-guitar", MUSIC_SOLVABLE, "A"), ("Café", MUSIC_IAQD, "D")],
)  # fmt: skip
def test_option_text_matches_ignoring_case_markdown_punctuation_and_inflection(
    reply, options, letter
):
    assert chosen(reply, options) == letter


@pytest.mark.parametrize(
    ("reply", "options", "letter"),
    [("science fiction book", ["Art book", "Book", "Science fiction book", "Science book"], "C"),
     ("an art book", ["Book", "Art book", "Novel", "Manga"], "B"),
     ("a book", ["Art book", "Book", "Novel", "Manga"], "B"),
     ("Wearing a suit", ["Suit", "Wearing a suit", "Wearing a hat", "Unanswerable"], "B"),
     ("a suit", ["Wearing a suit", "Suit", "Wearing a hat", "Unanswerable"], "B"),
     ("Horse-drawn cart", ["Horse", "Horse-drawn cart", "Bike", "Train"], "B"),
     ("T-shirt", ["Shirt", "T-shirt", "Coat", "Jeans"], "B"),
     ("Happy", ["Happi", "Happy", "Sad", "Angry"], "B")],
)  # fmt: skip
def test_longest_most_specific_option_text_wins(reply, options, letter):
    assert chosen(reply, options) == letter


def test_head_word_names_the_only_option_ending_in_it():
    result = extract_mmau("It's a guitar.", MUSIC_SOLVABLE)
    assert (result.letter, result.reason) == ("A", "head word of option 'Acoustic Guitar'")


def test_gerund_option_is_named_without_its_verb():
    options = ["Having long hair", "Having short hair", "Wearing a hat", "Unanswerable"]
    assert chosen("The speaker has long hair, not short hair.", options) == "A"
    assert chosen("a hat", options) == "C"


# ---- rejections ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    ["None of the above", "none of the options is correct", "None.",
     "It cannot be determined from the audio.", "It is not possible to tell.",
     "Unanswerable", "There is no correct answer.", "Insufficient information.",
     "All answers are incorrect.", "The audio does not provide enough information.",
     "The correct answer is not listed."],
)  # fmt: skip
@pytest.mark.parametrize(
    ("options", "rejections"),
    [(ANIMAL_AAD, DEFAULT_REJECTIONS), (MUSIC_IAQD, DEFAULT_REJECTIONS),
     (DESIGN1_IAQD, DESIGN1), (DESIGN2_AAD, DESIGN2)],
)  # fmt: skip
def test_free_text_rejection_maps_to_the_items_rejection_option(reply, options, rejections):
    result = extract_mmau(reply, options, rejections)
    assert (result.choice, result.parsed) == (4, True)


def test_rejection_reason_names_phrase_and_option():
    result = extract_mmau("It cannot be determined from the audio.", MUSIC_IAQD)
    assert result.reason == "rejection phrase 'cannot be determined' -> option 'Unanswerable'"


def test_rejection_on_item_without_rejection_option_is_wrong_not_unparsed():
    result = extract_mmau("None of the above.", MUSIC_SOLVABLE)
    assert (result.choice, result.parsed) == (None, True)
    assert "no rejection option" in result.reason


def test_rejection_strings_of_another_design_are_not_the_rejection_option():
    # Design-1 items need Design-1 strings; with the main strings the option is not found.
    assert chosen("It cannot be determined.", DESIGN1_IAQD, DESIGN1) == "E"
    assert extract_mmau("Unanswerable", DESIGN1_IAQD).parsed is True
    assert extract_mmau("Unanswerable", DESIGN1_IAQD).choice is None


# ---- reasoning replies, negation, hedging ----------------------------------------------


def test_reply_naming_two_options_prefers_final_answer():
    reply = "(b) Piano would sound struck, not bowed, and (c) Violin is absent... so: (e)"
    options = ["Flute", "Piano", "Violin", "Trumpet", "None of the above"]
    assert extract_mmau(reply, options) == Extraction(4, True, "after 'so:': letter (e)")


@pytest.mark.parametrize(
    ("reply", "letter"),
    [("Let's think. (a) Dog: barking, not heard. (b) Cat: meowing, not heard. (c) Cow: mooing, "
      "heard! So the answer is (c).", "C"),
     ("The answer is (a) Dog, not (b) Cat.", "A"),
     ("Answer: (a)\nExplanation: (b) Cat would meow instead.", "A"),
     ("I would choose (e) since the clip has a horse, and (a) Dog would bark.", "E"),
     ("Step 1: options are (a) Dog (b) Cat (c) Cow (d) Pig (e) None of the above.\n"
      "Step 2: the sound is a moo.\nFinal answer: **(C) Cow**", "C"),
     ("The audio doesn't provide information about the breed. Therefore, the answer is "
      "(e) None of the above.", "E"),
     ("It could be a dog or a cat, but it is most likely a dog.", "A")],
)  # fmt: skip
def test_final_committed_answer_beats_options_mentioned_while_reasoning(reply, letter):
    assert chosen(reply, ANIMAL_AAD) == letter


def test_last_sentence_decides_when_no_answer_cue():
    reply = "Dogs bark, cats meow, cows moo and pigs oink. The clip is clearly a dog."
    result = extract_mmau(reply, ANIMAL_AAD)
    assert (result.letter, result.reason) == ("A", "in last sentence: option text 'Dog'")


def test_weak_cue_is_overruled_by_a_later_different_answer():
    assert chosen("It is probably a cat. On a second listen, it is a dog.", ANIMAL_AAD) == "A"


@pytest.mark.parametrize(
    ("reply", "letter"),
    [("It is not a dog, it is a cat.", "B"), ("(b) is wrong. (c) is right.", "C"),
     ("Definitely not (a); the answer is (d).", "D"), ("Dog is not the answer; it is a cow.", "C"),
     ("It sounds like a cow rather than a pig.", "C"), ("no doubt it's a dog", "A")],
)  # fmt: skip
def test_negated_mentions_do_not_select_that_option(reply, letter):
    assert chosen(reply, ANIMAL_AAD) == letter


@pytest.mark.parametrize("reply", ["It is not a dog.", "not (b)", "Neither a dog nor a cat."])
def test_reply_that_only_rules_options_out_is_unparsed(reply):
    result = extract_mmau(reply, ANIMAL_SOLVABLE)
    assert (result.choice, result.parsed) == (None, False)
    assert result.reason.startswith("only negated or hypothetical mentions")


def test_hypothetical_mentions_do_not_select_an_option():
    result = extract_mmau("I can't tell whether it's a dog or a cat.", ANIMAL_AAD)
    assert (result.letter, result.reason) == (
        "E", "rejection phrase \"can't tell\" -> option 'None of the above'")  # fmt: skip


@pytest.mark.parametrize(
    ("reply", "reason"),
    [("It is either a dog or a cat.", "ambiguous: (a) 'Dog' and (b) 'Cat'"),
     ("The answer is (a) or (c).", "ambiguous after 'answer is': (a) 'Dog' and (c) 'Cow'"),
     ("The answer is (b) Dog.", "ambiguous after 'answer is': letter (b) labels option text 'Dog'"),
     ("(a) Dog (b) Cat (c) Cow (d) Pig", "ambiguous: (a) 'Dog' and (b) 'Cat' and (c) 'Cow' and "
      "(d) 'Pig'")],
)  # fmt: skip
def test_equally_committed_different_options_are_ambiguous_not_guessed(reply, reason):
    assert extract_mmau(reply, ANIMAL_AAD) == Extraction(None, False, reason)


# ---- wrong vs unparsed -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "reason"),
    [("Trombone", "names 'Trombone', not an option"),
     ("It is a trombone.", "names 'It is a trombone.', not an option"),
     ("Final answer: Trombone", "answer 'Trombone' is not an option"),
     ("(f)", "letter (f) is not an option")],
)  # fmt: skip
def test_reply_naming_something_that_is_not_an_option_is_wrong_not_unparsed(reply, reason):
    assert extract_mmau(reply, COLOURS_IASD) == Extraction(None, True, reason)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [("", "error: empty reply"), ("  \n\t ", "error: empty reply"), ("...", "no words in reply")],
)
def test_empty_or_whitespace_reply_is_unparsed(reply, reason):
    assert extract_mmau(reply, ANIMAL_AAD) == Extraction(None, False, reason)


def test_long_reply_naming_no_option_is_unparsed():
    reply = "The recording has a rhythmic, low-frequency texture with some reverberation. " * 3
    result = extract_mmau(reply, ANIMAL_SOLVABLE)
    assert (result.choice, result.parsed) == (None, False)


def test_duplicate_options_resolve_to_the_first_index():
    options = [
        "Pilot",
        "Doctor",
        "Pilot",
        "Pilot",
        "Cannot be determined from the given information",
    ]
    assert extract_mmau("Pilot", options, DESIGN1).choice == 0
    result = extract_mmau("(d) Pilot", options, DESIGN1)
    assert (result.choice, result.reason) == (0, "letter (d), same text as (a)")


def test_long_markdown_non_ascii_replies_stay_linear_and_do_not_crash():
    reasoning = "**Analyse** — the clip (≈5 s) has a bark; not a cat 🐱, not (d). 狗叫声。\n"
    reply = reasoning * 100 + "## Answer\n**(A) Dog**"
    start = time.perf_counter()
    assert chosen(reply, ANIMAL_AAD) == "A"
    assert chosen("(" * 20_000 + "a " * 20_000, ANIMAL_AAD) is None
    assert chosen("so " * 5_000, ANIMAL_AAD) is None
    assert time.perf_counter() - start < 2.0


# ---- every released item ---------------------------------------------------------------


@pytest.mark.parametrize("variant", list(VARIANT_SUFFIXES))
@pytest.mark.parametrize("track", TRACKS)
def test_gold_text_with_and_without_its_letter_finds_gold_in_every_released_item(
    released_dir, track, variant
):
    items = load_items(released_dir, track, variant)
    assert len(items) == 1440
    for item in items:
        letter = chr(ord("a") + item.answer_index)
        for reply in (item.answer, f"({letter}) {item.answer}"):
            result = extract_mmau(reply, item.options, item.rejection_strings)
            assert result.choice == item.answer_index, (item.id, reply, result)


# ---- the authors' rule -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "options", "letter"),
    [("The answer is (b) Cat.", ANIMAL_AAD, "E"), ("None of the above", ANIMAL_AAD, "E"),
     ("It is a pig", ANIMAL_AAD, "A"), ("Flute", DESIGN2_AAD, "E"),
     ("Harmonica", MUSIC_SOLVABLE, "A"), ("Keyboard", MUSIC_SOLVABLE, "D"),
     ("The source of the music is (d) None of the above.",
      ["Piano", "Violin", "Flute", "None of the above"], "C"),
     ("The source of the music is (d) None of the above.", MUSIC_IAQD, "E")],
)  # fmt: skip
def test_official_rule_reproduces_the_golden_examples(reply, options, letter):
    assert extract_official(reply, options).letter == letter


def test_official_rule_falls_back_to_first_contained_option_text():
    assert extract_official("Sheep!", ["Sheep", "Pig", "Cow", "Hen", "Crow"]) == Extraction(
        0, True, "option text 'Sheep' in reply"
    )


@pytest.mark.parametrize("reply", ["", "   ", "Horn", "Hmm."])
def test_official_rule_leaves_unmatched_reply_unparsed(reply):
    result = extract_official(reply, ["Sheep", "Pig", "Cow", "Hen", "Crow"])
    assert (result.choice, result.parsed) == (None, False)


def test_official_rule_requires_answer_among_options():
    assert extract_official("(a)", ANIMAL_AAD, answer="Dog").letter == "A"
    with pytest.raises(ValueError, match="answer 'Horse' is not one of the options"):
        extract_official("(a)", ANIMAL_AAD, answer="Horse")


# ---- API -------------------------------------------------------------------------------


def test_extract_dispatches_to_the_named_extractor():
    reply = "The answer is (b) Cat."
    assert extract(reply, ANIMAL_AAD).letter == "B"
    assert extract(reply, ANIMAL_AAD, extractor="official").letter == "E"
    assert (
        extract("It cannot be determined.", DESIGN1_IAQD, rejection_strings=DESIGN1).letter == "E"
    )


def test_get_extractor_name_validates_and_names_the_choices():
    assert get_extractor_name(" AQUA-rules ") == "aqua-rules"
    assert get_extractor_name(" MMAU ") == "aqua-rules"  # the default's former name
    with pytest.raises(
        ValueError,
        match="valid choices: aqua-rules, mmau-string-match, official, aqua-rules\\+llm, mmau",
    ):
        get_extractor_name("lmms")
    with pytest.raises(ValueError, match="valid choices"):
        extract("(a)", ANIMAL_AAD, extractor="random")


def test_every_extractor_has_a_recorded_version():
    assert set(EXTRACTOR_VERSIONS) == set(EXTRACTOR_NAMES)
    assert set(EXTRACTOR_NAMES) == {
        "aqua-rules",
        "official",
        "mmau-string-match",
        "aqua-rules+llm",
        "mmau",
    }


def test_letter_property_maps_choice_to_capital_letter():
    assert Extraction(0, True, "").letter == "A"
    assert Extraction(4, True, "").letter == "E"
    assert Extraction(None, True, "").letter is None


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [(lambda: extract_mmau(None, ANIMAL_AAD), TypeError, "reply must be a str"),
     (lambda: extract_mmau("(a)", "Dog"), ValueError, "options must be a sequence"),
     (lambda: extract_mmau("(a)", []), ValueError, "1 to 26"),
     (lambda: extract_mmau("(a)", ANIMAL_AAD, "Unanswerable"), ValueError, "rejection_strings"),
     (lambda: extract_official("(a)", [1, 2]), ValueError, "options must be a sequence")],
)  # fmt: skip
def test_invalid_inputs_raise_errors_naming_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("extractor", ["aqua-rules", "official", "mmau-string-match"])
def test_failed_generation_is_an_unparsed_error_under_every_extractor(extractor: str) -> None:
    from aqua_tasks.core.generation_failure import failed_reply, failure_message

    options = ["Violin", "Flute", "None of the above"]
    # "(a)" inside the server's message must not be read as a choice.
    reply = failed_reply("HTTP 503 after 5 retries:\n upstream (a) unavailable")
    assert failure_message(reply) == "HTTP 503 after 5 retries: upstream (a) unavailable"
    got = extract(reply, options, extractor=extractor)
    assert (got.choice, got.parsed) == (None, False)
    assert got.reason == "error: HTTP 503 after 5 retries: upstream (a) unavailable"
    empty = extract("", options, extractor=extractor)
    assert (empty.choice, empty.parsed, empty.reason) == (None, False, "error: empty reply")
    assert failure_message("(a) Violin") is None
