"""Answer extraction for AQUA-Bench replies: our rules, the authors' rule and MMAU's string match.

Every extractor is a pure function from (reply, options) to an :class:`Extraction`. See
docs/extraction.md for the ordered rules of `aqua-rules` and where the extractors disagree.
"""

from __future__ import annotations

import bisect
import re
import string
import unicodedata
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import NamedTuple

from aqua_tasks.core.generation_failure import failure_message

DEFAULT_EXTRACTOR = "aqua-rules"
# Old names still accepted: runs recorded under them are re-scored by what they now name.
EXTRACTOR_ALIASES: dict[str, str] = {"mmau": "aqua-rules"}
# Every accepted name, canonical names first (argparse choices, metadata validation).
EXTRACTOR_NAMES: tuple[str, ...] = ("aqua-rules", "mmau-string-match", "official", "mmau")
_CURRENT_VERSIONS = {"aqua-rules": "2.0", "official": "1.0", "mmau-string-match": "1.0"}
# Keyed by every accepted name, so a manifest can look up whichever name it was given.
EXTRACTOR_VERSIONS: dict[str, str] = _CURRENT_VERSIONS | {
    alias: _CURRENT_VERSIONS[target] for alias, target in EXTRACTOR_ALIASES.items()
}
DEFAULT_REJECTIONS: tuple[str, ...] = ("None of the above", "Unanswerable")

# A reply this short that names no option is read as naming something else ("Trombone").
SHORT_REPLY_WORDS = 6
NO_REJECTION = -1  # pseudo option index: a rejection on an item without a rejection option


@dataclass(frozen=True)
class Extraction:
    """The option a reply chose, whether it committed to an answer at all, and why."""

    choice: int | None
    parsed: bool
    reason: str

    @property
    def letter(self) -> str | None:
        """The chosen option's letter ("A", "B", ...), or None when no option was chosen."""
        return None if self.choice is None else chr(ord("A") + self.choice)


# ---- words -----------------------------------------------------------------------------

# Markdown emphasis is dropped, not spaced, so "**(E)**" becomes "(E)".
_TRANSLATE = str.maketrans("‘’“”_", "''\"\" ", "*`#~")
# Patterns run on an ASCII-lowered copy: same length, so positions agree with the original,
# and far faster than case-insensitive matching.
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_FILLERS = frozenset({"a", "an", "the", "of", "his", "her", "their", "its", "my", "your"})
# Benchmark class names whose everyday form is not an inflection of the option text.
_ALIASES: dict[str, tuple[str, ...]] = {
    "laughter": ("laugh",),
    "throat clearings": ("clear throat",),
    "drum set": ("drum kit", "drums"),
}


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """Crude stem so that 'coughs'/'cough', 'sneeze'/'Sneezes'/'sneezing' compare equal."""
    # Accents fold ("Café" names "Cafe"): combining marks are dropped after decomposition.
    w = unicodedata.normalize("NFKD", word.casefold().replace("'", ""))
    w = "".join(c for c in w if not unicodedata.combining(c))
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            return w[:-1] if w[-1] == w[-2] and w[-1] not in "lsz" else w  # "spotted"
    if w.endswith("es") and (w[-3:-2] in ("s", "x", "z") or w[-4:-2] in ("ch", "sh")):
        w = w[:-2]
    elif w.endswith("s") and len(w) > 3 and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    return w[:-1] if w.endswith("e") and len(w) > 3 else w


def _key(phrase: str) -> tuple[str, ...]:
    stems = tuple(_stem(w) for w in _WORD.findall(phrase))
    return tuple(s for s in stems if s not in _FILLERS) or stems


class _Item(NamedTuple):
    options: tuple[str, ...]
    canon: tuple[int, ...]  # first index with the same text: duplicates resolve to it
    keys: dict[str, list[tuple[int, tuple[str, ...]]]]  # first stem -> (index, all stems)
    heads: dict[str, int]  # last stem unique to one multi-word option ("guitar")
    rejection: int  # index of the rejection option, or NO_REJECTION
    starts: re.Pattern[str]  # where a word could start an option: most words are never stemmed


