"""What every extractor returns, and the checks and option helpers all of them share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache


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


def checked_options(reply: str, options: Sequence[str]) -> tuple[str, ...]:
    """The options as a tuple, once the reply and the options are known to be well formed."""
    if not isinstance(reply, str):
        raise TypeError(f"reply must be a str, got {type(reply).__name__}")
    if isinstance(options, str) or not all(isinstance(o, str) for o in options):
        raise ValueError("options must be a sequence of option strings")
    if not 1 <= len(options) <= 26:
        raise ValueError(f"options must hold 1 to 26 strings, got {len(options)}")
    return tuple(options)


def fold(text: str) -> str:
    """The text case-folded, its whitespace runs made single spaces: how options compare."""
    return " ".join(text.casefold().split())


@lru_cache(maxsize=4096)  # the same option lists recur thousands of times
def canonical_indices(options: tuple[str, ...]) -> tuple[int, ...]:
    """For each option, the first index with the same text: duplicates resolve to it."""
    folded = [fold(o) for o in options]
    return tuple(folded.index(f) for f in folded)
