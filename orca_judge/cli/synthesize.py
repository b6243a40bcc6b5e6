"""orca synthesize: rule-rated candidates for an earlier curriculum stage, built offline.

    orca synthesize data/orca-human/train.jsonl --output runs/synthetic.jsonl

Per question of the input: the reference (bare or in a sentence, rated 5), another question's
reference (rated 1), a non-answer (rated 1) and, for references of four or more words, the
first half of the reference (rated 2, 3, 3, 4). Build it from the training file only: the
held-out split then never meets one of its questions. Use the file as the `train` of a stage
before the human-rated one (see configs/orca/curriculum-synthetic.yaml).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from eval_common.cli import add_json_flag, add_seed_flag, command, fail, number_problem
from eval_common.outputs import check_output_file, write_text
from orca_judge.data import load_items
from orca_judge.training.synthetic import DEFAULT_KINDS, KINDS, build_synthetic_items

PROG = "orca synthesize"


def build_parser() -> argparse.ArgumentParser:
    """The `orca synthesize` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", help="rated items (.jsonl or .json) to take questions from")
    parser.add_argument("--output", required=True, help=".jsonl file to write")
    parser.add_argument(
        "--kinds",
        nargs="+",
        choices=KINDS,
        default=list(DEFAULT_KINDS),
        help="which candidates to build (default: %(default)s; the abstention kinds on request)",
    )
    add_seed_flag(parser)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    add_json_flag(parser)
    return parser


@command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `orca synthesize`; returns the exit status."""
    args = build_parser().parse_args(argv)
    if problem := number_problem("--seed", args.seed, minimum=0):
        return fail(PROG, problem)
    output = Path(args.output)
    if output.suffix != ".jsonl":
        return fail(PROG, f"--output {output}: expected a .jsonl file name")
    try:
        check_output_file(output, inputs=[args.source], flag="--output")
        if output.exists() and not args.overwrite:
            return fail(PROG, f"--output {output} exists; pass --overwrite to replace it")
        source = Path(args.source).resolve()
        items = load_items(source)
        if not items:
            return fail(PROG, f"{source}: holds no items")
        built, summary = build_synthetic_items(items, seed=args.seed, kinds=args.kinds)
        write_text(
            output, "".join(json.dumps(it.as_dict(), ensure_ascii=False) + "\n" for it in built)
        )
    except (ValueError, OSError) as err:
        return fail(PROG, str(err))
    if args.json:
        print(
            json.dumps(
                {
                    "output": str(output),
                    "source_items": len(items),
                    "questions": summary.questions,
                    "candidates": summary.total,
                    "per_kind": summary.per_kind,
                },
                indent=2,
            )
        )
    else:
        kinds = ", ".join(f"{k} {n}" for k, n in summary.per_kind.items())
        print(
            f"wrote {summary.total} rule-rated candidates ({kinds}) for {summary.questions} "
            f"questions of {len(items)} items to {output}"
        )
    return 0
