"""Throughput of the mmau and official answer extractors on a realistic mix of replies.

Replies are built from the released AQUA-Bench items: short letters, option texts, free-text
rejections and long reasoning replies that weigh several options before answering. Both
extractors read the same replies in the same run.

    python benchmarks/bench_extract.py --n 20000 --json
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from aqua_tasks.data import TRACKS, VARIANT_SUFFIXES, AquaDataError, AquaItem, load_items
from aqua_tasks.extract import Extraction, extract_mmau, extract_official

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "aqua-bench"
FILLER = (
    "The recording is about five seconds long with some background noise. ",
    "The timbre is bright and the onset is sharp, with a clear harmonic structure. ",
    "There is a repeated pattern at a steady rhythm. ",
    "The question asks about something the audio may not convey. ",
)


def _letter(i: int) -> str:
    return chr(ord("a") + i)


def make_reply(item: AquaItem, rng: random.Random) -> tuple[str, str]:
    """One reply of a randomly drawn kind, as a model might write it about this item."""
    i = rng.randrange(len(item.options))
    text, letter = item.options[i], _letter(i)
    kind = rng.choices(["letter", "text", "rejection", "reasoning"], weights=[3, 3, 1, 3])[0]
    if kind == "letter":
        reply = rng.choice([f"({letter})", letter.upper(), f"Answer: {letter.upper()}",
                            f"**({letter.upper()})**", f"({letter}) {text}"])  # fmt: skip
    elif kind == "text":
        reply = rng.choice([text, text.lower(), f"It is {text.lower()}.", f"The answer is {text}."])
    elif kind == "rejection":
        reply = rng.choice(["None of the above.", "It cannot be determined from the audio.",
                            "It is not possible to tell from the recording."])  # fmt: skip
    else:
        # Reasoning replies weigh other options before committing, as chain-of-thought does.
        others = rng.sample(range(len(item.options)), k=min(3, len(item.options)))
        steps = [f"({_letter(j)}) {item.options[j]} would sound different. " for j in others]
        body = "".join(rng.choice(FILLER) for _ in range(rng.randint(5, 40)))
        ending = rng.choice([f"So the answer is ({letter}) {text}.", f"Final answer: **{text}**",
                             f"Therefore, ({letter})."])  # fmt: skip
        reply = body + "".join(steps) + ending
    return kind, reply


def time_extractor(fn: Callable[[str, AquaItem], Extraction], work: list) -> float:
    """Replies per second of one extractor over the whole work list (best of two passes)."""
    best = float("inf")
    # The first pass also fills the per-item caches. No progress bar: it would be timed too.
    for _ in range(2):
        start = time.perf_counter()
        for reply, item in work:
            fn(reply, item)
        best = min(best, time.perf_counter() - start)
    return len(work) / best


def _mmau(reply: str, item: AquaItem) -> Extraction:
    return extract_mmau(reply, item.options, item.rejection_strings)


def _official(reply: str, item: AquaItem) -> Extraction:
    return extract_official(reply, item.options)


def main(argv: list[str] | None = None) -> int:
    """Build the reply mix, time both extractors and print replies/second and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20000, help="number of replies (default 20000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the reply mix")
    parser.add_argument(
        "--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="folder of released JSON files"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be at least 1")
    try:
        items = [
            item
            for track in TRACKS
            for variant in VARIANT_SUFFIXES
            for item in load_items(args.data_dir, track, variant)
        ]
    except AquaDataError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    rng = random.Random(args.seed)
    drawn = [rng.choice(items) for _ in range(args.n)]
    replies = [make_reply(item, rng) for item in drawn]
    work = [(reply, item) for item, (_, reply) in zip(drawn, replies, strict=True)]
    mmau = time_extractor(_mmau, work)
    official = time_extractor(_official, work)
    disagree = sum(_mmau(r, item).choice != _official(r, item).choice for r, item in work)
    kinds = {k: sum(kind == k for kind, _ in replies) for k in sorted({k for k, _ in replies})}
    result = {
        "replies": args.n,
        "mix": kinds,
        "mean_reply_chars": round(sum(len(r) for _, r in replies) / args.n, 1),
        "mmau_replies_per_s": round(mmau),
        "official_replies_per_s": round(official),
        "official_over_mmau": round(official / mmau, 1),
        "disagreements": disagree,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{args.n} replies {kinds}, mean {result['mean_reply_chars']} chars")
        print(f"mmau:     {mmau:12,.0f} replies/s")
        print(f"official: {official:12,.0f} replies/s")
        print(f"ratio:    official is {official / mmau:.1f}x faster than mmau")
        print(f"choices differ on {disagree} of {args.n} replies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
