"""Start-up costs: the lm-eval start-up hook in processes that never import lm-eval, and runs.

1. Hook cost. Child interpreters start without `site` (`-S`), then process this
   environment's `.pth` files themselves — all of them (hooked) or all but the hook's
   (baseline) — and import a fixed set of standard-library modules (every import passes the
   hook's finder). Bytecode caches on, as for an installed package; one warm-up child each.
   Interleaved runs; medians of the in-child times and their difference.
2. lm-eval runs of `aqua_animal` text-only on 4 items with lm-eval's `dummy` model: plain
   `lm_eval` with the hook, `lm_eval --include_path` with the hook off (lm-eval as it is),
   and `aqua-eval`. Medians over interleaved repeats and ratios against the hook-off run.

    python benchmarks/bench_startup.py --data-dir ../shared/data/aqua-bench [--repeats 3]
        [--hook-repeats 40] [--no-runs] [--json]
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

from aqua_tasks.lm_eval.task_folder import task_config_dir
from eval_plugins.startup_hook import ENV_SWITCH

HOOK_FILE = "aqua_bench_eval_lm_eval_hook.pth"
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
    bin_dir = Path(sys.executable).parent
    common = [
        "--model", "dummy", "--tasks", "aqua_animal", "--limit", "4",
        "--metadata", json.dumps({"data_dir": str(data_dir.resolve()), "audio": False}),
    ]  # fmt: skip
    on = {k: v for k, v in os.environ.items() if k != ENV_SWITCH}
    off = {**on, ENV_SWITCH: "0"}
    commands = {
        "lm_eval (hook)": ([str(bin_dir / "lm_eval"), *common], on),
        "lm_eval --include_path (hook off)": (
            [str(bin_dir / "lm_eval"), "--include_path", str(task_config_dir()), *common],
            off,
        ),
        "aqua-eval": ([str(bin_dir / "aqua-eval"), *common], on),
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, (cmd, env) in commands.items():
            times[name].append(_timed(cmd, env))
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians["lm_eval --include_path (hook off)"]
    return {
        "median_s": medians,
        "runs_s": times,
        "ratio_to_hook_off": {name: value / base for name, value in medians.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data/aqua-bench"))
    parser.add_argument("--repeats", type=int, default=3, help="lm-eval runs per variant")
    parser.add_argument("--hook-repeats", type=int, default=40, help="children per variant")
    parser.add_argument("--no-runs", action="store_true", help="measure the hook cost only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = {"hook": hook_cost(args.hook_repeats)}
    if not args.no_runs:
        result["runs"] = run_startup(args.data_dir, args.repeats)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    hook = result["hook"]
    print(
        f"hook, process that never imports lm-eval (median of {hook['repeats']}, interleaved): "
        f".pth {hook['pth_cost_ms']:+.2f} ms, finder on {WORKLOAD.count(',') + 1} imports "
        f"{hook['import_overhead_ms']:+.2f} ms, total {hook['total_cost_ms']:+.2f} ms; "
        f"whole process ×{hook['wall_ratio']:.3f}"
    )
    for name, value in result.get("runs", {}).get("median_s", {}).items():
        ratio = result["runs"]["ratio_to_hook_off"][name]
        print(f"{name}: median {value:.2f} s over {args.repeats} runs (×{ratio:.2f} of hook off)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
