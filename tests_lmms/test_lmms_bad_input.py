"""Real `lmms-eval` runs with bad input to our tasks stop with one line and exit status 2."""

from __future__ import annotations

import json
import os
import subprocess

from conftest import BIN

from eval_plugins.lmms_eval.aqua import include_path
from eval_plugins.lmms_eval.aqua.task import METADATA_ENV


def _lmms_eval(
    tmp_path, metadata: str, model: tuple[str, ...] = ("aqua-always-reject",)
) -> subprocess.CompletedProcess:
    """lmms-eval at its default verbosity (where it would exit 0 after a failure)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", METADATA_ENV: metadata}
    command = [str(BIN / "lmms-eval"), "--include_path", include_path()]
    command += ["--model", *model, "--tasks", "aqua_animal"]
    return subprocess.run(
        [*command, "--output_path", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_lmms_eval_run_without_data_folder_fails_with_the_setting_named(tmp_path):
    done = _lmms_eval(tmp_path, "")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("lmms-eval: error:")]
    assert "no AQUA data folder given" in line and METADATA_ENV in line
    assert "Traceback" not in done.stderr


def test_lmms_eval_text_only_run_of_an_audio_model_is_refused_before_any_request(
    tmp_path, released_dir
):
    metadata = json.dumps({"data_dir": str(released_dir), "audio": False})
    model = ("aqua-audiolm", "--model_args", "pretrained=Qwen/Qwen2-Audio-7B-Instruct")
    done = _lmms_eval(tmp_path, metadata, model)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("lmms-eval: error:")]
    assert line == (
        'lmms-eval: error: aqua-audiolm needs audio, but AQUA_METADATA sets "audio": false (a '
        'text-only run): drop "audio": false to send the clips, or run text-only with an `hf` model'
    )
    assert "Traceback" not in done.stderr


def test_lmms_eval_run_with_a_missing_clip_fails_naming_it(tmp_path, released_dir):
    audio = tmp_path / "audio"  # an audio folder without the clips
    audio.mkdir()
    done = _lmms_eval(
        tmp_path / "out", json.dumps({"data_dir": str(released_dir), "audio_root": str(audio)})
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("lmms-eval: error:")]
    assert str(audio) in line
