"""Build a tiny, randomly initialised Qwen2-Audio (or Qwen2.5-Omni thinker, or Qwen2 chat
model), offline.

The architecture, processor, audio special tokens and chat template are the real ones; the
weights are noise. Tests and the GPU check run `aqua-audiolm` end to end with it where no
checkpoint can be downloaded:

    python tests/support/tiny_audio_lm.py OUT_DIR
    python tests/support/tiny_audio_lm.py OUT_DIR --omni   # a Qwen2.5-Omni thinker
    python tests/support/tiny_audio_lm.py OUT_DIR --chat   # text chat (aqua build --iaqd hf)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

AUDIO_TOKENS = ("<|audio_bos|>", "<|AUDIO|>", "<|audio_eos|>")
CHAT_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Text the tokenizer learns its merges from: chat roles, AQUA prompt words, digits.
CORPUS = (
    "system user assistant You are a helpful assistant.",
    "Audio 1: What sound is in the audio? Choose the correct option.",
    "(a) dog (b) rooster (c) pig (d) cow (e) None of the above",
    "Which instrument is playing? acoustic guitar flute piano violin drums",
    "Is the speaker coughing, laughing, sneezing, sniffing or throat clearing?",
    "The answer is (b). The question cannot be answered from the audio.",
    "0 1 2 3 4 5 6 7 8 9 answer option question audio sound clip",
)
# One mel frame per 10 ms; Qwen2-Audio's encoder sees 30 s windows (3000 frames, 1500 positions).
NUM_MEL_BINS = 128


def build_tokenizer(extra_tokens: Sequence[str] = ()):
    """A byte-level BPE tokenizer with Qwen2-Audio's chat and audio special tokens (and more)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=[*CHAT_TOKENS, *AUDIO_TOKENS, *extra_tokens],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(CORPUS, trainer=trainer)
    bos, audio, eos = AUDIO_TOKENS
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=[*CHAT_TOKENS[1:], *AUDIO_TOKENS, *extra_tokens],
        extra_special_tokens={"audio_token": audio, "audio_bos_token": bos, "audio_eos_token": eos},
    )


def build_processor():
    """Qwen2-Audio's processor: a Whisper feature extractor, the tokenizer, its chat template."""
    from transformers import Qwen2AudioProcessor, WhisperFeatureExtractor

    features = WhisperFeatureExtractor(feature_size=NUM_MEL_BINS, sampling_rate=16000)
    # No chat_template given: the processor falls back to Qwen2-Audio's own.
    return Qwen2AudioProcessor(feature_extractor=features, tokenizer=build_tokenizer())


def qwen2_text_config(tokenizer) -> dict:
    """A tiny Qwen2 language model's settings (the audio LM's text part, the chat model)."""
    pad_id = tokenizer.pad_token_id
    return {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"),
        "pad_token_id": pad_id,
        "bos_token_id": pad_id,
    }


def build_model(tokenizer, seed: int = 0):
    """A randomly initialised Qwen2AudioForConditionalGeneration a few MB in size."""
    import torch
    from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration

    eos_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad_id = tokenizer.pad_token_id
    config = Qwen2AudioConfig(
        audio_config={
            "model_type": "qwen2_audio_encoder",
            "num_mel_bins": NUM_MEL_BINS,
            "d_model": 32,
            "encoder_layers": 1,
            "encoder_attention_heads": 2,
            "encoder_ffn_dim": 64,
            "max_source_positions": 1500,
        },
        text_config={"model_type": "qwen2", **qwen2_text_config(tokenizer)},
        audio_token_index=tokenizer.convert_tokens_to_ids(AUDIO_TOKENS[1]),
    )
    torch.manual_seed(seed)
    model = Qwen2AudioForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = pad_id
    model.generation_config.do_sample = False
    return model


