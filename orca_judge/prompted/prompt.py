"""The versioned prompt that asks a chat model for a 1-5 correctness rating, and its re-ask.

`PROMPT_VERSION` is recorded with every rating and is part of every cache key: a changed
wording must change the version, so no rating asked with one prompt is reused for another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PROMPT_VERSION = "llm-judge-v1"
SYSTEM_PROMPT = (
    "You grade answers to questions about audio recordings. You compare a candidate answer "
    "with the correct answer and rate how correct the candidate is. You reply with JSON only."
)
RUBRIC = """Rate the candidate answer's correctness on a scale of 1 to 5:
5 = fully correct: it says what the correct answer says (other wording is fine);
4 = mostly correct: a minor detail missing or slightly off;
3 = partly correct: some of it right, some of it wrong or missing;
2 = mostly wrong: only a small part right;
1 = wrong, empty, or no answer at all.
Judge only correctness against the correct answer, not style or length."""
REPLY_SCHEMA = '{"rating": <integer 1-5>, "reason": "<one sentence>"}'
RETRY_PROMPT = "That reply is not usable ({reason}). Reply again with JSON only, exactly: "


def judge_prompt(item: Mapping[str, Any]) -> str:
    """The user turn for one item: question, correct answer, optional blocks, the candidate."""
    blocks = [RUBRIC, ""]
    if item.get("question"):
        blocks.append(f"Question: {item['question']}")
    blocks.append(f"Correct answer: {item.get('reference') or ''}")
    if item.get("rationale"):
        blocks.append(f"Why it is correct: {item['rationale']}")
    if item.get("transcript"):
        blocks.append(f"Transcript of the recording: {item['transcript']}")
    blocks.append(f"Candidate answer: {item.get('candidate') or '(empty)'}")
    blocks += ["", f"Reply with JSON only: {REPLY_SCHEMA}"]
    return "\n".join(blocks)


def first_messages(item: Mapping[str, Any]) -> list[dict[str, str]]:
    """The chat that asks for one item's rating."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": judge_prompt(item)},
    ]


def re_ask(messages: list[dict[str, str]], reply: str, reason: str) -> list[dict[str, str]]:
    """The chat continued with the unusable reply and a request to answer again."""
    return [
        *messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": RETRY_PROMPT.format(reason=reason) + REPLY_SCHEMA},
    ]
