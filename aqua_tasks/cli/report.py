"""`aqua report`: the paper's table (Markdown, CSV) and a chart from AQUA runs."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from aqua_tasks.core.extract import EXTRACTOR_NAMES
from aqua_tasks.errors import PlottingUnavailable
from aqua_tasks.reports.charts import VECTOR_FORMATS, plot_calibration
from aqua_tasks.reports.folder import REPORT_NAMES, save_figure, write_report
from aqua_tasks.reports.run_metrics import load_run_metrics
from aqua_tasks.reports.tables import build_table, to_markdown
from aqua_tasks.runs.open_ended import has_choice_tasks, open_markdown, open_run_scores
from eval_common.cli import RESUMES, add_json_flag, add_seed_flag, command, fail, number_problem
from eval_common.jsonio import json_safe
from eval_common.outputs import check_output_folder, mark_output_folder, write_text

PROG = "aqua report"


def build_parser() -> argparse.ArgumentParser:
    """Command-line options of aqua report."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Results table in the AQUA-Bench paper's layout (models × tracks × Ori/AAD/IASD/IAQD, "
            "with n per cell, the unparsed rate, the extractor per row and all tracks pooled) as "
            "Markdown and CSV, and a chart with 95 % intervals (PNG and SVG or PDF). "
            "Each RUN is an lm-eval or lmms-eval --output_path folder of aqua_* tasks (the "
            "newest results file in it is used and named; its logged samples give the "
            "intervals; lmms-eval: with --data-dir), a results file, or the output of "
            "aqua score --json."
        ),
    )
    parser.add_argument("runs", nargs="*", type=Path, metavar="RUN", help="run folder or file")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("aqua report"),
        help="output folder (default: %(default)s); a non-empty folder aqua report did not "
        "write needs --overwrite",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a non-empty --out that is not aqua report's (only its own files change)",
    )
    parser.add_argument(
        "--label",
        action="append",
        metavar="NAME",
        help="row label per RUN, in order (repeat; default: from the run's model_args)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="the released AQUA-Bench files the runs were made from, for lmms-eval logs, "
        "whose rows carry no docs (items are rebuilt by doc id and checked); default: the "
        "data_dir each run recorded, if its files still hash as recorded",
    )
    parser.add_argument(
        "--paper",
        action="store_true",
        help="add the paper's published Table 1 rows, marked '(published)'",
    )
    parser.add_argument(
        "--extractor",
        action="append",
        choices=EXTRACTOR_NAMES,
        metavar="NAME",
        help="re-score the runs' logged replies with this extractor (repeat for one row per "
        "extractor), e.g. `official`, the authors' rule the published rows were scored by; "
        f"one of {', '.join(EXTRACTOR_NAMES)}; default: the extractor each run recorded",
    )
    parser.add_argument(
        "--vector",
        choices=VECTOR_FORMATS,
        default="svg",
        help="vector format of the chart written beside chart.png (default: %(default)s)",
    )
    parser.add_argument(
        "--n-boot", type=int, default=2000, help="bootstrap resamples for CA intervals"
    )
    add_seed_flag(parser, help="seed of the CA bootstrap")
    parser.add_argument(
        "--no-chart", action="store_true", help="write no chart (needs no matplotlib)"
    )
    parser.add_argument(
        "--orca-predictions",
        type=Path,
        metavar="PRED.jsonl",
        help="orca score --output file: also draw the judge's calibration against human ratings",
    )
    parser.add_argument(
        "--orca-items",
        type=Path,
        metavar="ITEMS.jsonl",
        help="the rated items the ORCA predictions were scored on (with 'ratings')",
    )
    parser.add_argument(
        "--orca-run",
        type=Path,
        metavar="RUN",
        help="an lm-eval --output_path folder (or orca_<task>_<filter>_*.jsonl file) of a run "
        "with `metric: orca` over human-rated docs, e.g. the orca_human task: draw the judge's "
        "calibration per task from the per-item results written there",
    )
    add_json_flag(parser)
    return parser


