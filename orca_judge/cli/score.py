"""orca score: score answers with an ORCA judge; report agreement when items carry ratings.

Under `torchrun` / `accelerate launch` each process scores a share of the batches and rank
0 alone prints and writes, with the predictions one process gives.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from eval_common.cli import (
    EXIT_BAD_INPUT,
    add_json_flag,
    add_progress_flag,
    bool_arg,
    command,
    fail,
    flags_problem,
)
from eval_common.jsonio import write_jsonl
from eval_common.outputs import check_output_file

PROG = "orca score"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__)
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="checkpoint directory (native or published layout) or orca ensemble folder",
    )
    parser.add_argument("--input", required=True, help="items to score (.jsonl / .json)")
    parser.add_argument("--output", help="write one prediction per line (JSONL) here")
    parser.add_argument("--backbone", help="load the backbone from here instead of the recorded id")
    parser.add_argument(
        "--strict-backbone",
        action="store_true",
        help="refuse (instead of warn) when the backbone weights differ",
    )
    parser.add_argument("--batch-size", type=int, help="items per forward pass")
    reading = parser.add_argument_group(
        "how the judge reads items (default: what the checkpoint records; for the published "
        "layout its trainer's args.yaml, else the reference's defaults)"
    )
    for name, what in (
        ("question", "the question block"),
        ("rationale", "the rationale (context) block"),
        ("transcript", "the ASR transcript (dropped when empty)"),
    ):
        reading.add_argument(
            f"--use-{name}", type=bool_arg, metavar="true|false", help=f"include {what}"
        )
    reading.add_argument(
        "--max-tokens",
        type=int,
        help="token limit; longer items are truncated (kept context shrinks first) and counted "
        "(default: the checkpoint's, else the backbone's context length)",
    )
    reading.add_argument(
        "--clamp-threshold",
        type=float,
        help="clamp means to 0/1 when the variance is at most this; 0 turns clamping off "
        "(default: the checkpoint's, or the paper's for a recognised published judge)",
    )
    parser.add_argument(
        "--device", help="auto, cpu, cuda, cuda:1, mps (default auto: cuda, then mps, then cpu)"
    )
    add_json_flag(parser, "print predictions and the agreement report as one JSON object")
    add_progress_flag(parser, "hide the progress bar")
    return parser


def setup_lines(setup: Mapping[str, Any]) -> list[str]:
    """How the judge reads and clamps, in words (printed before the scores)."""
    blocks = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in setup["inputs"].items())
    threshold = setup["clamp_threshold"]
    return [
        f"input blocks ({setup['input_settings']}): {blocks}",
        f"token limit {setup['token_limit']} ({setup['token_limit_source']})",
        f"clamp threshold {'none' if threshold is None else threshold}: {setup['clamp_reason']}",
    ]


@command(PROG)
def main(argv: list[str] | None = None) -> int:
    from orca_judge.checkpoint.ensemble import load_judge
    from orca_judge.data import load_items
    from orca_judge.processes import Processes, launched_group
    from orca_judge.report import agreement_report

    args = build_parser().parse_args(argv)
    if problem := flags_problem(args, batch_size=1, max_tokens=1, clamp_threshold=0):
        return fail(PROG, problem)
    try:
        launched = Processes.from_environment()
    except ValueError as err:
        return fail(PROG, str(err))
    try:
        if args.output:
            inputs = [args.input, args.checkpoint, args.backbone]
            check_output_file(args.output, inputs=inputs, flag="--output")
        items = load_items(args.input)
        with launched_group(args.device) as processes:
            judge = load_judge(
                args.checkpoint,
                device=processes.device(args.device),
                backbone=args.backbone,
                strict_backbone=args.strict_backbone,
                use_question=args.use_question,
                use_rationale=args.use_rationale,
                use_transcript=args.use_transcript,
                max_tokens=args.max_tokens,
                clamp_threshold=args.clamp_threshold,
            )
            preds = judge.score(
                items,
                batch_size=args.batch_size,
                progress=not args.no_progress,
                processes=processes,
            )
    except ValueError as err:
        if not launched.is_main:
            return EXIT_BAD_INPUT  # every rank stops with the same reason; rank 0 says it once
        return fail(PROG, str(err))
    if not launched.is_main:
        return 0
    setup = judge.describe()
    for line in setup_lines(setup):
        print(f"{PROG}: {line}", file=sys.stderr)
    report = agreement_report(preds, items)
    report["truncated"] = sum(p.truncated for p in preds)
    report["judge"] = setup
    rows = [p.to_dict() for p in preds]
    if args.output:
        try:
            write_jsonl(args.output, rows)
        except OSError as err:
            return fail(PROG, str(err))
    if args.json:
        print(json.dumps({"predictions": rows, "report": report}, indent=2))
        return 0
    if not args.output:
        for r in rows:
            print(f"{r['id']}\t{r['expected']:.3f}\t{r['clamped']:.3f}")
    limit = setup["token_limit"]
    print(
        f"scored {len(rows)} items ({report['truncated']} truncated to the {limit}-token limit); "
        f"{report['n']} rated, {report['skipped']} without ratings skipped in the report"
    )
    for kind in ("raw", "clamped"):
        if kind in report:
            m = report[kind]
            var = f"  MAE_var {m['mae_var']:.4f} (n={m['n_var']})" if "mae_var" in m else ""
            print(
                f"{kind:8s} rho {m['rho']:.3f}  tau {m['tau']:.3f}  MAE_mu {m['mae_mu']:.3f}{var}"
            )
    return 0
