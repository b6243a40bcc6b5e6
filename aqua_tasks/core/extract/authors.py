"""`official`, the AQUA-Bench authors' rule from their `evaluation.py`, quirks included."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from aqua_tasks.core.extract.verdict import Extraction, checked_options


@lru_cache(maxsize=26)
def _official_pattern(last: str) -> re.Pattern[str]:
    return re.compile(rf"\(?([a-{last}])\)?\b")


def extract_official(reply: str, options: Sequence[str], answer: str | None = None) -> Extraction:
    """The AQUA authors' rule: first letter a..X anywhere, else first option text contained."""
    opts = checked_options(reply, options)
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
