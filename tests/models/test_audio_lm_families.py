"""`aqua-audiolm` on every audio LM family the pinned transformers ships and can be built here.

Each family is a tiny random model of its real config and model class with its real processor
class (tests/support/tiny_audio_families.py). For each: batched greedy replies equal
one-at-a-time ones (padding never changes a reply), and plain `lm_eval` runs it end to end on
AQUA Animal with real clips. Families that cannot be built offline are named with the reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from lm_eval.api.instance import Instance
from support.tiny_audio_families import FAMILIES, NOT_BUILT

from aqua_tasks.core.data import load_items
from aqua_tasks.models.hf_audio_lm import AudioLM
from aqua_tasks.task.definition import build_docs, doc_to_audio, doc_to_text

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
# Families with their own end-to-end tests (test_audio_lm.py, test_omni_audio_lm.py).
COVERED_ELSEWHERE = {"qwen2_audio", "qwen2_5_omni"}
MODEL_CLASSES = {
    "audioflamingo3": "AudioFlamingo3ForConditionalGeneration",
    "musicflamingo": "MusicFlamingoForConditionalGeneration",
    "qwen3_omni_moe": "Qwen3OmniMoeThinkerForConditionalGeneration",
    "phi4_multimodal": "Phi4MultimodalForCausalLM",
    "voxtral": "VoxtralForConditionalGeneration",
}
REAL_ANIMAL_CLIP = "4-181955-C-3.wav"


@pytest.fixture(scope="module", params=sorted(set(FAMILIES) - COVERED_ELSEWHERE))
def family_dir(request, tmp_path_factory) -> tuple[str, Path]:
    family = request.param
    return family, FAMILIES[family](tmp_path_factory.mktemp(family), 0)


@pytest.fixture(scope="module")
def animal_ids(released_dir) -> list[int]:
    """Both items of the published real clip, and six with stand-in clips (8 in all)."""
    items = load_items(released_dir, "animal")
    real = [n for n, i in enumerate(items) if i.audio_filename.endswith(REAL_ANIMAL_CLIP)][:2]
    return sorted({*real, *range(6)})[:8]


def animal_requests(
    released_dir, audio_root, ids, max_gen_toks: int = 6, until: tuple[str, ...] = ()
) -> list[Instance]:
    """lm-eval's generation requests for AQUA Animal items `ids`, with their real clips."""
    docs = build_docs(
        "animal", data_dir=str(released_dir), settings={"audio_root": str(audio_root)}
    )
    return [
        Instance(
            "generate_until",
            docs[n],
            (
                doc_to_text(docs[n]),
                {"until": list(until), "max_gen_toks": max_gen_toks},
                {"audio": doc_to_audio(docs[n])},
            ),
            0,
            ("aqua_animal", n, 1),
        )
        for n in ids
    ]


def test_every_family_of_the_table_is_built_or_named_with_a_reason():
    assert set(MODEL_CLASSES) | COVERED_ELSEWHERE == set(FAMILIES)
    assert set(NOT_BUILT) == {"granite_speech", "gemma3n"}
    # docs/audio_lm.md's table says the same: "tested offline" yes exactly for these.
    table = (Path(__file__).parents[2] / "docs" / "audio_lm.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| [^|]+ \(`(\w+)`\) \|.*\| (yes|\*\*no\*\*)[^|]*\| no \|$", table, re.M)
    assert {family for family, tested in rows if tested == "yes"} == set(FAMILIES)
    assert {family for family, tested in rows if tested != "yes"} == set(NOT_BUILT)


def test_batched_replies_equal_one_at_a_time(
    family_dir, released_dir, released_audio_root, animal_ids
):
    family, folder = family_dir
    requests = animal_requests(released_dir, released_audio_root, animal_ids)
    lm = AudioLM(pretrained=str(folder), device="cpu", dtype="float32", reply_cache="off")
    assert type(lm.model).__name__ == MODEL_CLASSES[family]
    lm.batch_size = 4
    batched = lm.generate_until(requests, disable_tqdm=True)
    lm.batch_size = 1
    assert batched == lm.generate_until(requests, disable_tqdm=True)
    assert all(isinstance(r, str) and r for r in batched)


