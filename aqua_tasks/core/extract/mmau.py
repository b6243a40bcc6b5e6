"""`mmau-string-match`, MMAU's published `string_match` scorer read as an extractor."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from aqua_tasks.core.extract.verdict import Extraction, canonical_indices, checked_options

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
    opts = checked_options(reply, options)
    predicted, tokens = _mmau_tokens(reply), _choice_tokens(opts)
    canon = canonical_indices(opts)
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
