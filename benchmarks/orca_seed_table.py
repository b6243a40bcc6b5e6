"""The ORCA seed table: one recipe trained at several training seeds and held-out splits.

For every split seed P and training seed S this runs

    orca-train --config CONFIG --seed S --split-seed P --heldout-fraction F \
        --output OUT/split-P-seed-S --json [ORCA_TRAIN_ARGS ...]

in a process of its own, one after another, and reads the held-out figures `orca-train`
writes to the checkpoint's `metrics.json` (ρ, τ, MAE_μ, MAE_σ² on the questions that neither
train nor early stopping sees; raw, or clamped with `--clamped`). The table gives each run
with its wall time and peak memory (the child's maximum resident set), then per split and
over all runs the median and the worst seed, and the spread (best − worst ρ).

Rerunning the same command continues where it stopped: a finished run is read, not trained
again (its time and memory come from `OUT/split-P-seed-S.json`, written when it finished), and
a run interrupted mid-way resumes from its run folder, as `orca-train` does (its time is then
that of the part run after the resume, flagged `resumed`). A run folder that
holds another run (other config or flags) is refused by `orca-train` itself, naming the
difference.

    python benchmarks/orca_seed_table.py --config configs/orca/curriculum-synthetic.yaml \
        --data-dir data/orca-human --backbone models/smollm2-135m --out runs/seed-table \
        [--seeds 0 1 2] [--split-seeds 0 1] [--heldout-fraction 0.5] [--clamped] \
        [--target-rho 0.85 --max-spread 0.03 --check] [--json] [-- ORCA_TRAIN_ARGS ...]

`--check` exits 1 when the worst seed's ρ is under `--target-rho` or the spread over
`--max-spread` (issue targets: .85 and .03). Environment: set `OMP_NUM_THREADS` and
`HF_HUB_OFFLINE=1` as for `orca-train`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

FIGURES = ("rho", "tau", "mae_mu", "mae_var")


def _run_folder(out: Path, split_seed: int, seed: int) -> Path:
    return out / f"split-{split_seed}-seed-{seed}"


def train_once(command: list[str], log: Path) -> tuple[float, float]:
    """Run one orca-train child; (wall seconds, peak RSS in MB). Raises on a non-zero exit."""
    started = time.perf_counter()
    with log.open("a", encoding="utf-8") as sink:
        child = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(command)} exited {code}; its output is in {log}")
    return seconds, usage.ru_maxrss / 1024  # Linux reports kilobytes


def heldout_figures(checkpoint: Path, kind: str) -> dict[str, float]:
    """The held-out figures orca-train wrote for this checkpoint."""
    metrics_file = checkpoint / "metrics.json"
    try:
        heldout = json.loads(metrics_file.read_text())["heldout"]
    except (OSError, ValueError, KeyError) as error:
        raise SystemExit(
            f"{metrics_file}: no held-out figures ({error}); train with --heldout-fraction > 0"
        ) from None
    figures = heldout.get(kind, {})
    return {
        "items": heldout["items"],
        **{name: float(figures.get(name, math.nan)) for name in FIGURES},
    }


def summary(rows: list[dict]) -> dict[str, float]:
    """Median and worst (lowest ρ; highest MAE) of the rows' figures, and the ρ spread."""
    rhos = [r["rho"] for r in rows]
    out: dict[str, float] = {"runs": len(rows), "spread_rho": max(rhos) - min(rhos)}
    for name in FIGURES:
        values = [r[name] for r in rows if not math.isnan(r[name])]
        out[f"median_{name}"] = statistics.median(values) if values else math.nan
        worst = min if name in ("rho", "tau") else max
        out[f"worst_{name}"] = worst(values) if values else math.nan
    return out