def test_plain_lm_eval_runs_the_family_on_aqua_animal_with_real_clips(
    family_dir, released_dir, released_audio_root, animal_ids, tmp_path
):
    family, folder = family_dir
    metadata = {"data_dir": str(released_dir), "audio_root": str(released_audio_root)}
    proc = subprocess.run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "aqua-audiolm",
            "--model_args",
            f"pretrained={folder},device=cpu,batch_size=4,max_gen_toks=6",
            "--tasks",
            "aqua_animal",
            "--samples",
            json.dumps({"aqua_animal": animal_ids}),
            "--metadata",
            json.dumps(metadata),
            "--log_samples",
            "--output_path",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "AQUA_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())
    assert results["results"]["aqua_animal"]["n_items,none"] == len(animal_ids) == 8
    record = results["config"]["aqua_audiolm"]
    assert record["model_class"] == MODEL_CLASSES[family]
    samples = next((tmp_path / "out").rglob("samples_aqua_animal_*.jsonl")).read_text()
    assert len(samples.splitlines()) == 8


def test_a_family_whose_processor_needs_a_missing_library_is_refused_before_loading(
    tmp_path, monkeypatch
):
    import transformers

    from aqua_tasks.models import hf_audio_lm, hf_audio_lm_loading

    folder = FAMILIES["audioflamingo3"](tmp_path / "af3", 0)

    def needs_torchaudio(*args, **kwargs):
        raise ImportError("GraniteSpeechFeatureExtractor requires the torchaudio library")

    def never(*args, **kwargs):
        raise AssertionError("weights were loaded")

    monkeypatch.setattr(transformers.AutoProcessor, "from_pretrained", needs_torchaudio)
    monkeypatch.setattr(hf_audio_lm, "load_model", never)
    with pytest.raises(ValueError) as refused:
        AudioLM(pretrained=str(folder), device="cpu")
    assert str(refused.value) == (
        f"{folder}: audioflamingo3 models cannot run here: its processor needs a library that is "
        "not installed (GraniteSpeechFeatureExtractor requires the torchaudio library)"
    )
    assert hf_audio_lm_loading.audio_features(object()) is None


def test_phi4_inputs_from_parts_equal_what_its_processor_gives(
    tmp_path, released_dir, released_audio_root, animal_ids
):
    """Phi-4's processor cannot be built here (its image processor needs torchvision); with a
    stand-in image processor it can, and for audio it gives exactly our inputs."""
    import torch
    import transformers

    from aqua_tasks.models.audio_prompts import mono_waveform
    from aqua_tasks.models.families.phi4 import Phi4AudioInputs

    folder = FAMILIES["phi4_multimodal"](tmp_path / "phi4", 0)
    docs = build_docs(
        "animal", data_dir=str(released_dir), settings={"audio_root": str(released_audio_root)}
    )
    clips = [mono_waveform(doc_to_audio(docs[n])[0], 16000) for n in animal_ids]
    clips = list({len(c): c for c in clips}.values())  # different lengths: padding matters
    assert len(clips) > 1
    prompts = [f"<|user|><|audio|>question {n}<|end|><|assistant|>" for n in range(len(clips))]
    config = transformers.AutoConfig.from_pretrained(folder)
    ours = Phi4AudioInputs.from_pretrained(str(folder), config)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    for name in ("audio", "image"):
        setattr(tokenizer, f"{name}_token", f"<|{name}|>")
        setattr(tokenizer, f"{name}_token_id", tokenizer.convert_tokens_to_ids(f"<|{name}|>"))
    theirs = transformers.Phi4MultimodalProcessor(
        image_processor=transformers.ImageProcessingMixin(),
        audio_processor=ours.feature_extractor,
        tokenizer=tokenizer,
    )
    expected = theirs(
        text=prompts, audio=clips, sampling_rate=16000, padding=True, return_tensors="pt"
    )
    got = ours(text=prompts, audio=clips, sampling_rate=16000)
    assert sorted(got) == sorted(expected)
    assert all(torch.equal(got[key], expected[key]) for key in expected)
    assert (got["input_ids"] == tokenizer.audio_token_id).sum() == got["audio_embed_sizes"].sum()


@pytest.fixture(scope="module")
def voxtral_dir(tmp_path_factory) -> Path:
    return FAMILIES["voxtral"](tmp_path_factory.mktemp("voxtral"), 0)


