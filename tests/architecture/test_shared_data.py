"""Without the shared test data a test is skipped with one reason naming it; in CI it fails.

The data (released AQUA-Bench files, demo clips, ORCA human ratings, MMAU questions) is not
in the repository: tests/shared_data.py alone says where it is, so a clone without it skips
those tests, and `.ci/run` (AQUA_REQUIRE_SHARED_DATA=1) runs every one of them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import shared_data as module
from shared_data import HOW_TO_GET, REQUIRE_VARIABLE, missing_reason, shared_data, shared_path

REPO = Path(__file__).resolve().parents[2]
# A file with tests reading the data through a marker, a fixture calling shared_data() and
# none at all; and one reading it through the conftest fixtures (released_dir, …).
FILES = ["tests/audio/test_audio.py", "tests/audio/test_aqua_audio_flow.py"]


def run_pytest(shared_dir: Path, **env: str) -> subprocess.CompletedProcess:
    """The two files under the README's test command, in one process, with this data folder."""
    # Not this run's xdist worker, nor under CI's variable unless asked.
    inherited = {
        k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != REQUIRE_VARIABLE
    }
    full_env = {**inherited, "AQUA_SHARED_DIR": str(shared_dir), **env}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *FILES],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env=full_env,
    )


def test_a_missing_folder_skips_with_one_reason_naming_it_and_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(module, "DATA_DIR", tmp_path / "data")
    monkeypatch.delenv(REQUIRE_VARIABLE, raising=False)
    (tmp_path / "data" / "mmau").mkdir(parents=True)  # an empty folder is missing data too
    for name in HOW_TO_GET:
        with pytest.raises(pytest.skip.Exception) as skipped:
            shared_data(name)
        assert str(skipped.value) == missing_reason(name)
        assert f"{tmp_path / 'data' / name}: set AQUA_SHARED_DIR to a folder holding" in (
            missing_reason(name)
        )
    assert "orca fetch-ratings --output" in missing_reason("orca-human")
    assert "'Get the data'" in missing_reason("aqua-bench")


def test_a_present_folder_is_returned_and_under_the_ci_variable_a_missing_one_fails(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(module, "DATA_DIR", tmp_path)
    (tmp_path / "mmau").mkdir()
    (tmp_path / "mmau" / "mmau-test-mini.json").write_text("[]")
    assert shared_data("mmau") == tmp_path / "mmau"
    monkeypatch.setenv(REQUIRE_VARIABLE, "1")
    with pytest.raises(pytest.fail.Exception, match=f"aqua-bench not found.*{REQUIRE_VARIABLE}=1"):
        shared_data("aqua-bench")
    with pytest.raises(ValueError, match=r"'orca': expected one of \['aqua-bench'"):
        shared_path("orca")


@pytest.mark.slow
def test_a_clone_without_the_data_skips_what_needs_it_and_ci_fails_it(tmp_path, monkeypatch):
    done = run_pytest(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    summary = done.stdout.splitlines()[-1].strip("= ")
    assert re.match(r"\d+ passed, \d+ skipped(, \d+ warnings?)? in ", summary), summary
    skips = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    # One line per missing folder (pytest folds skips of one reason and place into one).
    assert len(skips) == 2, skips
    monkeypatch.setattr(module, "DATA_DIR", tmp_path / "data")
    for name in ("aqua-bench", "aqua-demo-audio"):
        (line,) = [line for line in skips if line.endswith(missing_reason(name))]
        assert line.startswith("SKIPPED [") and "] tests/shared_data.py: shared test data" in line

    required = run_pytest(tmp_path, **{REQUIRE_VARIABLE: "1"})
    assert required.returncode == 1, required.stdout[-3000:]
    assert "skipped" not in required.stdout.splitlines()[-1]
    assert f"not found at {tmp_path / 'data' / 'aqua-bench'}" in required.stdout


def test_only_tests_shared_data_py_says_where_the_data_is():
    """A test finding the data itself would neither skip without it nor fail in CI."""
    found = []
    for folder in ("tests", "tests_lmms", "tests_lm_eval_next"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.name in ("shared_data.py", Path(__file__).name):
                continue
            text = path.read_text(encoding="utf-8")
            if "AQUA_SHARED_DIR" in text or re.search(r"(parent|parents\[\d\]) / \"shared\"", text):
                found.append(str(path.relative_to(REPO)))
    assert not found, f"these files find the shared data themselves, not by shared_data: {found}"


def test_ci_requires_the_data_and_prints_the_slowest_tests():
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert f"export {REQUIRE_VARIABLE}=1\n" in script
    assert script.index(f"export {REQUIRE_VARIABLE}=1") < script.index("python -m pytest -q")
    assert "python -m pytest -q --durations=15\n" in script
