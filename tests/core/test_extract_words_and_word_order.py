"""`aqua-rules` 3.1 on released items: localised IASD option words, CJK word order, homonyms, leans.

Every IASD option word of the released tracks and of the aqua build category bank has an
entry per lexicon language, and each reads as its option in that language's answer frame;
Chinese, Japanese and Korean answers stated before their frame read as answers; a homonym
whose other sense is not an option never decides; a short reply that only leans is unparsed.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from aqua_tasks.core.data import TRACKS, VARIANT_SUFFIXES, AquaItem, load_items
from aqua_tasks.core.extract import Extraction, extract, rescoring_notice

LANGUAGES = ("zh", "ja", "ko", "es", "de", "fr")
# Each language's own answer frame, the postposed ones for CJK.
FRAMES = {"zh": "答案是{w}。", "ja": "{w}が正解です。", "ko": "{w}이 정답입니다.",
          "es": "La respuesta es {w}.", "de": "Die Antwort ist {w}.",
          "fr": "La réponse est {w}."}  # fmt: skip


@pytest.fixture(scope="module")
def lexicon() -> dict:
    text = resources.files("aqua_tasks.core.extract").joinpath("lexicon.json").read_text("utf-8")
    return json.loads(text)


@pytest.fixture(scope="module")
def iasd_items(released_dir) -> dict[str, AquaItem]:
    """One released IASD item per option term (rejection options aside), every track and file."""
    found: dict[str, AquaItem] = {}
    for track in TRACKS:
        for variant in VARIANT_SUFFIXES:
            for item in load_items(released_dir, track, variant):
                if item.type == "IASD":
                    for option in item.options:
                        if option not in item.rejection_strings:
                            found.setdefault(option, item)
    return found


def _words(lexicon: dict, lang: str) -> dict[str, list[str]]:
    """Each English term with the words naming it ("A|B" keys name both)."""
    table: dict[str, list[str]] = {}
    for key, words in [*lexicon[lang]["vocabulary"].items(), *lexicon[lang]["options"].items()]:
        for term in key.split("|"):
            table.setdefault(term, []).extend(words)
    return table


def _bank_terms() -> set[str]:
    text = resources.files("aqua_tasks.build").joinpath("categories.json").read_text("utf-8")
    return {o for c in json.loads(text)["categories"].values() for o in c["options"]}


def read(reply: str, item: AquaItem) -> Extraction:
    return extract(reply, item.options, rejection_strings=item.rejection_strings)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_released_and_bank_iasd_option_has_an_entry_per_language(lexicon, iasd_items, lang):
    table = _words(lexicon, lang)
    terms = set(iasd_items) | _bank_terms()
    assert len(iasd_items) == 235 and len(terms) == 393
    assert sorted(t for t in terms if not table.get(t)) == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_released_iasd_option_word_reads_as_its_option(lexicon, iasd_items, lang):
    table = _words(lexicon, lang)
    wrong = []
    for term, item in iasd_items.items():
        result = read(FRAMES[lang].format(w=table[term][0]), item)
        if result.choice is None or item.options[result.choice] != term:
            wrong.append((term, table[term][0], result.reason))
    assert wrong == []


@pytest.fixture(scope="module")
def colours(iasd_items) -> AquaItem:
    item = iasd_items["Red"]
    assert {"Red", "None of the above"} <= set(item.options)
    return item


@pytest.mark.parametrize(
    "reply",
    ["答案是红色", "红色是正确答案", "赤が正解です", "答えは赤です", "빨간색이 정답입니다",
     "정답은 빨간색입니다", "La respuesta es rojo.", "Die Antwort ist rot.",
     "La réponse est rouge."],
)  # fmt: skip
def test_a_localised_colour_reads_as_the_option(colours, reply):
    assert read(reply, colours).letter == "ABCDE"[colours.options.index("Red")]


@pytest.mark.parametrize(
    ("reply", "letter"),
    [("答えは(b)です", "B"), ("(c)번이 맞습니다", "C"), ("(d)を選びます", "D"),
     ("C是正确答案", "C"), ("(a)가 정답입니다.", "A")],
)  # fmt: skip
def test_a_letter_before_a_postposed_frame_is_the_answer(colours, reply, letter):
    result = read(reply, colours)
    assert (result.letter, result.parsed) == (letter, True)


def test_postposed_frames_read_particles_and_negative_frames(lexicon, colours):
    red = colours.options.index("Red")
    other = next(o for o in colours.options if o not in ("Red", "None of the above"))
    second = _words(lexicon, "ko")[other][0]
    result = read(f"빨간색은 정답이 아닙니다. {second}이 정답입니다.", colours)
    assert result.letter == "ABCDE"[colours.options.index(other)]
    assert read("빨간색은 정답이 아닙니다.", colours).choice != red
    assert read("赤は正解ではありません。", colours).choice != red
    assert read("红色不是正确答案。", colours).choice != red


def test_the_korean_lexicon_matches_words_not_syllables(pick_animal):
    sheep = pick_animal(lambda i: "Sheep" in i.options)
    assert read("양 소리입니다.", sheep).letter == "ABCDE"[sheep.options.index("Sheep")]
    assert read("다양한 소리가 납니다.", sheep).choice != sheep.options.index("Sheep")


@pytest.fixture(scope="module")
def pick_animal(released_dir):
    items = load_items(released_dir, "animal", "main")
    return lambda test: next(i for i in items if test(i))


@pytest.fixture(scope="module")
def music(released_dir) -> AquaItem:
    items = load_items(released_dir, "music", "main")
    return next(i for i in items if i.type == "Solvable" and "Trumpet" in i.options)


@pytest.mark.parametrize("reply", ["答えはラッパです。", "答案是喇叭。", "나팔이 정답입니다.",
                                   "Die Antwort ist Tröte."])  # fmt: skip
def test_a_homonym_whose_other_sense_is_no_option_is_unparsed(music, reply):
    result = read(reply, music)
    assert (result.choice, result.parsed) == (None, False)
    assert result.reason.startswith("ambiguous") and "only 'Trumpet' is an option" in result.reason


def test_a_letter_pins_a_homonym_and_a_word_of_one_sense_reads_as_it(music):
    trumpet = "ABCDE"[music.options.index("Trumpet")]
    assert read(f"({trumpet.lower()}) ラッパ", music).letter == trumpet
    assert read("答えはトランペットです。", music).letter == trumpet


@pytest.mark.parametrize(
    "reply",
    ["It might be a dog, the bark is faint and there is wind in the background.",
     "Maybe a dog.", "A dog, perhaps.", "It could be (c), the clip is short.",
     "It could be a trombone."],
)  # fmt: skip
def test_a_short_unmarked_lean_commits_to_nothing(pick_animal, reply):
    dog = pick_animal(lambda i: i.id == 0)
    result = read(reply, dog)
    assert (result.choice, result.parsed) == (None, False)
    assert result.reason.startswith("no-commitment: lean")


@pytest.mark.parametrize(
    ("reply", "letter"),
    [("I could hear a dog barking.", "C"), ("It is a dog; a pig might sound lower.", "C"),
     ("It might be a dog. Final answer: (c) Dog", "C"), ("Probably a dog.", "C")],
)  # fmt: skip
def test_a_lean_with_a_commitment_or_a_plain_statement_still_chooses(pick_animal, reply, letter):
    assert read(reply, pick_animal(lambda i: i.id == 0)).letter == letter


def test_runs_recorded_with_3_0_are_rescored_and_say_so():
    assert rescoring_notice("aqua-rules", "3.0") == (
        "recorded extractor 'aqua-rules' 3.0 re-scored with 'aqua-rules' 3.2 (current code)"
    )
