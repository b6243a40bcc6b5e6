"""Shared set-up of the lmms-eval tests (run in the lmms-eval environment): offline, shared data.

Like tests/conftest.py, the shared data is found through AQUA_SHARED_DIR or beside the
repository; the tiny offline models of tests/orca_fixtures.py are reused from there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("AQUA_SHARED_DIR", REPO.parent / "shared"))
ORCA_HUMAN_DIR = SHARED / "data" / "orca-human"
# tests/orca_fixtures.py builds the tiny judges; one copy of it serves both test folders.
if str(REPO / "tests") not in sys.path:
    sys.path.insert(0, str(REPO / "tests"))


@pytest.fixture(scope="session")
def orca_human_dev() -> Path:
    path = ORCA_HUMAN_DIR / "dev.jsonl"
    if not path.is_file():
        pytest.fail(f"ORCA human ratings not found at {path} (set AQUA_SHARED_DIR)")
    return path
