"""orca fetch-ratings: the ORCA human ratings, fetched into the layout the training configs read.

    orca fetch-ratings --output data/orca-human

Loads the Hugging Face dataset BUT-FIT/orca-audio-qa-annotations with `datasets` (network, or
its cache; --source reads a local copy or another revision instead), keeps the human-rated
rows, checks every one as orca train reads it and writes train.jsonl and dev.jsonl (one item
a line: id, question, reference, rationale, transcript, candidate, ratings) and a README with
the licence (CC-BY-4.0, attribute Speech@FIT). configs/orca/*.yaml read data/orca-human/.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from eval_common.cli import add_json_flag, command
from orca_judge.human_ratings import DATASET_ID, HUMAN, fetch_human_ratings

PROG = "orca fetch-ratings"


def build_parser() -> argparse.ArgumentParser:
    """The `orca fetch-ratings` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--output", required=True, help="folder to write (e.g. data/orca-human)")
    parser.add_argument(
        "--source",
        default=DATASET_ID,
        help=f"what datasets.load_dataset reads: the Hub id (default {DATASET_ID}) or a "
        "local copy (a folder of its files)",
    )
    parser.add_argument("--revision", help="the dataset's revision on the Hub (default: latest)")
    parser.add_argument(
        "--rating-source",
        default=HUMAN,
        help=f"keep rows whose rating_source column has this value (default {HUMAN!r})",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace train.jsonl/dev.jsonl already there"
    )
    add_json_flag(parser)
    return parser


@command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `orca fetch-ratings`; returns the exit status."""
    args = build_parser().parse_args(argv)
    ratings = fetch_human_ratings(
        args.output,
        source=args.source,
        revision=args.revision,
        rating_source=args.rating_source,
        overwrite=args.overwrite,
    )
    summary = {"output": args.output, "items": ratings.counts(), "left_out": ratings.skipped}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    files = ", ".join(f"{name}.jsonl ({n} items)" for name, n in ratings.counts().items())
    left_out = "; ".join(f"{n} rows with {reason}" for reason, n in ratings.skipped.items())
    print(f"wrote {files} to {args.output}" + (f"; left out {left_out}" if left_out else ""))
    return 0
