"""aqua orca-items: turn lm-eval samples (e.g. from --predict_only) into orca score input.

Each sample becomes the record `metric: orca` would have judged in the run: the same doc
fields, reference and filtered reply, with the same id, so `orca score` on the output gives
the numbers of judging in the run. lmms-eval samples log no doc: an AQUA task's docs are
rebuilt by doc id from the released files (--data-dir), any other task's from its data file
(--docs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from aqua_tasks.runs import NOT_LOADED, orca_records, read_judge_samples, samples_file_of
from eval_common.cli import command, fail
from eval_common.jsonio import write_jsonl
from eval_common.outputs import check_output_file
from orca_judge.metric.settings import OrcaMetricSettings

PROG = "aqua orca-items"


def build_parser() -> argparse.ArgumentParser:
    """The `aqua orca-items` argument parser."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__)
    parser.add_argument(
        "samples",
        help="an lm-eval samples_<task>_<time>.jsonl or lmms-eval <time>_samples_<task>.jsonl "
        "file, or a run folder holding one",
    )
    parser.add_argument(
        "--data-dir",
        help="lmms-eval samples of an AQUA task: the released AQUA-Bench files, to rebuild "
        "each row's doc by its doc_id (default: the data_dir the run recorded, if its file "
        "still hashes as recorded)",
    )
    parser.add_argument(
        "--docs",
        help="lmms-eval samples of another task: its data file (JSON list or JSON Lines), doc "
        "i being the task's doc i, to rebuild each row's doc by its doc_id",
    )
    parser.add_argument("--output", required=True, help="write orca score input (JSONL) here")
    parser.add_argument("--filter", help="the filter whose replies to take (if several)")
    parser.add_argument(
        "--doc-less",
        action="store_true",
        help="mirror the plain `!function` form: no question, rationale, transcript, rating",
    )
    defaults = OrcaMetricSettings(checkpoint=NOT_LOADED)
    parser.add_argument(
        "--question-field",
        default=defaults.question_field,
        help="doc field with the question (default: `question` if the doc has one, else the "
        "prompt lm-eval sent; '' for none; as the metric entry's question_field)",
    )
    for name in ("rationale", "transcript", "ratings", "id"):
        parser.add_argument(
            f"--{name}-field",
            default=getattr(defaults, f"{name}_field"),
            help=f"doc field with the {name} ('' for none; as the metric entry's {name}_field)",
        )
    return parser


@command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `aqua orca-items`; returns the exit status."""
    args = build_parser().parse_args(argv)
    settings = None
    if not args.doc_less:
        settings = OrcaMetricSettings(
            checkpoint=NOT_LOADED,
            question_field=args.question_field,
            rationale_field=args.rationale_field,
            transcript_field=args.transcript_field,
            ratings_field=args.ratings_field,
            id_field=args.id_field,
        )
    try:
        inputs = [args.samples, args.data_dir, args.docs]
        check_output_file(args.output, inputs=inputs, flag="--output")
        read = read_judge_samples(
            samples_file_of(args.samples),
            data_dir=args.data_dir,
            docs_file=args.docs,
            question_field=args.question_field or None,
        )
        items = orca_records(read.items, settings, args.filter)
        out = write_jsonl(args.output, items)
    except (ValueError, OSError) as err:
        return fail(PROG, str(err))
    for note in read.notes:
        print(f"{PROG}: {note}", file=sys.stderr)
    print(
        f"wrote {len(items)} items ({read.harness} samples) to {out}; score them with: "
        f"orca score --input {out} ..."
    )
    return 0
