"""The structure of a reply under `aqua-rules`: its reasoning, its final answer, or a cut-off.

Reasoning models write a thinking part (`<think>…</think>`, or a "Let me analyze…" preamble)
and then, if they finish, a final answer. Only the final answer decides: options weighed in
the thinking never do. A reply that stops before concluding (an unclosed `<think>`, an answer
frame with nothing after it, a reasoning preamble cut off mid-sentence, or a generation that
hit the token limit without an answer) is unparsed `truncated`, never read as the option it was
leaning towards.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_THINK_OPEN = re.compile(r"<\s*(think|thinking|reasoning|thought)\s*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"<\s*/\s*(?:think|thinking|reasoning|thought)\s*>", re.IGNORECASE)
_ANSWER_TAG = re.compile(r"<\s*answer\s*>(.*?)(?:<\s*/\s*answer\s*>|\Z)", re.IGNORECASE | re.DOTALL)
# Where a reasoning reply states its conclusion: the tail from the last of these decides.
_CONCLUSION = re.compile(
    r"\b(?:final\s+answer|in\s+conclusion|to\s+conclude|in\s+summary|(?:so|thus|hence)\s*,?\s+"
    r"the\s+(?:correct\s+|best\s+|right\s+)?answer|the\s+(?:correct\s+|best\s+|right\s+)?answer"
    r"\s+(?:is|would\s+be|must\s+be|should\s+be)|answer\s*:)"
    r"|(?:^|(?<=[.!?\n]))\s*(?:therefore|thus|hence|so)\b",
    re.IGNORECASE,
)
# An answer frame with nothing after it ends a reply that was cut off: "Final answer: (".
_UNFINISHED_FRAME = re.compile(
    r"(?:\bfinal\s+answer(?:\s+is)?|\banswer\s+(?:is|would\s+be|will\s+be|should\s+be)|\banswer"
    r"\s*[:=]|\bi(?:'d|\s+would|\s+will)?\s+(?:choose|pick|select|go\s+with)|\b(?:option|choice)"
    r"\s*[:(]|\\boxed\s*\{|\btherefore\s*,?|\bso\s*,)[\s:=(\[{\"'\-]*\Z",
    re.IGNORECASE,
)
# How a reasoning model opens: "Okay, let me analyze the audio", "First, I need to listen".
_PREAMBLE = re.compile(
    r"\W*(?:(?:okay|ok|alright|all\s+right|hmm+|well|so|first|now)\b\W*)*"
    r"(?:let(?:'s|\s+me|\s+us)\b|i\s+(?:need|have|want|should)\s+to\b|i(?:'ll|\s+will)\s+"
    r"(?:analy[sz]e|listen|think|consider|start|go)|we\s+(?:need|have)\s+to\b|to\s+(?:answer|"
    r"determine|identify|figure\s+out)\b|the\s+user\b|step\s+1\b|analy[sz]ing\b|thinking\b)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?)\]\"'。！？]\s*\Z")
REASONING_CHARS = 200  # reasoning this long before a conclusion makes a reply a reasoning reply


class ReplyParts(NamedTuple):
    """The part of a reply that decides, where it starts, and why, or why none does."""

    final: str  # the text the rules read ("" when truncated)
    where: str  # "" for the whole reply, else e.g. "after </think>"
    truncated: str | None  # the reason the reply has no final answer, or None
    fallback: bool  # the whole reply may be read when the final part commits to nothing


def _whole(text: str) -> ReplyParts:
    return ReplyParts(text, "", None, False)


def _unfinished(text: str) -> str | None:
    frame = _UNFINISHED_FRAME.search(text, max(0, len(text) - 60))
    return None if frame is None else f"unfinished answer frame {' '.join(frame.group().split())!r}"


def split_reply(text: str, hit_limit: bool = False) -> ReplyParts:
    """Split a normalised reply into the final answer the rules read, or say it was cut off."""
    closes = list(_THINK_CLOSE.finditer(text))
    opens = list(_THINK_OPEN.finditer(text))
    if opens and (not closes or closes[-1].start() < opens[-1].start()):
        return ReplyParts("", "", f"truncated: <{opens[-1].group(1).lower()}> never closed", False)
    if closes:
        final = text[closes[-1].end() :].strip()
        if not re.search(r"\w", final):
            return ReplyParts("", "", "truncated: no answer after </think>", False)
        answer = _ANSWER_TAG.search(final)
        if answer and answer.group(1).strip():
            final = answer.group(1).strip()
        why = _unfinished(final)
        if why:
            return ReplyParts("", "", f"truncated: {why}", False)
        return ReplyParts(final, "after </think>", None, False)
    why = _unfinished(text)
    if why:
        return ReplyParts("", "", f"truncated: {why}", False)
    conclusions = list(_CONCLUSION.finditer(text))
    conclusion = conclusions[-1] if conclusions else None
    if conclusion is not None and conclusion.start() >= REASONING_CHARS:
        where = f"after {' '.join(conclusion.group().split()).lower()!r}"
        # Without tags the reasoning may still hold the answer ("(c) Cow. Reasoning: …").
        return ReplyParts(text[conclusion.start() :].strip(), where, None, True)
    if conclusion is None and _PREAMBLE.match(text):
        if hit_limit:
            return ReplyParts("", "", "truncated: hit the token limit while reasoning", False)
        if len(text) >= REASONING_CHARS and not _SENTENCE_END.search(text):
            return ReplyParts("", "", "truncated: reasoning cut off mid-sentence", False)
    # Otherwise a reply that hit the limit keeps only an explicit answer (see rules.py).
    return _whole(text)
