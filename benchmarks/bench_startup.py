"""Start-up cost of `aqua-eval` against plain `lm_eval` for the same AQUA task.

Both run `aqua_animal` text-only on 4 items with lm-eval's built-in `dummy` model, so the
time is start-up (imports, task indexing, dataset build), not inference. Reports medians
over repeats and their ratio.

    python benchmarks/bench_startup.py --data-dir ../shared/data/aqua-bench [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from aqua_tasks.registration import task_config_dir


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed:\n{proc.stderr[-3000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data/aqua-bench"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    bin_dir = Path(sys.executable).parent
    common = [
        "--model",
        "dummy",
        "--tasks",
        "aqua_animal",
        "--limit",
        "4",
        "--metadata",
        json.dumps({"data_dir": str(args.data_dir.resolve()), "audio": False}),
    ]
    commands = {
        "aqua-eval": [str(bin_dir / "aqua-eval"), *common],
        "lm_eval": [str(bin_dir / "lm_eval"), "--include_path", str(task_config_dir()), *common],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeats):  # interleaved so machine noise hits both alike
        for name, cmd in commands.items():
            times[name].append(timed(cmd))
    medians = {name: statistics.median(values) for name, values in times.items()}
    result = {
        "median_s": medians,
        "runs_s": times,
        "aqua_eval_over_lm_eval": medians["aqua-eval"] / medians["lm_eval"],
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, value in medians.items():
            print(f"{name}: median {value:.2f} s over {args.repeats} runs")
        print(f"aqua-eval / lm_eval start-up ratio: {result['aqua_eval_over_lm_eval']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
