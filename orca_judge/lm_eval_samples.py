"""orca-lm-eval-items: turn lm-eval samples (e.g. from --predict_only) into orca-score input.

Each sample becomes the record `metric: orca` would have judged in the run: the same doc
fields, reference and filtered reply, with the same id, so `orca-score` on the output gives
the numbers of judging in the run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from aqua_tasks.runs import iter_jsonl

from .lm_eval_metric import OrcaMetricSettings, judge_inputs

NOT_LOADED = "(field names only)"


def read_samples(path: str | Path) -> list[dict[str, Any]]:
    """The samples of one lm-eval `samples_<task>_<time>.jsonl` file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    samples = []
    for line_no, sample in iter_jsonl(path):
        if not isinstance(sample, dict) or "doc" not in sample or "target" not in sample:
            raise ValueError(f"{path}:{line_no}: not an lm-eval sample (no doc/target)")
        samples.append(sample)
    return samples


def items_from_samples(
    samples: Iterable[dict[str, Any]],
    settings: OrcaMetricSettings | None,
    filter_name: str | None = None,
) -> list[dict[str, Any]]:
    """orca-score records for the samples of one filter (settings None: the doc-less form)."""
    samples = list(samples)
    filters = list(dict.fromkeys(s.get("filter", "none") for s in samples))
    if filter_name is None:
        if len(filters) > 1:
            raise ValueError(f"samples have several filters ({', '.join(filters)}); pick --filter")
        filter_name = filters[0] if filters else "none"
    elif filter_name not in filters:
        raise ValueError(f"no samples for filter {filter_name!r} (have: {', '.join(filters)})")
    items = []
    for index, sample in enumerate(s for s in samples if s.get("filter", "none") == filter_name):
        replies = sample.get("filtered_resps") or [""]
        record = judge_inputs(
            settings,
            reference=sample["target"],
            candidate=replies[0],
            doc=sample["doc"],
            index=index,
        )
        record["id"] = record["id"] if record["id"] is not None else str(index)
        items.append(record)
    return items


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orca-lm-eval-items", description=__doc__)
    parser.add_argument("samples", help="an lm-eval samples_<task>_<time>.jsonl file")
    parser.add_argument("--output", required=True, help="write orca-score input (JSONL) here")
    parser.add_argument("--filter", help="the filter whose replies to take (if several)")
    parser.add_argument(
        "--doc-less",
        action="store_true",
        help="mirror the plain `!function` form: no question, rationale, transcript, rating",
    )
    defaults = OrcaMetricSettings(checkpoint=NOT_LOADED)
    for name in ("question", "rationale", "transcript", "ratings", "id"):
        parser.add_argument(
            f"--{name}-field",
            default=getattr(defaults, f"{name}_field"),
            help=f"doc field with the {name} ('' for none; as the metric entry's {name}_field)",
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
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
        items = items_from_samples(read_samples(args.samples), settings, args.filter)
    except ValueError as err:
        print(f"orca-lm-eval-items: error: {err}", file=sys.stderr)
        return 2
    out = Path(args.output)
    out.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    print(f"wrote {len(items)} items to {out}; score them with: orca-score --input {out} ...")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
