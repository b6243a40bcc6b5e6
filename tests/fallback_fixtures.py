"""Saved replies and the stub reader of the LLM-fallback tests, one copy for both harnesses.

The first 40 Animal items, answered so that the rules read all but six: a lean the stand-in
reads as the gold option, one whose first fallback reply is not JSON (re-asked), one behind a
429, one whose server fails on every attempt, chatter no reader reads, and an empty reply
(never sent). tests/lm_eval/test_fallback_lm_eval.py and tests_lmms/test_lmms_fallback.py
run the same replies and expect the same counts.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.chat_stub import StubConfig, stand_in_reading, start_stub

from aqua_tasks.core.data import TRACK_FILE_STEMS, load_json_file

LIMIT = 40  # the first 10 Animal clips
INVALID, LIMITED, BROKEN = "(stub: invalid first)", "(stub: rate limited)", "(stub: broken)"


def fallback_reply(entry: dict, n: int) -> str:
    """Rules-read replies, but for five the rules leave unparsed and one empty."""
    gold = entry["answer"]
    unparsed = {
        0: f"Maybe a {gold.lower()}.",  # a lean: rules unparsed; the stand-in reads the option
        1: f"Hard to say. {INVALID}",  # first fallback reply not JSON, the re-ask answers
        5: f"Maybe it is a {gold.lower()}. {LIMITED}",  # a 429 before the reading
        9: f"Hmm, no idea. {BROKEN}",  # the fallback's server fails on every attempt
        13: "lol",  # the stand-in reads no answer either
        17: "",  # nothing to read: never sent
    }
    if n in unparsed:
        return unparsed[n]
    index = entry["options"].index(gold) if n % 3 else 0
    return f"The answer is ({chr(ord('a') + index)}) {entry['options'][index]}."


def write_fallback_replies(released_dir: Path, out: Path) -> Path:
    """The saved replies as `aqua-replay` reads them (the authors' results layout)."""
    stem = TRACK_FILE_STEMS["animal"]
    entries = load_json_file(released_dir / f"{stem}.json")[:LIMIT]
    for n, entry in enumerate(entries):
        entry["response"] = fallback_reply(entry, n)
    (out / f"{stem}.json").write_text(json.dumps(entries))
    return out


def _stub_reply(request) -> str:
    if INVALID in request.text:
        return "I think it is (e)."  # not JSON: re-asked with the reason
    if request.text.startswith("That reply is not usable"):
        return '{"answer": "rejection"}'
    return stand_in_reading(request.text)


def start_fallback_stub():
    """The stand-in reader with the tests' faults: (server, state)."""
    return start_stub(
        StubConfig(
            require_audio=False,
            reply=_stub_reply,
            faults={LIMITED: ["429"]},
            always_fail={BROKEN: 500},
        )
    )
