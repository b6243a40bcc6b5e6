"""The benchmark scripts refuse a numeric flag they could not use (NaN, infinite, out of range)
in one argparse line, exit 2, before any data is read or any work is timed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("script", "args", "line"),
    [
        (
            "bench_orca_baselines.py",
            ["--heldout-fraction", "nan"],
            "--heldout-fraction: expected a finite number with 0 < --heldout-fraction < 1, got nan",
        ),
        (
            "orca_judge_select.py",
            ["--checkpoint", "x", "--heldout-fraction", "1"],
            "--heldout-fraction: expected a finite number with 0 < --heldout-fraction < 1, got 1.0",
        ),
        (
            "bench_orca_metric.py",
            ["--checkpoint", "x", "--items", "y", "--batch-size", "0"],
            "--batch-size: expected a finite number with 1 <= --batch-size, got 0",
        ),
        (
            "bench_api_concurrency.py",
            ["--latency", "inf"],
            "--latency: expected a finite number with 0 <= --latency, got inf",
        ),
    ],
)
def test_a_benchmark_refuses_a_bad_number_in_one_line(script, args, line):
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == f"{script}: error: {line}"
