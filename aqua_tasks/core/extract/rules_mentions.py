"""Where a reply names an option under `aqua-rules`: letters, texts, rejections, negations."""

from __future__ import annotations

import bisect
import re
from itertools import pairwise
from typing import NamedTuple

from aqua_tasks.core.extract.languages import SENSE_CLOSE, SENSE_OPEN
from aqua_tasks.core.extract.rules_rejections import REJECTION
from aqua_tasks.core.extract.rules_words import (
    FILLERS,
    NEXT_WORD,
    NO_REJECTION,
    OTHER_SENSE,
    WORD,
    Item,
    stem_of,
)
from aqua_tasks.core.extract.verdict import fold

_WRAPPED_LETTER = re.compile(
    r"(?<!\w)[(\[{]\s*([a-z])\s*[)\]}]"  # (e) [E] {e}
    r"|(?<![\w(\[{])([a-z])\)"  # e)
    r"|\b(?:option|choice|letter)\s*[:#]?\s*\(?([a-z])(?:\)|\b(?!['-]))"  # option e
)
_UPPER_LETTER = re.compile(r"(?<![\w'.-])[A-Z](?![\w'-]|\.\w)")
# After an uppercase letter these words keep it a letter ("B is correct", not "E string").
_LETTER_VERBS = frozenset({"is", "was", "seems", "sounds", "fits", "matches", "would", "because"})
_ARTICLE_BEFORE = re.compile(r"\b(?:a|an|the) $")
# A homonym the lexicon could not pin to one sense: "⟦ラッパ=Trumpet|Horn⟧" (see languages.py).
_SENSE = re.compile(
    rf"{SENSE_OPEN}\s*([^={SENSE_OPEN}{SENSE_CLOSE}]+?)\s*=([^{SENSE_OPEN}{SENSE_CLOSE}]+){SENSE_CLOSE}"
)
_PAIR_GAP = re.compile(r"[\s:.=\-–—]*")
_CLAUSE_BREAK = re.compile(r"[.;:!?\n,]|\b(?:but|however|although|though|whereas|while)\b")
_HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|whether|suppose|supposing|imagine|were\s+it|had\s+it\s+been)\b"
)
# "A violin would sound brighter": an option followed by a modal is not what was heard.
_POST_HYPOTHETICAL = re.compile(
    r"[\s)\]\"'\-–—]*(?:(?:also|probably|usually|typically|normally|instead)\s+)?"
    r"(?:would|could|might)\b(?!\s+(?:\w+\s+)?be\s+(?:(?:the|my)\s+)?(?:answer|choice|correct|right|best))"
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|neither|nor|without|unlike|except|excluding|exclude|excludes|cannot"
    r"|eliminate|eliminates|eliminated|rul(?:e|es|ed|ing)\s+out|rather\s+than|instead\s+of"
    r"|other\s+than|different\s+from)\b|n't\b"
)
# Mentions joined only by list glue share a negation: "rather than a cough, a laugh or a sniff".
_LIST_GLUE = re.compile(r"[\s,/()\[\]]*(?:(?:and|or|nor|&)\s+)?(?:(?:a|an|the)\s+)?")
_NOT_NEGATION = re.compile(r"\b(?:no\s+doubt|not\s+only|not\s+just)\b")
_POST_NEGATION = re.compile(
    r"[\s)\]\"'\-–—:]*(?:(?:is|are|was|were|would|does|do|did|can|could|should|seems?|sounds?)\s+)?"
    r"(?:(?:be|definitely|clearly|also|all)\s+)?(?:not|never|cannot|\w+n't|wrong|incorrect|unlikely"
    r"|ruled\s+out|excluded|eliminated|different|less\s+likely)\b"
)


class Mention(NamedTuple):
    """A place where the reply names one option (or, a letter on another's text, two)."""

    start: int
    end: int
    idxs: frozenset[int]  # more than one: a letter labelling another option's text
    kind: str  # "letter" | "text" | "rejection" | "pair" (a letter with its text) | "sense"
    label: str
    verb: bool = False  # an "-ing" form of a noun option: "crowing" names Crow only weakly


def letter_mention(m: re.Match[str], letter: str, item: Item) -> Mention | None:
    """The mention of option `letter` that `m` matched, or None if the item has no such option."""
    i = ord(letter.lower()) - ord("a")
    if i >= len(item.options):
        return None
    label = f"letter ({letter.lower()})"
    if item.canon[i] != i:
        label += f", same text as ({chr(ord('a') + item.canon[i])})"
    return Mention(m.start(), m.end(), frozenset({item.canon[i]}), "letter", label)


