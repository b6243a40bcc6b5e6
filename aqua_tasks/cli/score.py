"""`aqua-score`: score saved replies with the AQUA protocol, without running a model."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from aqua_tasks.core.data import KNOWN_TRACKS
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR, EXTRACTOR_NAMES, EXTRACTOR_VERSIONS
from aqua_tasks.core.intervals import metric_intervals
from aqua_tasks.core.pooling import all_tracks_rows, pool_condition, pool_outcomes
from aqua_tasks.core.scoring import metric_value, summarize
from aqua_tasks.errors import AquaDataError
from aqua_tasks.reports.tables import format_table
from aqua_tasks.runs import (
    HARNESS_LMMS_EVAL,
    Run,
    RunSource,
    breakdown,
    condition_map,
    iter_tasks,
    read_run,
    require_aqua_items,
    rescoring_notices,
)
from aqua_tasks.runs import score_items as score_replies
from eval_common.cli import (
    add_json_flag,
    add_progress_flag,
    add_seed_flag,
    command,
    fail,
    number_problem,
    progress,
)
from eval_common.errors import OutputError
from eval_common.jsonio import json_safe, write_jsonl
from eval_common.outputs import check_output_file

PROG = "aqua-score"


def build_parser() -> argparse.ArgumentParser:
    """Command-line options of aqua-score."""
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


def task_sources(
    run: Run, per_task: Mapping[str, object], pooled: Mapping[str, list[str]]
) -> dict[str, list[RunSource]]:
    """Per scored row, where each of its items was read: file, model and date of its run."""
    found: dict[str, list[RunSource]] = {task: [] for task in per_task}
    for source in run.sources():
        if source.task in found:
            found[source.task].append(source)
    for name, members in pooled.items():
        found[name] = [s for member in members for s in found[member]]
    return found


def _rebuilt(harness: str, data_dir: Path | None) -> str:
    if harness != HARNESS_LMMS_EVAL:
        return ""
    return f"; items rebuilt by doc id from {data_dir or 'the data_dir the run recorded'}"


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
        replies = require_aqua_items(run)
        conditioning = (
            read_run(args.condition_on, data_dir=args.data_dir) if args.condition_on else None
        )
        conditions = (
            condition_map(require_aqua_items(conditioning), args.extractor)
            if conditioning
            else None
        )
    except (AquaDataError, OutputError, OSError) as error:
        return fail(PROG, str(error))
    for note in (*run.notes, *(conditioning.notes if conditioning else ())):
        print(f"{PROG}: {note}", file=sys.stderr)
    if args.extractor is None:
        for notice in rescoring_notices(replies):
            print(f"{PROG}: {notice}", file=sys.stderr)
    per_task: dict[str, dict[str, float]] = {}
    intervals: dict[str, dict[str, tuple[float, float]]] = {}
    extractors: dict[str, str] = {}
    breakdowns: dict[str, list[dict]] = {}
    rows: list[dict] = []
    values_of: dict[str, list[dict]] = {}
    conditions_of: dict[str, dict] = {}
    tasks = iter_tasks(replies)
    for task, task_replies in progress(tasks, "scoring", not args.no_progress, unit="task"):
        verdicts = score_replies(
            task_replies, extractor=args.extractor, exclude_defective=args.exclude_defective
        )
        values = [metric_value(v) for v in verdicts]
        condition = None
        if conditions is not None:
            track = task_replies[0].item.track
            if track not in conditions:
                return fail(
                    PROG, f"--condition-on {args.condition_on} has no {track} Solvable items"
                )
            condition = conditions[track]
            conditions_of[task] = condition
        values_of[task] = values
        per_task[task] = summarize(values, condition)
        intervals[task] = metric_intervals(
            values, condition=condition, n_boot=args.n_boot, seed=args.seed
        )
        extractors[task] = ",".join(sorted({v.extractor for v in verdicts}))
        if args.breakdown:
            breakdowns[task] = breakdown(task_replies, verdicts, args.breakdown)
        rows.extend(
            {"task": task, **v.to_record(), "manifest": dict(r.manifest)}
            for r, v in zip(task_replies, verdicts, strict=True)
        )
    # All-tracks rows pool the clips of their tracks (Σ correct / Σ n), with their intervals.
    pooled_rows = all_tracks_rows(per_task)
    for name, members in pooled_rows.items():
        pooled = pool_outcomes({t: values_of[t] for t in members})
        condition = pool_condition({t: conditions_of[t] for t in members}) if conditions else None
        per_task[name] = summarize(pooled, condition)
        intervals[name] = metric_intervals(
            pooled, condition=condition, n_boot=args.n_boot, seed=args.seed
        )
        extractors[name] = ",".join(sorted({extractors[t] for t in members}))
    if args.per_item:
        try:
            write_jsonl(args.per_item, rows)
        except (OutputError, OSError) as error:
            return fail(PROG, str(error))
    if args.json:
        payload = {
            "results": per_task,
            "intervals": {"level": 0.95, "seed": args.seed, "n_boot": args.n_boot, **intervals},
            "extractor": extractors,
            "extractor_versions": EXTRACTOR_VERSIONS,
            "conditioned_on": str(args.condition_on) if args.condition_on else None,
            "source": str(args.results),
            "harness": run.harness,
            # Which file, model and date every figure comes from (pooled rows: their tracks').
            "sources": {
                task: [s.as_record() for s in found]
                for task, found in task_sources(run, per_task, pooled_rows).items()
            },
            "notes": list(run.notes),
        }
        if args.breakdown:
            payload["breakdown"] = breakdowns
        print(json.dumps(json_safe(payload), indent=2))
        return 0
    print(format_table(per_task, intervals=intervals))
    print(
        "\nOri = Solvable accuracy; AAD/IASD/IAQD = conditional accuracy over the clips "
        + (
            f"whose Solvable item was answered correctly in {args.condition_on}"
            if args.condition_on
            else "whose Solvable item was answered correctly"
        )
        + " (n = clips). Brackets: 95 % intervals (Wilson; CA: clip bootstrap, "
        + f"seed {args.seed})."
        + (
            " Rows aqua / aqua-<setting>: every clip of their tracks pooled (Σ correct / Σ n)."
            if pooled_rows
            else ""
        )
    )
    print(f"read: {args.results} ({run.harness}{_rebuilt(run.harness, args.data_dir)})")
    sources = task_sources(run, per_task, pooled_rows)
    for task, m in per_task.items():
        if task in pooled_rows:
            notes = [f"pools {', '.join(pooled_rows[task])}"]
        else:
            notes = [f"from {s.describe()}" for s in sources[task]]
        notes.append(f"extractor {extractors[task]}")
        if m["n_unconditioned"]:
            notes.append(f"{int(m['n_unconditioned'])} items lack their clip's Solvable item")
        if m["n_excluded"]:
            notes.append(f"{int(m['n_excluded'])} defective items excluded")
        print(f"{task}: {'; '.join(notes)}")
    for task, cells in breakdowns.items():
        print(f"\n{task} by {args.breakdown}:\n| type | {args.breakdown} | n | acc | 95 % CI |")
        print("|---|---|---|---|---|")
        for c in cells:
            low, high = c["ci95"]
            print(
                f"| {c['type']} | {c[args.breakdown]} | {c['n']} | {100 * c['acc']:.1f} "
                f"| {100 * low:.1f}–{100 * high:.1f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
