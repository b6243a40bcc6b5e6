"""Start-up costs: the lm-eval start-up hook in processes that never import lm-eval, and runs.

1. Hook cost. Child interpreters start without `site` (`-S`), then process this
   environment's `.pth` files themselves — all of them (hooked) or all but the hook's
   (baseline) — and import a fixed set of standard-library modules (every import passes the
   hook's finder). Bytecode caches on, as for an installed package; one warm-up child each.
   Interleaved runs; medians of the in-child times and their difference.
2. An AQUA-only run: `aqua_animal` text-only on 4 items with lm-eval's `dummy` model, offline,
   through `aqua eval` (which indexes our task folder without lm-eval's ~14 700 built-in task
   files) and plain `lm_eval` with the hook (lm-eval's own command line, its full index),
   against plain `lm_eval --include_path` with the hook off (lm-eval as it is). Medians over
   interleaved repeats; the start-up ratio is each median over the hook-off one; the target,
   <= 0.6, is aqua eval's. `--check` exits 1 where it misses it.

    python benchmarks/bench_startup.py --data-dir ../shared/data/aqua-bench [--repeats 3]
        [--hook-repeats 40] [--no-runs] [--no-hook] [--check] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from eval_plugins.lm_eval.aqua.task_folder import task_config_dir
from eval_plugins.startup_hook import ENV_SWITCH

HOOK_FILE = "aqua_bench_eval_lm_eval_hook.pth"
BASELINE = "lm_eval --include_path (hook off)"
# The start-up target: an AQUA-only run's wall time at most this share of lm-eval as it is.
TARGET_RATIO = 0.6
# The command the target is for: plain lm_eval indexes lm-eval's whole task tree as it always
# did (no patch of its command line narrows it).
TARGETED = "aqua eval"
# Imported by each child after start-up: every one of these imports meets the hook's finder.
WORKLOAD = (
    "json, csv, email.parser, http.client, argparse, decimal, fractions, statistics, "
    "logging, unittest, xml.dom.minidom, sqlite3, zipfile, tarfile, pathlib, typing"
)
CHILD = """
import os, site, sys, time, json
t0 = time.perf_counter()
folder, skip = sys.argv[1], sys.argv[2]
sys.path.append(folder)  # as site.addsitedir does before it reads the .pth files
for name in sorted(os.listdir(folder)):
    if name.endswith(".pth") and name != skip:
        site.addpackage(folder, name, set())
t1 = time.perf_counter()
import {workload}
t2 = time.perf_counter()
hooked = any(type(f).__name__ == "LmEvalImportHook" for f in sys.meta_path)
print(json.dumps({{"pth_ms": (t1 - t0) * 1e3, "imports_ms": (t2 - t1) * 1e3, "hooked": hooked}}))
"""


def _child(skip: str) -> dict:
    folder = sysconfig.get_path("purelib")
    code = CHILD.format(workload=WORKLOAD)
    # As installed packages run: with bytecode caches (PYTHONDONTWRITEBYTECODE would make
    # every start compile our modules from source).
    env = {k: v for k, v in os.environ.items() if k not in (ENV_SWITCH, "PYTHONDONTWRITEBYTECODE")}
    start = time.perf_counter()
    # Started outside the repository, so that only the installed package can be imported.
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code, folder, skip],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    wall = (time.perf_counter() - start) * 1e3
    if proc.returncode != 0 or proc.stderr:
        raise SystemExit(f"child failed:\n{proc.stderr[-3000:]}")
    return {**json.loads(proc.stdout), "wall_ms": wall}


def hook_cost(repeats: int) -> dict:
    """Medians (ms) with and without the hook's .pth file, and the differences."""
    if not (Path(sysconfig.get_path("purelib")) / HOOK_FILE).is_file():
        raise SystemExit(f"{HOOK_FILE} is not installed in this environment")
    runs: dict[str, list[dict]] = {"baseline": [], "hooked": []}
    _child(HOOK_FILE), _child("")  # warm-up: file caches and bytecode written
    for _ in range(repeats):  # interleaved so machine noise hits both alike
        runs["baseline"].append(_child(HOOK_FILE))
        runs["hooked"].append(_child(""))
    if any(r["hooked"] for r in runs["baseline"]) or not all(r["hooked"] for r in runs["hooked"]):
        raise SystemExit("the baseline must run without the hook and the other with it")
    medians = {
        variant: {k: statistics.median(r[k] for r in rows) for k in ("pth_ms", "imports_ms")}
        | {"wall_ms": statistics.median(r["wall_ms"] for r in rows)}
        for variant, rows in runs.items()
    }
    base, hooked = medians["baseline"], medians["hooked"]
    return {
        "repeats": repeats,
        "median_ms": medians,
        "pth_cost_ms": hooked["pth_ms"] - base["pth_ms"],
        "import_overhead_ms": hooked["imports_ms"] - base["imports_ms"],
        "total_cost_ms": hooked["pth_ms"]
        + hooked["imports_ms"]
        - base["pth_ms"]
        - base["imports_ms"],
        "wall_ratio": hooked["wall_ms"] / base["wall_ms"],
    }


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed:\n{proc.stderr[-3000:]}")
    return elapsed


