"""The ORCA seed table: one recipe trained at several training seeds and held-out splits.

For every split seed P and training seed S this runs

    orca train --config CONFIG --seed S --split-seed P --heldout-fraction F \
        --output OUT/split-P-seed-S --json [ORCA_TRAIN_ARGS ...]

in a process of its own, one after another, and reads the held-out figures `orca train`
writes to the checkpoint's `metrics.json` (ρ, τ, MAE_μ, MAE_σ² on the questions that neither
train nor early stopping sees; raw, or clamped with `--clamped`). The table gives each run
with its wall time and peak memory (the child's maximum resident set), then per split and
over all runs the median and the worst seed, and the spread (best − worst ρ).

Rerunning the same command continues where it stopped: a finished run is read, not trained
again (its time and memory come from `OUT/split-P-seed-S.json`, written when it finished), and
a run interrupted mid-way resumes from its run folder, as `orca train` does (its time is then
that of the part run after the resume, flagged `resumed`). A run folder that
holds another run (other config or flags) is refused by `orca train` itself, naming the
difference.

    python benchmarks/orca_seed_table.py --config configs/orca/curriculum-synthetic.yaml \
        --data-dir data/orca-human --backbone models/smollm2-135m --out runs/seed-table \
        [--seeds 0 1 2] [--split-seeds 0 1] [--heldout-fraction 0.5] [--clamped] \
        [--target-rho 0.85 --max-spread 0.03 --check] [--json] [-- ORCA_TRAIN_ARGS ...]

`--check` exits 1 when the worst seed's ρ is under `--target-rho` or the spread over
`--max-spread` (issue targets: .85 and .03). Environment: set `OMP_NUM_THREADS` and
`HF_HUB_OFFLINE=1` as for `orca train`.

Every record is checked before it is used: a run's record names its recipe (config file and
its SHA-256, held-out fraction, data folder, backbone, the extra orca train flags, seeds, and
each stage's training data fingerprinted, rule-built candidates included), and
one made by another recipe, or unreadable, is refused with one line naming the file — never
read as this recipe's figures. `--results FILE` (benchmarks/results/orca_seed_table.json)
keeps one row per finished run (recipe, held-out n, ρ, τ, MAE_μ, MAE_σ², wall time, peak
RSS, threads, commit), merged across sittings: a run whose row is there for the same recipe
is not trained again even when its run folder is gone (a fresh checkout), so the table
grows over several sittings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FIGURES = ("rho", "tau", "mae_mu", "mae_var")
# orca train flags the table sets per run (or forwards from its own flags).
TABLE_FLAGS = ("--config", "--train", "--dev", "--data-dir", "--backbone", "--seed",
               "--split-seed", "--heldout-fraction", "--output")  # fmt: skip


def _run_folder(out: Path, split_seed: int, seed: int) -> Path:
    return out / f"split-{split_seed}-seed-{seed}"


def started_before(folder: Path) -> bool:
    """Whether an earlier sitting left part of this run: the last stage's run state
    (`<folder>-run`) or a curriculum's earlier stages (`<folder>-stages/`)."""
    stages = folder.with_name(f"{folder.name}-stages")
    return folder.with_name(f"{folder.name}-run").exists() or (
        stages.is_dir() and any(stages.iterdir())
    )


def train_once(command: list[str], log: Path) -> tuple[float, float]:
    """Run one orca train child; (wall seconds, peak RSS in MB). Raises on a non-zero exit."""
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
    """The held-out figures orca train wrote for this checkpoint."""
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


def training_data(args: argparse.Namespace, seed: int) -> dict[str, dict[str, str]]:
    """Each stage's training data as orca train will build it at this seed, fingerprinted: the
    config's hash alone misses a change to the data files or to the rules that synthesize a
    stage's candidates."""
    from orca_judge.training.plan import plan_stages, training_data_fingerprints

    overrides = {"seed": seed, **({"backbone": args.backbone} if args.backbone else {})}
    try:
        plans = plan_stages(args.config, data_dir=args.data_dir, overrides=overrides)
        return training_data_fingerprints(plans)
    except ValueError as error:  # a DataError too
        raise SystemExit(f"--config {args.config}: {error}") from None
    except OSError as error:
        raise SystemExit(f"--config {args.config}: cannot read {error.filename}: "
                         f"{error.strerror}") from None  # fmt: skip


