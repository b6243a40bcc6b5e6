"""Reading a judge model's reply: a JSON object with an integer `rating` from 1 to 5.

The reply must be one JSON object (a Markdown code fence around it is accepted); `rating` is
an integer 1-5 (`5` or `"5"`, not `4.5`); `reason` is kept when it is a string; other keys
are ignored. Anything else is an invalid reply with a reason the re-ask quotes.
"""

from __future__ import annotations

from dataclasses import dataclass

from eval_common.jsonio import json_object_in_reply


@dataclass(frozen=True)
class ReadReply:
    """A reply read: its rating and reason, or why it is not usable (`problem`)."""

    rating: int | None
    reason: str = ""
    problem: str | None = None


def _as_rating(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and 1 <= value <= 5 else None


def read_reply(text: str) -> ReadReply:
    """The rating of a reply like `{"rating": 5, "reason": "..."}`, or the problem with it."""
    data = json_object_in_reply(text)
    if data is None:
        return ReadReply(None, problem=f"not a JSON object: {text.strip()[:80]!r}")
    if "rating" not in data:
        return ReadReply(None, problem="no `rating` key")
    rating = _as_rating(data["rating"])
    if rating is None:
        return ReadReply(None, problem=f"`rating` is {data['rating']!r}, expected an integer 1-5")
    reason = data.get("reason")
    return ReadReply(rating, reason if isinstance(reason, str) else "")


def unit(rating: int) -> float:
    """A 1-5 rating on ORCA's [0, 1] scale: (rating - 1) / 4."""
    return (rating - 1) / 4
