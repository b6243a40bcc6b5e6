"""Fixtures of the lmms-eval tests: the main suite's data fixtures, a CLI runner, ORCA data.

These tests run in the second environment (scripts/install-lmms-eval-env.sh), never in the
main one: `python -m pytest -q tests_lmms`. The shared data is found, and skipped without, as
in the main suite (tests/shared_data.py); the tiny offline judges of tests/orca_fixtures.py
are reused from there.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
# tests/orca_fixtures.py builds the tiny judges; one copy of it serves both test folders.
if str(REPO / "tests") not in sys.path:
    sys.path.insert(0, str(REPO / "tests"))
from shared_data import shared_data  # noqa: E402  (found through the path set just above)

# The released data and the real/stand-in clips, found as the main suite finds them.
_spec = importlib.util.spec_from_file_location("aqua_main_conftest", REPO / "tests" / "conftest.py")
_main = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_main)
released_dir = _main.released_dir
demo_audio_dir = _main.demo_audio_dir
released_audio_root = _main.released_audio_root
# The shared test artefacts are removed by the controller at the end of the run; a test
# marked `shared_data` is skipped (or, in CI, failed) without its data, as in the main suite.
pytest_configure = _main.pytest_configure
pytest_runtest_setup = _main.pytest_runtest_setup
pytest_runtest_makereport = _main.pytest_runtest_makereport
pytest_sessionfinish = _main.pytest_sessionfinish


def run_cli(*args: object, env: dict | None = None) -> subprocess.CompletedProcess:
    """A real CLI of this environment, offline; fails the test on a non-zero exit."""
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"} | (env or {})
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, env=full_env
    )
    if done.returncode:
        pytest.fail(
            f"{args[0]} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done


def lmms_eval(*args: object, env: dict | None = None) -> subprocess.CompletedProcess:
    """`lmms-eval` at DEBUG verbosity: only then does a failed run exit non-zero."""
    return run_cli(BIN / "lmms-eval", *args, "--verbosity", "DEBUG", env=env)


def metadata_env(data_dir: Path, audio_root: Path) -> dict[str, str]:
    """The AQUA_METADATA setting naming the data and audio folders."""
    return {"AQUA_METADATA": json.dumps({"data_dir": str(data_dir), "audio_root": str(audio_root)})}


def lmms_results(folder: Path) -> dict:
    """The one `*_results.json` lmms-eval wrote under a folder."""
    (path,) = sorted(folder.rglob("*_results.json"))
    return json.loads(path.read_text())


def lmms_samples(folder: Path, task: str) -> list[dict]:
    """The logged sample rows of a task, in doc order."""
    (path,) = sorted(folder.rglob(f"*_samples_{task}.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: r["doc_id"])


@pytest.fixture(scope="session")
def orca_human_dev() -> Path:
    return shared_data("orca-human") / "dev.jsonl"