def recipe_of(args: argparse.Namespace, extra: list[str], split_seed: int, seed: int) -> dict:
    """What makes a run this recipe's: the config and its content, every flag, the seeds, the
    training data each stage is built from."""
    return {
        "config": args.config.name,
        "config_sha256": hashlib.sha256(args.config.read_bytes()).hexdigest(),
        "heldout_fraction": args.heldout_fraction,
        "data_dir": str(args.data_dir) if args.data_dir else None,
        "backbone": args.backbone,
        "orca_train_args": list(extra),
        "split_seed": split_seed,
        "seed": seed,
        "training_data": training_data(args, seed),
    }


def differences(recorded: dict, wanted: dict) -> str:
    keys = sorted(k for k in {*recorded, *wanted} if recorded.get(k) != wanted.get(k))
    return ", ".join(f"{k} {recorded.get(k)!r} (now {wanted.get(k)!r})" for k in keys)


def _number(value: object, low: float, high: float) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high


def check_row(row: object, where: str) -> dict:
    """A finished run's row as read back; SystemExit naming `where` when it is not one."""
    ranges = {"rho": (-1, 1), "tau": (-1, 1), "mae_mu": (0, 1), "mae_var": (0, 1)}
    if not isinstance(row, dict) or not isinstance(row.get("recipe"), dict):
        raise SystemExit(f"{where}: not a seed-table row (no recipe)")
    # An undefined figure (a judge with constant predictions has no ρ) is null in the file.
    row = {**row, **{k: math.nan for k in ranges if row.get(k) is None}}
    bad = [
        k
        for k, (lo, hi) in ranges.items()
        if not (_number(row[k], lo, hi) or (isinstance(row[k], float) and math.isnan(row[k])))
    ]
    if not (isinstance(row.get("items"), int) and row["items"] > 0):
        bad.append("items")
    if bad:
        raise SystemExit(f"{where}: {', '.join(bad)} missing or out of range; not used")
    return row


