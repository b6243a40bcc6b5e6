"""The pure half of the LLM fallback: its prompt, strict-JSON reading, and how a reading applies."""

from __future__ import annotations

import pytest

from aqua_tasks.core.data import AquaItem
from aqua_tasks.core.extract import EXTRACTOR_NAMES, EXTRACTOR_VERSIONS, extract, rescoring_notice
from aqua_tasks.core.extract.fallback import (
    FAILED,
    FALLBACK_EXTRACTOR,
    FALLBACK_PROMPT_VERSION,
    FALLBACK_SETTING_NAMES,
    NONE,
    NOT_ASKED,
    REFUSAL,
    REJECTION,
    apply_reading,
    fallback_counts,
    fallback_messages,
    fallback_settings,
    needs_fallback,
    read_fallback_reply,
)
from aqua_tasks.core.generation_failure import failed_reply
from aqua_tasks.core.run_settings import check_aqua_metadata
from aqua_tasks.core.scoring import score_reply
from aqua_tasks.errors import AquaDataError
from orca_judge.prompted.settings import SETTING_NAMES

OPTIONS = ("Rooster", "Crow", "Dog", "Pig", "None of the above")
REJECTIONS = ("None of the above", "Unanswerable")


def test_registry_names_the_fallback_with_the_rules_version_and_its_prompt():
    assert FALLBACK_EXTRACTOR in EXTRACTOR_NAMES
    rules = EXTRACTOR_VERSIONS["aqua-rules"]
    assert EXTRACTOR_VERSIONS[FALLBACK_EXTRACTOR] == f"{rules}+{FALLBACK_PROMPT_VERSION}"
    assert rescoring_notice(FALLBACK_EXTRACTOR, EXTRACTOR_VERSIONS[FALLBACK_EXTRACTOR]) is None
    # Its rules half reads exactly as aqua-rules does.
    reply = "The answer is (c) Dog."
    assert extract(reply, OPTIONS, extractor=FALLBACK_EXTRACTOR) == extract(reply, OPTIONS)


def test_prompt_letters_every_option_and_quotes_the_reply():
    system, user = fallback_messages(OPTIONS, "Maybe a dog.")
    assert system["role"] == "system" and "JSON only" in system["content"]
    assert "(a) Rooster\n(b) Crow\n(c) Dog\n(d) Pig\n(e) None of the above" in user["content"]
    assert "<<<\nMaybe a dog.\n>>>" in user["content"]


@pytest.mark.parametrize(
    ("text", "reading"),
    [
        ('{"answer": "c"}', 7),
        ('{"answer": "(C)"}', 7),
        ('```json\n{"answer": "a", "why": "x"}\n```', 5),
        ('{"answer": "rejection"}', REJECTION),
        ('{"answer": "Refusal"}', REFUSAL),
        ('{"answer": "none"}', NONE),
    ],
)
def test_strict_json_replies_read(text, reading):
    assert read_fallback_reply(text, 5).reading == reading


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("The answer is (c).", "not a JSON object: 'The answer is (c).'"),
        ('["c"]', "not a JSON object"),
        ('{"letter": "c"}', "no string `answer` key"),
        ('{"answer": "f"}', "`answer` is 'f', expected a letter a-e, rejection, refusal or none"),
    ],
)
def test_invalid_replies_say_why(text, problem):
    read = read_fallback_reply(text, 5)
    assert read.reading is None and read.problem.startswith(problem)


def test_only_unparsed_replies_with_words_are_sent():
    assert needs_fallback("Maybe a dog.", extract("Maybe a dog.", OPTIONS))
    assert not needs_fallback("(c) Dog", extract("(c) Dog", OPTIONS))
    for reply in ("", "  ...  ", failed_reply("HTTP 503")):
        assert not needs_fallback(reply, extract(reply, OPTIONS))
    # A capability refusal is the rules' reading: never handed to a reader that might call
    # its "so none of them" a rejection.
    refusal = "I cannot hear audio, so none of these options fits."
    assert extract(refusal, OPTIONS).reason.startswith("refusal:")
    assert not needs_fallback(refusal, extract(refusal, OPTIONS))


