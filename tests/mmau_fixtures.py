"""Helpers of the MMAU-track tests (lm-eval and lmms-eval): its data, stand-in audio, figures.

A module of its own, not conftest.py: test folders with a conftest.py of their own would
shadow the `conftest` name.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from shared_data import shared_path

MMAU_TEST_MINI = shared_path("mmau") / "mmau-test-mini.json"
MMAU_DEMO_ID = "6aee68bf-6629-442b-981d-ae8195597c8e"
# The one MMAU test-mini clip in the shared data.
MMAU_DEMO_CLIP = shared_path("aqua-demo-audio") / f"{MMAU_DEMO_ID}.wav"
# The mark of every test that reads the MMAU questions or the demo clip.
NEEDS_MMAU_DATA = pytest.mark.shared_data("mmau", "aqua-demo-audio")
STAND_IN_RATES = (16000, 22050, 32000, 44100)


def write_mmau_audio(root: Path, entries: list[dict]) -> Path:
    """An MMAU audio root for built entries: test-mini-audios/ with the real demo clip and a
    synthesized tone for every other clip (MMAU's audio is not in the shared data)."""
    folder = root / "test-mini-audios"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for n, entry in enumerate(entries[::4]):
        path = folder / Path(entry["audio_filename"]).name
        if entry["source_id"] == MMAU_DEMO_ID:
            shutil.copyfile(MMAU_DEMO_CLIP, path)
            continue
        rate = STAND_IN_RATES[n % len(STAND_IN_RATES)]
        t = np.arange(int(0.1 * rate)) / rate
        tone = 0.2 * np.sin(2 * np.pi * rng.uniform(100, 2000) * t)
        sf.write(path, tone.astype(np.float32), rate)
    return root


def check_first_option_mmau_figures(m: dict[str, float]) -> None:
    """aqua-first-option on the 12 first test-mini items, by hand: option (a) is the answer
    in 10, and never rejects (so every CA is 0 over those 10 clips)."""
    assert m["acc"] == pytest.approx(10 / 12) and m["n_solvable"] == 12 and m["n_items"] == 48
    for kind in ("aad", "iasd", "iaqd"):
        assert m[f"ca_{kind}"] == 0.0 and m[f"n_ca_{kind}"] == 10 and m[f"acc_{kind}"] == 0.0
    assert m["unparsed_rate"] == 0.0
