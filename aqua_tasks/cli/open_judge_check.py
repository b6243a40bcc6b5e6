"""aqua open-judge-check: is a judge checkpoint fit to score open-ended AQUA (`aqua-open_*`)?

Scores, on the open tasks' own items, the clip's class and hand-written abstentions against
class references, and abstentions and class names against the abstention reference, and
says how often the judge calls each right. With --human-items (rated items in the format
orca score reads, e.g. the ORCA human ratings), the rated candidates the rules read as
abstaining are scored too, beside the humans' ratings. Exit 0 when the judge is fit (at most
--tolerance of its verdicts wrong in any pair), 1 when not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from aqua_tasks.core.data import TRACKS
from aqua_tasks.core.open_ended import JudgeRule
from aqua_tasks.reports.judge_abstention import (
    AbstentionCheck,
    abstaining_human_items,
    check_items,
    check_markdown,
    human_abstentions,
    pair_shares,
    wording_shares,
)
from aqua_tasks.task.open_ended import build_open_docs
from eval_common.cli import add_json_flag, add_seed_flag, command, fail, number_problem
from eval_common.jsonio import json_safe

PROG = "aqua open-judge-check"


def build_parser() -> argparse.ArgumentParser:
    """The `aqua open-judge-check` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--checkpoint", required=True, help="ORCA judge checkpoint or orca ensemble folder"
    )
    parser.add_argument("--data-dir", required=True, type=Path, help="the released AQUA files")
    parser.add_argument(
        "--track", action="append", choices=TRACKS, help="tracks to draw items from (default: all)"
    )
    parser.add_argument(
        "--limit", type=int, default=200, help="open items per track (default: %(default)s)"
    )
    parser.add_argument("--human-items", type=Path, help="human-rated items (JSON Lines)")
    parser.add_argument(
        "--judge-threshold",
        type=float,
        default=4.0,
        help="expected rating at which an answer counts as right (default: %(default)s)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.1,
        help="largest share of wrong verdicts in any pair a fit judge may give (default: 0.1)",
    )
    parser.add_argument("--backbone", help="load the checkpoint's backbone from here")
    parser.add_argument("--device", help="cpu, cuda, … (default: cuda if available)")
    parser.add_argument("--batch-size", type=int, default=16)
    add_seed_flag(parser, help="seed choosing the abstention and class name per item")
    add_json_flag(parser)
    return parser


@command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 when the judge is fit, 1 when not, 2 on bad input."""
    args = build_parser().parse_args(argv)
    for flag, value, low in (("--limit", args.limit, 1), ("--batch-size", args.batch_size, 1)):
        if problem := number_problem(flag, value, minimum=low):
            return fail(PROG, problem)
    # A share of wrong verdicts: NaN or a negative tolerance would turn every judge "NOT fit".
    if problem := number_problem("--tolerance", args.tolerance, minimum=0, maximum=1):
        return fail(PROG, problem)
    rule = JudgeRule.from_setting(args.judge_threshold)
    from orca_judge.checkpoint.ensemble import load_judge
    from orca_judge.data import load_items

    docs = []
    for track in args.track or TRACKS:
        track_docs, _ = build_open_docs(
            track, data_dir=str(args.data_dir), settings={"audio": False}
        )
        docs += track_docs[: args.limit]
    items = check_items(docs, seed=args.seed)
    judge = load_judge(args.checkpoint, device=args.device, backbone=args.backbone)
    records = [{k: v for k, v in item.items() if k != "pair"} for item in items]
    units = [p.expected_unit for p in judge.score(records, batch_size=args.batch_size)]
    human = None
    if args.human_items:
        rated = abstaining_human_items(load_items(args.human_items, require_ratings=True))
        human_units = [p.expected_unit for p in judge.score(rated, batch_size=args.batch_size)]
        human = human_abstentions(rated, human_units, rule)
    check = AbstentionCheck(
        str(args.checkpoint),
        rule.describe(),
        pair_shares(items, units, rule),
        human,
        wording_shares(items, units, rule),
    )
    fit = check.worst_error <= args.tolerance
    if args.json:
        payload = asdict(check) | {"verdict": check.verdict(args.tolerance), "fit": fit}
        print(json.dumps(json_safe(payload), indent=2))
    else:
        print(check_markdown(check))
    return 0 if fit else 1
