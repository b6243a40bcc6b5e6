"""orca-score: score answers with an ORCA judge; report agreement when items carry ratings."""

from __future__ import annotations

import argparse
import json

from aqua_tasks.cli_common import add_json_flag, add_progress_flag, fail
from aqua_tasks.serialize import write_jsonl

PROG = "orca-score"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__)
    parser.add_argument(
        "--checkpoint", required=True, help="checkpoint directory (native or published layout)"
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
    parser.add_argument(
        "--device", help="auto, cpu, cuda, cuda:1, mps (default auto: cuda, then mps, then cpu)"
    )
    add_json_flag(parser, "print predictions and the agreement report as one JSON object")
    add_progress_flag(parser, "hide the progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    from .checkpoint import CheckpointError
    from .data import DataError, load_items
    from .judge import OrcaJudge
    from .model import BackboneLoadError
    from .report import agreement_report

    args = build_parser().parse_args(argv)
    if args.batch_size is not None and args.batch_size < 1:
        return fail(PROG, "--batch-size must be >= 1")
    try:
        items = load_items(args.input)
        judge = OrcaJudge.from_pretrained(
            args.checkpoint,
            device=args.device,
            backbone=args.backbone,
            strict_backbone=args.strict_backbone,
        )
        preds = judge.score(items, batch_size=args.batch_size, progress=not args.no_progress)
    except (DataError, CheckpointError, BackboneLoadError, ValueError) as err:
        return fail(PROG, str(err))
    report = agreement_report(preds, items)
    report["truncated"] = sum(p.truncated for p in preds)
    rows = [p.to_dict() for p in preds]
    if args.output:
        write_jsonl(args.output, rows)
    if args.json:
        print(json.dumps({"predictions": rows, "report": report}, indent=2))
        return 0
    if not args.output:
        for r in rows:
            print(f"{r['id']}\t{r['expected']:.3f}\t{r['clamped']:.3f}")
    print(
        f"scored {len(rows)} items ({report['truncated']} truncated); "
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


if __name__ == "__main__":
    raise SystemExit(main())
