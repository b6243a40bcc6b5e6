"""`aqua score`: score saved replies with the AQUA protocol, without running a model."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from aqua_tasks.core.data import KNOWN_TRACKS
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR, EXTRACTOR_NAMES
from aqua_tasks.errors import AquaDataError
from aqua_tasks.reports.tables import format_table
from aqua_tasks.runs import HARNESS_LMMS_EVAL, RunScores, ScoreSettings, read_run, score_run
from eval_common.cli import (
    add_json_flag,
    add_progress_flag,
    add_seed_flag,
    command,
    fail,
    number_problem,
)
from eval_common.errors import OutputError
from eval_common.jsonio import write_jsonl
from eval_common.outputs import check_output_file

PROG = "aqua score"


def build_parser() -> argparse.ArgumentParser:
    """Command-line options of aqua score."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Score saved replies to AQUA-Bench questions: Solvable accuracy and conditional "
            "accuracy (CA) on AAD, IASD and IAQD, per track. RESULTS is an lm-eval or lmms-eval "
            "output folder or samples file written with --log_samples (lmms-eval: items rebuilt "
            "from the data folder it recorded, or --data-dir), or the authors' results JSON (the "
            "released list with a 'response' key per entry)."
        ),
    )
    parser.add_argument("results", type=Path, help="results file or folder")
    parser.add_argument(
        "--extractor",
        choices=EXTRACTOR_NAMES,
        default=None,
        help=f"answer extractor (default: the one the run recorded, else {DEFAULT_EXTRACTOR})",
    )
    parser.add_argument(
        "--track",
        choices=KNOWN_TRACKS,
        help="track of an authors' results file whose name and audio paths do not tell it",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="the released AQUA-Bench files the run was made from, for lmms-eval logs, whose "
        "rows carry no docs (items are rebuilt by doc id and checked against the log); "
        "default: the data_dir the run recorded, if its files still hash as recorded",
    )
    parser.add_argument(
        "--exclude-defective",
        action="store_true",
        help="leave out items flagged as defective in the release (counts are reported)",
    )
    parser.add_argument(
        "--condition-on",
        type=Path,
        metavar="RUN",
        help="condition CA on the Solvable answers of another run (e.g. CoT CA on the plain "
        "run, the paper's Table 1 layout); default: this run's own Solvable answers",
    )
    parser.add_argument(
        "--breakdown",
        choices=("subtype", "class"),
        help="also report accuracy per item type and subtype, or per true class",
    )
    parser.add_argument(
        "--n-boot", type=int, default=2000, help="bootstrap resamples for CA intervals"
    )
    add_seed_flag(parser, help="seed of the CA bootstrap")
    parser.add_argument("--per-item", type=Path, help="write one JSON row per item here")
    add_json_flag(parser)
    add_progress_flag(parser)
    return parser


def _rebuilt(harness: str, data_dir: Path | None) -> str:
    if harness != HARNESS_LMMS_EVAL:
        return ""
    return f"; items rebuilt by doc id from {data_dir or 'the data_dir the run recorded'}"


def print_scores(scores: RunScores, results: Path, data_dir: Path | None) -> None:
    """The table, its legend, where every row was read and the breakdowns, as text."""
    conditioned = scores.conditioned_on
    print(format_table(scores.results, intervals=scores.intervals))
    print(
        "\nOri = Solvable accuracy; AAD/IASD/IAQD = conditional accuracy over the clips "
        + (
            f"whose Solvable item was answered correctly in {conditioned}"
            if conditioned
            else "whose Solvable item was answered correctly"
        )
        + " (n = clips). Brackets: 95 % intervals (Wilson; CA: clip bootstrap, "
        + f"seed {scores.seed})."
        + (
            " Rows aqua / aqua-<setting>: every clip of their tracks pooled (Σ correct / Σ n)."
            if scores.pooled
            else ""
        )
    )
    print(f"read: {results} ({scores.harness}{_rebuilt(scores.harness, data_dir)})")
    for task, m in scores.results.items():
        if task in scores.pooled:
            notes = [f"pools {', '.join(scores.pooled[task])}"]
        else:
            notes = [f"from {s.describe()}" for s in scores.sources[task]]
        notes.append(f"extractor {scores.extractors[task]}")
        if m["n_unconditioned"]:
            notes.append(f"{int(m['n_unconditioned'])} items lack their clip's Solvable item")
        if m["n_excluded"]:
            notes.append(f"{int(m['n_excluded'])} defective items excluded")
        print(f"{task}: {'; '.join(notes)}")
    by = scores.breakdown
    for task, cells in scores.breakdowns.items():
        print(f"\n{task} by {by}:\n| type | {by} | n | acc | 95 % CI |")
        print("|---|---|---|---|---|")
        for c in cells:
            low, high = c["ci95"]
            print(
                f"| {c['type']} | {c[by]} | {c['n']} | {100 * c['acc']:.1f} "
                f"| {100 * low:.1f}–{100 * high:.1f} |"
            )


@command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: exit 0 on success, 2 on unreadable or malformed input."""
    args = build_parser().parse_args(argv)
    if problem := number_problem("--n-boot", args.n_boot, minimum=1) or number_problem(
        "--seed", args.seed, minimum=0
    ):
        return fail(PROG, problem)
    try:
        if args.per_item:
            inputs = [args.results, args.condition_on, args.data_dir]
            check_output_file(args.per_item, inputs=inputs, flag="--per-item")
        run = read_run(args.results, track=args.track, data_dir=args.data_dir)
        conditioning = (
            read_run(args.condition_on, data_dir=args.data_dir) if args.condition_on else None
        )
        settings = ScoreSettings(
            extractor=args.extractor,
            exclude_defective=args.exclude_defective,
            condition_on=conditioning,
            breakdown=args.breakdown,
            n_boot=args.n_boot,
            seed=args.seed,
        )
        scores = score_run(run, settings, progress=not args.no_progress)
    except (AquaDataError, OutputError, OSError) as error:
        return fail(PROG, str(error))
    for note in (*run.notes, *(conditioning.notes if conditioning else ()), *scores.rescoring):
        print(f"{PROG}: {note}", file=sys.stderr)
    if args.per_item:
        try:
            write_jsonl(args.per_item, scores.item_rows())
        except (OutputError, OSError) as error:
            return fail(PROG, str(error))
    if args.json:
        print(json.dumps(scores.to_json(), indent=2))
    else:
        print_scores(scores, args.results, args.data_dir)
    return 0