def test_a_reading_never_changes_what_the_rules_read():
    rules = extract("(c) Dog", OPTIONS)
    assert apply_reading(rules, 5, OPTIONS, REJECTIONS) == (rules, "rules")


def test_readings_apply_to_unparsed_replies():
    rules = extract("Maybe a dog.", OPTIONS)
    assert not rules.parsed
    chosen, by = apply_reading(rules, 7, OPTIONS, REJECTIONS)
    assert (chosen.choice, chosen.parsed, chosen.reason, by) == (
        2,
        True,
        "fallback: letter (c)",
        "fallback",
    )
    rejected, by = apply_reading(rules, REJECTION, OPTIONS, REJECTIONS)
    assert (rejected.choice, by) == (4, "fallback")
    no_option, _ = apply_reading(rules, REJECTION, OPTIONS[:4], REJECTIONS)
    assert (no_option.choice, no_option.parsed) == (None, True)
    for reading, tail in ((FAILED, "[fallback failed]"), (NONE, "[fallback: none]")):
        kept, by = apply_reading(rules, reading, OPTIONS, REJECTIONS)
        assert (kept.parsed, by) == (False, "rules") and kept.reason.endswith(tail)
    with pytest.raises(ValueError, match="0-9"):
        apply_reading(rules, 10, OPTIONS, REJECTIONS)


def test_counts_of_logged_readings():
    readings = [NOT_ASKED, FAILED, NONE, REFUSAL, REJECTION, 5, 9, FAILED]
    assert fallback_counts(readings) == {"n_fallback": 3, "n_fallback_failed": 2}


def _item() -> AquaItem:
    return AquaItem(
        id=1,
        track="animal",
        variant="main",
        type="AAD",
        subtype="",
        question="What is it? (a) Rooster (b) Crow (c) Dog (d) Pig (e) None of the above",
        options=OPTIONS,
        answer="None of the above",
        answer_index=4,
        audio_filename="a.wav",
        true_class="Cow",
    )


def test_score_reply_records_who_read_it_and_needs_a_reading():
    item = _item()
    verdict = score_reply(item, "Hard to say, honestly.", extractor=FALLBACK_EXTRACTOR, fallback=9)
    assert (verdict.correct, verdict.read_by, verdict.to_record()["read_by"]) == (
        True,
        "fallback",
        "fallback",
    )
    ruled = score_reply(item, "(e)", extractor=FALLBACK_EXTRACTOR, fallback=NOT_ASKED)
    assert (ruled.correct, ruled.read_by) == (True, "rules")
    with pytest.raises(ValueError, match="no fallback reading was recorded"):
        score_reply(item, "Hard to say, honestly.", extractor=FALLBACK_EXTRACTOR)


def test_settings_are_a_subset_of_the_prompted_clients():
    assert set(FALLBACK_SETTING_NAMES) <= set(SETTING_NAMES)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"extractor": FALLBACK_EXTRACTOR}, 'needs "fallback"'),
        ({"extractor": FALLBACK_EXTRACTOR, "fallback": {"base_url": "u"}}, "fallback.model"),
        ({"extractor": FALLBACK_EXTRACTOR, "fallback": {"model": "m"}}, "fallback.base_url"),
        (
            {"extractor": FALLBACK_EXTRACTOR, "fallback": {"model": "m", "temperature": 1}},
            "fallback.temperature: unknown setting",
        ),
        (
            {"extractor": FALLBACK_EXTRACTOR, "fallback": {"model": "m", "backend": "vllm"}},
            "fallback.backend: 'vllm'",
        ),
        ({"fallback": {"model": "m"}}, "settings given but extractor is 'aqua-rules'"),
    ],
)
def test_bad_fallback_settings_are_one_line_errors_naming_the_key(tmp_path, metadata, message):
    with pytest.raises(AquaDataError, match="--metadata ") as raised:
        check_aqua_metadata({"data_dir": str(tmp_path), "audio": False, **metadata})
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_good_fallback_settings_pass():
    hf = {"extractor": FALLBACK_EXTRACTOR, "fallback": {"backend": "hf", "model": "folder"}}
    assert fallback_settings(hf) == {"backend": "hf", "model": "folder"}
    assert fallback_settings({"extractor": "aqua-rules"}) is None
