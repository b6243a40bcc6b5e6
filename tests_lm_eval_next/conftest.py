"""Fixtures of the tests that run under lm-eval's 0.5 line: the main suite's data fixtures.

These tests run in CI's second lm-eval environment (scripts/install-lm-eval-next-env.sh),
never in the main one: `.venv-lm-eval-next/bin/python -m pytest -q tests_lm_eval_next`.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
# tests/release_figures.py (the commands and expected figures) serves both suites.
if str(REPO / "tests") not in sys.path:
    sys.path.insert(0, str(REPO / "tests"))

# The released data, found (and skipped without, or failed in CI) as the main suite does.
_spec = importlib.util.spec_from_file_location("aqua_main_conftest", REPO / "tests" / "conftest.py")
_main = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_main)
released_dir = _main.released_dir
pytest_configure = _main.pytest_configure
pytest_runtest_setup = _main.pytest_runtest_setup
pytest_runtest_makereport = _main.pytest_runtest_makereport
pytest_sessionfinish = _main.pytest_sessionfinish
