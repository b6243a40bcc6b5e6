"""The README's first command: the demo through lm-eval on the project's own data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aqua_tasks.core.data import load_items
from eval_plugins.lm_eval.aqua.demo import demo_questions, run_demo, write_demo_data
from eval_plugins.lm_eval.aqua.task_folder import task_config_dir
from eval_plugins.lm_eval.registration import register_all

pytestmark = pytest.mark.slow


def test_demo_questions_follow_the_released_four_type_layout(tmp_path):
    data_dir, audio_root = write_demo_data(tmp_path, clips_per_class=1)
    for track in ("animal", "music", "vocal"):
        items = load_items(data_dir, track)  # the same validation as the released files
        assert [i.type for i in items[:4]] == ["Solvable", "AAD", "IASD", "IAQD"]
        assert len({i.clip_key for i in items}) == len(items) // 4 == 6
        assert all(i.options[-1] in i.rejection_strings for i in items if i.type != "Solvable")
    assert demo_questions("music", 1) == demo_questions("music", 1)  # deterministic
    assert len(list(audio_root.rglob("*.wav"))) == 18


def test_demo_scores_baselines_as_expected(tmp_path, monkeypatch):
    from lm_eval.tasks._index import TaskIndex

    indexed = []
    build = TaskIndex.build
    monkeypatch.setattr(
        TaskIndex,
        "build",
        staticmethod(lambda paths, **kw: indexed.append(paths) or build(paths, **kw)),
    )
    register_all()
    results = run_demo(tmp_path, clips_per_class=1)
    # The demo's TaskManager indexes our task folder alone, not lm-eval's ~14 700 built-ins.
    assert indexed == [[task_config_dir()]]
    reject = results["aqua-always-reject"]
    for track in ("animal", "music", "vocal"):
        # Rejecting everything: every unanswerable item right, CA 100 % wherever defined.
        assert reject[track]["acc_aad"] == reject[track]["acc_iaqd"] == 1.0
        assert reject[track]["unparsed_rate"] == 0.0
        assert results["aqua-first-option"][track]["acc_iasd"] == 0.0
    group = results["aqua-always-reject"]["all (aqua)"]
    assert group["acc_aad"] == 1.0 and group["acc"] == pytest.approx(
        sum(reject[t]["acc"] for t in ("animal", "music", "vocal")) / 3
    )


def test_demo_command_prints_the_paper_table():
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "aqua"), "demo", "--clips-per-class", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert set(json.loads(proc.stdout)) == {
        "aqua-always-reject",
        "aqua-first-option",
        "aqua-random",
    }
