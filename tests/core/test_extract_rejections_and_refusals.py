"""`aqua-rules` 3.2: rejections by meaning, capability refusals over rejections, verdict tables.

A rejection need not say "none": negated coverage of every option, a count of wrong options,
the answer said to be missing from the list, or a heard class "not among the choices" all
choose the item's rejection option, in English and in the six lexicon languages. A reply
that says the model could not take in the audio is a refusal (unparsed) even when it then
picks the rejection option, also when it says so inside a thinking block. A verdict table's
single "yes" is that option, "no" to every option a rejection, several "yes" ambiguous.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from aqua_tasks.core.extract import EXTRACTOR_VERSIONS, extract, rescoring_notice
from aqua_tasks.core.extract.rules_non_answers import refusal_phrase

BIRDS = ["Hen", "Crow", "Sheep", "Frog", "None of the above"]  # an absent-answer item
BANDS = ["Saxophone", "Clarinet", "Trumpet", "Harmonica", "None of the above"]
DESIGN_1 = (["Cat", "Pig", "Cow", "Dog", "No correct answer"],
            ("No correct answer", "Cannot be determined from the given information"))  # fmt: skip
IAQD = ["Kitchen", "Garage", "Forest", "Office", "Unanswerable"]
NO_REJECTION = ["Radio", "Fire truck", "Construction site", "Airplane"]
REPO = Path(__file__).resolve().parents[2]


def read(reply: str, options: list[str] = BIRDS, rejections=None):
    if rejections is None:
        return extract(reply, options)
    return extract(reply, options, rejection_strings=rejections)


# ---- rejections by meaning ------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "Neither a hen nor a crow, and certainly no sheep or frog.",
        "Not the hen, not the crow, not the sheep, not the frog.",
        "This cannot be a hen, a crow, a sheep or a frog.",
        "It's no frog, no sheep, no crow and no hen.",
    ],
)
def test_negated_coverage_of_every_option_is_a_rejection(reply):
    found = read(reply)
    assert (found.letter, found.parsed) == ("E", True)
    assert found.reason.startswith("rules out all 4 options")


def test_negated_coverage_on_an_item_without_a_rejection_option_is_a_wrong_answer():
    found = read("Not a radio, not a fire truck, no construction site, no airplane.", NO_REJECTION)
    assert (found.choice, found.parsed) == (None, True)
    assert found.reason == "rules out all 4 options: not an option"


def test_some_options_negated_or_a_hypothetical_one_is_not_a_rejection():
    assert not read("It is not a hen and not a crow.").parsed
    found = read("If it were a hen it would cluck; it is not a crow, a sheep or a frog.")
    assert (found.choice, found.parsed) == (None, False)


@pytest.mark.parametrize(
    "reply",
    [
        "All four candidates are wrong.",
        "Each one of these options is incorrect.",
        "Every option listed seems mistaken.",
        "Zero options fit this clip.",
        "No choice here matches the clip.",
        "All of them miss.",
        "The choices were all off.",
    ],
)
def test_a_count_of_wrong_options_is_a_rejection(reply):
    found = read(reply, BANDS)
    assert (found.letter, found.parsed) == ("E", True), found.reason
    assert "rejection phrase" in found.reason


@pytest.mark.parametrize(
    "reply",
    [
        "What plays here isn't in the list.",
        "The sound heard is not part of the options.",
        "That animal is missing from the choices.",
        "The true answer appears to be absent.",
        "The proper answer isn't offered.",
        "The answers given lack it entirely.",
        "These choices don't cover what I hear.",
    ],
)
def test_the_answer_missing_from_the_list_is_a_rejection(reply):
    found = read(reply)
    assert (found.letter, found.parsed) == ("E", True), found.reason


def test_a_heard_class_outside_the_options_is_recorded_with_the_rejection():
    found = read("The clip is a goose, which isn't among the options.")
    assert found.letter == "E"
    assert found.reason.endswith("; names 'goose'")
    found = read("I hear a duck. Not on the list, so (e).")
    assert found.letter == "E" and "names 'duck'" in found.reason


def test_the_design_rejection_option_is_chosen_and_a_missing_one_is_a_wrong_answer():
    options, rejections = DESIGN_1
    assert read("Every one of the four is wrong.", options, rejections).letter == "E"
    found = read("The right answer is not in this list.", NO_REJECTION)
    assert (found.choice, found.parsed) == (None, True)
    assert found.reason.endswith("but the item has no rejection option")


def test_a_plain_answer_beside_a_list_phrase_still_chooses_the_option():
    assert read("(b) Crow. The other three are not it.").letter == "B"
    assert read("It is a crow, listed as (b).").letter == "B"


@pytest.mark.parametrize(
    "reply",
    [
        "Es ist weder ein Huhn noch eine Krähe noch ein Schaf noch ein Frosch.",
        "Alle Optionen sind falsch.",
        "Das Tier ist nicht in der Liste.",
        "No es ni una gallina ni un cuervo ni una oveja ni una rana.",
        "Todas las opciones son incorrectas.",
        "El animal no está entre las opciones.",
        "Ce n'est ni une poule, ni un corbeau, ni un mouton, ni une grenouille.",
        "Toutes les options sont fausses.",
        "Cet animal ne fait pas partie des options.",
        "既不是母鸡，也不是乌鸦，也不是羊，也不是青蛙。",
        "所有选项都不对。",
        "这个声音不在列表中。",
        "どの選択肢も違います。",
        "その動物は選択肢にありません。",
        "모든 선택지가 틀립니다.",
        "그 동물은 목록에 없습니다.",
    ],
)
def test_rejections_by_meaning_in_the_lexicon_languages(reply):
    found = read(reply)
    assert (found.letter, found.parsed) == ("E", True), found.reason
    assert "lexicon]" in found.reason


def test_a_lexicon_language_answer_frame_ends_an_english_reply():
    found = read("The call is a goose honk, loud and nasal. Antwort: keine davon")
    assert found.letter == "E" and found.reason.endswith("[read through the de lexicon]")
    found = read("A sharp honk from a goose. Respuesta final: ninguna de ellas.")
    assert found.letter == "E" and "es lexicon" in found.reason
    # An English reply with a stray Latin word is read as English: "tag" stays a tag.
    assert read("The tag on the clip says crow.").letter == "B"


# ---- capability refusals -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "I do not have access to the recording, so it cannot be determined.",
        "No audio clip was included with the question; none of the above.",
        "The attachment didn't come through. (e)",
        "There's no audio in this message, so: Unanswerable.",
        "I can only read text, hence none of the options can be confirmed.",
        "Having no ears, I cannot tell which animal it is.",
        "I'm unable to listen, so my answer is (e) None of the above.",
        "Being a text-based model I cannot say.",
    ],
)
def test_a_model_that_could_not_take_in_the_audio_refuses_even_when_it_rejects(reply):
    found = read(reply)
    assert (found.choice, found.parsed) == (None, False)
    assert found.reason.startswith("refusal:"), found.reason


def test_a_refusal_in_the_thinking_beats_the_rejection_after_it():
    reply = (
        "<think>The prompt mentions a clip but I was not given any audio file, only the "
        "question text.</think>\nThe answer is (e) None of the above."
    )
    found = read(reply)
    assert (found.choice, found.parsed) == (None, False)
    assert found.reason.startswith("refusal:") and "did not listen" in found.reason
    # The thinking may weigh sounds it heard: only a refusal there turns a rejection.
    heard = "<think>It honks, unlike a hen or a crow.</think>\nNone of the above."
    assert read(heard).letter == "E"


def test_a_refusal_followed_by_a_content_option_keeps_the_option():
    assert read("I can't hear audio, but a guess: (b) Crow.").letter == "B"


@pytest.mark.parametrize(
    "reply",
    [
        "The audio cannot tell us which room this is: unanswerable.",
        "From the clip alone there is no way to know the room.",
        "I can hear typing, but that does not reveal the room. Unanswerable.",
        "The recording is missing any cue about the place, so it cannot be determined.",
    ],
)
def test_an_answerability_judgement_about_the_audio_stays_a_rejection(reply):
    assert read(reply, IAQD).letter == "E"


@pytest.mark.parametrize(
    "reply",
    [
        "Ich kann nichts hören, also keine davon.",
        "No tengo acceso al audio; ninguna de las anteriores.",
        "Je n'ai reçu aucun audio, donc aucune des options.",
        "我没有耳朵，所以都不是。",
        "音声ファイルを受け取っていません。どれでもない。",
        "오디오를 받지 못했습니다. 해당 없음.",
    ],
)
def test_refusals_in_the_lexicon_languages(reply):
    found = read(reply)
    assert (found.choice, found.parsed) == (None, False)
    assert found.reason.startswith("refusal:"), found.reason


def test_refusal_phrase_still_names_the_phrase_of_a_casefolded_reply():
    assert refusal_phrase("i did not receive any audio.") == "did not receive any audio"
    assert refusal_phrase("sorry, i cannot process audio files.") == "cannot process audio"
    assert refusal_phrase("it cannot be determined from the audio.") is None


# ---- verdict tables --------------------------------------------------------------------------


def _table(rows: list[tuple[str, str]], header: str = "| Option | Fits |") -> str:
    return "\n".join([header, "|---|---|", *(f"| {a} | {b} |" for a, b in rows)])


def test_a_verdict_column_with_one_yes_chooses_that_option():
    reply = _table(
        [("(a) Hen", "No"), ("(b) Crow", "Yes"), ("(c) Sheep", "No"), ("(d) Frog", "No")]
    )
    found = read(reply)
    assert found.letter == "B" and found.reason.startswith("in the marked table row")
    reply = _table([("Hen", "✗"), ("Crow", "✗"), ("Sheep", "✔"), ("Frog", "✗")])
    assert read(reply).letter == "C"


def test_a_verdict_column_of_all_no_is_a_rejection():
    reply = _table([("Hen", "No — clucks"), ("Crow", "no"), ("Sheep", "No"), ("Frog", "no")])
    found = read(reply)
    assert found.letter == "E"
    assert found.reason.startswith("verdict table says no to all 4 rows")
    found = read(_table([("Radio", "✗"), ("Fire truck", "✗"), ("Airplane", "✗")]), NO_REJECTION)
    assert (found.choice, found.parsed) == (None, True)


def test_a_verdict_column_with_two_yes_or_a_no_to_the_rejection_too_is_ambiguous():
    found = read(_table([("Hen", "Yes"), ("Crow", "Yes"), ("Sheep", "No")]))
    assert (found.parsed, found.reason) == (False, "ambiguous: 2 table rows marked as chosen")
    every = [(o, "No") for o in BIRDS]
    found = read(_table(every))
    assert not found.parsed and "the rejection too" in found.reason


def test_a_comment_cell_that_starts_with_no_is_not_a_verdict():
    reply = "\n".join(
        ["| Option | Fits | Why |", "|---|---|---|", "| Hen | ✗ | clucks |",
         "| Crow | ✓ | No doubt: a caw |", "| Frog | ✗ | croaks |"]
    )  # fmt: skip
    assert read(reply).letter == "B"


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        (_table([("(a)", "nein"), ("(b)", "ja"), ("(c)", "nein")], "| Option | Passt |"), "B"),
        (_table([("(a)", "non"), ("(b)", "non"), ("(c)", "non"), ("(d)", "non")]), "E"),
        (_table([("(a)", "sí"), ("(b)", "no"), ("(c)", "no")]), "A"),
        (
            _table(
                [("母鸡", "否"), ("乌鸦", "是"), ("羊", "否"), ("青蛙", "否")], "| 选项 | 符合 |"
            ),
            "B",
        ),
        (
            _table([("(a)", "×"), ("(b)", "×"), ("(c)", "○"), ("(d)", "×")], "| 選択肢 | 判定 |"),
            "C",
        ),
        (_table([("(a)", "아니요"), ("(b)", "아니요"), ("(c)", "아니요"), ("(d)", "예")]), "D"),
    ],
)
def test_verdict_words_of_the_lexicon_languages(reply, letter):
    assert read(reply).letter == letter


# ---- version and the held-out figures ----------------------------------------------------------


def test_runs_recorded_with_3_1_are_rescored_with_3_2():
    assert EXTRACTOR_VERSIONS["aqua-rules"] == "3.2"
    assert rescoring_notice("aqua-rules", "3.1") == (
        "recorded extractor 'aqua-rules' 3.1 re-scored with 'aqua-rules' 3.2 (current code)"
    )


def test_held_out_replies_read_as_docs_extraction_md_reports():
    sys.path.insert(0, str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location(
        "bench_extract_heldout", REPO / "benchmarks" / "bench_extract_heldout.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.load_replies(bench.REPLIES)
    table = bench.measure(rows, {"now": extract_with_rejections})["by_kind"]
    assert {kind: row["now"] for kind, row in table.items()} == {
        "negated-coverage": 10, "wrong-count": 11, "not-in-list": 12, "heard-class": 7,
        "mixed-language": 3, "refusal": 13, "verdict-table": 8, "control": 14, "all": 78,
    }  # fmt: skip
    assert table["all"]["replies"] == len(rows) == 84
    kinds = json.dumps(sorted({r["kind"] for r in rows}))
    assert "refusal" in kinds and "verdict-table" in kinds


def extract_with_rejections(reply: str, options: list[str], rejections: list[str]):
    return extract(reply, options, rejection_strings=rejections)