@command(PROG, on_interrupt=RESUMES)
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 on success, 1 when the chart cannot be drawn, 2 on bad input."""
    args = build_parser().parse_args(argv)
    if problem := number_problem("--n-boot", args.n_boot, minimum=1) or number_problem(
        "--seed", args.seed, minimum=0
    ):
        return fail(PROG, problem)
    if not args.runs and not args.orca_predictions and not args.orca_run:
        return fail(
            PROG, "give at least one RUN, --orca-run, or --orca-predictions with --orca-items"
        )
    if bool(args.orca_predictions) != bool(args.orca_items):
        return fail(PROG, "--orca-predictions and --orca-items go together")
    if args.label and len(args.label) != len(args.runs):
        return fail(
            PROG, f"got {len(args.label)} --label for {len(args.runs)} runs; give one per run"
        )
    written: dict[str, Path] = {}
    payload: dict[str, object] = {}
    try:
        check_output_folder(
            args.out,
            command=PROG,
            flag="--out",
            inputs=[*args.runs, args.orca_predictions, args.orca_items, args.orca_run],
            owned=REPORT_NAMES,
            overwrite=args.overwrite,
        )
        open_rows = []
        for k, run in enumerate(args.runs):
            label = args.label[k] if args.label else Path(run).name
            open_rows += [(label, scores) for scores in open_run_scores(run)]
        if open_rows:
            written["open_ended"] = write_text(args.out / "open_ended.md", open_markdown(open_rows))
            payload["open_ended"] = [
                {"label": label, **asdict(scores)} for label, scores in open_rows
            ]
        # A run of open tasks alone has no multiple-choice row.
        mc_runs = [(k, r) for k, r in enumerate(args.runs) if not open_rows or has_choice_tasks(r)]
        if mc_runs:
            runs, labels = [], []
            for extractor in args.extractor or [None]:
                for k, run in mc_runs:
                    metrics = load_run_metrics(
                        run,
                        extractor=extractor,
                        n_boot=args.n_boot,
                        seed=args.seed,
                        data_dir=args.data_dir,
                    )
                    label = args.label[k] if args.label else metrics.label
                    runs.append(metrics)
                    labels.append(
                        f"{label} [{extractor}]" if len(args.extractor or []) > 1 else label
                    )
            table = build_table(runs, labels=labels, published=args.paper)
            written = write_report(table, args.out, chart=not args.no_chart, vector=args.vector)
            payload["rows"] = [
                {
                    "label": row.label,
                    "published": row.published,
                    "extractor": row.extractor,
                    "harness": row.harness,
                    "cells": {
                        t: {
                            k: {"value": c.value, "n": c.n, "low": c.low, "high": c.high}
                            for k, c in cells.items()
                        }
                        for t, cells in row.cells.items()
                    },
                }
                for row in table.rows
            ]
            payload["sources"] = list(table.sources)
            # Per run, the file, model and date of every task's figures.
            payload["read_from"] = [
                {"label": name, "path": run.source, "tasks": list(run.read_from)}
                for name, run in zip(labels, runs, strict=True)
            ]
        if args.orca_predictions:
            from orca_judge.calibration import calibration_markdown, load_calibration

            calibration = load_calibration(args.orca_predictions, args.orca_items)
            written["orca_markdown"] = write_text(
                args.out / "orca_calibration.md", calibration_markdown(calibration)
            )
            payload["orca"] = json_safe(asdict(calibration))
            if not args.no_chart:
                written["orca_chart"] = save_figure(
                    plot_calibration(calibration), args.out / "orca_calibration.png", dpi=150
                )
        if args.orca_run:
            from aqua_tasks.runs.judge_calibrations import load_run_calibrations
            from orca_judge.calibration import calibration_markdown

            calibrations = load_run_calibrations(args.orca_run)
            payload["orca_run"] = {}
            for name, cal in calibrations.items():
                stem = args.out / f"orca_calibration_{name}"
                text = calibration_markdown(cal, f"{args.orca_run}, task {name}")
                written[f"orca_markdown_{name}"] = write_text(stem.with_suffix(".md"), text)
                payload["orca_run"][name] = json_safe(asdict(cal))
                if not args.no_chart:
                    written[f"orca_chart_{name}"] = save_figure(
                        plot_calibration(cal), stem.with_suffix(".png"), dpi=150
                    )
        mark_output_folder(args.out, PROG)
    except (ValueError, OSError) as error:
        return fail(PROG, str(error))
    except PlottingUnavailable as error:
        fail(PROG, f"{error} (or pass --no-chart)")
        return 1
    payload["written"] = {k: str(v) for k, v in written.items()}
    if args.json:
        print(json.dumps(json_safe(payload), indent=2, ensure_ascii=False))
    else:
        if mc_runs:
            print(to_markdown(table))
        if open_rows:
            print("\nOpen-ended vs multiple choice (judged; rules beside):")
            print(open_markdown(open_rows))
        for kind, path in written.items():
            print(f"wrote {kind}: {path}")
    return 0
