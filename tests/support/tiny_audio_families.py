"""Tiny random audio LMs of more transformers families, built offline with their real classes.

Each builder writes a model of the family's own config and model class (a few layers, small
widths, random weights) and the family's own processor class (its feature extractor, a tiny
byte-level tokenizer holding the family's audio token, a chat template in its format), so
`aqua-audiolm` runs it end to end as it would the published checkpoint. `FAMILIES` names
every family the tests run, with the builder of each.

    python tests/support/tiny_audio_lm.py OUT_DIR --family audioflamingo3
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from support.tiny_audio_lm import (
    NUM_MEL_BINS,
    OMNI_CHAT_TEMPLATE,
    VISION_TOKENS,
    build_tiny_audio_lm,
    build_tiny_omni_thinker,
    build_tokenizer,
    qwen2_text_config,
)


def chat_template(audio: str) -> str:
    """A ChatML template that renders each audio part as `audio` (the family's own marker)."""
    return (
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
        "{% if message['content'] is string %}{{ message['content'] }}"
        "{% else %}{% for part in message['content'] %}"
        "{% if part['type'] == 'audio' %}" + audio + "{% elif part['type'] == 'text' %}"
        "{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )


def _save(out_dir: str | Path, model, processor, tokenizer, eos: str = "<|im_end|>") -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    eos, pad = tokenizer.convert_tokens_to_ids(eos), tokenizer.pad_token_id
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = pad
    model.generation_config.do_sample = False
    model.eval().save_pretrained(out)
    processor.save_pretrained(out)
    return out


def _whisper_encoder(model_type: str) -> dict:
    """A one-layer Whisper-style encoder (Audio Flamingo's) over 30 s windows."""
    return {
        "model_type": model_type,
        "num_mel_bins": NUM_MEL_BINS,
        "d_model": 32,
        "encoder_layers": 1,
        "encoder_attention_heads": 2,
        "encoder_ffn_dim": 64,
        "max_source_positions": 1500,
    }


def build_tiny_audioflamingo3(out_dir: str | Path, seed: int = 0, music: bool = False) -> Path:
    """Audio Flamingo 3 (or Music Flamingo): Whisper-style encoder, `<sound>` tokens, Qwen2 text."""
    import torch
    import transformers

    marker = ("<|sound_bos|>", "<sound>", "<|sound_eos|>") if music else ("<sound>",)
    tokenizer = build_tokenizer(marker)
    prefix = "MusicFlamingo" if music else "AudioFlamingo3"
    features = transformers.WhisperFeatureExtractor(feature_size=NUM_MEL_BINS, sampling_rate=16000)
    processor = getattr(transformers, f"{prefix}Processor")(
        feature_extractor=features, tokenizer=tokenizer, chat_template=chat_template("<sound>")
    )
    ids = {"audio_token_id": tokenizer.convert_tokens_to_ids("<sound>")}
    if music:
        ids |= {
            "audio_bos_token_id": tokenizer.convert_tokens_to_ids("<|sound_bos|>"),
            "audio_eos_token_id": tokenizer.convert_tokens_to_ids("<|sound_eos|>"),
            # Rotary time embeddings over the encoder's 32 dims.
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
        }
    encoder = "musicflamingo_encoder" if music else "audioflamingo3_encoder"
    config = getattr(transformers, f"{prefix}Config")(
        audio_config=_whisper_encoder(encoder),
        text_config={"model_type": "qwen2", **qwen2_text_config(tokenizer)},
        **ids,
    )
    torch.manual_seed(seed)
    model = getattr(transformers, f"{prefix}ForConditionalGeneration")(config)
    return _save(out_dir, model, processor, tokenizer)


def build_tiny_musicflamingo(out_dir: str | Path, seed: int = 0) -> Path:
    """Music Flamingo: Audio Flamingo 3's layout with sound begin/end tokens and rotary time."""
    return build_tiny_audioflamingo3(out_dir, seed, music=True)


def build_tiny_qwen3_omni(out_dir: str | Path, seed: int = 0) -> Path:
    """Qwen3-Omni (its thinker, no talker): a windowed audio encoder, a MoE text model.

    Saved as the full model's config with `enable_audio_output: false`, as the published
    checkpoints are, with the parts `aqua-audiolm` builds its inputs from (its processor
    also needs a video processor, hence torchvision, which audio-only runs do without).
    """
    import torch
    import transformers

    tokenizer = build_tokenizer(VISION_TOKENS)
    ids = tokenizer.convert_tokens_to_ids
    text = qwen2_text_config(tokenizer)
    text |= {
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 32,
        "head_dim": 8,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000.0,
            "mrope_section": [2, 1, 1],
            "interleaved": True,
        },
    }
    thinker = {
        "audio_config": {
            **{k: v for k, v in _whisper_encoder("").items() if k != "model_type"},
            "output_dim": 32,  # the text model's hidden size
            "n_window": 50,
            "n_window_infer": 400,
            "downsample_hidden_size": 16,
        },
        # The thinker always has a vision tower; a minimal one (never used for audio).
        "vision_config": {
            "depth": 1,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_heads": 2,
            "out_hidden_size": 32,
            "deepstack_visual_indexes": [0],
            "num_position_embeddings": 64,
        },
        "text_config": text,
        "audio_token_id": ids("<|AUDIO|>"),
        "audio_start_token_id": ids("<|audio_bos|>"),
        "audio_end_token_id": ids("<|audio_eos|>"),
        "image_token_id": ids("<|IMAGE|>"),
        "video_token_id": ids("<|VIDEO|>"),
        "vision_start_token_id": ids("<|vision_bos|>"),
        "vision_end_token_id": ids("<|vision_eos|>"),
    }
    config = transformers.Qwen3OmniMoeConfig(thinker_config=thinker, enable_audio_output=False)
    torch.manual_seed(seed)
    model = transformers.Qwen3OmniMoeForConditionalGeneration(config)
    out = _save(out_dir, model, tokenizer, tokenizer)
    features = transformers.WhisperFeatureExtractor(feature_size=NUM_MEL_BINS, sampling_rate=16000)
    features.save_pretrained(out)
    (out / "chat_template.jinja").write_text(OMNI_CHAT_TEMPLATE, encoding="utf-8")
    return out


PHI4_TOKENS = ("<|user|>", "<|assistant|>", "<|end|>", "<|audio|>", "<|image|>")
# Phi-4-multimodal's chat format: `<|role|>content<|end|>`, each audio part `<|audio|>`.
PHI4_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|>' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'audio' %}<|audio|>{% elif part['type'] == 'text' %}"
    "{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tiny_phi4_multimodal(out_dir: str | Path, seed: int = 0) -> Path:
    """Phi-4-multimodal: a Conformer audio encoder, a SigLIP-style vision part, Phi-3 text.

    Saved with the parts `aqua-audiolm` builds its inputs from (its processor's image
    processor needs torchvision): the tokenizer, `Phi4MultimodalFeatureExtractor`, the chat
    template; and its speech LoRA in `speech-lora/`.
    """
    import peft
    import torch
    import transformers

    tokenizer = build_tokenizer(PHI4_TOKENS)
    ids = tokenizer.convert_tokens_to_ids
    text = qwen2_text_config(tokenizer)
    config = transformers.Phi4MultimodalConfig(
        **{k: v for k, v in text.items() if k != "eos_token_id"},
        eos_token_id=ids("<|end|>"),
        audio_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_blocks": 1,
            "num_attention_heads": 2,
            "ext_pw_out_channel": 32,
            "depthwise_separable_out_channel": 32,
            "nemo_conv_channels": 32,
            "audio_token_id": ids("<|audio|>"),
        },
        vision_config={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": 28,
            "patch_size": 14,
            "image_token_id": ids("<|image|>"),
        },
    )
    torch.manual_seed(seed)
    model = transformers.Phi4MultimodalForCausalLM(config)
    # The model re-reads the audio at any step whose new token is a placeholder, which a
    # random model may pick; a trained one never does.
    model.generation_config.suppress_tokens = [ids("<|audio|>"), ids("<|image|>")]
    out = _save(out_dir, model, tokenizer, tokenizer, eos="<|end|>")
    transformers.Phi4MultimodalFeatureExtractor().save_pretrained(out)
    (out / "chat_template.jinja").write_text(PHI4_CHAT_TEMPLATE, encoding="utf-8")
    # The speech LoRA in its own folder, as published (random, so that it changes replies).
    lora = peft.LoraConfig(
        r=4, target_modules=r".*layers\.\d+\.self_attn\.(qkv_proj|o_proj)", init_lora_weights=False
    )
    peft.get_peft_model(model, lora).save_pretrained(out / "speech-lora")
    return out


