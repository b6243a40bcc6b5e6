"""The test data the repository does not redistribute: where it is, and what a test does without it.

Tests read four folders under `$AQUA_SHARED_DIR/data/` (default: `shared/` beside the
repository). A test that needs one asks for it through `shared_data(name)`, the fixtures of
tests/conftest.py or the `shared_data` marker; without the folder the test is skipped with
one reason per folder, naming it and how to get it. CI sets AQUA_REQUIRE_SHARED_DATA=1, and
then a missing folder fails the test instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DIR = Path(os.environ.get("AQUA_SHARED_DIR", REPO.parent / "shared"))
DATA_DIR = SHARED_DIR / "data"
REQUIRE_VARIABLE = "AQUA_REQUIRE_SHARED_DATA"
_REASON_START = "Skipped: shared test data "
# What each folder holds and where it comes from (the README's "Development" says more).
HOW_TO_GET = {
    "aqua-bench": "the 12 released AQUA-Bench question files (README, 'Get the data')",
    "aqua-demo-audio": "the real clips of the AQUA-Bench and MMAU demo pages (README, "
    "'Development')",
    "orca-human": "the ORCA human ratings "
    "(`orca fetch-ratings --output $AQUA_SHARED_DIR/data/orca-human`)",
    "mmau": "MMAU test-mini's mmau-test-mini.json (docs/build.md, 'Download')",
}


def shared_path(name: str) -> Path:
    """The place of the shared data folder `name`, present or not (for module constants)."""
    if name not in HOW_TO_GET:
        raise ValueError(f"shared data folder {name!r}: expected one of {sorted(HOW_TO_GET)}")
    return DATA_DIR / name


def missing_reason(name: str) -> str:
    """The one skip reason of every test that needs the shared data folder `name`."""
    return (
        f"shared test data {name} not found at {shared_path(name)}: set AQUA_SHARED_DIR to a "
        f"folder holding data/{name}/, {HOW_TO_GET[name]}"
    )


def shared_data(name: str) -> Path:
    """The shared data folder `name`; skips the calling test without it (fails it in CI)."""
    folder = shared_path(name)
    if folder.is_dir() and any(folder.iterdir()):
        return folder
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(f"{missing_reason(name)} ({REQUIRE_VARIABLE}=1)", pytrace=False)
    pytest.skip(missing_reason(name))


def fold_missing_data_skip(report: pytest.TestReport) -> pytest.TestReport:
    """Place a missing-data skip here, not at its test, so `-ra` gives one line per folder."""
    # pytest places a skip raised by a fixture at the test that asked for it; the summary
    # then lists every such test on a line of its own, with the same reason.
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and longrepr[2].startswith(_REASON_START):
        report.longrepr = (__file__, None, longrepr[2])
    return report


def require_marked_data(item: pytest.Item) -> None:
    """Skip (or, in CI, fail) a test marked `shared_data(name, ...)` before its fixtures run."""
    for mark in item.iter_markers("shared_data"):
        for name in mark.args:
            shared_data(name)
