"""`aqua-rules` 3.0 on the replies reasoning and multilingual audio LMs write, on released items.

Think blocks finished and cut off, answer frames left unfinished, structured answers, the six
lexicon languages, paraphrased rejections, capability refusals and hedges: each case is built
from a released item's real options and checked against the option a careful grader reads.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from aqua_tasks.core.data import AquaItem, load_items
from aqua_tasks.core.extract import EXTRACTOR_VERSIONS, Extraction, extract, rescoring_notice
from aqua_tasks.core.extract.languages import languages
from aqua_tasks.core.generation_limit import TOKEN_LIMIT_SUFFIX, limited_reply, split_token_limit

FILLER = "The clip is about five seconds long, with a steady background hum and a clear onset. "
REASONING = FILLER * 5  # a reasoning part well past REASONING_CHARS


@pytest.fixture(scope="module")
def pick(released_dir) -> Callable[..., AquaItem]:
    """The first released item of a track (and variant) that satisfies a predicate."""
    cache: dict[tuple[str, str], list[AquaItem]] = {}

    def first(track: str, test: Callable[[AquaItem], bool], variant: str = "main") -> AquaItem:
        items = cache.setdefault((track, variant), load_items(released_dir, track, variant))
        return next(i for i in items if test(i))

    return first


@pytest.fixture(scope="module")
def dog(pick) -> AquaItem:
    """Animal Solvable id 0: Rooster, Crow, Dog, Pig, Sheep — gold (c) Dog."""
    item = pick("animal", lambda i: i.id == 0)
    assert item.options == ("Rooster", "Crow", "Dog", "Pig", "Sheep")
    return item


@pytest.fixture(scope="module")
def absent(pick) -> AquaItem:
    """Animal AAD id 1: Crow, Cat, Pig, Hen, None of the above — gold (e)."""
    item = pick("animal", lambda i: i.id == 1)
    assert item.options[-1] == "None of the above" and item.answer == "None of the above"
    return item


def read(reply: str, item: AquaItem) -> Extraction:
    return extract(reply, item.options, rejection_strings=item.rejection_strings)


def letter(reply: str, item: AquaItem) -> tuple[str | None, bool]:
    result = read(reply, item)
    return result.letter, result.parsed


# ---- 1. thinking that never finished -> truncated --------------------------------------


@pytest.mark.parametrize(
    ("reply", "why"),
    [("<think>A sharp bark, so it is likely (c) Dog. But it could also be", "<think> never closed"),
     ("<think>" + REASONING + "Leaning towards the dog.", "<think> never closed"),
     ("<think>Barking, so (c).</think>", "no answer after </think>"),
     ("Final answer: (", "unfinished answer frame 'Final answer: ('"),
     (REASONING + "So the answer is", "unfinished answer frame 'answer is'"),
     ("<think>It barks.</think>\nThe answer is (", "unfinished answer frame 'answer is ('"),
     ("Let me analyze the audio. " + REASONING + "The bark points to a dog, since the pitch is",
      "reasoning cut off mid-sentence")],
)  # fmt: skip
def test_reasoning_that_never_concludes_is_truncated(reply, why, dog):
    assert read(reply, dog) == Extraction(None, False, f"truncated: {why}")


def test_token_limit_marker_makes_an_unconcluded_lean_truncated(dog):
    leaning = "The bark is sharp and loud, like a dog's, and the pitch"
    assert letter(leaning, dog) == ("C", True)  # the text alone reads as a lean
    result = read(limited_reply(leaning), dog)
    assert (result.choice, result.parsed) == (None, False)
    assert (
        result.reason
        == "truncated: hit the token limit before an answer (it read: option text 'Dog')"
    )
    assert read(limited_reply("Let me listen. " + REASONING), dog).reason == (
        "truncated: hit the token limit while reasoning"
    )


@pytest.mark.parametrize(
    "reply",
    ["(c) Dog. The bark is sharp and the pitch is", REASONING + "So the answer is (c) Dog. Also",
     "<think>barking</think>(c)"],
)  # fmt: skip
def test_an_explicit_answer_before_the_token_limit_still_counts(reply, dog):
    assert letter(limited_reply(reply), dog) == ("C", True)


def test_token_limit_marker_is_stripped_for_every_extractor(dog):
    reply = limited_reply("(c)")
    assert split_token_limit(reply) == ("(c)", True) and reply.endswith(TOKEN_LIMIT_SUFFIX)
    assert limited_reply(reply) == reply  # marking twice changes nothing
    for name in ("official", "mmau-string-match"):
        assert extract(reply, dog.options, extractor=name) == extract(
            "(c)", dog.options, extractor=name
        )


# ---- 2. only the final answer of a reasoning reply counts ------------------------------


@pytest.mark.parametrize(
    ("reply", "expected", "reason"),
    [("<think>(a) Rooster would crow; (d) Pig would grunt. It barks.</think>\n\n(c) Dog", "C",
      "after </think>: letter (c)"),
     ("<think>Maybe (c) Dog? No, it sounds like a (d) Pig.</think>The answer is (d).", "D",
      "after </think>: after 'answer is': letter (d)"),
     ("<think>(c) Dog fits.</think><answer>(c)</answer>", "C", "after </think>: bare letter (c)"),
     (REASONING + "Considering (a) Rooster, (d) Pig and (e) Sheep. Final answer: (c) Dog.", "C",
      "after 'final answer': after 'final answer:': letter (c)")],
)  # fmt: skip
def test_only_the_final_answer_decides(reply, expected, reason, dog):
    assert read(reply, dog) == Extraction("ABCDE".index(expected), True, reason)


def test_options_weighed_in_the_thinking_never_decide(dog):
    reply = "<think>Definitely (c) Dog, the bark is clear.</think>\nI'm not sure."
    assert read(reply, dog) == Extraction(None, False, "after </think>: no-commitment: 'not sure'")


def test_thinking_followed_by_a_refusal_is_a_refusal_not_a_rejection(absent):
    reply = "<think>None of the options fit... (b) Cat?</think>\nSorry, I could not open the audio."
    result = read(reply, absent)
    assert (result.choice, result.parsed) == (None, False)
    assert result.reason == "after </think>: refusal: 'could not open the audio'"


def test_an_answer_first_reasoning_reply_keeps_its_answer(dog):
    # The untagged conclusion only rules an option out: the committed first line still decides.
    reply = "(c) Dog\n\n" + REASONING + "Therefore a rooster is unlikely."
    assert letter(reply, dog) == ("C", True)


# ---- 3. answer formats ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "reason"),
    [("\\boxed{C}", "in \\boxed{}: bare letter (c)"),
     ("$\\boxed{c}$", "in \\boxed{}: bare letter (c)"),
     (REASONING + "Weighing (a) and (d) ... $\\boxed{\\text{(c) Dog}}$", None),
     ('{"choice": "c", "explanation": "Not a pig or a rooster; (d) is ruled out."}',
      "in the JSON answer field: bare letter (c)"),
     ('```json\n{"final_answer": "Dog", "reasoning": "(a) Rooster would crow"}\n```',
      "in the JSON answer field: option text 'Dog'"),
     ("| option | heard? |\n|---|---|\n| (a) Rooster | no |\n| (c) Dog | ✓ |\n| (d) Pig | ✗ |",
      "in the marked table row: letter (c)"),
     ("Option C", "bare letter (c)"), ("C)", "bare letter (c)"),
     ("It is the third option.", "ordinal 'the third option' = letter (c)"),
     ("I'd go with the third choice.",
      "after \"i'd go with\": ordinal 'the third choice' = letter (c)")],
)  # fmt: skip
def test_structured_answers_choose_their_option(reply, reason, dog):
    result = read(reply, dog)
    assert (result.letter, result.parsed) == ("C", True)
    if reason is not None:
        assert result.reason == reason


def test_the_final_option_is_the_last_and_a_negated_ordinal_does_not_count(absent, dog):
    assert letter("The final option.", absent) == ("E", True)
    assert letter("Not the first option; it is the third option.", dog) == ("C", True)


def test_json_explanation_words_never_decide(dog):
    reply = json.dumps({"answer": "d", "explanation": "it is clearly (c) a dog barking"})
    assert letter(reply, dog) == ("D", True)


def test_two_marked_table_rows_naming_different_options_are_ambiguous(dog):
    reply = "| option | pick |\n|---|---|\n| (c) Dog | ✓ |\n| (d) Pig | ✓ |"
    assert read(reply, dog) == Extraction(None, False, "ambiguous: 2 table rows marked as chosen")


# ---- 4. non-English replies ------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected", "language"),
    [("正确答案：C", "C", "zh"), ("我选 d", "D", "zh"), ("这是狗的叫声。", "C", "zh"),
     ("答えは(c)です。", "C", "ja"), ("これは犬の鳴き声です。", "C", "ja"),
     ("답: (a)", "A", "ko"), ("돼지 소리입니다.", "D", "ko"),
     ("Elijo la opción b", "B", "es"), ("Es un perro que ladra.", "C", "es"),
     ("Richtige Antwort ist (e)", "E", "de"), ("Das ist ein Hund, kein Schwein.", "C", "de"),
     ("La bonne réponse est (c).", "C", "fr"),
     ("C'est un chien qui aboie, pas un coq.", "C", "fr")],
)  # fmt: skip
def test_localised_frames_and_class_names_are_read(reply, expected, language, dog):
    result = read(reply, dog)
    assert (result.letter, result.parsed) == (expected, True)
    # Japanese replies hold Han characters too, so they are read through "ja+zh".
    assert language in result.reason.split("[read through the ")[1].removesuffix(" lexicon]")


@pytest.mark.parametrize(
    "reply",
    ["选项都不对", "没法判断", "どれでもない", "정답이 없습니다", "ninguna opción es correcta",
     "nichts davon stimmt", "Aucune des options ne convient."],
)  # fmt: skip
def test_localised_rejections_choose_the_rejection_option(reply, absent):
    assert letter(reply, absent) == ("E", True)


def test_localised_rejection_maps_to_each_designs_own_rejection_option(pick):
    item = pick("animal", lambda i: i.type == "AAD", variant="option_design2")
    assert item.options[-1] == "All answers are incorrect"
    assert letter("选项都不对", item) == ("E", True)


def test_a_word_that_fits_two_options_is_ambiguous_never_a_guess(pick):
    both = pick("animal", lambda i: {"Hen", "Rooster"} <= set(i.options))
    result = read("答案是鸡。", both)
    assert (result.choice, result.parsed) == (None, False) and result.reason.startswith("ambiguous")
    only_hen = pick("animal", lambda i: "Hen" in i.options and "Rooster" not in i.options)
    assert read("答案是鸡。", only_hen).letter == "ABCDE"[only_hen.options.index("Hen")]


def test_localised_refusal_and_hedge_are_no_answers(absent):
    assert read("抱歉，我无法处理音频。", absent).reason.startswith("refusal")
    assert read("No puedo escuchar el audio.", absent).reason.startswith("refusal")
    assert read("不确定。", absent).reason.startswith("no-commitment")


def test_lexicon_holds_every_closed_class_in_every_language(released_dir):
    classes = {
        i.true_class for t in ("animal", "music", "vocal") for i in load_items(released_dir, t)
    }
    assert len(classes) == 25  # 9 animals, 10 instruments, 6 vocal sounds
    found = {lang.code: lang for lang in languages()}
    assert sorted(found) == ["de", "es", "fr", "ja", "ko", "zh"]
    for lang in found.values():
        glossed = {n.strip() for g in lang.glosses.values() for n in g.split(" or ")}
        assert classes <= glossed, (lang.code, classes - glossed)
        for category in ("colours", "foods", "drinks", "professions", "cities", "instruments"):
            assert f" {category} " in lang.glosses.values(), (lang.code, category)


def test_english_reply_with_a_french_looking_word_is_not_glossed(pick):
    item = pick("animal", lambda i: "Cat" not in i.options and i.type == "Solvable")
    assert "lexicon" not in read("I hear a chat between two people.", item).reason


# ---- 5. paraphrased rejections and capability refusals ---------------------------------


@pytest.mark.parametrize(
    "reply",
    ["What I hear is not among these.", "Every one of the choices is incorrect.",
     "The clip doesn't match any of the options; it is a goat.",
     "Not a crow and not a cat; it is a goat bleating.",
     "It isn't a pig or a hen. It's a goat."],
)  # fmt: skip
def test_paraphrased_rejections_commit_to_the_rejection_option(reply, absent):
    assert letter(reply, absent) == ("E", True)


def test_category_mismatch_is_a_rejection(pick):
    item = pick("music", lambda i: i.type == "IASD" and i.subtype == "color")
    result = read("These are colours, not instruments.", item)
    assert (result.letter, result.parsed) == ("E", True)
    assert read("这些都是颜色，不是乐器。", item).letter == "E"


def test_ruling_out_options_with_nothing_named_instead_stays_unparsed(absent):
    assert read("It is not a crow.", absent).reason.startswith("only negated")


@pytest.mark.parametrize(
    "reply",
    ["I cannot process audio at all.", "Sorry, I couldn't listen to the audio file.",
     "As a text model, I am unable to hear the recording, so none of the options can be chosen."],
)  # fmt: skip
def test_capability_refusal_is_never_the_rejection_option(reply, absent):
    result = read(reply, absent)
    assert (result.choice, result.parsed) == (None, False) and result.reason.startswith("refusal")


# ---- 6. hedges -------------------------------------------------------------------------


def test_hedge_between_options_is_no_commitment(dog):
    result = read("Either (b) or (d), hard to say.", dog)
    assert result == Extraction(
        None, False, "no-commitment: hedge 'hard to say', ambiguous: (b) 'Crow' and (d) 'Pig'"
    )


def test_hedge_with_a_clear_final_commitment_is_that_option(dog):
    assert letter("Either (b) or (d), hard to say. Final answer: (d).", dog) == ("D", True)


# ---- version, re-scoring, speed --------------------------------------------------------


def test_runs_recorded_with_2_x_are_rescored_and_say_so():
    assert EXTRACTOR_VERSIONS["aqua-rules"] == "3.2"
    assert rescoring_notice("aqua-rules", "2.0") == (
        "recorded extractor 'aqua-rules' 2.0 re-scored with 'aqua-rules' 3.2 (current code)"
    )


def test_long_reasoning_replies_stay_fast(dog):
    reply = "<think>" + (FILLER + "(a) Rooster would crow. ") * 400 + "</think>\n(c) Dog"
    assert len(reply) > 40_000
    start = time.perf_counter()
    assert letter(reply, dog) == ("C", True)
    assert letter(reply.replace("</think>\n(c) Dog", ""), dog) == (None, False)
    assert time.perf_counter() - start < 1.0
