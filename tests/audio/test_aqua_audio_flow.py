"""Audio reaches the model through lm-eval: lazily, resampled to 16 kHz mono, per item."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
import soundfile as sf
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager

from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.core.data import load_items
from aqua_tasks.models.baselines import AquaBaselineLM
from eval_plugins.lm_eval.aqua.task_folder import task_config_dir
from eval_plugins.lm_eval.registration import register_all

pytestmark = pytest.mark.slow


class RecordingAudioLM(AquaBaselineLM):
    """Answers the first option and records what audio each request carried."""

    seen: ClassVar[list[tuple[str, int, object]]] = []

    def answer(self, request):
        (audio,) = request.args[2]["audio"]
        assert isinstance(audio, LazyAudio)  # requests hold paths, not decoded samples
        array = audio["array"]
        RecordingAudioLM.seen.append((request.doc["audio_filename"], audio["sampling_rate"], array))
        return f"(a) {request.doc['options'][0]}"


def test_each_request_carries_its_clip_resampled_to_16k_mono(
    released_dir, released_audio_root, demo_audio_dir
):
    register_all()
    RecordingAudioLM.seen = []
    manager = TaskManager(
        include_path=str(task_config_dir()),
        include_defaults=False,
        metadata={"data_dir": str(released_dir), "audio_root": str(released_audio_root)},
    )
    # The three clips published by the authors are items 4k..4k+3 of these clips.
    samples = {"aqua_animal": [], "aqua_music": [], "aqua_vocal": []}
    real = {
        "aqua_animal": "4-181955-C-3.wav",
        "aqua_music": "Acoustic_Guitar/2940.wav",
        "aqua_vocal": "m1553_0_cough.wav",
    }
    for task, suffix in real.items():
        items = load_items(released_dir, task.removeprefix("aqua_"))
        samples[task] = [n for n, i in enumerate(items) if i.audio_filename.endswith(suffix)][:2]
    output = simple_evaluate(
        model=RecordingAudioLM(), tasks=list(samples), task_manager=manager, samples=samples
    )
    assert output["results"]["aqua_music"]["n_items,none"] == 2
    sources = {
        "4-181955-C-3.wav": "4-181955-C-3.wav",
        "Acoustic_Guitar/2940.wav": "Acoustic_Guitar-2940.wav",
        "m1553_0_cough.wav": "m1553_0_cough.wav",
    }
    assert len(RecordingAudioLM.seen) == 6
    for filename, rate, array in RecordingAudioLM.seen:
        source = next(demo_audio_dir / v for k, v in sources.items() if filename.endswith(k))
        info = sf.info(source)
        assert rate == 16000 and array.dtype == np.float32 and array.ndim == 1
        assert abs(len(array) - round(info.frames * 16000 / info.samplerate)) <= 1
        original, _ = sf.read(source, dtype="float32", always_2d=True)
        rms_in = float(np.sqrt(np.mean(original.mean(axis=1) ** 2)))
        assert float(np.sqrt(np.mean(array**2))) == pytest.approx(rms_in, rel=0.05)