def _fmt(value: float, digits: int = 3) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def print_table(rows: list[dict], groups: dict[str, dict], kind: str) -> None:
    print(f"held-out figures ({kind}), one row per run")
    print("| split seed | seed | items | ρ | τ | MAE_μ | MAE_σ² | wall (min) | peak RSS (GB) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['split_seed']} | {r['seed']} | {r['items']} | {_fmt(r['rho'])} | "
            f"{_fmt(r['tau'])} | {_fmt(r['mae_mu'])} | {_fmt(r['mae_var'])} | "
            f"{_fmt(r['wall_s'] / 60, 1)} | {_fmt(r['peak_rss_mb'] / 1024, 1)} |"
        )
    print()
    print("| runs | median ρ | worst ρ | spread ρ | median τ | worst τ | median MAE_μ | "
          "worst MAE_μ | median MAE_σ² | worst MAE_σ² |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, s in groups.items():
        print(
            f"| {name} ({s['runs']}) | {_fmt(s['median_rho'])} | {_fmt(s['worst_rho'])} | "
            f"{_fmt(s['spread_rho'])} | {_fmt(s['median_tau'])} | {_fmt(s['worst_tau'])} | "
            f"{_fmt(s['median_mae_mu'])} | {_fmt(s['worst_mae_mu'])} | "
            f"{_fmt(s['median_mae_var'])} | {_fmt(s['worst_mae_var'])} |"
        )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="orca-train --config YAML")
    parser.add_argument("--out", type=Path, required=True, help="folder of the runs")
    parser.add_argument("--data-dir", type=Path, help="orca-train --data-dir")
    parser.add_argument("--backbone", help="orca-train --backbone (a local folder offline)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--split-seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--heldout-fraction", type=float, default=0.5)
    parser.add_argument("--clamped", action="store_true", help="report the clamped figures")
    parser.add_argument("--target-rho", type=float, default=0.85)
    parser.add_argument("--max-spread", type=float, default=0.03)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not 0 < args.heldout_fraction < 1:
        parser.error(f"--heldout-fraction must be in (0, 1), got {args.heldout_fraction}")
    for name in ("seeds", "split_seeds"):
        values = getattr(args, name)
        if len(set(values)) != len(values) or min(values) < 0:
            parser.error(f"--{name.replace('_', '-')}: distinct seeds >= 0, got {values}")
    if not args.config.is_file():
        parser.error(f"--config {args.config}: no such file")
    args.out.mkdir(parents=True, exist_ok=True)
    kind = "clamped" if args.clamped else "raw"
    rows = []
    for split_seed in args.split_seeds:
        for seed in args.seeds:
            folder = _run_folder(args.out, split_seed, seed)
            record_file = args.out / f"{folder.name}.json"
            if record_file.is_file():
                record = json.loads(record_file.read_text())
            elif (folder / "metrics.json").is_file() and "heldout" in json.loads(
                (folder / "metrics.json").read_text()
            ):
                # Finished before this script recorded it (trained by hand): time unknown.
                record = {"wall_s": math.nan, "peak_rss_mb": math.nan, "resumed": None}
            else:
                command = [
                    sys.executable, "-m", "orca_judge.cli.train", "--config", str(args.config),
                    "--seed", str(seed), "--split-seed", str(split_seed),
                    "--heldout-fraction", str(args.heldout_fraction),
                    "--output", str(folder), "--json", "--no-progress",
                    *(["--data-dir", str(args.data_dir)] if args.data_dir else []),
                    *(["--backbone", args.backbone] if args.backbone else []),
                    *extra,
                ]  # fmt: skip
                print(f"training split {split_seed} seed {seed} -> {folder}", file=sys.stderr)
                # A run folder left by an interrupted run: orca-train resumes it, and the
                # time measured is that of the part run now.
                resumed = folder.with_name(f"{folder.name}-run").exists()
                seconds, peak_mb = train_once(command, args.out / f"{folder.name}.log")
                record = {
                    "wall_s": seconds,
                    "peak_rss_mb": peak_mb,
                    "resumed": resumed,
                    "command": command[1:],
                }
                record_file.write_text(json.dumps(record, indent=1) + "\n")
            rows.append(
                {
                    "split_seed": split_seed,
                    "seed": seed,
                    **heldout_figures(folder, kind),
                    "wall_s": record["wall_s"],
                    "peak_rss_mb": record["peak_rss_mb"],
                    "resumed": record.get("resumed"),
                }
            )
    groups = {
        f"split {p}": summary([r for r in rows if r["split_seed"] == p]) for p in args.split_seeds
    }
    groups["all"] = summary(rows)
    total = groups["all"]
    missed = [
        *([f"worst ρ {total['worst_rho']:.3f} < {args.target_rho}"]
          if not total["worst_rho"] >= args.target_rho else []),
        *([f"spread {total['spread_rho']:.3f} > {args.max_spread}"]
          if not total["spread_rho"] <= args.max_spread else []),
    ]  # fmt: skip
    if args.json:
        print(json.dumps({"figures": kind, "runs": rows, "summary": groups, "missed": missed}))
    else:
        print_table(rows, groups, kind)
        print("targets met" if not missed else "targets missed: " + "; ".join(missed))
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
