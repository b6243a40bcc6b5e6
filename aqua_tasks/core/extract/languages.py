"""Non-English replies under `aqua-rules`: glossed into the English the rules read, from data.

`lexicon.json` (shipped in the package) holds, for Chinese, Japanese, Korean, Spanish, German
and French, the answer frames, rejection and refusal phrases, hedges, negations, the closed
vocabularies of the tracks (animals, instruments, vocal sounds) and the IASD category words,
each with its English gloss. A reply in one of those languages has every phrase it holds
replaced by its gloss ("正确答案：C" → "answer: C", "ninguna opción es correcta" → "none of the
above"), longest phrase first, so one rule set reads every language. A word that names two
classes ("鸡": hen or rooster) is glossed as both, so a reply naming only it stays ambiguous.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import NamedTuple

_CJK = {
    "ko": re.compile(r"[\uac00-\ud7af\u1100-\u11ff]"),
    "ja": re.compile(r"[\u3040-\u30ff]"),
    "zh": re.compile(r"[\u3400-\u9fff]"),
}
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u1100-\u11ff]+")
_LATIN_WORD = re.compile(r"[a-zà-öø-ÿß]+(?:'[a-zà-öø-ÿß]+)?")
# Words that show a reply is English: a Latin-script language is glossed only when it
# outnumbers them ("chat" is French for cat, but not in an English sentence).
_ENGLISH_VOCABULARY = (
    "the is a an and of it this that i not sound sounds to in answer be was are clip audio "
    "hear heard like which option recording"
)
_ENGLISH = frozenset(_ENGLISH_VOCABULARY.split())
_MIN_INDICATORS = 2
_SPACES = re.compile(r" {2,}")


class Language(NamedTuple):
    """One language of the lexicon, compiled: how to spot it and how to gloss it."""

    code: str
    script: str  # "cjk" (glossed wherever its script appears) or "latin"
    indicators: frozenset[str]
    phrases: re.Pattern[str]
    glosses: dict[str, str]  # case-folded phrase -> English


def _entries(code: str, table: dict) -> dict[str, str]:
    """Every phrase of one language with its gloss; a phrase under two options names both."""
    for field in ("script", "gloss", "vocabulary", "categories"):
        if field not in table:
            raise ValueError(f"lexicon.json: language {code!r} has no field {field!r}")
    owners: dict[str, list[str]] = {}
    for options, words in table["vocabulary"].items():
        for word in words:
            owners.setdefault(word.casefold(), []).extend(options.split("|"))
    glosses = {phrase.casefold(): gloss for phrase, gloss in table["gloss"].items()}
    glosses |= {w: " " + " or ".join(dict.fromkeys(o)) + " " for w, o in owners.items()}
    for category, words in table["categories"].items():
        glosses |= {word.casefold(): f" {category} " for word in words}
    return glosses


@cache
def languages() -> tuple[Language, ...]:
    """The lexicon's languages, loaded once from the package data."""
    raw = resources.files("aqua_tasks.core.extract").joinpath("lexicon.json").read_text("utf-8")
    compiled = []
    for code, table in json.loads(raw).items():
        if code.startswith("_"):
            continue
        glosses = _entries(code, table)
        alternatives = "|".join(re.escape(p) for p in sorted(glosses, key=len, reverse=True))
        if table["script"] == "latin":
            pattern = re.compile(rf"(?<![\w'])(?:{alternatives})(?![\w'])", re.IGNORECASE)
        else:
            pattern = re.compile(alternatives)
        indicators = frozenset(table.get("indicators", ()))
        compiled.append(Language(code, table["script"], indicators, pattern, glosses))
    return tuple(compiled)


def _spoken(text: str, low: str) -> list[Language]:
    """The lexicon languages the reply is written in, CJK scripts first."""
    # Japanese and Korean before Chinese: kana and hangul replies also hold Han characters.
    found = [lang for lang in languages() if lang.script == "cjk" and _CJK[lang.code].search(text)]
    found.sort(key=lambda lang: list(_CJK).index(lang.code))
    words = set(_LATIN_WORD.findall(low))
    english = len(words & _ENGLISH)
    for lang in languages():
        if lang.script == "latin":
            hits = len(words & lang.indicators)
            if hits >= _MIN_INDICATORS and hits > english:
                found.append(lang)
    return found


def gloss(text: str) -> tuple[str, tuple[str, ...]]:
    """The reply with the phrases of every lexicon language it is written in glossed."""
    low = text.casefold()
    spoken = _spoken(text, low)
    if not spoken:
        return text, ()
    for lang in spoken:
        text = lang.phrases.sub(lambda m, g=lang.glosses: g[m.group().casefold()], text)
    # Letters touching CJK text ("是C选项") must stand apart to read as letters.
    text = _CJK_RUN.sub(lambda m: f" {m.group()} ", text)
    return _SPACES.sub(" ", text), tuple(lang.code for lang in spoken)
