"""What the LLM fallback (`aqua-rules+llm`) adds on replies the rules leave unparsed.

Builds, from the released Animal items, replies of kinds `aqua-rules` leaves unparsed —
short leans (`Maybe a dog.`), hedges between two options, `I don't know`, capability
refusals, chatter — keeps those the rules indeed leave unparsed, and reads them with the
fallback. By default the reader is a stand-in in this process (`StandInReader`: a word
matcher, not a model, so the seconds are the fallback's own cost: prompts, reading, cache).
It prints, per kind, how many the fallback read into an answer, how many of those chose the
gold option, and requests and seconds; a second pass shows the cache. A real model's figures
need a real endpoint: pass `--base-url` and `--model`.

    python benchmarks/bench_fallback.py --data-dir DATA [--n 200] [--json]

`--heldout tests/data/extraction_heldout/replies.jsonl` reads the project's held-out replies
instead: those the rules leave unparsed go to the fallback, and "right" counts a reading
that gives the reply's expected letter.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from aqua_tasks.core.data import load_items
from aqua_tasks.core.extract import extract
from aqua_tasks.core.extract.fallback import apply_reading, is_fallback_read, needs_fallback
from aqua_tasks.task.fallback import FallbackReader
from orca_judge.prompted.backends import ChatReply, TransportStats

# Names the stand-in in the reader's settings and cache key; never contacted.
STAND_IN_URL = "http://stand-in.invalid/v1/chat/completions"
KINDS = {
    "lean": lambda gold, other: f"Maybe a {gold.lower()}.",
    "hedge": lambda gold, other: f"It could be {gold.lower()} or {other.lower()}, hard to say.",
    "dont-know": lambda gold, other: "I don't know.",
    "refusal": lambda gold, other: "Sorry, I cannot hear audio.",
    "chatter": lambda gold, other: "lol ok",
}


class StandInReader:
    """A fallback reader's backend that answers in this process, without a model.

    It reads the prompt's options and the reply between `<<<` and `>>>`: the one option the
    reply names (whole words, any case) is its letter; `none of`, `neither` or `not listed`
    is a rejection; `cannot hear` / `can't hear` a refusal; anything else `none`.
    """

    secret = None

    def __init__(self) -> None:
        self.stats = TransportStats()

    def complete(self, messages: list[dict[str, str]], stop: object) -> ChatReply:
        text = messages[-1]["content"]
        options = re.findall(r"^\(([a-z])\) (.+)$", text.partition("Reply:")[0], re.MULTILINE)
        reply = text.partition("<<<")[2].partition(">>>")[0].lower()
        named = [
            letter
            for letter, option in options
            if re.search(rf"\b{re.escape(option.lower())}\b", reply)
        ]
        if len(named) == 1:
            answer = named[0]
        elif re.search(r"none of|neither|not listed", reply):
            answer = "rejection"
        elif re.search(r"cannot hear|can't hear", reply):
            answer = "refusal"
        else:
            answer = "none"
        return ChatReply(json.dumps({"answer": answer}))

    def close(self) -> None:
        pass


def replies(data_dir: str, n: int, seed: int) -> list[tuple[str, object, str]]:
    """(kind, item, reply) for Solvable items, only those the rules leave unparsed."""
    rng = random.Random(seed)
    items = [i for i in load_items(data_dir, "animal", "main") if i.type == "Solvable"]
    out = []
    for item in rng.sample(items, min(n, len(items))):
        other = next(o for o in item.options if o != item.answer)
        for kind, make in KINDS.items():
            reply = make(item.answer, other)
            if needs_fallback(reply, extract(reply, item.options)):
                out.append((kind, item, reply))
    return out


@dataclass(frozen=True)
class HeldOutItem:
    """A held-out reply's options, with its expected option as the item's answer."""

    options: tuple[str, ...]
    rejection_strings: tuple[str, ...]
    answer: str | None


def heldout_replies(path: str) -> list[tuple[str, HeldOutItem, str]]:
    """(kind, item, reply) for the held-out replies the rules leave unparsed."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        options = tuple(row["options"])
        letter = row["expected"]
        index = ord(letter) - ord("A") if len(letter) == 1 and letter.isupper() else None
        item = HeldOutItem(
            options, tuple(row["rejection_strings"]), None if index is None else options[index]
        )
        if needs_fallback(
            row["reply"], extract(row["reply"], options, rejection_strings=item.rejection_strings)
        ):
            out.append((row["kind"], item, row["reply"]))
    return out


def measure(reader: FallbackReader, cases: list) -> dict:
    """Per kind: replies, read into an answer, right; and the pass's requests and seconds."""
    before, started = reader.stats.requests, time.perf_counter()
    readings = reader.read_many([(item.options, reply) for _, item, reply in cases])
    seconds = time.perf_counter() - started
    table: dict[str, Counter] = {}
    for (kind, item, reply), reading in zip(cases, readings, strict=True):
        rules = extract(reply, item.options, rejection_strings=item.rejection_strings)
        read, _ = apply_reading(rules, reading, item.options, item.rejection_strings)
        row = table.setdefault(kind, Counter())
        row["replies"] += 1
        row["read"] += is_fallback_read(reading)
        row["right"] += read.choice is not None and item.options[read.choice] == item.answer
    return {
        "kinds": {k: dict(v) for k, v in table.items()},
        "requests": reader.stats.requests - before,
        "seconds": round(seconds, 3),
    }


def main() -> None:
    """Run both passes and print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data-dir", help="the released AQUA files (built reply kinds)")
    source.add_argument("--heldout", help="a held-out reply file (JSON Lines)")
    parser.add_argument("--n", type=int, default=200, help="Solvable items sampled")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--base-url", help="a real chat-completions URL (default: the stand-in)")
    parser.add_argument("--model", default="stand-in")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.heldout:
        cases = heldout_replies(args.heldout)
    else:
        cases = replies(args.data_dir, args.n, args.seed)
    with tempfile.TemporaryDirectory() as cache:
        settings = {"base_url": args.base_url or STAND_IN_URL, "model": args.model}
        settings["cache_dir"] = cache

        def reader() -> FallbackReader:
            """A fresh reader on the same cache: the stand-in, or the endpoint's backend."""
            return FallbackReader(settings, StandInReader() if args.base_url is None else None)

        passes = {"first": measure(reader(), cases), "cached": measure(reader(), cases)}
    if args.json:
        print(json.dumps(passes, indent=2))
        return
    print("| kind | unparsed by rules | read by the fallback | of those right |")
    print("|---|---|---|---|")
    kinds = passes["first"]["kinds"]
    for kind, row in kinds.items():
        print(f"| {kind} | {row['replies']} | {row['read']} | {row['right']} |")
    for name, result in passes.items():
        print(f"{name} pass: {result['requests']} requests, {result['seconds']} s")


if __name__ == "__main__":
    main()
