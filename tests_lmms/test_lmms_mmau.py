"""`aqua_mmau` under the real `lmms-eval` CLI, on a 12-clip build of the real MMAU test-mini.

As under lm-eval (tests/lm_eval/test_aqua_mmau.py): the baselines text-only and with audio
(the one real MMAU clip plus synthesized stand-ins), `--tasks 'aqua_*'` with the built file
beside the released ones, and without it (left out in one line); the task named outright
without its file is an error. The three lmms-eval runs start together: each is mostly
lmms-eval's start-up.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import BIN, lmms_results, lmms_samples
from mmau_fixtures import (
    MMAU_DEMO_CLIP,
    MMAU_DEMO_ID,
    MMAU_TEST_MINI,
    NEEDS_MMAU_DATA,
    check_first_option_mmau_figures,
    write_mmau_audio,
)

from aqua_tasks.build.api import MMAU_OUTPUT, build_file
from aqua_tasks.core.data import TRACK_FILE_STEMS
from eval_plugins.lmms_eval.aqua import include_path
from eval_plugins.lmms_eval.aqua.task import METADATA_ENV, AquaTask, choose_task_matches

MMAU = MMAU_TEST_MINI
DEMO_ID = MMAU_DEMO_ID
DEMO_CLIP = MMAU_DEMO_CLIP
N_CLIPS = 12


def _lmms_eval(out: Path, metadata: dict, *args: str) -> subprocess.CompletedProcess:
    """One lmms-eval run (its exit status is the test's to check)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", METADATA_ENV: json.dumps(metadata)}
    command = [str(BIN / "lmms-eval"), "--include_path", str(include_path()), *args]
    return subprocess.run(
        [*command, "--log_samples", "--output_path", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory, released_dir):
    root = tmp_path_factory.mktemp("lmms-mmau")
    built = root / "built"
    build_file(MMAU, built, limit=N_CLIPS)
    entries = json.loads((built / MMAU_OUTPUT).read_text(encoding="utf-8"))
    audio = write_mmau_audio(root / "mmau-audio", entries)
    four = root / "four-tracks"
    four.mkdir()
    for stem in TRACK_FILE_STEMS.values():
        (four / f"{stem}.json").symlink_to(released_dir / f"{stem}.json")
    (four / MMAU_OUTPUT).symlink_to(built / MMAU_OUTPUT)
    jobs = {
        # --limit 48: every item of the build, 12 clips of each released track.
        "four": (
            {"data_dir": str(four), "audio": False},
            ("--model", "aqua-first-option", "--tasks", "aqua_*", "--limit", "48"),
        ),
        "reject_audio": (
            {"data_dir": str(built), "mmau_audio_root": str(audio)},
            ("--model", "aqua-always-reject", "--tasks", "aqua_mmau"),
        ),
        "released": (
            {"data_dir": str(released_dir), "audio": False},
            ("--model", "aqua-first-option", "--tasks", "aqua_*", "--limit", "4"),
        ),
    }
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {
            name: pool.submit(_lmms_eval, root / name, metadata, *args)
            for name, (metadata, args) in jobs.items()
        }
        done = {name: future.result() for name, future in futures.items()}
    return root, entries, audio, done


def _ok(runs, name: str) -> Path:
    root, _, _, done = runs
    assert done[name].returncode == 0, done[name].stderr[-3000:]
    return root / name


def _metrics(results: dict, task: str) -> dict[str, float]:
    return {k.split(",")[0]: v for k, v in results["results"][task].items() if "," in k}


@NEEDS_MMAU_DATA
def test_first_option_text_only_beside_the_released_tracks_gives_the_hand_computed_figures(runs):
    results = lmms_results(_ok(runs, "four"))
    assert {"aqua_animal", "aqua_music", "aqua_vocal", "aqua_mmau"} <= set(results["results"])
    m = _metrics(results, "aqua_mmau")
    check_first_option_mmau_figures(m)  # the figures of the lm-eval run
    manifest = results["configs"]["aqua_mmau"]["metadata"]["aqua_manifest"]
    assert manifest["track"] == "mmau" and manifest["data_file"] == MMAU_OUTPUT
    rows = lmms_samples(_ok(runs, "four"), "aqua_mmau")
    assert [r["doc_id"] for r in rows] == list(range(48))
    assert all(r["filtered_resps"].startswith("(a) ") for r in rows)
    assert "left out" not in runs[3]["four"].stderr


@NEEDS_MMAU_DATA
def test_always_reject_with_the_real_clip_and_synthesized_audio(runs):
    _, entries, audio, _ = runs
    results = lmms_results(_ok(runs, "reject_audio"))
    m = _metrics(results, "aqua_mmau")
    assert m["acc"] == 0.0 and m["acc_aad"] == m["acc_iasd"] == m["acc_iaqd"] == 1.0
    for kind in ("aad", "iasd", "iaqd"):
        assert m[f"n_ca_{kind}"] == 0 and math.isnan(m[f"ca_{kind}"])
    metadata = results["configs"]["aqua_mmau"]["metadata"]
    assert metadata["mmau_audio_root"] == str(audio) and "audio" not in metadata
    # Every clip was resolved before inference, the real one among them.
    assert entries[8]["source_id"] == DEMO_ID
    clip = audio / "test-mini-audios" / f"{DEMO_ID}.wav"
    assert clip.read_bytes() == DEMO_CLIP.read_bytes()
    rows = lmms_samples(_ok(runs, "reject_audio"), "aqua_mmau")
    assert [r["target"] for r in rows[8:12]] == [
        f"({chr(ord('a') + e['options'].index(e['answer']))}) {e['answer']}" for e in entries[8:12]
    ]


@NEEDS_MMAU_DATA
def test_aqua_glob_with_the_released_tracks_only_leaves_mmau_out_in_one_line(runs):
    results = lmms_results(_ok(runs, "released"))
    assert set(results["results"]) == {"aqua_animal", "aqua_music", "aqua_vocal"}
    stderr = runs[3]["released"].stderr
    left_out = [line for line in stderr.splitlines() if "aqua_mmau left out" in line]
    assert len(left_out) == 1
    assert "has no AQUA-Bench-MMAU-Track.json" in left_out[0]
    assert "aqua build --source mmau" in left_out[0]


def test_only_glob_matches_are_left_out_and_a_named_task_without_its_file_fails(
    monkeypatch, released_dir
):
    monkeypatch.setenv(METADATA_ENV, json.dumps({"data_dir": str(released_dir)}))
    matched = ["aqua_animal", "aqua_mmau", "aqua_music", "aqua_vocal"]
    assert choose_task_matches(["aqua_*"], matched) == ["aqua_animal", "aqua_music", "aqua_vocal"]
    assert choose_task_matches(["aqua_mmau"], ["aqua_mmau"]) == ["aqua_mmau"]
    with pytest.raises(ValueError) as raised:
        AquaTask(config={"task": "aqua_mmau", "dataset_kwargs": {"track": "mmau"}})
    message = str(raised.value)
    assert message.startswith(f"aqua_mmau: {MMAU_OUTPUT} not found")
    assert "aqua build --source mmau" in message
    # Settings that name no data folder filter nothing: the tasks then stop with the reason.
    monkeypatch.delenv(METADATA_ENV)
    assert choose_task_matches(["aqua_*"], matched) == matched
