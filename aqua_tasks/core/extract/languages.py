"""Non-English replies under `aqua-rules`: glossed into the English the rules read, from data.

`lexicon.json` (shipped in the package) holds, for Chinese, Japanese, Korean, Spanish, German
and French, the answer frames, rejection and refusal phrases, hedges, negations, the closed
vocabularies of the tracks (animals, instruments, vocal sounds), the IASD category words and
the IASD option words (colours, cities, professions, sizes, …), each with its English gloss.
A reply in one of those languages has every phrase it holds
replaced by its gloss ("正确答案：C" → "answer: C", "ninguna opción es correcta" → "none of the
above"), longest phrase first, so one rule set reads every language. A word that names two
classes ("鸡": hen or rooster) is glossed as both, so a reply naming only it stays ambiguous.
A homonym a careful grader cannot pin down ("ラッパ": trumpet or horn) becomes a sense token
(`⟦ラッパ=Trumpet|Horn⟧`) that never decides for one option (see rules_mentions.py).

Word order is structural, not listed phrase by phrase: Chinese, Japanese and Korean put the
answer frame after the answer ("赤が正解です", "빨간색이 정답입니다", "C是正确答案"), so each
answer, its particle and its postposed frame are rewritten as "answer: <answer>." before the
glossing. Korean words are only glossed at a word start and before a particle or a break,
so "양" (sheep) is not read inside "다양한".

A Latin-script language is spotted in the whole reply, else sentence by sentence: an English
reply that ends "Antwort: keine davon" has that sentence glossed. `verdict_words` gives each
language's yes and no of a verdict table (structured.py).
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
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_HANGUL = "\uac00-\ud7af\u1100-\u11ff"
# A postposed answer runs from the start of its clause ("판타지 책이 정답입니다": "판타지 책").
_CLAUSE_BREAKS = "。．.!?！？、，,：:；;\n「」『』"
_POSTPOSED_ANSWER = rf"(?:^|(?<=[{_CLAUSE_BREAKS}]))\s*(?P<answer>[^{_CLAUSE_BREAKS}]{{1,60}}?)"
SENSE_OPEN, SENSE_CLOSE = "⟦", "⟧"  # a homonym's sense token: ⟦word=Sense|Sense⟧


class Language(NamedTuple):
    """One language of the lexicon, compiled: how to spot it and how to gloss it."""

    code: str
    script: str  # "cjk" (glossed wherever its script appears) or "latin"
    indicators: frozenset[str]
    phrases: re.Pattern[str]
    glosses: dict[str, str]  # case-folded phrase -> English
    postposed: re.Pattern[str] | None  # answer + particle + answer frame, for CJK word order
    ruled_out: re.Pattern[str] | None  # answer + particle + negative frame ("…은 정답이 아닙니다")


def _entries(code: str, table: dict) -> tuple[dict[str, str], set[str]]:
    """Every phrase of one language with its gloss, and which of them are words (not frames)."""
    for field in ("script", "gloss", "vocabulary", "categories", "options"):
        if field not in table:
            raise ValueError(f"lexicon.json: language {code!r} has no field {field!r}")
    owners: dict[str, list[str]] = {}
    for options, words in [*table["vocabulary"].items(), *table["options"].items()]:
        for word in words:
            owners.setdefault(word.lower(), []).extend(options.split("|"))
    # Lower-cased, not case-folded: the pattern must still match "ß" ("Weißwein").
    glosses = {phrase.lower(): gloss for phrase, gloss in table["gloss"].items()}
    words = {w: " " + " or ".join(dict.fromkeys(o)) + " " for w, o in owners.items()}
    for category, names in table["categories"].items():
        words |= {name.lower(): f" {category} " for name in names}
    for senses, names in table.get("homonyms", {}).items():
        if "|" not in senses:
            raise ValueError(f"lexicon.json: {code!r} homonym {senses!r} has one sense, not 'A|B'")
        words |= {n.lower(): f" {SENSE_OPEN}{n}={senses}{SENSE_CLOSE} " for n in names}
    return glosses | words, set(words) - set(glosses)


def _phrase_pattern(phrases: list[str], words: set[str], particles: str | None) -> str:
    """The phrases, longest first, as one alternation; a Korean word only at a word start and
    before a particle or a break.

    Consecutive words share one guarded group: `(?<!H)(?:w1|w2)(?=…)` matches what
    `(?<!H)w1(?=…)|(?<!H)w2(?=…)` does (the engine backtracks into the group when the guard
    fails), and compiling ~25 Hangul classes instead of ~600 saves about 2 s per process.
    """
    runs: list[tuple[bool, list[str]]] = []
    for phrase in sorted(phrases, key=len, reverse=True):
        guarded = particles is not None and phrase in words
        if not runs or runs[-1][0] != guarded:
            runs.append((guarded, []))
        runs[-1][1].append(re.escape(phrase))
    parts = []
    for guarded, escaped in runs:
        alternation = "|".join(escaped)
        # Hangul has no case: the guards match case-sensitively (cheaper to compile).
        parts.append(
            rf"(?-i:(?<![{_HANGUL}]))(?:{alternation})(?-i:(?=[^{_HANGUL}]|$|{particles}))"
            if guarded
            else alternation
        )
    return "|".join(parts)


def _alternatives(phrases: list[str]) -> str:
    return "|".join(map(re.escape, sorted(phrases, key=len, reverse=True)))


def _postposed(code: str, table: dict) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """The patterns of an answer followed by its particle and a postposed (negative) frame."""
    spec = table.get("postposed")
    if spec is None:
        return None, None
    try:
        particles, frames = _alternatives(spec["particles"]), _alternatives(spec["frames"])
        negative = _alternatives(spec.get("negative_frames", []))
        not_after = _alternatives(spec.get("not_after", []))
    except (KeyError, TypeError) as error:
        raise ValueError(
            f"lexicon.json: {code!r} 'postposed' needs lists 'particles' and 'frames'"
        ) from error
    guard = rf"(?!\s*(?:{not_after}))" if not_after else ""
    answer = rf"{_POSTPOSED_ANSWER}\s*"
    chosen = re.compile(rf"{answer}(?:{particles})\s*(?:{frames}){guard}")
    # The particle may be missing before a negative frame: "红色不是正确答案".
    ruled_out = re.compile(rf"{answer}(?:(?:{particles})\s*)?(?:{negative})") if negative else None
    return chosen, ruled_out


@cache
def languages() -> tuple[Language, ...]:
    """The lexicon's languages, loaded once from the package data."""
    raw = resources.files("aqua_tasks.core.extract").joinpath("lexicon.json").read_text("utf-8")
    compiled = []
    for code, table in json.loads(raw).items():
        if code.startswith("_"):
            continue
        glosses, words = _entries(code, table)
        particles = table.get("particles")
        ends = (
            "|".join(map(re.escape, sorted(particles, key=len, reverse=True)))
            if particles
            else None
        )
        alternatives = _phrase_pattern(list(glosses), words, ends)
        if table["script"] == "latin":
            pattern = re.compile(rf"(?<![\w'])(?:{alternatives})(?![\w'])", re.IGNORECASE)
        else:
            pattern = re.compile(alternatives, re.IGNORECASE)  # "T恤", "SF小説"
        indicators = frozenset(table.get("indicators", ()))
        postposed, ruled_out = _postposed(code, table)
        compiled.append(
            Language(code, table["script"], indicators, pattern, glosses, postposed, ruled_out)
        )
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