def _match_rest(text: str, pos: int, stems: tuple[str, ...]) -> int | None:
    """End of the words matching `stems` from `pos`, skipping up to two fillers before each."""
    for stem in stems:
        for _ in range(3):  # "clearing his throat", "clearing of the throat"
            word = WORD.search(text, pos)
            if word is None:
                return None
            pos, found = word.end(), stem_of(word.group())
            if found == stem:
                break
            if found not in FILLERS:
                return None
        else:
            return None
    return pos


def _sense_mentions(text: str, item: Item) -> list[Mention]:
    """Homonyms naming an option in one sense: every sense counts, and senses off the list too."""
    listed = {fold(o): item.canon[i] for i, o in enumerate(item.options)}
    found = []
    for m in _SENSE.finditer(text):
        senses = m.group(2).split("|")
        named = {listed[fold(s)] for s in senses if fold(s) in listed}
        if not named:
            continue  # no sense is an option: it names something else, like any other word
        others = [s for s in senses if fold(s) not in listed]
        label = f"localised word {m.group(1).strip()!r} means {' or '.join(senses)}"
        if others:
            options = " and ".join(repr(item.options[i]) for i in sorted(named))
            label += f"; only {options} {'is an option' if len(named) == 1 else 'are options'}"
            named.add(OTHER_SENSE)  # so the mention never decides for the one option listed
        found.append(Mention(m.start(), m.end(), frozenset(named), "sense", label))
    return found


def find_mentions(text: str, low: str, item: Item, extra: list[Mention | None]) -> list[Mention]:
    """Every letter, option text and rejection phrase, longest first, letters paired."""
    found = list(extra)
    if SENSE_OPEN in text:
        found += _sense_mentions(text, item)
    for m in _WRAPPED_LETTER.finditer(low):
        found.append(letter_mention(m, next(filter(None, m.groups())), item))
    for m in _UPPER_LETTER.finditer(text):
        nxt = NEXT_WORD.match(text, m.end())
        word = nxt.group(1) if nxt else ""
        # "A dog", "I think", "E string" are words, not option letters.
        if not word or word in _LETTER_VERBS or (m.group() not in "AI" and not word.islower()):
            found.append(letter_mention(m, m.group(), item))
    for c in item.starts.finditer(low):
        word = WORD.match(text, c.start())
        for idx, key in item.keys.get(stem_of(word.group()), ()) if word else ():
            end = _match_rest(text, word.end(), key[1:])
            if end is not None:
                article = _ARTICLE_BEFORE.search(low, max(0, word.start() - 4), word.start())
                begin = article.start() if article else word.start()
                label = f"option text {item.options[idx]!r}"
                verb = len(key) == 1 and word.group().lower().endswith("ing")
                verb = verb and not item.options[idx].lower().endswith("ing")
                found.append(Mention(begin, end, frozenset({idx}), "text", label, verb))
    for m in REJECTION.finditer(low):
        label = f"rejection phrase {m.group()!r}"
        if item.rejection != NO_REJECTION:
            label += f" -> option {item.options[item.rejection]!r}"
        found.append(Mention(m.start(), m.end(), frozenset({item.rejection}), "rejection", label))
    # Longest match wins: "Acoustic Guitar" over "Guitar", "Horse-drawn cart" over "Horse".
    kept: list[Mention] = []
    reach = -1
    for m in sorted(filter(None, found), key=lambda m: (m.start, -m.end)):
        if m.end > reach:
            kept.append(m)
            reach = m.end
    return _pair_letters(kept, low)


def _drop_verb_collisions(ms: list[Mention], masked: str) -> list[Mention]:
    """Drop "crowing" (Crow) right after another option it describes ("the rooster is crowing")."""
    kept: list[Mention] = []
    for m in ms:
        prev = kept[-1] if kept else None
        if m.verb and prev is not None and prev.kind in ("text", "pair") and prev.idxs != m.idxs:
            gap = masked[prev.end : m.start]
            if not _CLAUSE_BREAK.search(gap) and len(gap.split()) <= 3:
                continue
        kept.append(m)
    return kept