def read_record(path: Path, recipe: dict) -> dict:
    """A run's record, checked against the recipe asked for now."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise SystemExit(
            f"{path}: unreadable record ({error}); delete it (and the run folder beside it) to "
            "train that run again"
        ) from None
    if not isinstance(record, dict) or record.get("recipe") != recipe:
        found = record.get("recipe") if isinstance(record, dict) else None
        raise SystemExit(
            f"{path}: made by another recipe ({differences(found or {}, recipe)}); "
            "use another --out"
        )
    return record


def read_results(path: Path | None) -> list[dict]:
    """The rows of a results file (none when it does not exist), each checked."""
    if path is None or not path.exists():
        return []
    try:
        rows = json.loads(path.read_text())["runs"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SystemExit(f"{path}: not a seed-table results file ({error!r})") from None
    if not isinstance(rows, list):
        raise SystemExit(f"{path}: 'runs' is not a list")
    return [check_row(row, f"{path} run {i + 1}") for i, row in enumerate(rows)]


def write_results(path: Path, rows: list[dict]) -> None:
    """Merge rows into the results file: one per recipe, the newest kept; written whole."""
    merged = {json.dumps(r["recipe"], sort_keys=True): r for r in read_results(path)}
    merged |= {json.dumps(r["recipe"], sort_keys=True): r for r in rows}
    ordered = sorted(merged.values(), key=lambda r: (r["recipe"]["config"],
                     r["recipe"]["split_seed"], r["recipe"]["seed"]))  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    safe = [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
            for r in ordered]  # fmt: skip
    tmp.write_text(json.dumps({"runs": safe}, indent=1, allow_nan=False) + "\n")
    tmp.replace(path)


def commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, timeout=10)  # fmt: skip
    except OSError:
        return None
    return done.stdout.strip() or None


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
    parser.add_argument("--config", type=Path, required=True, help="orca train --config YAML")
    parser.add_argument("--out", type=Path, required=True, help="folder of the runs")
    parser.add_argument("--data-dir", type=Path, help="orca train --data-dir")
    parser.add_argument("--backbone", help="orca train --backbone (a local folder offline)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--split-seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--heldout-fraction", type=float, default=0.5)
    parser.add_argument("--clamped", action="store_true", help="report the clamped figures")
    parser.add_argument("--target-rho", type=float, default=0.85)
    parser.add_argument("--max-spread", type=float, default=0.03)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--results",
        type=Path,
        help="results file to merge the finished runs into (one row per run, kept across "
        "sittings), e.g. benchmarks/results/orca_seed_table.json",
    )
    args = parser.parse_args(argv)
    # The table sets these itself, and the recipe fingerprints the data they choose: given
    # again to orca train (the last flag wins) they would train on data the recipe never saw.
    for flag in TABLE_FLAGS:
        if any(arg == flag or arg.startswith(f"{flag}=") for arg in extra):
            parser.error(f"{flag} after --: give it as the table's own flag, not orca train's")
    for flag, value in (("--target-rho", args.target_rho), ("--max-spread", args.max_spread)):
        if not (math.isfinite(value) and -1 <= value <= 2):
            parser.error(f"{flag}: expected a finite number in [-1, 2], got {value!r}")
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out}: a file, not a folder")
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
    committed = {json.dumps(r["recipe"], sort_keys=True): r for r in read_results(args.results)}
    threads = os.environ.get("OMP_NUM_THREADS")
    rows = []
    for split_seed in args.split_seeds:
        for seed in args.seeds:
            recipe = recipe_of(args, extra, split_seed, seed)
            folder = _run_folder(args.out, split_seed, seed)
            record_file = args.out / f"{folder.name}.json"
            known = committed.get(json.dumps(recipe, sort_keys=True))
            if not record_file.is_file() and known is not None and kind == "raw":
                rows.append(known)  # finished in an earlier sitting
                continue
            if record_file.is_file():
                record = read_record(record_file, recipe)
            else:
                command = [
                    sys.executable, "-m", "orca_judge.cli.main", "train",
                    "--config", str(args.config),
                    "--seed", str(seed), "--split-seed", str(split_seed),
                    "--heldout-fraction", str(args.heldout_fraction),
                    "--output", str(folder), "--json", "--no-progress",
                    *(["--data-dir", str(args.data_dir)] if args.data_dir else []),
                    *(["--backbone", args.backbone] if args.backbone else []),
                    *extra,
                ]  # fmt: skip
                print(f"training split {split_seed} seed {seed} -> {folder}", file=sys.stderr)
                # Folders left by an interrupted run: orca train resumes them (refusing those
                # of another recipe), and the time measured is that of the part run now.
                resumed = started_before(folder)
                seconds, peak_mb = train_once(command, args.out / f"{folder.name}.log")
                record = {
                    "recipe": recipe,
                    "wall_s": seconds,
                    "peak_rss_mb": peak_mb,
                    "resumed": resumed,
                    "threads": threads,
                    "commit": commit(),
                    "command": command[1:],
                }
                record_file.write_text(json.dumps(record, indent=1) + "\n")
            row = {
                "split_seed": split_seed,
                "seed": seed,
                **heldout_figures(folder, kind),
                "wall_s": record["wall_s"],
                "peak_rss_mb": record["peak_rss_mb"],
                "resumed": record.get("resumed"),
                "threads": record.get("threads"),
                "commit": record.get("commit"),
                "recipe": recipe,
            }
            rows.append(check_row(row, str(folder / "metrics.json")) if kind == "raw" else row)
            if args.results and kind == "raw":
                # After every run: a sitting stopped mid-table keeps the rows it finished.
                write_results(args.results, rows)
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