def test_voxtral_prompts_are_conversations_rendered_with_their_clips(voxtral_dir):
    import transformers

    from aqua_tasks.models.families.voxtral import VoxtralInputs

    inputs = VoxtralInputs(transformers.AutoProcessor.from_pretrained(voxtral_dir))
    user = {"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": "Which?"}]}
    prompt = inputs.apply_chat_template([user])
    assert json.loads(prompt) == [{"role": "user", "content": "[AUDIO]Which?"}]
    # mistral-common's own rules, said when the prompt is made, before any generation: no
    # system prompt beside audio for this tokenizer version, the last turn a user's.
    refused = "Voxtral's tokenizer \\(mistral-common\\) refuses the conversation: "
    system = {"role": "system", "content": "Answer briefly."}
    with pytest.raises(ValueError, match=refused + "Found system messages at indexes"):
        inputs.apply_chat_template([system, user])
    with pytest.raises(ValueError, match=refused):
        inputs.apply_chat_template([user, {"role": "assistant", "content": "The"}])
    wave = np.sin(np.linspace(0, 900, 24000)).astype(np.float32)
    encoded = inputs([prompt], [wave], sampling_rate=16000)
    # mistral-common writes each clip's tokens: 12.5 per second of its 30 s chunk.
    assert int((encoded["input_ids"] == 24).sum()) == 375
    assert tuple(encoded["input_features"].shape) == (1, 128, 3000)
    with pytest.raises(ValueError, match="prompts hold 1 audio slots for 2 clips"):
        inputs([prompt], [wave, wave], sampling_rate=16000)
    with pytest.raises(ValueError, match=r"Voxtral prompts are conversations \(JSON\)"):
        inputs(["<s>[INST][AUDIO]Which?[/INST]"], [wave], sampling_rate=16000)


def test_voxtral_replies_are_cut_at_stop_strings_after_decoding(
    voxtral_dir, released_dir, released_audio_root
):
    from aqua_tasks.core.generation_limit import split_token_limit

    def reply(until: list[str]) -> str:
        requests = animal_requests(released_dir, released_audio_root, [0], 12, tuple(until))
        return lm.generate_until(requests, disable_tqdm=True)[0]

    lm = AudioLM(pretrained=str(voxtral_dir), device="cpu", dtype="float32", reply_cache="off")
    full, limited = split_token_limit(reply([]))
    assert limited and len(full) > 4
    stop = full[4]
    assert reply([stop]) == full[: full.index(stop)]


def test_gemma3n_is_refused_before_loading_where_timm_does_not_import(tmp_path, monkeypatch):
    import transformers

    from aqua_tasks.models import hf_audio_lm

    transformers.Gemma3nConfig().save_pretrained(tmp_path)

    def never(*args, **kwargs):
        raise AssertionError("the processor or weights were loaded")

    monkeypatch.setitem(sys.modules, "timm", None)  # importing it fails, as without torchvision
    monkeypatch.setattr(transformers.AutoProcessor, "from_pretrained", never)
    monkeypatch.setattr(hf_audio_lm, "load_model", never)
    with pytest.raises(ValueError) as refused:
        AudioLM(pretrained=str(tmp_path), device="cpu")
    assert str(refused.value) == (
        f"{tmp_path}: gemma3n models cannot run here: its vision part is a timm model and "
        "timm does not import (ModuleNotFoundError: import of timm halted; None in sys.modules)"
    )


def test_phi4_runs_with_its_speech_lora_and_says_so_without_it(
    tmp_path, released_dir, released_audio_root, caplog
):
    import shutil

    folder = FAMILIES["phi4_multimodal"](tmp_path / "phi4", 0)
    requests = animal_requests(released_dir, released_audio_root, range(2))
    with_lora = AudioLM(pretrained=str(folder), device="cpu", dtype="float32", reply_cache="off")
    assert with_lora.run_info["adapter"] == "speech-lora"
    assert type(with_lora.model).__name__ == "Phi4MultimodalForCausalLM"  # merged
    replies = with_lora.generate_until(requests, disable_tqdm=True)

    shutil.rmtree(folder / "speech-lora")
    with caplog.at_level("WARNING"):
        bare = AudioLM(pretrained=str(folder), device="cpu", dtype="float32", reply_cache="off")
    assert bare.run_info["adapter"] is None
    assert "has no speech-lora/ adapter: running its weights as they are" in caplog.text
    assert bare.generate_until(requests, disable_tqdm=True) != replies  # the LoRA matters


def test_a_chat_template_that_drops_audio_parts_is_refused_before_loading(tmp_path, monkeypatch):
    from aqua_tasks.models import hf_audio_lm

    folder = FAMILIES["qwen2_audio"](tmp_path / "qwen2-audio", 0)
    text_only = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}"
        "{{ m['content'] }}{% else %}{% for p in m['content'] %}{% if p['type'] == 'text' %}"
        "{{ p['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    )
    (folder / "chat_template.jinja").write_text(text_only, encoding="utf-8")

    def never(*args, **kwargs):
        raise AssertionError("weights were loaded")

    monkeypatch.setattr(hf_audio_lm, "load_model", never)
    with pytest.raises(ValueError, match=r"its chat template renders one audio part with 0 "):
        AudioLM(pretrained=str(folder), device="cpu")