def _pair_letters(ms: list[Mention], low: str) -> list[Mention]:
    """Merge "(a) Dog" / "Dog (a)" into one mention; a disagreeing pair keeps both options."""

    def pairs(a: Mention, b: Mention | None) -> bool:
        if b is None or (a.kind == "letter") == (b.kind == "letter"):
            return False
        return _PAIR_GAP.fullmatch(low, a.end, b.start) is not None

    out: list[Mention] = []
    i = 0
    while i < len(ms):
        m, nxt, after = [*ms[i : i + 3], None, None][:3]
        # A letter pairs forward with its own text; in "Dog (b) Cat" the (b) belongs to Cat.
        if pairs(m, nxt) and (m.kind == "letter" or not pairs(nxt, after)):
            letter, named = (m, nxt) if m.kind == "letter" else (nxt, m)
            label, idxs = letter.label, letter.idxs | named.idxs
            if named.kind == "sense" and letter.idxs <= named.idxs:
                # "(c) ラッパ": the letter says which sense is meant.
                label, idxs = f"{letter.label} ({named.label})", letter.idxs
            elif letter.idxs != named.idxs:
                label = f"{letter.label} labels {named.label}"
            out.append(Mention(m.start, nxt.end, idxs, "pair", label))
            i += 2
        else:
            out.append(m)
            i += 1
    return out


def pre_negated(masked: str, m: Mention, hypothetical: bool = True) -> bool:
    """Negated before it, within six words of its clause ("not a dog", "rules out the (c)").

    `hypothetical`: whether "if", "whether", … count as negating it (they do for commitment).
    """
    before = masked[max(0, m.start - 80) : m.start]
    clause = before[max((b.end() for b in _CLAUSE_BREAK.finditer(before)), default=0) :]
    words = [w for w in clause.split() if WORD.search(w)]
    if _HYPOTHETICAL.search(clause):
        return hypothetical
    return bool(_NEGATION.search(_NOT_NEGATION.sub(" ", " ".join(words[-6:]))))


def post_negated(masked: str, m: Mention, hypothetical: bool = True) -> bool:
    """Negated or hypothetical straight after it ("(b) is wrong", "a violin would sound")."""
    if _POST_NEGATION.match(masked, m.end):
        return True
    return hypothetical and bool(_POST_HYPOTHETICAL.match(masked, m.end))


def _committed_flags(masked: str, ms: list[Mention], hypothetical: bool = True) -> list[bool]:
    """Which mentions commit; a negation spreads along a list of options joined by glue."""
    pre = [pre_negated(masked, m, hypothetical) for m in ms]
    post = [post_negated(masked, m, hypothetical) for m in ms]
    glued = [_LIST_GLUE.fullmatch(masked, a.end, b.start) is not None for a, b in pairwise(ms)]
    for k, joined in enumerate(glued):  # "not a cough, a sniff or a laugh"
        pre[k + 1] = pre[k + 1] or (joined and pre[k])
    for k in reversed(range(len(glued))):  # "sniffing and throat clearing sound different"
        post[k] = post[k] or (glued[k] and post[k + 1])
    return [not (a or b) for a, b in zip(pre, post, strict=True)]


class Mentions:
    """Mentions sorted by position, searchable in log time so long replies stay linear."""

    def __init__(self, mentions: list[Mention]) -> None:
        self.items = mentions
        self.starts = [m.start for m in mentions]
        self.suffix: list[set[int]] = [set()]  # options named from each mention on
        for m in reversed(mentions):
            self.suffix.append(self.suffix[-1] | m.idxs)
        self.suffix.reverse()

    def within(self, lo: int, hi: int) -> list[Mention]:
        return self.items[bisect.bisect_left(self.starts, lo) : bisect.bisect_left(self.starts, hi)]

    def named_from(self, pos: int) -> set[int]:
        return self.suffix[bisect.bisect_left(self.starts, pos)]

    def covers(self, pos: int) -> bool:
        k = bisect.bisect_right(self.starts, pos) - 1
        return k >= 0 and self.items[k].end > pos

    def committed(self, low: str) -> Mentions:
        """The mentions that are neither negated nor hypothetical."""
        masked_low = self._masked(low)
        flags = _committed_flags(masked_low, self.items)
        kept = [m for m, ok in zip(self.items, flags, strict=True) if ok]
        return Mentions(_drop_verb_collisions(kept, masked_low))

    def ruled_out(self, low: str) -> set[int]:
        """The options some mention negates outright: "not a dog", not "if it were a dog"."""
        flags = _committed_flags(self._masked(low), self.items, hypothetical=False)
        letters = ("text", "letter", "pair")
        return {i for m, ok in zip(self.items, flags, strict=True) if not ok and m.kind in letters
                for i in m.idxs}  # fmt: skip

    def _masked(self, low: str) -> str:
        masked = list(low)
        for m in self.items:  # an option's own words never negate what follows ("Cannot be")
            masked[m.start : m.end] = "x" * (m.end - m.start)
        return "".join(masked)
