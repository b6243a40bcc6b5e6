"""Test files with a slow test are handed to the xdist workers first, the others after."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAST_FEW = "tests/core/test_task_name.py"
FAST_MANY = "tests/core/test_extract.py"
SLOW = "tests/orca/test_orca_checkpoint.py"  # one test marked slow among fast ones


def collected_files(*files: str) -> list[str]:
    """The test files in the order the README's test command hands them out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    order = [line.split("::")[0] for line in done.stdout.splitlines() if "::" in line]
    return list(dict.fromkeys(order))


def test_files_with_a_slow_test_come_first_then_the_others_most_tests_first():
    assert collected_files(FAST_FEW, FAST_MANY, SLOW) == [SLOW, FAST_MANY, FAST_FEW]


def test_xdist_keeps_that_order():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    # Without it xdist reorders files by their number of tests, the slow few-test ones last.
    assert "--no-loadscope-reorder" in config["tool:pytest"]["addopts"].split()
