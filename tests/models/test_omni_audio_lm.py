"""`aqua-audiolm` with a tiny random Qwen2.5-Omni thinker: inputs built without its processor."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from lm_eval.api.instance import Instance
from support.tiny_audio_lm import build_tiny_omni_thinker

from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.models.families.omni import OmniThinkerInputs, audio_token_count
from aqua_tasks.models.families.parts import expand_audio_slots
from aqua_tasks.models.hf_audio_lm import AudioLM
from aqua_tasks.task.definition import build_docs, doc_to_audio, doc_to_text

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
# Clip lengths in samples at their rate: the shortest clip the checks let through, frame
# boundaries and their neighbours, a resampled clip, exactly the 30 s window and beyond it.
CLIPS = [
    (961, 16000),
    (16000, 16000),
    (16321, 16000),
    (43217, 16000),
    (3 * 44100 + 17, 44100),
    (30 * 16000, 16000),
    (31 * 8000, 8000),
]


@pytest.fixture(scope="module")
def omni_dir(tmp_path_factory) -> Path:
    return build_tiny_omni_thinker(tmp_path_factory.mktemp("tiny_qwen2_5_omni"))


@pytest.fixture(scope="module")
def lm(omni_dir) -> AudioLM:
    return AudioLM(pretrained=str(omni_dir), device="cpu", max_gen_toks=6, reply_cache="off")


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> list[LazyAudio]:
    folder = tmp_path_factory.mktemp("omni_clips")
    rng = np.random.default_rng(3)
    out = []
    for n, (samples, rate) in enumerate(CLIPS):
        wave = 0.2 * np.sin(np.arange(samples) * rng.uniform(0.01, 0.3)).astype(np.float32)
        path = folder / f"clip{n}.wav"
        sf.write(path, wave, rate, subtype="FLOAT")
        out.append(LazyAudio(path))
    return out


def test_the_thinker_is_loaded_with_inputs_built_from_its_parts(lm):
    assert type(lm.model).__name__ == "Qwen2_5OmniThinkerForConditionalGeneration"
    assert isinstance(lm.processor, OmniThinkerInputs)
    plain = lm.prompt("<audio>\nWhich animal?", 1)
    # The checkpoint's template: its default system turn, the clip wrapped in audio bos/eos.
    assert plain.startswith("<|im_start|>system\nYou are Qwen")
    assert plain.endswith(
        "<|im_start|>user\n<|audio_bos|><|AUDIO|><|audio_eos|>Which animal?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    # Applied once, whether lm-eval --apply_chat_template rendered it first or not.
    templated = lm.apply_chat_template([{"role": "user", "content": "<audio>\nWhich animal?"}])
    assert templated == plain and lm.prompt(templated, 1) == plain


def test_audio_placeholders_equal_what_the_audio_encoder_yields_for_each_clip(lm, clips):
    import torch

    prompts = [lm.prompt("<audio>\nQ?", 1)] * len(clips)
    inputs = lm.encode(prompts, [[c] for c in clips])
    audio_id = lm.model.config.audio_token_id
    assert inputs["input_features"].shape == (len(clips), 128, 3000)
    counts = []
    for row in range(len(clips)):
        with torch.inference_mode():
            encoded = lm.model.get_audio_features(
                inputs["input_features"][row : row + 1],
                inputs["feature_attention_mask"][row : row + 1],
            ).last_hidden_state
        slots = int((inputs["input_ids"][row] == audio_id).sum())
        # Each clip's embeddings fill exactly its own slots: none left over, none missing.
        assert slots == encoded.shape[0], CLIPS[row]
        counts.append(slots)
    # One per 4 mel frames (40 ms), counted from the clip's frames at 16 kHz, capped by the
    # 30 s window.
    assert counts == [2, 25, 26, 68, 75, 750, 750]
    assert audio_token_count(100) == 25 and audio_token_count(3000) == 750
    with pytest.raises(ValueError, match="2 audio slots for 1 clips"):
        expand_audio_slots(["<|AUDIO|><|AUDIO|>"], "<|AUDIO|>", [3])


def omni_requests(clips: list[LazyAudio]) -> list[Instance]:
    """One request per clip, with one two-clip request among them."""
    requests = [
        Instance(
            "generate_until", {}, ("<audio>\nQ?", {"until": []}, {"audio": [c]}), 0, ("t", n, 1)
        )
        for n, c in enumerate(clips)
    ]
    pair = ("Audio 1: <audio>\nAudio 2: <audio>\nSame?", {"until": []}, {"audio": clips[1:3]})
    return [*requests, Instance("generate_until", {}, pair, 0, ("t", len(clips), 1))]


def test_batched_greedy_replies_equal_one_at_a_time(lm, clips):
    requests = omni_requests(clips)
    lm.batch_size = 1
    single = lm.generate_until(requests, disable_tqdm=True)
    lm.batch_size = 4
    batched = lm.generate_until(requests, disable_tqdm=True)
    assert batched == single and len(single) == len(requests)
    assert lm.run_info["failed"] == 0
    # Noise, but not one constant string: replies depend on each request's audio.
    assert len(set(single)) > 2


def test_a_full_omni_checkpoint_loads_only_its_thinker_with_the_same_replies(
    lm, omni_dir, clips, tmp_path
):
    from safetensors.torch import load_file, save_file
    from transformers import AutoConfig, Qwen2_5OmniConfig

    # The layout of a full Qwen2.5-Omni checkpoint: an Omni config around the thinker's,
    # thinker weights under `thinker.` (talker and vocoder weights would be skipped), the
    # processor's chat template in chat_template.json.
    for part in omni_dir.iterdir():
        if part.name not in ("config.json", "model.safetensors", "chat_template.jinja"):
            (tmp_path / part.name).write_bytes(part.read_bytes())
    template = (omni_dir / "chat_template.jinja").read_text()
    (tmp_path / "chat_template.json").write_text(json.dumps({"chat_template": template}))
    thinker = AutoConfig.from_pretrained(omni_dir).to_dict()
    Qwen2_5OmniConfig(thinker_config=thinker, enable_audio_output=True).save_pretrained(tmp_path)
    weights = load_file(omni_dir / "model.safetensors")
    save_file(
        {f"thinker.{k}": v for k, v in weights.items()},
        tmp_path / "model.safetensors",
        metadata={"format": "pt"},
    )
    full = AudioLM(pretrained=str(tmp_path), device="cpu", max_gen_toks=6, reply_cache="off")
    assert type(full.model).__name__ == "Qwen2_5OmniThinkerForConditionalGeneration"
    assert full.processor.chat_template == template
    requests = omni_requests(clips)[:3]
    assert full.generate_until(requests, disable_tqdm=True) == lm.generate_until(
        requests, disable_tqdm=True
    )


def test_aqua_eval_runs_the_omni_thinker_end_to_end(
    lm, omni_dir, released_dir, released_audio_root, tmp_path
):
    out = tmp_path / "results"
    metadata = {"data_dir": str(released_dir), "audio_root": str(released_audio_root)}
    command = [
        str(BIN / "aqua"),
        "eval",
        "--model",
        "aqua-audiolm",
        "--model_args",
        f"pretrained={omni_dir},batch_size=2,max_gen_toks=6,device=cpu,reply_cache=off",
        "--tasks",
        "aqua_animal,aqua_vocal",
        "--limit",
        "3",
        "--metadata",
        json.dumps(metadata),
        "--log_samples",
        "--output_path",
        str(out),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    assert results["config"]["model"] == "aqua-audiolm"
    record = results["config"]["aqua_audiolm"]
    assert (record["items"], record["generated"], record["failed"]) == (6, 6, 0)
    assert "AQUA-Bench (paper layout, %)" in proc.stdout
    # The replies of the CLI run are those of the same requests generated here.
    settings = {"audio_root": str(released_audio_root)}
    for task in ("aqua_animal", "aqua_vocal"):
        assert results["results"][task]["n_items,none"] == 3
        docs = build_docs(task.removeprefix("aqua_"), data_dir=str(released_dir), settings=settings)
        logged = {}
        for line in next(out.rglob(f"samples_{task}_*.jsonl")).read_text().splitlines():
            sample = json.loads(line)
            logged[sample["doc_id"]] = sample["resps"][0][0]
        assert sorted(logged) == [0, 1, 2]
        requests = [
            Instance(
                "generate_until",
                docs[n],
                (
                    doc_to_text(docs[n]),
                    {"until": [], "max_gen_toks": 6},
                    {"audio": doc_to_audio(docs[n])},
                ),
                0,
                (task, n, 1),
            )
            for n in sorted(logged)
        ]
        assert lm.generate_until(requests, disable_tqdm=True) == [logged[n] for n in sorted(logged)]
