"""`aqua regress`: a CI gate comparing a candidate run with a baseline run, item by item."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from aqua_tasks.gate.comparability import (
    ComparedRun,
    comparability_notes,
    load_compared_run,
    why_not_comparable,
)
from aqua_tasks.gate.paired import MIN_CA_CLIPS, MIN_JUDGE_UNITS, MetricComparison, judge
from aqua_tasks.gate.summary import (
    EXIT_NOT_COMPARABLE,
    EXIT_OK,
    EXIT_REGRESSION,
    compare_runs,
    comparison_record,
    headline,
    markdown_summary,
)
from aqua_tasks.runs import rescoring_notices
from eval_common.cli import (
    add_json_flag,
    add_progress_flag,
    add_seed_flag,
    bool_arg,
    command,
    fail,
    number_problem,
)
from eval_common.jsonio import json_safe
from eval_common.outputs import append_text, check_output_file

PROG = "aqua regress"
# Names kept importable from here for callers of 0.1.0.
__all__ = [
    "EXIT_NOT_COMPARABLE",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "ComparedRun",
    "build_parser",
    "compare_runs",
    "headline",
    "load_compared_run",
    "main",
    "markdown_summary",
    "why_not_comparable",
]


def build_parser() -> argparse.ArgumentParser:
    """Command-line options of aqua regress."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Compare a candidate run of AQUA tasks with a baseline run item by item (from "
            "lm-eval or lmms-eval --log_samples output), and the mean ORCA judge score of "
            "every task run with `metric: orca`. Exit 0: no regression; 1: a metric dropped "
            "by more than --max-drop points, significant after Holm correction; 2: the runs "
            "are not comparable (tasks, items, variant, extractor, prompt, audio, judge "
            "checkpoint) or input is bad."
        ),
    )
    parser.add_argument("--baseline", required=True, type=Path, help="baseline run folder/file")
    parser.add_argument("--candidate", required=True, type=Path, help="candidate run folder/file")
    parser.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="the released AQUA-Bench files, to rebuild the items of an lmms-eval log (its rows "
        "carry no docs); used for both runs unless --baseline-data-dir/--candidate-data-dir; "
        "default: the data_dir each run recorded, if its files still hash as recorded",
    )
    parser.add_argument(
        "--baseline-data-dir", type=Path, metavar="DIR", help="--data-dir of the baseline only"
    )
    parser.add_argument(
        "--candidate-data-dir", type=Path, metavar="DIR", help="--data-dir of the candidate only"
    )
    for side in ("baseline", "candidate"):
        parser.add_argument(
            f"--{side}-audio",
            type=bool_arg,
            metavar="on|off",
            help=f"whether the {side} fed audio, for a run that does not record it (the "
            "authors' results format; an lmms-eval samples file without its results file); "
            "refused when the run records otherwise",
        )
    parser.add_argument(
        "--max-drop",
        type=float,
        default=1.0,
        metavar="POINTS",
        help="largest tolerated drop in percentage points (default: %(default)s)",
    )
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="significance level (default: %(default)s)"
    )
    add_seed_flag(parser, help="seed of the bootstrap")
    parser.add_argument(
        "--n-boot",
        type=int,
        default=5000,
        metavar="N",
        help="bootstrap resamples for CA (default: %(default)s)",
    )
    parser.add_argument(
        "--min-ca-clips",
        type=int,
        default=MIN_CA_CLIPS,
        metavar="N",
        help="test a CA only when both runs condition it on at least N clips "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--min-judge-items",
        type=int,
        default=MIN_JUDGE_UNITS,
        metavar="N",
        help="test a judge score only over at least N items (clips, for AQUA items) "
        "(default: %(default)s)",
    )
    add_json_flag(parser)
    parser.add_argument(
        "--summary",
        type=Path,
        metavar="OUT.md",
        help="also write the Markdown summary here (e.g. $GITHUB_STEP_SUMMARY; appended to)",
    )
    add_progress_flag(parser)
    return parser


@command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 no regression, 1 regression, 2 not comparable or bad input."""
    args = build_parser().parse_args(argv)
    problems = (
        number_problem("--max-drop", args.max_drop, minimum=0, maximum=100),
        number_problem("--alpha", args.alpha, minimum=0, maximum=1, open_interval=True),
        number_problem("--n-boot", args.n_boot, minimum=1),
        number_problem("--min-ca-clips", args.min_ca_clips, minimum=0),
        number_problem("--min-judge-items", args.min_judge_items, minimum=0),
        number_problem("--seed", args.seed, minimum=0),
    )
    for problem in problems:
        if problem is not None:
            return fail(PROG, problem)
    try:
        if args.summary:
            inputs = [args.baseline, args.candidate, args.data_dir]
            inputs += [args.baseline_data_dir, args.candidate_data_dir]
            check_output_file(args.summary, inputs=inputs, flag="--summary")
        base = load_compared_run(
            args.baseline, args.baseline_data_dir or args.data_dir, args.baseline_audio
        )
        cand = load_compared_run(
            args.candidate, args.candidate_data_dir or args.data_dir, args.candidate_audio
        )
    except (OSError, ValueError) as error:
        return fail(PROG, str(error))
    for notice in (*base.notes, *cand.notes, *rescoring_notices([*base.replies, *cand.replies])):
        print(f"{PROG}: {notice}", file=sys.stderr)
    reason = why_not_comparable(base, cand)
    comparisons: list[MetricComparison] = []
    if reason is None:
        for note in comparability_notes(base, cand):
            print(f"{PROG}: {note}", file=sys.stderr)
        comparisons = judge(
            compare_runs(
                base,
                cand,
                n_boot=args.n_boot,
                seed=args.seed,
                min_ca_clips=args.min_ca_clips,
                min_judge_items=args.min_judge_items,
                progress=not args.no_progress,
            ),
            max_drop=args.max_drop,
            alpha=args.alpha,
        )
    summary = markdown_summary(
        base,
        cand,
        comparisons,
        reason,
        max_drop=args.max_drop,
        alpha=args.alpha,
        n_boot=args.n_boot,
        seed=args.seed,
    )
    if args.summary:
        try:
            append_text(args.summary, summary)
        except OSError as error:
            return fail(PROG, str(error))
    if reason is not None:
        code = EXIT_NOT_COMPARABLE
    else:
        code = EXIT_REGRESSION if any(c.regression for c in comparisons) else EXIT_OK
    if args.json:
        payload = {
            "status": {0: "ok", 1: "regression", 2: "not comparable"}[code],
            "reason": reason,
            # Each run with the file, model and date every task's figures come from.
            **{
                side: {
                    "path": str(run.path),
                    "label": run.label,
                    "harness": run.harness,
                    "sources": [s.as_record() for s in run.sources],
                }
                for side, run in (("baseline", base), ("candidate", cand))
            },
            "settings": {
                "max_drop": args.max_drop,
                "alpha": args.alpha,
                "seed": args.seed,
                "n_boot": args.n_boot,
                "min_ca_clips": args.min_ca_clips,
                "min_judge_items": args.min_judge_items,
            },
            "comparisons": [comparison_record(c) for c in comparisons],
        }
        print(json.dumps(json_safe(payload), indent=2))
    elif reason is None:
        print(summary)
    line = headline(comparisons, reason, args.max_drop, args.alpha)
    # stdout stays pure JSON with --json; failures go to stderr, where CI logs show them.
    print(f"{PROG}: {line}", file=sys.stderr if code or args.json else sys.stdout)
    return code