# Tekken's control tokens up to the audio ones, at the ranks Voxtral's processor expects
# (`[AUDIO]` is id 24 there); the rest of the special range is filled by mistral-common.
TEKKEN_SPECIAL = (
    *("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]"),
    *("[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]"),
    *("[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"),
    *("[TOOL_CONTENT]", "[ARGS]", "[CALL_ID]", "<SPECIAL_22>", "<SPECIAL_23>", "[AUDIO]"),
    *("[BEGIN_AUDIO]", "[TRANSCRIBE]"),
)
TEKKEN_NUM_SPECIAL = 32


def tekken_file(path: Path) -> Path:
    """A byte-level Tekken tokenizer file (mistral-common's format) with Voxtral's audio
    settings: 16 kHz, 12.5 audio tokens per second, clips padded to 30 s chunks."""
    import base64
    import json

    vocab = [
        {"rank": b, "token_bytes": base64.b64encode(bytes([b])).decode(), "token_str": None}
        for b in range(256)
    ]
    tekken = {
        "config": {
            "pattern": r"[^\s]+|\s+",
            "num_vocab_tokens": 256,
            "default_vocab_size": 256 + TEKKEN_NUM_SPECIAL,
            "default_num_special_tokens": TEKKEN_NUM_SPECIAL,
            "version": "v7",
        },
        "vocab": vocab,
        "special_tokens": [
            {"rank": rank, "token_str": token, "is_control": True}
            for rank, token in enumerate(TEKKEN_SPECIAL)
        ],
        "version": 1,
        "type": "Tekken",
        "audio": {
            "sampling_rate": 16000,
            "frame_rate": 12.5,
            "chunk_length_s": 30.0,
            "audio_encoding_config": {"num_mel_bins": 128, "hop_length": 160, "window_size": 400},
        },
    }
    path.write_text(json.dumps(tekken), encoding="utf-8")
    return path


