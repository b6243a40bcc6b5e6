"""orca average: one judge whose weights are the mean of several judges' weights.

Typical use: the evaluation checkpoints a run kept with `orca train --keep-evaluations N`
    orca average runs/judge-run/evaluations/step-* --output runs/judge-avg
The judges must share settings and backbone weights. LoRA updates are averaged exactly and
factored back to the adapter's rank; the part that rank cannot hold is reported. The average
has no clamp threshold (that is tuned per judge); compare it on dev before using it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from eval_common.cli import add_json_flag, command, fail
from orca_judge.training.averaging import average_checkpoints

PROG = "orca average"


def build_parser() -> argparse.ArgumentParser:
    """The `orca average` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "checkpoints", nargs="+", help="native judge checkpoint folders (2 or more)"
    )
    parser.add_argument("--output", required=True, help="checkpoint folder to write")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing, non-empty --output"
    )
    add_json_flag(parser)
    return parser


@command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `orca average`; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        report = average_checkpoints(args.checkpoints, args.output, overwrite=args.overwrite)
    except ValueError as err:
        return fail(PROG, str(err))
    if args.json:
        print(
            json.dumps(
                {
                    "output": str(report.output),
                    "sources": report.sources,
                    "lora_modules": report.lora_modules,
                    "max_truncation_error": report.max_truncation_error,
                    "median_truncation_error": report.median_truncation_error,
                },
                indent=2,
            )
        )
    else:
        print(
            f"averaged {len(report.sources)} judges into {report.output}; LoRA modules "
            f"{report.lora_modules}, share of the mean update lost to the rank: max "
            f"{report.max_truncation_error:.2e}, median {report.median_truncation_error:.2e}"
        )
    return 0
