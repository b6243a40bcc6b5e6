"""Test artefacts (tiny models, stand-in audio) built once per run, shared by its xdist workers."""

from __future__ import annotations

import atexit
import fcntl
import functools
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

# Short: the paths end up in every logged sample, and a samples-size test budgets bytes.
_PREFIX = "aqua-t-"


def run_folder_for(run_id: str) -> Path:
    """The artefact folder of the xdist test run with this id."""
    return Path(tempfile.gettempdir()) / f"{_PREFIX}{run_id[:12]}"


# A folder kept across test runs (CI's two suites, one per harness environment, share what
# the first built: the packages that read the artefacts are pinned to the same versions in
# both). Its owner removes it; the tests never do.
KEEP_VARIABLE = "AQUA_TEST_ARTEFACTS"


@functools.cache
def run_folder() -> Path:
    """This run's artefact folder: one for all xdist workers of the run, else this process's."""
    kept = os.environ.get(KEEP_VARIABLE)
    if kept:
        folder = Path(kept)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder
    # xdist gives every worker of one run the same id; the controller removes the folder.
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id:
        folder = run_folder_for(run_id)
        folder.mkdir(mode=0o700, exist_ok=True)
        return folder
    # A process on its own (`-n 0`, a benchmark's child) shares with nobody and cleans up itself.
    folder = Path(tempfile.mkdtemp(prefix=_PREFIX))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def shared_artefact(name: str, build: Callable[[Path], None]) -> Path:
    """The run's folder `name`, filled by `build(folder)` in the first process that asks for it."""
    folder = run_folder()
    target = folder / name
    if target.is_dir():
        return target  # only ever renamed into place whole, so it is complete
    with (folder / f".{name}.lock").open("w") as lock:
        # Workers asking at the same time wait for the first one's build instead of repeating it.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_dir():
            scratch = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder))
            try:
                build(scratch)
                # Renamed only once complete: a build that crashes leaves no half artefact.
                os.replace(scratch, target)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    return target
