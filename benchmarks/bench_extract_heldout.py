"""How many replies of each kind `aqua-rules` reads as a careful grader would, beside the
authors' `official` rule and MMAU's `mmau-string-match`.

The replies are a project-owned held-out set (`tests/data/extraction_heldout/replies.jsonl`),
written for the reply kinds 3.2 adds and never used to tune the rules: rejections without the
word "none" (negated coverage of the options, a count of wrong options, the answer missing
from the list, a heard class outside the options, answer frames in another language), capability
refusals (with and without a thinking block), verdict tables, and controls that 3.1 already read.
Each has its expected reading: a letter, `wrong` (an answer that is no option), `unparsed`, or
`refusal` (unparsed because the model says it could not take in the audio). The two other
extractors read the same replies in the same run. (The 3.1 figures in `docs/extraction.md`
were measured by an earlier version of this script, which read 3.1 from git.)

    python benchmarks/bench_extract_heldout.py [--misses] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from aqua_tasks.core.extract import (
    EXTRACTOR_VERSIONS,
    Extraction,
    extract_aqua_rules,
    extract_official,
    extract_string_match,
)

REPO = Path(__file__).resolve().parents[1]
REPLIES = REPO / "tests" / "data" / "extraction_heldout" / "replies.jsonl"
FIELDS = ("id", "kind", "lang", "options", "rejection_strings", "reply", "expected")
Reader = Callable[[str, list[str], list[str]], Extraction]


def reading(found: Extraction) -> str:
    """A reading as the held-out set writes it: "A".."Z", "wrong", "refusal" or "unparsed"."""
    if found.parsed:
        return found.letter or "wrong"
    return "refusal" if "refusal:" in found.reason else "unparsed"


def reads(found: Extraction, expected: str) -> bool:
    """Whether an extraction is the expected reading (a refusal is also unparsed)."""
    got = reading(found)
    return got == expected or (expected == "unparsed" and got == "refusal")


def load_replies(path: Path) -> list[dict]:
    """The held-out replies, one JSON object a line."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    for row in rows:
        missing = {"id", "kind", "lang", "options", "rejection_strings", "reply", "expected"} - set(
            row
        )
        if missing:
            raise ValueError(f"{path}: reply {row.get('id')!r} has no {', '.join(sorted(missing))}")
    return rows


def measure(rows: list[dict], readers: dict[str, Reader]) -> dict:
    """Per reply kind (and language, and all): replies, and how many each reader reads right."""
    results = {
        name: [fn(r["reply"], r["options"], r["rejection_strings"]) for r in rows]
        for name, fn in readers.items()
    }
    right = {name: [reads(x, r["expected"]) for x, r in zip(xs, rows, strict=True)]
             for name, xs in results.items()}  # fmt: skip

    def table(key: str) -> dict[str, dict[str, int]]:
        groups = [*dict.fromkeys(r[key] for r in rows), "all"]
        out = {}
        for group in groups:
            ks = [k for k, r in enumerate(rows) if group in ("all", r[key])]
            out[group] = {"replies": len(ks)} | {n: sum(right[n][k] for k in ks) for n in readers}
        return out

    misses = {
        name: [
            {"id": r["id"], "expected": r["expected"], "read": reading(x), "reason": x.reason}
            for x, r, ok in zip(results[name], rows, right[name], strict=True)
            if not ok
        ]
        for name in readers
    }
    return {"by_kind": table("kind"), "by_language": table("lang"), "misses": misses}


def main(argv: list[str] | None = None) -> int:
    """Read the held-out replies with every extractor; print the counts per kind."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replies", type=Path, default=REPLIES, help="held-out JSONL file")
    parser.add_argument("--misses", action="store_true", help="list the replies read wrongly")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    try:
        rows = load_replies(args.replies)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    readers: dict[str, Reader] = {
        f"aqua-rules {EXTRACTOR_VERSIONS['aqua-rules']}": extract_aqua_rules,
        "official": lambda reply, options, _rejections: extract_official(reply, options),
        "mmau-string-match": lambda reply, options, _rejections: extract_string_match(
            reply, options
        ),
    }
    result = {"replies": len(rows), **measure(rows, readers)}
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
        return 0
    print(f"{len(rows)} held-out replies")
    for key in ("by_kind", "by_language"):
        print(f"\n| {key.removeprefix('by_')} | replies | " + " | ".join(readers) + " |")
        print("|---" * (2 + len(readers)) + "|")
        for group, row in result[key].items():
            print(f"| {group} | " + " | ".join(str(v) for v in row.values()) + " |")
    if args.misses:
        for name, misses in result["misses"].items():
            print(f"\n{name}: {len(misses)} read otherwise")
            for miss in misses:
                print(f"  {miss['id']}: expected {miss['expected']}, read {miss['read']} "
                      f"({miss['reason']})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
