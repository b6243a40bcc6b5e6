"""`aqua-rules`, our extractor: the option a free-form reply commits to, never a guess.

The ordered rules are in docs/extraction.md; this module holds the decisions, and the
`rules_*` modules beside it the words, the mentions of options and the non-answers.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

from aqua_tasks.core.extract.languages import gloss
from aqua_tasks.core.extract.reasoning import REASONING_CHARS, split_reply
from aqua_tasks.core.extract.rules_mentions import (
    Mention,
    Mentions,
    find_mentions,
    letter_mention,
    post_negated,
    pre_negated,
)
from aqua_tasks.core.extract.rules_non_answers import (
    SHORT_REPLY_WORDS,
    hedge_phrase,
    no_answer,
    refusal_phrase,
)
from aqua_tasks.core.extract.rules_rejections import heard_instead, heard_word
from aqua_tasks.core.extract.rules_words import (
    NEXT_WORD,
    NO_REJECTION,
    OTHER_SENSE,
    WORD,
    Item,
    compile_item,
    stem_of,
)
from aqua_tasks.core.extract.structured import ordinal_mentions, structured_answer
from aqua_tasks.core.extract.verdict import Extraction, checked_options
from aqua_tasks.core.generation_limit import split_token_limit

DEFAULT_REJECTIONS: tuple[str, ...] = ("None of the above", "Unanswerable")

# Markdown emphasis is dropped, not spaced, so "**(E)**" becomes "(E)".
_TRANSLATE = str.maketrans("‘’“”_", "''\"\" ", "*`#~")
# Patterns run on an ASCII-lowered copy: same length, so positions agree with the original,
# and far faster than case-insensitive matching.
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)

_STRONG_CUE = re.compile(
    r"\b(?:(?:final|correct|best|right|my)\s+)?answer\b\s*(?:is\b|would\s+(?:\w+\s+)?be\b"
    r"|should\s+be\b|must\s+be\b|will\s+be\b|[:=\-]|(?=[(\[]))"
    r"|\b(?:correct|best|right|final)\s+(?:option|choice)\s*(?:is\b|would\s+be\b|:)"
    r"|\bi(?:'d|\s+would|\s+will|'ll)?\s+(?:choose|select|pick|go\s+with)\b"
    r"|\bmy\s+(?:choice|selection|pick)\s*(?:is\b|:)"
)
_WEAK_CUE = re.compile(r"\b(?:so|therefore|thus|hence|most\s+likely|probably)\b\s*[:,]?")
_TARGET_CHARS = 160  # bounded, so that thousands of cues without punctuation stay linear
_TARGET_START = re.compile(r"[\s:=\-\"']*")
_TARGET_END = re.compile(
    r"[.!?](?=\s|$)|[\n;,]|\s[-–—]\s"
    r"|\b(?:because|since|as|which|given|due\s+to|while|whereas|but|though|although)\b"
)
_TARGET_LETTER = re.compile(r"[(\[]?([a-z])[)\]]?(?![\w'-])")
_BARE_LETTER = re.compile(r"\W*(?:(?:answer|option|choice)\W*)?\(?([a-z])\)?\W*")
_SENTENCE_BREAK = re.compile(r"[.!?]+\s+")
# A self-correction makes what follows it the answer: "(a) Dog. Actually, it is a cat."
_CORRECTION = re.compile(
    r"\b(?:actually|wait|correction|scratch\s+that|i\s+mean|i\s+was\s+wrong|on\s+reflection"
    r"|on\s+(?:a\s+)?(?:second|closer|further)\s+(?:thought|listen(?:ing)?|look|hearing)"
    r"|upon\s+(?:further|closer|second)\s+\w+|let\s+me\s+(?:correct|reconsider|revise)"
    r"|i\s+take\s+(?:it|that)\s+back|(?:changing|change|revising|revise)\s+my\s+answer)\b"
)
# The first line of a reply: bullets and numbering before it, its end at a sentence or dash.
_LEAD_MARKER = re.compile(r"\s*(?:(?:[-*•>]|\d{1,2}[.)])\s+)?")
_LEAD_END = re.compile(r"[.!?](?=\s|$)|[;\n]|\s[-–—]\s|—")
# Words a committing first line may hold besides the option: "I believe it's (d) Pig".
_LEAD_VOCABULARY = (
    "answer final correct best right option choice letter my is it it's its this that that's "
    "there there's here i i'd i'm i'll think believe hear heard say choose pick select go with "
    "definitely clearly certainly surely obviously sound sounds like clip audio recording "
    "source speaker person someone somebody one the a an of in be was are to me"
)
_LEAD_WORDS = frozenset(_LEAD_VOCABULARY.split())
_HEDGE = re.compile(r"\b(?:maybe|perhaps|possibly|probably|likely|might|may|could|or|guess)\b")
_LEAD_MAX_WORDS = 6
# A lean, not a choice: "It might be a dog, the bark is faint". "I could hear a dog" is no lean.
_LEAN = re.compile(r"\b(?:maybe|perhaps|possibly|(?:might|may|could)(?:\s+\w+)?\s+be)\b")
_LEAN_AFTER = re.compile(r"[\s,)\]]*(?:maybe|perhaps|possibly|i\s+guess)\b")
_CLAUSE_START = re.compile(
    r".*[.;:!?\n,]|.*\b(?:but|however|although|though|whereas|while)\b", re.S
)
# Reasons of explicit answers: a reply that hit the token limit keeps only these.
_EXPLICIT = ("bare letter", "letter (", "after ", "in first line", "in \\boxed", "in the JSON",
             "in the marked", "error", "refusal")  # fmt: skip


class _Target(NamedTuple):
    cue: str
    strong: bool  # "answer is", "I choose" (strong) vs "so", "probably" (weak)
    cue_start: int
    start: int
    end: int


def _cue_targets(low: str, item: Item) -> tuple[list[_Target], list[Mention | None]]:
    """Each answer cue with the span it introduces, plus letters that count only there."""
    cues = [(m, True) for m in _STRONG_CUE.finditer(low)]
    cues += [(m, False) for m in _WEAK_CUE.finditer(low)]
    targets, letters = [], []
    for cue, strong in sorted(cues, key=lambda c: c[0].start()):
        start = _TARGET_START.match(low, cue.end()).end()
        limit = min(start + _TARGET_CHARS, len(low))
        end = _TARGET_END.search(low, min(start + 1, limit), limit)
        name = " ".join(cue.group().split())
        targets.append(_Target(name, strong, cue.start(), start, end.start() if end else limit))
        # Lower case counts here: "answer: a", "so, e". But "answer is a dog" is not (a).
        lm = _TARGET_LETTER.match(low, start)
        if lm and not (lm.group() in "ai" and NEXT_WORD.match(low, lm.end())):
            letters.append(letter_mention(lm, lm.group(1), item))
    return targets, letters


def _describe(idx: int, item: Item) -> str:
    if idx == OTHER_SENSE:
        return "a sense that is not an option"
    return (
        "a rejection" if idx == NO_REJECTION else f"({chr(ord('a') + idx)}) {item.options[idx]!r}"
    )


def _leaning(low: str, ms: list[Mention]) -> str | None:
    """The lean word under which every one of these mentions stands, if each stands under one."""
    word = None
    for m in ms:
        before = low[max(0, m.start - 80) : m.start]
        clause = before[_CLAUSE_START.match(before).end() if _CLAUSE_START.match(before) else 0 :]
        found = _LEAN.search(clause) or _LEAN_AFTER.match(low, m.end)
        if found is None:
            return None
        word = word or " ".join(found.group().strip(" ,)]").split())
    return word


def _lean(text: str, low: str, ms: list[Mention], decided: Extraction) -> Extraction | None:
    """A short reply whose only commitment is a lean ("It might be a dog") commits to nothing."""
    if len(text) >= REASONING_CHARS:
        return None
    word = _leaning(low, ms) if ms else (_LEAN.search(low) or _LEAN_AFTER.search(low))
    if not word:
        return None
    word = word if isinstance(word, str) else " ".join(word.group().strip(" ,)]").split())
    return Extraction(
        None, False, f"no-commitment: lean {word!r} without an answer frame ({decided.reason})"
    )


def _verdict(ms: list[Mention], item: Item, where: str) -> Extraction | None:
    """One option named -> chosen; several -> ambiguous (unparsed); none -> None."""
    idxs = sorted(set().union(*(m.idxs for m in ms)))
    if len(idxs) > 1:
        clash = next((m.label for m in ms if len(m.idxs) > 1), None)
        names = clash or " and ".join(_describe(i, item) for i in idxs)
        return Extraction(None, False, f"ambiguous{where}: {names}")
    if not idxs:
        return None
    label = f"{where.strip()}: {ms[-1].label}" if where else ms[-1].label
    if idxs[0] == NO_REJECTION:
        return Extraction(None, True, f"{label}, but the item has no rejection option")
    return Extraction(idxs[0], True, label)


def _head_match(text: str, low: str, lo: int, hi: int, item: Item) -> Extraction | None:
    """The one multi-word option whose last word the span names, not negated ("a guitar")."""
    hits = set()
    for w in WORD.finditer(text, lo, hi):
        idx = item.heads.get(stem_of(w.group()))
        if idx is not None:
            m = Mention(w.start(), w.end(), frozenset({idx}), "text", "")
            if not (pre_negated(low, m) or post_negated(low, m)):
                hits.add(idx)
    if len(hits) != 1:
        return None
    (idx,) = hits
    return Extraction(idx, True, f"head word of option {item.options[idx]!r}")


def _by_cue(
    text: str,
    low: str,
    targets: list[_Target],
    mentions: Mentions,
    committed: Mentions,
    item: Item,
) -> Extraction | None:
    """The last explicit answer ("answer is X", "so: X", "I choose X"), if one decides."""
    for name, strong, cue_start, start, end in reversed(targets):
        if mentions.covers(cue_start):
            continue  # "no correct answer is ..." is a rejection, not a cue
        named = committed.within(start, end)
        chosen = set().union(*(m.idxs for m in named))
        # A weak cue ("so", "probably") only counts if nothing after it names another option.
        if strong or (len(chosen) == 1 and committed.named_from(end) <= chosen):
            decided = _verdict(named, item, f" after {name!r}")
            if decided:
                return decided
        span = text[start:end]
        if strong and not WORD.search(text, end) and not mentions.within(start, end):
            # The reply ends on "Final answer: Trombone": a committed non-option.
            by_head = _head_match(text, low, start, end, item)
            if by_head or 1 <= len(WORD.findall(span)) <= 5:
                return by_head or Extraction(
                    None, True, f"answer {span.strip()!r} is not an option"
                )
    return None


def _by_correction(
    text: str, low: str, targets: list[_Target], committed: Mentions, item: Item
) -> Extraction | None:
    """The option named after the last self-correction, unless an answer cue follows it."""
    marks = list(_CORRECTION.finditer(low))
    if not marks or any(t.strong and t.cue_start > marks[-1].start() for t in targets):
        return None
    after = committed.within(marks[-1].end(), len(text))
    if not after:
        return None
    end = _SENTENCE_BREAK.search(text, after[0].end)
    named = committed.within(marks[-1].end(), end.start() if end else len(text))
    decided = _verdict(named, item, f" after correction {' '.join(marks[-1].group().split())!r}")
    return decided if decided and decided.parsed else None


def _by_lead(
    text: str, low: str, mentions: Mentions, committed: Mentions, item: Item
) -> Extraction | None:
    """A first line that is just an answer ("(b) Sneeze", "It's a cow.") commits to it."""
    start = _LEAD_MARKER.match(text).end()
    stop = _LEAD_END.search(text, start + 1)
    end = stop.start() if stop else len(text)
    # A reply that is only its first line is read by position, as any other.
    if (
        not WORD.search(text, end)
        or (stop and stop.group() == "?")
        or _HEDGE.search(low, start, end)
    ):
        return None
    named = committed.within(start, end)
    decided = _verdict(named, item, " in first line")
    if not decided or not decided.parsed or len(mentions.within(start, end)) != len(named):
        return None
    rest, pos = [], start
    for m in named:
        rest += WORD.findall(low, pos, m.start)
        pos = max(pos, m.end)
    rest += WORD.findall(low, pos, end)
    if len(rest) > _LEAD_MAX_WORDS or not _LEAD_WORDS.issuperset(rest):
        return None
    return decided


def _named_instead(text: str, low: str, mentions: Mentions, item: Item) -> Extraction | None:
    """Every option named is ruled out and the reply names what it hears instead: a rejection."""
    for found in heard_instead(low):
        start, end = heard_word(found)
        if mentions.covers(start) or pre_negated(low, Mention(start, end, frozenset(), "text", "")):
            continue
        heard = text[start:end]
        if item.rejection == NO_REJECTION:
            return Extraction(None, True, f"rules out the options, names {heard!r}: not an option")
        rejection = item.options[item.rejection]
        return Extraction(
            item.rejection, True, f"rules out the options, names {heard!r} -> option {rejection!r}"
        )
    return None


def _ruled_out_all(low: str, mentions: Mentions, item: Item) -> Extraction | None:
    """Every option but the rejection is negated ("neither a dog nor a cat nor …"): a rejection."""
    content = set(item.canon) - {item.rejection}
    if not content or not content <= mentions.ruled_out(low):
        return None
    reason = f"rules out all {len(content)} options"
    if item.rejection == NO_REJECTION:
        return Extraction(None, True, f"{reason}: not an option")
    return Extraction(item.rejection, True, f"{reason} -> option {item.options[item.rejection]!r}")


def _heard(text: str, low: str, mentions: Mentions, decided: Extraction, item: Item) -> Extraction:
    """A rejection with the class the reply says it hears instead recorded in its reason."""
    rejects = decided.parsed and (
        decided.choice == item.rejection != NO_REJECTION or "rejection" in decided.reason
    )
    if not rejects or "names " in decided.reason:
        return decided
    for found in heard_instead(low):
        start, end = heard_word(found)
        if not mentions.covers(start):
            return replace(decided, reason=f"{decided.reason}; names {text[start:end]!r}")
    return decided


def _by_position(
    text: str, low: str, mentions: Mentions, committed: Mentions, item: Item
) -> Extraction:
    """What the whole reply, else its last line, else its last sentence commits to."""
    line_start = text.rfind("\n") + 1
    breaks = _SENTENCE_BREAK.finditer(text, line_start)
    sentence_start = max((m.end() for m in breaks), default=line_start)
    ambiguous = None
    for lo, where in (
        (0, ""),
        (line_start, " in last line"),
        (sentence_start, " in last sentence"),
    ):
        deciding = committed.within(lo, len(text))
        decided = _verdict(deciding, item, where)
        if decided and decided.parsed:
            return _lean(text, low, deciding, decided) or decided
        ambiguous = ambiguous or decided
    if ambiguous:
        return ambiguous
    if mentions.items:
        instead = _named_instead(text, low, mentions, item) or _ruled_out_all(low, mentions, item)
        if instead:
            return instead
        names = " and ".join(_describe(i, item) for i in sorted(mentions.named_from(0)))
        return Extraction(None, False, f"only negated or hypothetical mentions of {names}")
    # No option named: a short reply names something else, which is a wrong answer.
    words = len(WORD.findall(text))
    by_head = _head_match(text, low, 0, len(text), item)
    if words <= SHORT_REPLY_WORDS:
        named = by_head or Extraction(None, True, f"names {text[:40]!r}, not an option")
        return _lean(text, low, [], named) or named
    # A longer plain sentence naming one option by its head noun: "... is clearly a guitar."
    if by_head and not _SENTENCE_BREAK.search(text.rstrip(".!? ")):
        return by_head
    return Extraction(None, False, "no-commitment: no option, letter or rejection recognised")


def _read(text: str, item: Item, structures: bool = True) -> Extraction:
    """What one normalised reply (or a piece of one) commits to, by the ordered rules."""
    if not WORD.search(text):
        return Extraction(None, False, "no words in reply")
    low = text.translate(_ASCII_LOWER)
    bare = _BARE_LETTER.fullmatch(low)
    if bare:
        letter = bare.group(1)
        if ord(letter) - ord("a") < len(item.options):
            return Extraction(item.canon[ord(letter) - ord("a")], True, f"bare letter ({letter})")
        return Extraction(None, True, f"letter ({letter}) is not an option")
    if structures:
        structured = structured_answer(text, lambda piece: _read(piece, item, False))
        if structured:
            return structured
    targets, cue_letters = _cue_targets(low, item)
    mentions = Mentions(find_mentions(text, low, item, cue_letters + ordinal_mentions(low, item)))
    committed = mentions.committed(low)
    # Order: no answer at all; a self-correction; the last explicit answer cue; a committing
    # first line; then what the whole reply, its last line or its last sentence commits to.
    decided = (
        no_answer(text, low, committed, item.rejection)
        or _by_correction(text, low, targets, committed, item)
        or _by_cue(text, low, targets, mentions, committed, item)
        or _by_lead(text, low, mentions, committed, item)
        or _by_position(text, low, mentions, committed, item)
    )
    hedge = None if decided.parsed else hedge_phrase(low)
    if hedge and decided.reason.startswith("ambiguous"):
        # "Either (b) or (d), hard to say": the reply itself says it does not commit.
        return Extraction(None, False, f"no-commitment: hedge {hedge!r}, {decided.reason}")
    return _heard(text, low, mentions, decided, item)


def _refused(text: str, decided: Extraction, item: Item) -> Extraction | None:
    """A rejection from a reply that says it could not take in the audio is a refusal."""
    if not decided.parsed or decided.choice not in (item.rejection, None):
        return None
    if decided.choice is None and "rejection" not in decided.reason:
        return None  # "names 'Trombone'": a wrong answer, not a rejection
    found = refusal_phrase(text.translate(_ASCII_LOWER))
    if found is None:
        return None
    why = "a rejection from a model that did not listen"
    return Extraction(None, False, f"refusal: {found!r} ({why})")


def extract_aqua_rules(
    reply: str, options: Sequence[str], rejection_strings: Sequence[str] = DEFAULT_REJECTIONS
) -> Extraction:
    """Read the option a free-form reply commits to, never guessing (see docs/extraction.md)."""
    if isinstance(rejection_strings, str):
        raise ValueError("rejection_strings must be a sequence of strings, not one string")
    item = compile_item(checked_options(reply, options), tuple(rejection_strings))
    reply, hit_limit = split_token_limit(reply)
    # NFKC folds full-width brackets and letters: "（Ｅ）" is "(E)".
    text = unicodedata.normalize("NFKC", reply).translate(_TRANSLATE).strip()
    if not WORD.search(text):
        if hit_limit:
            return Extraction(None, False, "truncated: hit the token limit before any text")
        return Extraction(None, False, "error: empty reply" if not text else "no words in reply")
    text, spoken = gloss(text)
    lexicon = f" [read through the {'+'.join(spoken)} lexicon]" if spoken else ""
    parts = split_reply(text, hit_limit)
    if parts.truncated:
        return Extraction(None, False, parts.truncated + lexicon)
    decided = _read(parts.final, item)
    # The thinking counts here: "<think>No audio came with the message…</think> (e)" refused.
    refused = _refused(text, decided, item)
    if refused:
        return Extraction(None, False, refused.reason + lexicon)
    if parts.where and not decided.parsed and parts.fallback:
        # An untagged reply may answer before reasoning: "(c) Cow. Reasoning: ... Therefore ..."
        whole = _read(text, item)
        decided = whole if whole.parsed else decided
    elif parts.where:
        decided = Extraction(decided.choice, decided.parsed, f"{parts.where}: {decided.reason}")
    if hit_limit and not parts.where and not decided.reason.startswith(_EXPLICIT):
        # Cut off by the token limit: leaning towards an option is not choosing it.
        why = f"hit the token limit before an answer (it read: {decided.reason})"
        return Extraction(None, False, f"truncated: {why}{lexicon}")
    return Extraction(decided.choice, decided.parsed, decided.reason + lexicon)


# The default extractor's former name, kept for old imports.
extract_mmau = extract_aqua_rules