@cache
def verdict_words() -> tuple[frozenset[str], frozenset[str]]:
    """The lower-cased yes and no words of a verdict table in every lexicon language."""
    raw = resources.files("aqua_tasks.core.extract").joinpath("lexicon.json").read_text("utf-8")
    tables = [t for code, t in json.loads(raw).items() if not code.startswith("_")]
    words = [t.get("verdicts", {}) for t in tables]
    yes = frozenset(w.lower() for v in words for w in v.get("yes", ()))
    return yes, frozenset(w.lower() for v in words for w in v.get("no", ()))


def _gloss_sentences(text: str) -> tuple[str, tuple[str, ...]]:
    """Sentences written in a Latin-script lexicon language inside an otherwise English reply."""
    found: dict[str, None] = {}

    def one(m: re.Match[str]) -> str:
        sentence = m.group()
        latin = [lang for lang in _spoken(sentence, sentence.casefold()) if lang.script == "latin"]
        for lang in latin:
            found[lang.code] = None
            sentence = lang.phrases.sub(lambda p, g=lang.glosses: g[p.group().lower()], sentence)
        return sentence

    glossed = _SENTENCE.sub(one, text)
    return _SPACES.sub(" ", glossed), tuple(found)


def gloss(text: str) -> tuple[str, tuple[str, ...]]:
    """The reply with the phrases of every lexicon language it is written in glossed."""
    spoken = _spoken(text, text.casefold())
    by_sentence: tuple[str, ...] = ()
    if not any(lang.script == "latin" for lang in spoken):
        # "In the clip I hear a harp. Antwort: keine davon": one sentence is German.
        text, by_sentence = _gloss_sentences(text)
    if not spoken and not by_sentence:
        return text, ()
    for lang in spoken:
        if lang.ruled_out is not None:
            # "빨간색은 정답이 아닙니다" -> "not 빨간색." : ruled out, as English negation reads it.
            text = lang.ruled_out.sub(lambda m: f" not {m.group('answer')}. ", text)
        if lang.postposed is not None:
            # "赤が正解です" -> "answer: 赤." : the frame the English rules read comes first.
            text = lang.postposed.sub(lambda m: f" answer: {m.group('answer')}. ", text)
        text = lang.phrases.sub(lambda m, g=lang.glosses: g[m.group().lower()], text)
    # Letters touching CJK text ("是C选项") must stand apart to read as letters.
    text = _CJK_RUN.sub(lambda m: f" {m.group()} ", text)
    return _SPACES.sub(" ", text), (*(lang.code for lang in spoken), *by_sentence)
