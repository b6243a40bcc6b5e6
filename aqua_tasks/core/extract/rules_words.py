"""The words of `aqua-rules`: crude stems, and each option list compiled for matching them."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

from aqua_tasks.core.extract.verdict import canonical_indices, fold

NO_REJECTION = -1  # pseudo option index: a rejection on an item without a rejection option
OTHER_SENSE = -2  # pseudo option index: a homonym's sense that is not among the options
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
NEXT_WORD = re.compile(r"\s+([A-Za-z]+)")
FILLERS = frozenset({"a", "an", "the", "of", "his", "her", "their", "its", "my", "your"})
# Benchmark class names whose everyday form is not an inflection of the option text.
_ALIASES: dict[str, tuple[str, ...]] = {
    "laughter": ("laugh",),
    "throat clearings": ("clear throat",),
    "drum set": ("drum kit", "drums"),
}


@lru_cache(maxsize=65536)
def stem_of(word: str) -> str:
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
    stems = tuple(stem_of(w) for w in WORD.findall(phrase))
    return tuple(s for s in stems if s not in FILLERS) or stems


class Item(NamedTuple):
    """An option list as the rules match it: stems, head words, the rejection option."""

    options: tuple[str, ...]
    canon: tuple[int, ...]  # first index with the same text: duplicates resolve to it
    keys: dict[str, list[tuple[int, tuple[str, ...]]]]  # first stem -> (index, all stems)
    heads: dict[str, int]  # last stem unique to one multi-word option ("guitar")
    rejection: int  # index of the rejection option, or NO_REJECTION
    starts: re.Pattern[str]  # where a word could start an option: most words are never stemmed


@lru_cache(maxsize=4096)  # the same option lists recur thousands of times
def compile_item(options: tuple[str, ...], rejections: tuple[str, ...]) -> Item:
    """The options compiled for matching, the first of `rejections` found among them marked."""
    folded = [fold(o) for o in options]
    canon = canonical_indices(options)
    keys: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    head_owners: dict[str, set[int]] = {}
    own = {_key(text) for text in options}
    for i, text in enumerate(options):
        phrases = [_key(text), *map(_key, _ALIASES.get(folded[i], ()))]
        # "Having long hair" is also named by "long hair", unless another option is exactly that.
        if len(phrases[0]) > 1 and WORD.findall(text)[0].lower().endswith("ing"):
            phrases += [phrases[0][1:]] if phrases[0][1:] not in own else []
        for stems in filter(None, phrases):
            keys.setdefault(stems[0], []).append((canon[i], stems))
            head_owners.setdefault(stems[-1], set()).add(canon[i] if len(stems) > 1 else -2)
    heads = {h: next(iter(o)) for h, o in head_owners.items() if len(o) == 1 and -2 not in o}
    wanted = {fold(r) for r in rejections}
    rejection = next((canon[i] for i, f in enumerate(folded) if f in wanted), NO_REJECTION)
    # A word starts with the first two letters of its stem ("puppies" -> "puppy" too); words
    # starting with a non-ASCII letter ("École") or an elision ("O'Hare") always qualify.
    prefixes = sorted({re.escape(stem[:2]) for stem in keys}, key=len, reverse=True)
    alternatives = "|".join([*prefixes, r"[^\x00-\x7f]", r"\w'"])
    starts = re.compile(rf"(?<![\w'])(?:{alternatives})")
    return Item(options, canon, keys, heads, rejection, starts)
