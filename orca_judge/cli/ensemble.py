"""orca ensemble: several trained judges in one folder, scored as the mixture of their predictions.

Typical use: the judges of one recipe trained at three seeds
    orca ensemble runs/judge-seed-0 runs/judge-seed-1 runs/judge-seed-2 --output runs/judge-ensemble
The folder loads wherever one judge does (orca score, `metric: orca`, aqua open-judge-check):
each item's predicted rating distribution is the equal mixture of the members', at the cost of
one forward pass per member. Members must read the same input blocks with one likelihood; each
keeps its own clamp threshold. A member changed after this command is refused at load.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from eval_common.cli import add_json_flag, command, fail

PROG = "orca ensemble"


def build_parser() -> argparse.ArgumentParser:
    """The `orca ensemble` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "checkpoints", nargs="+", help="native judge checkpoint folders (2 or more)"
    )
    parser.add_argument("--output", required=True, help="ensemble folder to write")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing, non-empty --output"
    )
    parser.add_argument(
        "--backbone", help="load the members' backbone from here to check them (not recorded)"
    )
    add_json_flag(parser)
    return parser


@command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `orca ensemble`; returns the exit status."""
    args = build_parser().parse_args(argv)
    from orca_judge.checkpoint.ensemble import write_ensemble

    try:
        members = write_ensemble(
            args.checkpoints, args.output, overwrite=args.overwrite, backbone=args.backbone
        )
    except ValueError as err:
        return fail(PROG, str(err))
    if args.json:
        print(json.dumps({"output": args.output, "members": members}, indent=2))
    else:
        listed = ", ".join(f"{m['folder']} ({m['fingerprint']})" for m in members)
        print(f"wrote an ensemble of {len(members)} judges to {args.output}: {listed}")
    return 0