def run_startup(data_dir: Path, repeats: int) -> dict:
    """Medians (s) of the three ways to run one small AQUA task, and ratios to lm-eval as is."""
    if not data_dir.is_dir():
        raise SystemExit(f"--data-dir {data_dir} is not a folder of the released AQUA files")
    bin_dir = Path(sys.executable).parent
    common = [
        "--model", "dummy", "--tasks", "aqua_animal", "--limit", "4",
        "--metadata", json.dumps({"data_dir": str(data_dir.resolve()), "audio": False}),
    ]  # fmt: skip
    # Offline, as a nightly CI job runs: lm-eval's `dummy` model otherwise spends ~50 s
    # retrying the Hub for a tokenizer where there is no network.
    offline = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    on = {k: v for k, v in os.environ.items() if k != ENV_SWITCH} | offline
    off = {**on, ENV_SWITCH: "0"}
    commands = {
        "lm_eval (hook)": ([str(bin_dir / "lm_eval"), *common], on),
        BASELINE: (
            [str(bin_dir / "lm_eval"), "--include_path", str(task_config_dir()), *common],
            off,
        ),
        "aqua eval": ([str(bin_dir / "aqua"), "eval", *common], on),
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, (cmd, env) in commands.items():
            times[name].append(_timed(cmd, env))
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians[BASELINE]
    ratios = {name: value / base for name, value in medians.items()}
    return {
        "median_s": medians,
        "runs_s": times,
        "ratio_to_hook_off": ratios,
        "target_ratio": TARGET_RATIO,
        "meets_target": ratios[TARGETED] <= TARGET_RATIO,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data/aqua-bench"))
    parser.add_argument("--repeats", type=int, default=3, help="lm-eval runs per variant")
    parser.add_argument("--hook-repeats", type=int, default=40, help="children per variant")
    parser.add_argument("--no-runs", action="store_true", help="measure the hook cost only")
    parser.add_argument("--no-hook", action="store_true", help="measure the runs only")
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 if a start-up ratio is over {TARGET_RATIO}"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.no_runs and args.no_hook:
        parser.error("--no-runs and --no-hook leave nothing to measure")
    result = {} if args.no_hook else {"hook": hook_cost(args.hook_repeats)}
    if not args.no_runs:
        result["runs"] = run_startup(args.data_dir, args.repeats)
    status = 1 if args.check and not result.get("runs", {}).get("meets_target", True) else 0
    if args.json:
        print(json.dumps(result, indent=2))
        return status
    if "hook" in result:
        hook = result["hook"]
        print(
            f"hook, process that never imports lm-eval (median of {hook['repeats']}, "
            f"interleaved): .pth {hook['pth_cost_ms']:+.2f} ms, finder on "
            f"{WORKLOAD.count(',') + 1} imports {hook['import_overhead_ms']:+.2f} ms, total "
            f"{hook['total_cost_ms']:+.2f} ms; whole process ×{hook['wall_ratio']:.3f}"
        )
    if "runs" in result:
        runs = result["runs"]
        for name, value in runs["median_s"].items():
            ratio = runs["ratio_to_hook_off"][name]
            print(f"{name}: median {value:.2f} s over {args.repeats} runs (×{ratio:.2f})")
        shares = ", ".join(
            f"{name} ×{ratio:.2f}"
            for name, ratio in runs["ratio_to_hook_off"].items()
            if name != BASELINE
        )
        verdict = "met" if runs["meets_target"] else "MISSED"
        print(
            f"start-up ratio (AQUA-only 4-item text run / plain {BASELINE}): {shares}; "
            f"target for {TARGETED} ≤ {TARGET_RATIO}: {verdict}"
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