def build_tiny_audio_lm(out_dir: str | Path, seed: int = 0) -> Path:
    """Save a tiny random Qwen2-Audio and its processor under `out_dir`; return the folder."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    processor = build_processor()
    build_model(processor.tokenizer, seed).save_pretrained(out)
    processor.save_pretrained(out)
    return out


# Qwen2.5-Omni's vision special tokens: its thinker config names them (never used for audio).
VISION_TOKENS = ("<|vision_bos|>", "<|vision_eos|>", "<|IMAGE|>", "<|VIDEO|>")
# Qwen2.5-Omni's chat format for text and audio parts: a default system turn, each clip as
# <|audio_bos|><|AUDIO|><|audio_eos|> inside the user turn (no line break after it).
OMNI_SYSTEM = "You are Qwen, a virtual human developed by the Qwen Team."
OMNI_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\n" + OMNI_SYSTEM + "<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'audio' %}<|audio_bos|><|AUDIO|><|audio_eos|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_omni_thinker(tokenizer, seed: int = 0):
    """A randomly initialised Qwen2_5OmniThinkerForConditionalGeneration a few MB in size."""
    import torch
    from transformers import Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration

    eos_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad_id = tokenizer.pad_token_id
    bos, audio, eos = (tokenizer.convert_tokens_to_ids(t) for t in AUDIO_TOKENS)
    config = Qwen2_5OmniThinkerConfig(
        audio_config={
            "num_mel_bins": NUM_MEL_BINS,
            "d_model": 32,
            "encoder_layers": 1,
            "encoder_attention_heads": 2,
            "encoder_ffn_dim": 64,
            "output_dim": 32,  # the text model's hidden size
            "max_source_positions": 1500,
            "n_window": 100,  # attention windows of 2 s, as the real encoder
        },
        # The thinker always has a vision tower; a minimal one (never used for audio).
        vision_config={
            "depth": 1,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_heads": 2,
            "out_hidden_size": 32,
            "fullatt_block_indexes": [0],
        },
        text_config={
            **qwen2_text_config(tokenizer),
            # Multimodal RoPE: sections sum to half the head size (8 / 2).
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [2, 1, 1],
            },
        },
        audio_token_index=audio,
        audio_start_token_id=bos,
        audio_end_token_id=eos,
        image_token_index=tokenizer.convert_tokens_to_ids("<|IMAGE|>"),
        video_token_index=tokenizer.convert_tokens_to_ids("<|VIDEO|>"),
        # Not a declared field, but the thinker's position code reads it (real configs have it).
        vision_start_token_id=tokenizer.convert_tokens_to_ids("<|vision_bos|>"),
        vision_end_token_id=tokenizer.convert_tokens_to_ids("<|vision_eos|>"),
    )
    torch.manual_seed(seed)
    model = Qwen2_5OmniThinkerForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = pad_id
    model.generation_config.do_sample = False
    return model


def build_tiny_omni_thinker(out_dir: str | Path, seed: int = 0) -> Path:
    """Save a tiny random Qwen2.5-Omni thinker with its feature extractor, tokenizer, template."""
    from transformers import WhisperFeatureExtractor

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(VISION_TOKENS)
    build_omni_thinker(tokenizer, seed).save_pretrained(out)
    tokenizer.save_pretrained(out)
    WhisperFeatureExtractor(feature_size=NUM_MEL_BINS, sampling_rate=16000).save_pretrained(out)
    # Where a Qwen2.5-Omni checkpoint keeps its processor's chat template.
    (out / "chat_template.jinja").write_text(OMNI_CHAT_TEMPLATE, encoding="utf-8")
    return out


# Qwen2's ChatML format for text chats (what `aqua build --iaqd hf` sends a local model).
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_chat_lm(out_dir: str | Path, seed: int = 0) -> Path:
    """Save a tiny random text-only Qwen2 chat model with its tokenizer and ChatML template."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    tokenizer.chat_template = CHATML_TEMPLATE
    settings = qwen2_text_config(tokenizer)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(Qwen2Config(**settings)).eval()
    model.generation_config.eos_token_id = settings["eos_token_id"]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.do_sample = False
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


# --- run as a script -----------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The tiny model builder's argument parser."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", help="folder to write the model and processor to")
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument(
        "--omni", action="store_true", help="a Qwen2.5-Omni thinker instead of Qwen2-Audio"
    )
    kind.add_argument(
        "--family",
        help="a tiny model of this family (tests/support/tiny_audio_families.py: FAMILIES)",
    )
    kind.add_argument(
        "--chat",
        action="store_true",
        help="a text-only chat model (for a dry run of aqua build --iaqd hf)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write the tiny model to a folder."""
    args = build_parser().parse_args(argv)
    if args.family:
        # Run as a script, tests/ is not on the path the family builders import from.
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from support.tiny_audio_families import FAMILIES

        if args.family not in FAMILIES:
            build_parser().error(f"--family {args.family}: expected one of {', '.join(FAMILIES)}")
        print(FAMILIES[args.family](args.out_dir, args.seed))
        return 0
    if args.chat:
        build = build_tiny_chat_lm
    else:
        build = build_tiny_omni_thinker if args.omni else build_tiny_audio_lm
    print(build(args.out_dir, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