@lru_cache(maxsize=4096)  # the same option lists recur thousands of times
def _compile_item(options: tuple[str, ...], rejections: tuple[str, ...]) -> _Item:
    folded = [" ".join(o.casefold().split()) for o in options]
    canon = tuple(folded.index(f) for f in folded)
    keys: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    head_owners: dict[str, set[int]] = {}
    own = {_key(text) for text in options}
    for i, text in enumerate(options):
        phrases = [_key(text), *map(_key, _ALIASES.get(folded[i], ()))]
        # "Having long hair" is also named by "long hair", unless another option is exactly that.
        if len(phrases[0]) > 1 and _WORD.findall(text)[0].lower().endswith("ing"):
            phrases += [phrases[0][1:]] if phrases[0][1:] not in own else []
        for stems in filter(None, phrases):
            keys.setdefault(stems[0], []).append((canon[i], stems))
            head_owners.setdefault(stems[-1], set()).add(canon[i] if len(stems) > 1 else -2)
    heads = {h: next(iter(o)) for h, o in head_owners.items() if len(o) == 1 and -2 not in o}
    wanted = {" ".join(r.casefold().split()) for r in rejections}
    rejection = next((canon[i] for i, f in enumerate(folded) if f in wanted), NO_REJECTION)
    # A word starts with the first two letters of its stem ("puppies" -> "puppy" too); words
    # starting with a non-ASCII letter ("École") or an elision ("O'Hare") always qualify.
    prefixes = sorted({re.escape(stem[:2]) for stem in keys}, key=len, reverse=True)
    alternatives = "|".join([*prefixes, r"[^\x00-\x7f]", r"\w'"])
    starts = re.compile(rf"(?<![\w'])(?:{alternatives})")
    return _Item(options, canon, keys, heads, rejection, starts)


# ---- patterns --------------------------------------------------------------------------

