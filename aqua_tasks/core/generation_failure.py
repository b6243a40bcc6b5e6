"""Replies standing for a failed generation: kept, scored as unparsed `error`, never as answers.

A model class that cannot produce a reply for an item (an HTTP request that failed after its
retries, a generation that raised) returns `failed_reply(message)` instead of an empty or
made-up string. Every extractor reads such a reply as unparsed with reason
`error: <message>`, so it counts in `unparsed_rate` and can be listed at the end of a run.
"""

from __future__ import annotations

# Brackets make it impossible for the marker to read as an option letter under any rule.
FAILED_REPLY_PREFIX = "[generation failed] "


def failed_reply(message: str) -> str:
    """The reply recorded for an item whose generation failed with `message`."""
    one_line = " ".join(str(message).split()) or "no message"
    return FAILED_REPLY_PREFIX + one_line


def failure_message(reply: str) -> str | None:
    """The failure message of a `failed_reply`, or None for a real reply."""
    if isinstance(reply, str) and reply.startswith(FAILED_REPLY_PREFIX):
        return reply[len(FAILED_REPLY_PREFIX) :]
    return None
