"""`aqua-score`: score saved replies with the AQUA protocol, without running a model."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from aqua_tasks.data import TRACKS, AquaDataError
from aqua_tasks.extract import EXTRACTOR_NAMES, EXTRACTOR_VERSIONS
from aqua_tasks.replies import SavedReply, iter_tasks, read_replies
from aqua_tasks.scoring import Verdict, format_table, metric_value, score_reply, summarize


def build_parser() -> argparse.ArgumentParser:
    """Command-line options of aqua-score."""
    parser = argparse.ArgumentParser(
        prog="aqua-score",
        description=(
            "Score saved replies to AQUA-Bench questions: Solvable accuracy and conditional "
            "accuracy (CA) on AAD, IASD and IAQD, per track. RESULTS is an lm-eval output "
            "folder or samples_*.jsonl file written with --log_samples, or the authors' "
            "results JSON (the released list with a 'response' key per entry)."
        ),
    )
    parser.add_argument("results", type=Path, help="results file or folder")
    parser.add_argument(
        "--extractor",
        choices=EXTRACTOR_NAMES,
        default=None,
        help="answer extractor (default: the one recorded in lm-eval samples, else mmau)",
    )
    parser.add_argument(
        "--track",
        choices=TRACKS,
        help="track of an authors' results file whose name and audio paths do not tell it",
    )
    parser.add_argument(
        "--exclude-defective",
        action="store_true",
        help="leave out items flagged as defective in the release (counts are reported)",
    )
    parser.add_argument("--per-item", type=Path, help="write one JSON row per item here")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    return parser


def score_replies(
    replies: Sequence[SavedReply], *, extractor: str | None, exclude_defective: bool
) -> list[Verdict]:
    """Verdicts for saved replies; a recorded extractor is used unless one is given."""
    return [
        score_reply(
            r.item,
            r.reply,
            extractor=extractor or r.extractor or "mmau",
            exclude_defective=exclude_defective or r.exclude_defective,
        )
        for r in replies
    ]


def _json_safe(summary: dict[str, float]) -> dict[str, float | None]:
    return {k: (None if math.isnan(v) else v) for k, v in summary.items()}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: exit 0 on success, 2 on unreadable or malformed input."""
    args = build_parser().parse_args(argv)
    try:
        replies = read_replies(args.results, track=args.track)
    except (AquaDataError, OSError) as error:
        print(f"aqua-score: error: {error}", file=sys.stderr)
        return 2
    per_task: dict[str, dict[str, float]] = {}
    extractors: dict[str, str] = {}
    rows: list[dict] = []
    for task, task_replies in iter_tasks(replies):
        verdicts = score_replies(
            task_replies, extractor=args.extractor, exclude_defective=args.exclude_defective
        )
        per_task[task] = summarize(metric_value(v) for v in verdicts)
        extractors[task] = ",".join(sorted({v.extractor for v in verdicts}))
        rows.extend({"task": task, **v.to_record()} for v in verdicts)
    if args.per_item:
        args.per_item.parent.mkdir(parents=True, exist_ok=True)
        with args.per_item.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    if args.json:
        payload = {
            "results": {task: _json_safe(m) for task, m in per_task.items()},
            "extractor": extractors,
            "extractor_versions": EXTRACTOR_VERSIONS,
            "source": str(args.results),
        }
        print(json.dumps(payload, indent=2))
    else:
        print(format_table(per_task))
        print(
            "\nOri = Solvable accuracy; AAD/IASD/IAQD = conditional accuracy over the clips "
            "whose Solvable item was answered correctly (n = clips)."
        )
        for task, m in per_task.items():
            notes = [f"extractor {extractors[task]}"]
            if m["n_unconditioned"]:
                notes.append(f"{int(m['n_unconditioned'])} items lack their clip's Solvable item")
            if m["n_excluded"]:
                notes.append(f"{int(m['n_excluded'])} defective items excluded")
            print(f"{task}: {'; '.join(notes)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