_WRAPPED_LETTER = re.compile(
    r"(?<!\w)[(\[{]\s*([a-z])\s*[)\]}]"  # (e) [E] {e}
    r"|(?<![\w(\[{])([a-z])\)"  # e)
    r"|\b(?:option|choice|letter)\s*[:#]?\s*\(?([a-z])(?:\)|\b(?!['-]))"  # option e
)
_UPPER_LETTER = re.compile(r"(?<![\w'.-])[A-Z](?![\w'-]|\.\w)")
_NEXT_WORD = re.compile(r"\s+([A-Za-z]+)")
# After an uppercase letter these words keep it a letter ("B is correct", not "E string").
_LETTER_VERBS = frozenset({"is", "was", "seems", "sounds", "fits", "matches", "would", "because"})
_ARTICLE_BEFORE = re.compile(r"\b(?:a|an|the) $")
_REJECTION = re.compile(
    r"\bnone\b(?:\s+of\s+(?:the|these|those|them)\b(?:\s+(?:above|options?|choices?|answers?))?)?"
    r"|\bno\s+(?:correct|valid|right|suitable|matching|applicable)\s+(?:answer|option|choice)s?\b"
    r"|\ball\s+(?:of\s+)?(?:the\s+)?(?:answers|options|choices)\s+(?:are|is)\s+(?:incorrect|wrong)\b"
    r"|\b(?:answers|options|choices)\s+are\s+all\s+(?:incorrect|wrong)\b"
    r"|\b(?:cannot|can't|can\s+not|could\s+not|couldn't|unable\s+to|impossible\s+to"
    r"|not\s+possible\s+to|no\s+way\s+to|not\s+able\s+to)\s+(?:be\s+)?"
    r"(?:determined?|tell|told|say|said|know|known|identif(?:y|ied)|infer(?:red)?"
    r"|answer(?:ed)?|judged?|decided?|discern(?:ed)?)\b"
    r"|\b(?:insufficient|not\s+enough|lacks?|lacking|missing|no)\s+(?:\w+\s+)?"
    r"(?:information|info|details?|evidence|context|cues?|clues?)\b"
    r"|\b(?:does\s+not|doesn't|do\s+not|don't)\s+(?:provide|give|contain|convey|include|offer"
    r"|reveal)\s+(?:enough\s+|sufficient\s+|any\s+)?(?:information|info|details?|evidence)\b"
    r"|\bunanswerable\b|\bnot\s+answerable\b"
    r"|\bnot\s+(?:listed|among\s+the\s+(?:options|choices)|in\s+the\s+(?:options|choices|list))\b"
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
# Three kinds of no answer: the endpoint failed, the model declined, or it said nothing.
_ERROR = re.compile(
    r"^\W*(?:error|exception|traceback|fatal|failed|failure)\b|\brate[\s-]?limit(?:ed)?\b"
    r"|\btoo\s+many\s+requests\b|\binternal\s+server\s+error\b|\bservice\s+unavailable\b"
    r"|\bbad\s+gateway\b|\bgateway\s+time-?out\b|\bquota\s+exceeded\b|\bout\s+of\s+memory\b"
    r"|\b(?:request|connection)\s+(?:failed|timed\s+out|refused|reset|error)\b"
    r"|\bstatus\s+code\s+[45]\d\d\b|\bmaximum\s+context\s+length\b"
    r"|\b(?:could\s+not|couldn't|failed\s+to)\s+(?:be\s+)?(?:process|load|decod|read|fetch)\w*"
)
_AUDIO_VERB = r"(?:hear|listen\s+to|process|play|access|open|analy[sz]e|perceive|interpret|review)"
_REFUSAL = re.compile(
    r"\b(?:can't|cannot|can\s+not|unable\s+to|not\s+able\s+to"
    r"|(?:don't|do\s+not)\s+have\s+(?:the\s+)?(?:ability|capability|capacity|access)\s+to)\s+"
    rf"(?:(?:directly|actually|currently)\s+)?{_AUDIO_VERB}(?:\s+(?:or|and)\s+{_AUDIO_VERB})?"
    r"\s+(?:(?:the|this|that|your|any|an|a|provided|attached|uploaded|given)\s+){0,2}"
    r"(?:audio|sound\s+files?|recordings?|clips?|attachments?|media|files?)\b"
    r"|\bno\s+audio\s+(?:file\s+)?(?:was|is|has\s+been|were)\s+(?:provided|attached|included"
    r"|given|shared|uploaded)\b|\b(?:can't|cannot)\s+(?:help|assist)\s+with\b"
)
_NO_COMMITMENT = re.compile(
    r"\b(?:(?:do\s+not|don't|dont)\s+know|not\s+sure|unsure|no\s+(?:idea|clue)|idk|dunno"
    r"|(?:can't|cannot)\s+decide|hard\s+to\s+say)\b"
)
_CHATTER_VOCABULARY = (
    "lol lmao rofl haha hahaha hehe hmm hmmm hm um umm uh uhh ok okay k sure thanks thank you "
    "hi hello hey huh what wow cool nice oops meh oh ah yo bye test testing"
)
_CHATTER = frozenset(_CHATTER_VOCABULARY.split())


# ---- mentions: places where the reply names an option ----------------------------------


class _Mention(NamedTuple):
    start: int
    end: int
    idxs: frozenset[int]  # more than one: a letter labelling another option's text
    kind: str  # "letter" | "text" | "rejection" | "pair" (a letter with its text)
    label: str
    verb: bool = False  # an "-ing" form of a noun option: "crowing" names Crow only weakly


def _letter_mention(m: re.Match[str], letter: str, item: _Item) -> _Mention | None:
    i = ord(letter.lower()) - ord("a")
    if i >= len(item.options):
        return None
    label = f"letter ({letter.lower()})"
    if item.canon[i] != i:
        label += f", same text as ({chr(ord('a') + item.canon[i])})"
    return _Mention(m.start(), m.end(), frozenset({item.canon[i]}), "letter", label)


def _match_rest(text: str, pos: int, stems: tuple[str, ...]) -> int | None:
    """End of the words matching `stems` from `pos`, skipping up to two fillers before each."""
    for stem in stems:
        for _ in range(3):  # "clearing his throat", "clearing of the throat"
            word = _WORD.search(text, pos)
            if word is None:
                return None
            pos, found = word.end(), _stem(word.group())
            if found == stem:
                break
            if found not in _FILLERS:
                return None
        else:
            return None
    return pos


def _mentions(text: str, low: str, item: _Item, extra: list[_Mention | None]) -> list[_Mention]:
    """Every letter, option text and rejection phrase, longest first, letters paired."""
    found = list(extra)
    for m in _WRAPPED_LETTER.finditer(low):
        found.append(_letter_mention(m, next(filter(None, m.groups())), item))
    for m in _UPPER_LETTER.finditer(text):
        nxt = _NEXT_WORD.match(text, m.end())
        word = nxt.group(1) if nxt else ""
        # "A dog", "I think", "E string" are words, not option letters.
        if not word or word in _LETTER_VERBS or (m.group() not in "AI" and not word.islower()):
            found.append(_letter_mention(m, m.group(), item))
    for c in item.starts.finditer(low):
        word = _WORD.match(text, c.start())
        for idx, key in item.keys.get(_stem(word.group()), ()) if word else ():
            end = _match_rest(text, word.end(), key[1:])
            if end is not None:
                article = _ARTICLE_BEFORE.search(low, max(0, word.start() - 4), word.start())
                begin = article.start() if article else word.start()
                label = f"option text {item.options[idx]!r}"
                verb = len(key) == 1 and word.group().lower().endswith("ing")
                verb = verb and not item.options[idx].lower().endswith("ing")
                found.append(_Mention(begin, end, frozenset({idx}), "text", label, verb))
    for m in _REJECTION.finditer(low):
        label = f"rejection phrase {m.group()!r}"
        if item.rejection != NO_REJECTION:
            label += f" -> option {item.options[item.rejection]!r}"
        found.append(_Mention(m.start(), m.end(), frozenset({item.rejection}), "rejection", label))
    # Longest match wins: "Acoustic Guitar" over "Guitar", "Horse-drawn cart" over "Horse".
    kept: list[_Mention] = []
    reach = -1
    for m in sorted(filter(None, found), key=lambda m: (m.start, -m.end)):
        if m.end > reach:
            kept.append(m)
            reach = m.end
    return _pair_letters(kept, low)


def _drop_verb_collisions(ms: list[_Mention], masked: str) -> list[_Mention]:
    """Drop "crowing" (Crow) right after another option it describes ("the rooster is crowing")."""
    kept: list[_Mention] = []
    for m in ms:
        prev = kept[-1] if kept else None
        if m.verb and prev is not None and prev.kind in ("text", "pair") and prev.idxs != m.idxs:
            gap = masked[prev.end : m.start]
            if not _CLAUSE_BREAK.search(gap) and len(gap.split()) <= 3:
                continue
        kept.append(m)
    return kept


def _pair_letters(ms: list[_Mention], low: str) -> list[_Mention]:
    """Merge "(a) Dog" / "Dog (a)" into one mention; a disagreeing pair keeps both options."""

    def pairs(a: _Mention, b: _Mention | None) -> bool:
        if b is None or (a.kind == "letter") == (b.kind == "letter"):
            return False
        return _PAIR_GAP.fullmatch(low, a.end, b.start) is not None

    out: list[_Mention] = []
    i = 0
    while i < len(ms):
        m, nxt, after = [*ms[i : i + 3], None, None][:3]
        # A letter pairs forward with its own text; in "Dog (b) Cat" the (b) belongs to Cat.
        if pairs(m, nxt) and (m.kind == "letter" or not pairs(nxt, after)):
            letter, named = (m, nxt) if m.kind == "letter" else (nxt, m)
            label = letter.label
            if letter.idxs != named.idxs:
                label = f"{letter.label} labels {named.label}"
            out.append(_Mention(m.start, nxt.end, letter.idxs | named.idxs, "pair", label))
            i += 2
        else:
            out.append(m)
            i += 1
    return out


def _pre_negated(masked: str, m: _Mention) -> bool:
    """Negated before it, within six words of its clause ("not a dog", "rules out the (c)")."""
    before = masked[max(0, m.start - 80) : m.start]
    clause = before[max((b.end() for b in _CLAUSE_BREAK.finditer(before)), default=0) :]
    words = [w for w in clause.split() if _WORD.search(w)]
    if _HYPOTHETICAL.search(clause):
        return True
    return bool(_NEGATION.search(_NOT_NEGATION.sub(" ", " ".join(words[-6:]))))


def _post_negated(masked: str, m: _Mention) -> bool:
    """Negated or hypothetical straight after it ("(b) is wrong", "a violin would sound")."""
    return bool(_POST_NEGATION.match(masked, m.end) or _POST_HYPOTHETICAL.match(masked, m.end))


def _committed_flags(masked: str, ms: list[_Mention]) -> list[bool]:
    """Which mentions commit; a negation spreads along a list of options joined by glue."""
    pre = [_pre_negated(masked, m) for m in ms]
    post = [_post_negated(masked, m) for m in ms]
    glued = [_LIST_GLUE.fullmatch(masked, a.end, b.start) is not None for a, b in pairwise(ms)]
    for k, joined in enumerate(glued):  # "not a cough, a sniff or a laugh"
        pre[k + 1] = pre[k + 1] or (joined and pre[k])
    for k in reversed(range(len(glued))):  # "sniffing and throat clearing sound different"
        post[k] = post[k] or (glued[k] and post[k + 1])
    return [not (a or b) for a, b in zip(pre, post, strict=True)]


class _Mentions:
    """Mentions sorted by position, searchable in log time so long replies stay linear."""

    def __init__(self, mentions: list[_Mention]) -> None:
        self.items = mentions
        self.starts = [m.start for m in mentions]
        self.suffix: list[set[int]] = [set()]  # options named from each mention on
        for m in reversed(mentions):
            self.suffix.append(self.suffix[-1] | m.idxs)
        self.suffix.reverse()

    def within(self, lo: int, hi: int) -> list[_Mention]:
        return self.items[bisect.bisect_left(self.starts, lo) : bisect.bisect_left(self.starts, hi)]

    def named_from(self, pos: int) -> set[int]:
        return self.suffix[bisect.bisect_left(self.starts, pos)]

    def covers(self, pos: int) -> bool:
        k = bisect.bisect_right(self.starts, pos) - 1
        return k >= 0 and self.items[k].end > pos

    def committed(self, low: str) -> _Mentions:
        """The mentions that are neither negated nor hypothetical."""
        masked = list(low)
        for m in self.items:  # an option's own words never negate what follows ("Cannot be")
            masked[m.start : m.end] = "x" * (m.end - m.start)
        masked_low = "".join(masked)
        flags = _committed_flags(masked_low, self.items)
        kept = [m for m, ok in zip(self.items, flags, strict=True) if ok]
        return _Mentions(_drop_verb_collisions(kept, masked_low))


# ---- decisions -------------------------------------------------------------------------


class _Target(NamedTuple):
    cue: str
    strong: bool  # "answer is", "I choose" (strong) vs "so", "probably" (weak)
    cue_start: int
    start: int
    end: int


def _cue_targets(low: str, item: _Item) -> tuple[list[_Target], list[_Mention | None]]:
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
        if lm and not (lm.group() in "ai" and _NEXT_WORD.match(low, lm.end())):
            letters.append(_letter_mention(lm, lm.group(1), item))
    return targets, letters


def _describe(idx: int, item: _Item) -> str:
    return (
        "a rejection" if idx == NO_REJECTION else f"({chr(ord('a') + idx)}) {item.options[idx]!r}"
    )


def _verdict(ms: list[_Mention], item: _Item, where: str) -> Extraction | None:
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


def _head_match(text: str, low: str, lo: int, hi: int, item: _Item) -> Extraction | None:
    """The one multi-word option whose last word the span names, not negated ("a guitar")."""
    hits = set()
    for w in _WORD.finditer(text, lo, hi):
        idx = item.heads.get(_stem(w.group()))
        if idx is not None:
            m = _Mention(w.start(), w.end(), frozenset({idx}), "text", "")
            if not (_pre_negated(low, m) or _post_negated(low, m)):
                hits.add(idx)
    if len(hits) != 1:
        return None
    (idx,) = hits
    return Extraction(idx, True, f"head word of option {item.options[idx]!r}")


def _by_cue(
    text: str,
    low: str,
    targets: list[_Target],
    mentions: _Mentions,
    committed: _Mentions,
    item: _Item,
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
        if strong and not _WORD.search(text, end) and not mentions.within(start, end):
            # The reply ends on "Final answer: Trombone": a committed non-option.
            by_head = _head_match(text, low, start, end, item)
            if by_head or 1 <= len(_WORD.findall(span)) <= 5:
                return by_head or Extraction(
                    None, True, f"answer {span.strip()!r} is not an option"
                )
    return None


def _by_correction(
    text: str, low: str, targets: list[_Target], committed: _Mentions, item: _Item
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
    text: str, low: str, mentions: _Mentions, committed: _Mentions, item: _Item
) -> Extraction | None:
    """A first line that is just an answer ("(b) Sneeze", "It's a cow.") commits to it."""
    start = _LEAD_MARKER.match(text).end()
    stop = _LEAD_END.search(text, start + 1)
    end = stop.start() if stop else len(text)
    # A reply that is only its first line is read by position, as any other.
    if (
        not _WORD.search(text, end)
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
        rest += _WORD.findall(low, pos, m.start)
        pos = max(pos, m.end)
    rest += _WORD.findall(low, pos, end)
    if len(rest) > _LEAD_MAX_WORDS or not _LEAD_WORDS.issuperset(rest):
        return None
    return decided


def _no_answer(text: str, low: str, committed: _Mentions) -> Extraction | None:
    """An error, a capability refusal or a reply without commitment: nothing to score."""
    if not any(m.kind != "rejection" for m in committed.items):
        # A refusal's "so I cannot tell" is about the model, not an answerability judgement.
        for kind, pattern in (("error", _ERROR), ("refusal", _REFUSAL)):
            found = pattern.search(low)
            if found:
                return Extraction(None, False, f"{kind}: {' '.join(found.group().split())!r}")
    if committed.items:
        return None
    found = _NO_COMMITMENT.search(low)
    if found:
        return Extraction(None, False, f"no-commitment: {' '.join(found.group().split())!r}")
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) <= SHORT_REPLY_WORDS and _CHATTER.issuperset(words):
        return Extraction(None, False, f"no-commitment: chatter {text[:40]!r}")
    return None


def _by_position(
    text: str, low: str, mentions: _Mentions, committed: _Mentions, item: _Item
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
        decided = _verdict(committed.within(lo, len(text)), item, where)
        if decided and decided.parsed:
            return decided
        ambiguous = ambiguous or decided
    if ambiguous:
        return ambiguous
    if mentions.items:
        names = " and ".join(_describe(i, item) for i in sorted(mentions.named_from(0)))
        return Extraction(None, False, f"only negated or hypothetical mentions of {names}")
    # No option named: a short reply names something else, which is a wrong answer.
    words = len(_WORD.findall(text))
    by_head = _head_match(text, low, 0, len(text), item)
    if words <= SHORT_REPLY_WORDS:
        return by_head or Extraction(None, True, f"names {text[:40]!r}, not an option")
    # A longer plain sentence naming one option by its head noun: "... is clearly a guitar."
    if by_head and not _SENTENCE_BREAK.search(text.rstrip(".!? ")):
        return by_head
    return Extraction(None, False, "no-commitment: no option, letter or rejection recognised")


# ---- public API ------------------------------------------------------------------------


def _checked(reply: str, options: Sequence[str]) -> tuple[str, ...]:
    if not isinstance(reply, str):
        raise TypeError(f"reply must be a str, got {type(reply).__name__}")
    if isinstance(options, str) or not all(isinstance(o, str) for o in options):
        raise ValueError("options must be a sequence of option strings")
    if not 1 <= len(options) <= 26:
        raise ValueError(f"options must hold 1 to 26 strings, got {len(options)}")
    return tuple(options)


def extract_aqua_rules(
    reply: str, options: Sequence[str], rejection_strings: Sequence[str] = DEFAULT_REJECTIONS
) -> Extraction:
    """Read the option a free-form reply commits to, never guessing (see docs/extraction.md)."""
    if isinstance(rejection_strings, str):
        raise ValueError("rejection_strings must be a sequence of strings, not one string")
    item = _compile_item(_checked(reply, options), tuple(rejection_strings))
    # NFKC folds full-width brackets and letters: "（Ｅ）" is "(E)".
    text = unicodedata.normalize("NFKC", reply).translate(_TRANSLATE).strip()
    if not _WORD.search(text):
        return Extraction(None, False, "error: empty reply" if not text else "no words in reply")
    low = text.translate(_ASCII_LOWER)
    bare = _BARE_LETTER.fullmatch(low)
    if bare:
        letter = bare.group(1)
        if ord(letter) - ord("a") < len(item.options):
            return Extraction(item.canon[ord(letter) - ord("a")], True, f"bare letter ({letter})")
        return Extraction(None, True, f"letter ({letter}) is not an option")
    targets, cue_letters = _cue_targets(low, item)
    mentions = _Mentions(_mentions(text, low, item, cue_letters))
    committed = mentions.committed(low)
    # Order: no answer at all; a self-correction; the last explicit answer cue; a committing
    # first line; then what the whole reply, its last line or its last sentence commits to.
    return (
        _no_answer(text, low, committed)
        or _by_correction(text, low, targets, committed, item)
        or _by_cue(text, low, targets, mentions, committed, item)
        or _by_lead(text, low, mentions, committed, item)
        or _by_position(text, low, mentions, committed, item)
    )


# The default extractor's former name, kept for old imports.
extract_mmau = extract_aqua_rules


@lru_cache(maxsize=26)
def _official_pattern(last: str) -> re.Pattern[str]:
    return re.compile(rf"\(?([a-{last}])\)?\b")


def extract_official(reply: str, options: Sequence[str], answer: str | None = None) -> Extraction:
    """The AQUA authors' rule: first letter a..X anywhere, else first option text contained."""
    opts = _checked(reply, options)
    # The authors derive the gold letter from `answer`; it never influences the choice.
    if answer is not None and answer not in opts:
        raise ValueError(f"answer {answer!r} is not one of the options {list(opts)}")
    r = reply.strip().lower()
    m = _official_pattern(chr(ord("a") + len(opts) - 1)).search(r)
    if m:
        word = r[r.rfind(" ", 0, m.start()) + 1 : m.end()]  # shows "the" when "e" matched
        return Extraction(ord(m.group(1)) - ord("a"), True, f"first letter match in {word!r}")
    for i, option in enumerate(opts):
        if option.strip().lower() in r:
            return Extraction(i, True, f"option text {option!r} in reply")
    return Extraction(None, False, "error: empty reply" if not r else "no letter or option text")


_MMAU_TOKEN = re.compile(r"\b\w+\b")


def _mmau_tokens(text: str) -> frozenset[str]:
    return frozenset(_MMAU_TOKEN.findall(text.lower()))


@lru_cache(maxsize=4096)  # the same option lists recur thousands of times
def _choice_tokens(choices: tuple[str, ...]) -> tuple[frozenset[str], ...]:
    return tuple(map(_mmau_tokens, choices))


def _holds(
    predicted: frozenset[str], gold: frozenset[str], choices: Sequence[frozenset[str]]
) -> bool:
    others = set().union(*(c - gold for c in choices))
    return bool(predicted) and gold <= predicted and predicted.isdisjoint(others)


def string_match(prediction: str, gold: str, choices: Sequence[str]) -> bool:
    """MMAU's published `string_match`: all gold tokens present, none belonging only to others."""
    return _holds(_mmau_tokens(prediction), _mmau_tokens(gold), _choice_tokens(tuple(choices)))


def extract_string_match(reply: str, options: Sequence[str]) -> Extraction:
    """The single option for which MMAU's `string_match` holds; none or several: unparsed."""
    opts = _checked(reply, options)
    predicted, tokens = _mmau_tokens(reply), _choice_tokens(opts)
    canon = _compile_item(opts, ()).canon
    # Repeated option strings (a defect of the released data) are one option, as gold is.
    passing = sorted({canon[i] for i, t in enumerate(tokens) if _holds(predicted, t, tokens)})
    if len(passing) == 1:
        return Extraction(passing[0], True, f"string_match holds for {opts[passing[0]]!r}")
    if not passing:
        if not reply.strip():
            return Extraction(None, False, "error: empty reply")
        return Extraction(None, False, "no-commitment: string_match holds for no option")
    names = " and ".join(f"({chr(ord('a') + i)}) {opts[i]!r}" for i in passing)
    return Extraction(None, False, f"no-commitment: string_match holds for {names}")


def _warn_alias(name: str) -> None:
    # The warnings filter shows it once per calling line, though every re-scored item calls it.
    warnings.warn(
        f"extractor name {name!r} is an alias of {EXTRACTOR_ALIASES[name]!r}",
        DeprecationWarning,
        stacklevel=3,
    )


def get_extractor_name(name: str) -> str:
    """Return the canonical extractor name (aliases resolved), or raise ValueError."""
    canonical = name.strip().lower() if isinstance(name, str) else name
    if canonical not in EXTRACTOR_NAMES:
        raise ValueError(f"unknown extractor {name!r}; valid choices: {', '.join(EXTRACTOR_NAMES)}")
    if canonical in EXTRACTOR_ALIASES:
        _warn_alias(canonical)
        return EXTRACTOR_ALIASES[canonical]
    return canonical


def rescoring_notice(name: str, version: str | None) -> str | None:
    """One line saying a run recorded under an old extractor name or version is re-scored."""
    canonical = get_extractor_name(name)
    current = _CURRENT_VERSIONS[canonical]
    if canonical == name.strip().lower() and (version is None or version == current):
        return None
    recorded = f"{name.strip()!r}" + (f" {version}" if version else "")
    return f"recorded extractor {recorded} re-scored with {canonical!r} {current} (current code)"


def extract(
    reply: str,
    options: Sequence[str],
    *,
    extractor: str = DEFAULT_EXTRACTOR,
    rejection_strings: Sequence[str] = DEFAULT_REJECTIONS,
) -> Extraction:
    """Extract the chosen option with the named extractor (see EXTRACTOR_NAMES)."""
    name = get_extractor_name(extractor)
    failure = failure_message(reply)
    if failure is not None:
        # A failed generation is no answer under any rule (see generation_failure.py).
        return Extraction(None, False, f"error: {failure}")
    if name == "official":
        return extract_official(reply, options)
    if name == "mmau-string-match":
        return extract_string_match(reply, options)
    return extract_aqua_rules(reply, options, rejection_strings)