def build_tiny_voxtral(out_dir: str | Path, seed: int = 0) -> Path:
    """Voxtral: a Whisper-style encoder over 30 s chunks, a Llama text model, mistral-common's
    Tekken tokenizer (needs mistral-common installed)."""
    import torch
    import transformers

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = transformers.MistralCommonBackend(
        tokenizer_path=str(tekken_file(out / "tekken.json"))
    )
    features = transformers.WhisperFeatureExtractor(feature_size=NUM_MEL_BINS, sampling_rate=16000)
    processor = transformers.VoxtralProcessor(feature_extractor=features, tokenizer=tokenizer)
    ids = tokenizer.convert_tokens_to_ids
    config = transformers.VoxtralConfig(
        # 1500 encoder frames per 30 s chunk, four to an embedding: 375 `[AUDIO]` tokens.
        audio_config={
            "hidden_size": 16,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_mel_bins": NUM_MEL_BINS,
            "max_source_positions": 1500,
        },
        text_config={
            "vocab_size": 256 + TEKKEN_NUM_SPECIAL,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 8,
            "max_position_embeddings": 4096,
            "bos_token_id": ids("<s>"),
            "eos_token_id": ids("</s>"),
            "pad_token_id": ids("<pad>"),
        },
        audio_token_id=ids("[AUDIO]"),
    )
    torch.manual_seed(seed)
    model = transformers.VoxtralForConditionalGeneration(config)
    return _save(out, model, processor, tokenizer, eos="</s>")


FAMILIES: dict[str, Callable[[str | Path, int], Path]] = {
    "qwen2_audio": build_tiny_audio_lm,
    "qwen2_5_omni": build_tiny_omni_thinker,
    "audioflamingo3": build_tiny_audioflamingo3,
    "musicflamingo": build_tiny_musicflamingo,
    "qwen3_omni_moe": build_tiny_qwen3_omni,
    "phi4_multimodal": build_tiny_phi4_multimodal,
    "voxtral": build_tiny_voxtral,
}
# Families transformers ships that cannot be built offline here, and why.
NOT_BUILT = {
    "granite_speech": "its feature extractor needs torchaudio (no release for the pinned torch)",
    "gemma3n": "its vision part is a timm model (timm needs torchvision: fails beside CPU torch)",
}
