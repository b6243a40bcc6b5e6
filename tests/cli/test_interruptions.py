"""Real console-script runs: a reader that closes the pipe, and Ctrl-C (SIGINT) mid-run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def authors_results(released_dir, tmp_path_factory) -> Path:
    """An authors'-format results file: the released Animal track, every reply "(a)"."""
    entries = json.loads(
        (released_dir / "AQUA-Bench-Animal-Sounds-Track.json").read_text(encoding="utf-8")
    )
    path = tmp_path_factory.mktemp("authors") / "animal_results.json"
    path.write_text(json.dumps([{**e, "response": "(a)"} for e in entries]), encoding="utf-8")
    return path


def test_aqua_score_into_a_pipe_whose_reader_has_left_exits_quietly(authors_results):
    # As `aqua score … | head -1` once head has its line: every later write meets a closed pipe.
    argv = [str(BIN / "aqua"), "score", str(authors_results), "--track", "animal", "--n-boot", "20"]
    proc = subprocess.Popen(
        [*argv, "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err
    assert err == ""


def test_aqua_score_piped_into_head_prints_the_first_line_and_no_traceback(authors_results):
    shell = (
        f"'{BIN / 'aqua'}' score '{authors_results}' --track animal --n-boot 20 --no-progress "
        "| head -1"
    )
    proc = subprocess.run(
        ["bash", "-c", shell], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0 and proc.stdout.startswith("| track | Ori |")
    assert len(proc.stdout.splitlines()) == 1 and "Traceback" not in proc.stderr


def test_ctrl_c_during_aqua_score_prints_one_line_and_exits_130(authors_results):
    # Ten million bootstrap resamples: long enough to be interrupted mid-computation.
    argv = [str(BIN / "aqua"), "score", str(authors_results), "--track", "animal"]
    proc = subprocess.Popen(
        [*argv, "--n-boot", "10000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = ""
    while "scoring" not in seen:  # the progress bar: main() is running, imports are done
        char = proc.stderr.read(1)
        assert char, f"aqua score ended before scoring: {seen}"
        seen += char
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().splitlines()[-1] == "aqua score: interrupted; nothing was written"
    assert out == ""
