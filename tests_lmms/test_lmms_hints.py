"""Under lmms-eval, hints name AQUA_METADATA (lmms-eval has no --metadata)."""

from __future__ import annotations

import json
import os
import subprocess

from conftest import BIN

from eval_plugins.lmms_eval.aqua import include_path
from eval_plugins.lmms_eval.aqua.task import METADATA_ENV


def test_a_missing_clip_under_lmms_eval_says_to_set_the_audio_root_in_aqua_metadata(
    tmp_path, released_dir
):
    audio = tmp_path / "audio"  # an audio folder without the clips
    audio.mkdir()
    metadata = json.dumps({"data_dir": str(released_dir), "audio_root": str(audio)})
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", METADATA_ENV: metadata}
    command = [str(BIN / "lmms-eval"), "--include_path", include_path(), "--model"]
    command += ["aqua-always-reject", "--tasks", "aqua_animal", "--output_path", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("lmms-eval: error:")]
    assert "Set audio_root (or animal_audio_root) in AQUA_METADATA to the folder" in line
    assert "--metadata" not in line
