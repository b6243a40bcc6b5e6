"""`aqua demo`: a self-contained AQUA run on the project's own questions and synthesized audio."""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path

from aqua_tasks.reports.tables import format_table
from eval_common.cli import RESUMES, add_json_flag, command, fail
from eval_common.outputs import check_output_folder, mark_output_folder
from eval_plugins.lm_eval.aqua.demo import DEMO_NAMES, run_demo
from eval_plugins.lm_eval.registration import register_all

PROG = "aqua demo"


def build_parser() -> argparse.ArgumentParser:
    """The `aqua demo` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run the AQUA baselines through lm-eval on built-in demo questions and "
        "synthesized audio, and print the results in the paper's layout.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="keep the demo data here (default: temp dir); a non-empty folder aqua demo did not "
        "write needs --overwrite",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a non-empty --out that is not aqua demo's (only its own files change)",
    )
    parser.add_argument("--clips-per-class", type=int, default=2, help="clips per class")
    add_json_flag(parser, "print results as JSON")
    return parser


@command(PROG, on_interrupt=RESUMES)
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `aqua demo`; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.clips_per_class < 1:
        return fail(PROG, "--clips-per-class must be at least 1")
    if args.out is not None:
        check_output_folder(
            args.out, command=PROG, flag="--out", owned=DEMO_NAMES, overwrite=args.overwrite
        )
    # The demo's output is the table; lm-eval's progress notes would bury it.
    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="aqua-demo-") as tmp:
        out = args.out or Path(tmp)
        register_all()
        results = run_demo(out, args.clips_per_class)
        if args.out is not None:
            mark_output_folder(out, PROG)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for model, per_track in results.items():
        print(f"\n## {model}\n")
        print(format_table(per_track))
    print(
        "\nOri = Solvable accuracy; AAD/IASD/IAQD = conditional accuracy (CA) over clips whose "
        "Solvable question was answered correctly. 'aqua-always-reject' shows why CA alone is "
        "not enough: rejecting everything gives CA = 100 with a low Ori."
    )
    return 0
