"""Text rules of the builder: option keys, content terms, rejection-like options, prompts."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

LETTERS = "abcdefghijklmnopqrstuvwxyz"
# Words that carry no category meaning: they would make every category overlap every item.
STOPWORDS = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "these",
        "those",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "where",
        "when",
        "why",
        "how",
        "are",
        "was",
        "were",
        "been",
        "being",
        "has",
        "have",
        "had",
        "does",
        "did",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "its",
        "not",
        "but",
        "any",
        "all",
        "each",
        "some",
        "most",
        "more",
        "less",
        "very",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "above",
        "based",
        "given",
        "audio",
        "clip",
        "recording",
        "sound",
        "heard",
        "hear",
        "listen",
        "their",
        "there",
        "they",
        "them",
        "you",
        "your",
        "our",
        "his",
        "her",
        "him",
        "she",
        "one",
    }
)
# Options that already say "no option applies": the rejection option must stay the only one.
REJECTION_LIKE = re.compile(
    r"^(none|neither|nothing|nobody|no one|not sure|unsure|unknown|n/?a)\b"
    r"|^no (correct|right|valid|answer)\b|\bnone of\b|\ball of the above\b"
    r"|\bcannot be (determined|answered|known)\b|\bunanswerable\b|\binsufficient information\b"
    r"|\bnot possible to (tell|determine|say)\b|^(i )?(do not|don't) know\b",
    re.IGNORECASE,
)


def option_key(text: str) -> str:
    """The form two options are compared in: case, spacing and end punctuation ignored."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split()).rstrip(".!;,")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def stem(word: str) -> str:
    """A crude English stem, the same on both sides of a comparison ("Dogs" ~ "dog")."""
    w = word
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith("sses"):
        return w[:-2]
    if len(w) > 4 and w.endswith("es") and w[:-2].endswith(("s", "x", "z", "ch", "sh")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    for suffix in ("ing", "ed"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            w = w[: -len(suffix)]
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
                w = w[:-1]  # running -> run, stopped -> stop
            return w
    return w


def terms(texts: Iterable[str]) -> frozenset[str]:
    """Stemmed content words of some texts (case-, accent- and inflection-insensitive)."""
    found = set()
    for text in texts:
        for word in re.findall(r"[^\W_]+", _fold(text)):
            if len(word) >= 3 and word not in STOPWORDS:
                found.add(stem(word))
    return frozenset(found)


@lru_cache(maxsize=4096)
def text_terms(text: str) -> frozenset[str]:
    """`terms` of one text, memoised (bank options are compared with every item)."""
    return terms((text,))


def is_rejection_like(text: str) -> bool:
    """Whether an option already means "no listed option is right" ("none of the speakers")."""
    return bool(REJECTION_LIKE.search(text.strip()))


def inline_question(stem_text: str, options: Sequence[str], guidance: str | None = None) -> str:
    """The released layout's question: stem, inline `(a) …` options, optional guidance line."""
    if len(options) > len(LETTERS):
        raise ValueError(f"{len(options)} options: at most {len(LETTERS)} can be lettered")
    listed = " ".join(f"({LETTERS[i]}) {option}" for i, option in enumerate(options))
    text = f"{stem_text.strip()} {listed}"
    return f"{text}\n{guidance.strip()}" if guidance else text
