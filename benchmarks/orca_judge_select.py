"""Compare trained ORCA judges, and their ensemble, on one part of the dev file.

Model selection must only look at the early-stopping part (`--part dev`, the default): the
dev items `orca train --heldout-fraction F --split-seed S` kept for early stopping. The
held-out part (`--part heldout`) is for the final report of a chosen candidate, once.

    python benchmarks/orca_judge_select.py --checkpoint A B [C ...] [--part dev|heldout]
        [--data DIR] [--heldout-fraction 0.5] [--split-seed 0] [--json]

The ensemble row is the equal-weight mixture of the judges' predicted rating distributions
(`orca_judge.checkpoint.ensemble.mixture`), as `orca ensemble` of those judges scores it when
it accepts them (members that read items alike). A checkpoint may itself be an `orca ensemble`
folder; in the ensemble row it then counts as one judge, not as its members.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from eval_common.cli import number_problem
from orca_judge.checkpoint.ensemble import mixture
from orca_judge.data import OrcaItem, load_items
from orca_judge.metrics import agreement
from orca_judge.training.heldout import split_heldout

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "orca-human"


def split_parts(data_dir: Path, fraction: float, seed: int) -> dict[str, list[OrcaItem]]:
    """The early-stopping ("dev") and held-out parts of dev.jsonl, as orca train makes them."""
    train = load_items(data_dir / "train.jsonl", require_ratings=True)
    dev = load_items(data_dir / "dev.jsonl", require_ratings=True)
    (dev_part,), heldout = split_heldout([train], [dev], fraction, seed)
    return {"dev": dev_part, "heldout": heldout}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", nargs="+", required=True, help="trained judges")
    parser.add_argument("--part", choices=("dev", "heldout"), default="dev")
    parser.add_argument("--data", type=Path, default=DATA, help="folder with train/dev.jsonl")
    parser.add_argument("--heldout-fraction", type=float, default=0.5)
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print rows as JSON")
    args = parser.parse_args(argv)
    for problem in (
        number_problem("--heldout-fraction", args.heldout_fraction, minimum=0, maximum=1,
                       open_interval=True),
        number_problem("--split-seed", args.split_seed, minimum=0),
    ):  # fmt: skip
        if problem:
            parser.error(problem)

    from orca_judge import load_judge

    items = [
        it
        for it in split_parts(args.data, args.heldout_fraction, args.split_seed)[args.part]
        if it.ratings
    ]
    human = [it.human_mean_unit for it in items]
    human_var = [it.human_var_unit for it in items]
    counts = [len(it.ratings) for it in items]
    rows: dict[str, dict[str, float]] = {}
    all_preds = []
    for path in args.checkpoint:
        start = time.perf_counter()
        preds = load_judge(path).score(items)
        all_preds.append(preds)
        variances = [p.variance_unit for p in preds]
        has_var = all(v is not None for v in variances)
        name = Path(path).name
        if name in rows:  # e.g. step-000340 of two runs: the path as given tells them apart
            name = str(path)
        if name in rows:
            parser.error(f"{path}: named twice; each judge must count once")
        rows[name] = {
            **agreement(
                [p.expected_unit for p in preds],
                human,
                variances if has_var else None,
                human_var,
                counts,
            ),
            "seconds": round(time.perf_counter() - start, 1),
        }
    if len(all_preds) > 1:  # what `orca ensemble` of these judges would score
        mixed = [mixture(per_item) for per_item in zip(*all_preds, strict=True)]
        variances = [p.variance_unit for p in mixed]
        has_var = all(v is not None for v in variances)
        rows["ensemble (mixture)"] = agreement(
            [p.expected_unit for p in mixed],
            human,
            variances if has_var else None,
            human_var,
            counts,
        )
    if args.json:
        print(json.dumps({"part": args.part, "n": len(items), "rows": rows}, indent=2))
        return 0
    if args.part == "heldout":
        print(
            "held-out part: report it once per final candidate; never select on it", file=sys.stderr
        )
    print(f"{args.part} part: {len(items)} items, {len({it.question for it in items})} questions")
    print("| judge | rho | tau | MAE_mu | MAE_var |\n|---|---|---|---|---|")
    for name, m in rows.items():
        var = f"{m['mae_var']:.3f}" if "mae_var" in m else "—"
        print(f"| {name} | {m['rho']:.3f} | {m['tau']:.3f} | {m['mae_mu']:.3f} | {var} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
