"""Shared fixtures: the released AQUA data, real demo clips, and audio stood in for the rest."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from shared_cache import run_folder_for, shared_artefact
from shared_data import fold_missing_data_skip, require_marked_data, shared_data, shared_path

# Nothing in the tests may reach the Hugging Face Hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Reply journals of aqua-audiolm runs (and their subprocesses) stay out of ~/.cache, and a
# test never reads replies an earlier test session wrote.
os.environ["AQUA_CACHE_DIR"] = tempfile.mkdtemp(prefix="aqua-cache-")

REPO = Path(__file__).resolve().parents[1]
RELEASED_DIR = shared_path("aqua-bench")
DEMO_AUDIO_DIR = shared_path("aqua-demo-audio")
# The real clips of the authors' demo, keyed by the end of the released audio_filename.
REAL_CLIPS = {
    "ESC-50-master/audio_16k/4-181955-C-3.wav": "4-181955-C-3.wav",
    "music_dataset/Acoustic_Guitar/2940.wav": "Acoustic_Guitar-2940.wav",
    "audio_16k/m1553_0_cough.wav": "m1553_0_cough.wav",
}


def real_clip_for(audio_filename: str) -> Path | None:
    """The real demo clip standing for a released audio_filename, if there is one."""
    for suffix, name in REAL_CLIPS.items():
        if audio_filename.endswith(suffix):
            return DEMO_AUDIO_DIR / name
    return None


STAND_IN_RATES = (16000, 22050, 32000, 44100)


def pytest_configure(config: pytest.Config) -> None:
    # The controller picks the run's xdist id itself, so that it knows which shared folder
    # (tests/shared_cache.py) to remove at the end.
    if not hasattr(config, "workerinput") and config.option.testrunuid is None:
        config.option.testrunuid = uuid.uuid4().hex


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Files with a slow test first (setup.cfg keeps this order for xdist), then the others,
    # most tests first as xdist would. xdist's own order put the few-test, minute-long files
    # last, so that the run ended on one of them while the other workers had nothing to do.
    per_file = Counter(item.path for item in items)
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: (0, 0) if item.path in slow else (1, -per_file[item.path]))


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures read the data
def pytest_runtest_setup(item: pytest.Item) -> None:
    require_marked_data(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    return fold_missing_data_skip((yield))


@pytest.hookimpl(trylast=True)  # after xdist has stopped the workers
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not hasattr(config, "workerinput"):
        shutil.rmtree(run_folder_for(config.option.testrunuid), ignore_errors=True)


@pytest.fixture(scope="session")
def released_dir() -> Path:
    return shared_data("aqua-bench")


@pytest.fixture(scope="session")
def demo_audio_dir() -> Path:
    return shared_data("aqua-demo-audio")


@pytest.fixture(scope="session")
def released_audio_root(released_dir, demo_audio_dir) -> Path:
    """Audio for every clip of the three main tracks at its resolved path (shared, read-only).

    The three clips the authors published are the real files; the others are short
    synthesized tones at varied sample rates, standing in for ESC-50/VocalSound/music.
    """
    return shared_artefact("audio", lambda root: _write_released_audio(root, released_dir))


def _write_released_audio(root: Path, released_dir: Path) -> None:
    from aqua_tasks.audio.clips import canonical_relpath
    from aqua_tasks.core.data import TRACKS, load_items

    rng = np.random.default_rng(0)
    n = 0
    for track in TRACKS:
        for item in load_items(released_dir, track):
            path = root / canonical_relpath(track, item.audio_filename)
            if path.exists():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            real = real_clip_for(item.audio_filename)
            if real is not None:
                shutil.copyfile(real, path)
                continue
            rate = STAND_IN_RATES[n % len(STAND_IN_RATES)]
            n += 1
            t = np.arange(int(0.1 * rate)) / rate
            wave = 0.2 * np.sin(2 * np.pi * rng.uniform(100, 2000) * t)
            sf.write(path, wave.astype(np.float32), rate)


@pytest.fixture(scope="module")
def builtin_index_parsed_once():
    """Parse lm-eval's ~14k built-in task YAMLs once for a module's in-process lm-eval runs.

    Re-parsing them is ~85 % of each run's time here and none of them is ever loaded by these
    runs; our own task folder is still indexed afresh on every run.
    """
    import lm_eval.tasks
    from lm_eval.tasks._index import TaskIndex

    original = TaskIndex.build
    builtin = Path(lm_eval.tasks.__file__).parent
    cache: dict[Path, dict] = {}

    def build(paths, *, resolve_includes=True):
        index: dict = {}
        for root in map(Path, paths):
            if root != builtin:
                index.update(original([root], resolve_includes=resolve_includes))
                continue
            if root not in cache:
                cache[root] = original([root], resolve_includes=resolve_includes)
            index.update(cache[root])
        return index

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TaskIndex, "build", staticmethod(build))
        yield
