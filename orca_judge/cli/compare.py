"""orca compare: several judges on one human-rated item file — agreement, speed, tokens, cost."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from eval_common.cli import add_json_flag, command, fail
from eval_common.jsonio import json_safe

PROG = "orca compare"
COLUMNS = (
    ("judge", "judge", "{}"),
    ("kind", "kind", "{}"),
    ("n", "n", "{}"),
    ("failed", "failed", "{}"),
    ("rho", "ρ", "{:.3f}"),
    ("tau", "τ", "{:.3f}"),
    ("mae_mu", "MAE_μ", "{:.3f}"),
    ("items_per_s", "items/s (live)", "{:.1f}"),
    ("from_cache", "from cache", "{}"),
    ("tokens_per_1k", "tokens/1k items", "{:.0f}"),
    ("cost_per_1k", "cost/1k items", "{:.4f}"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__)
    parser.add_argument(
        "--items", required=True, help="human-rated items (.jsonl / .json with `ratings`)"
    )
    parser.add_argument(
        "--orca", action="append", default=[], metavar="CHECKPOINT", help="an ORCA judge"
    )
    parser.add_argument(
        "--llm-judge",
        action="append",
        default=[],
        metavar="KEY=VALUE,...",
        help="a prompted judge, as orca llm-judge --judge, plus optional name=LABEL and "
        "price_prompt=USD,price_completion=USD (per million tokens)",
    )
    parser.add_argument(
        "--constant",
        action="append",
        default=[],
        type=float,
        metavar="RATING",
        help="a baseline giving every item this 1-5 rating",
    )
    parser.add_argument("--device", help="device of the ORCA judges (default: auto)")
    add_json_flag(parser, "print the rows as JSON")
    return parser


def cell(value: Any, spec: str) -> str:
    """A table cell: '—' for a figure that does not apply or is undefined."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return spec.format(value)


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as an aligned plain-text table."""
    cells = [[title for _, title, _ in COLUMNS]]
    cells += [[cell(r[key], spec) for key, _, spec in COLUMNS] for r in rows]
    widths = [max(len(line[c]) for line in cells) for c in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(text.ljust(w) for text, w in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )


@command(PROG)
def main(argv: list[str] | None = None) -> int:
    from orca_judge.data import load_items
    from orca_judge.errors import LlmJudgeError
    from orca_judge.prompted.comparison import (
        ConstantCompared,
        OrcaCompared,
        PromptedCompared,
        compare,
    )
    from orca_judge.prompted.settings import parse_spec

    args = build_parser().parse_args(argv)
    try:
        judges: list[Any] = [OrcaCompared(c, device=args.device) for c in args.orca]
        judges += [PromptedCompared(parse_spec(s, "--llm-judge")) for s in args.llm_judge]
        judges += [ConstantCompared(r) for r in args.constant]
        if not judges:
            return fail(PROG, "no judge: give --orca, --llm-judge or --constant (any number)")
        items = load_items(args.items, require_ratings=True)
        if not items:
            return fail(PROG, f"{args.items}: no items (a human-rated JSONL file, one per line)")
        rows = compare(judges, items)
    except (LlmJudgeError, ValueError) as err:
        return fail(PROG, str(err))
    if args.json:
        # JSON has no NaN (a constant judge's ρ): null, as every --json of the package writes.
        payload = {"items": args.items, "n_items": len(items), "judges": rows}
        print(json.dumps(json_safe(payload), indent=2, allow_nan=False))
        return 0
    print(f"{len(items)} human-rated items from {args.items}; scores on [0, 1]")
    print(table(rows))
    return 0
