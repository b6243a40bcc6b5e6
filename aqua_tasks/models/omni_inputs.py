"""Qwen2.5-Omni thinker inputs built from the checkpoint's parts, without its processor.

`Qwen2_5OmniProcessor` needs a video processor, hence an importable torchvision; on CPU boxes
the default torchvision wheel often fails to import and the processor cannot even be built.
Audio-only text generation needs none of that: a Whisper feature extractor (log-mel features
and their frame mask), the tokenizer, the chat template, and each clip's audio placeholder
repeated as many times as the thinker's audio encoder yields embeddings for that clip.
`OmniThinkerInputs` offers what `aqua-audiolm` asks of a processor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eval_common.inputs import read_json, read_text

# Config model types whose text replies come from the Qwen2.5-Omni thinker.
OMNI_MODEL_TYPES = frozenset({"qwen2_5_omni", "qwen2_5_omni_thinker"})
# Processor-level chat template files, newest layout first (the tokenizer may have its own).
CHAT_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")


def is_omni(config: Any) -> bool:
    """Whether a checkpoint's config is a full Qwen2.5-Omni or its thinker alone."""
    return getattr(config, "model_type", None) in OMNI_MODEL_TYPES


def thinker_config(config: Any) -> Any:
    """The thinker's config: the config itself, or the full Omni config's `thinker_config`."""
    return getattr(config, "thinker_config", None) or config


def audio_token_count(mel_frames: int) -> int:
    """Embeddings the thinker's audio encoder yields for a clip of `mel_frames` frames."""
    # A stride-2 convolution, then stride-2 average pooling (the encoder's own arithmetic).
    after_conv = (mel_frames - 1) // 2 + 1
    return (after_conv - 2) // 2 + 1


def expand_audio_slots(
    prompts: Sequence[str], audio_token: str, counts: Sequence[int]
) -> list[str]:
    """Each prompt with its k-th audio token repeated `counts[k]` times (clips in prompt order)."""
    slots = sum(p.count(audio_token) for p in prompts)
    if slots != len(counts):
        raise ValueError(f"prompts hold {slots} audio slots for {len(counts)} clips")
    remaining = iter(counts)
    expanded = []
    for prompt in prompts:
        pieces = prompt.split(audio_token)
        text = pieces[0]
        for piece in pieces[1:]:
            text += audio_token * next(remaining) + piece
        expanded.append(text)
    return expanded


def load_chat_template(pretrained: str, tokenizer: Any, **load: Any) -> str | None:
    """The checkpoint's processor chat template, else the tokenizer's (None when neither)."""
    from transformers.utils.hub import cached_file

    for name in CHAT_TEMPLATE_FILES:
        path = cached_file(
            pretrained,
            name,
            revision=load.get("revision"),
            _raise_exceptions_for_missing_entries=False,
            _raise_exceptions_for_connection_errors=False,
        )
        if path is None:
            continue
        return read_json(path)["chat_template"] if name.endswith(".json") else read_text(path)
    return getattr(tokenizer, "chat_template", None)


class OmniThinkerInputs:
    """Text-plus-audio inputs for `Qwen2_5OmniThinkerForConditionalGeneration`."""

    def __init__(
        self,
        feature_extractor: Any,
        tokenizer: Any,
        chat_template: str | None,
        audio_token: str,
        audio_bos_token: str,
        audio_eos_token: str,
    ) -> None:
        self.feature_extractor = feature_extractor
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.audio_token = audio_token
        self.audio_bos_token = audio_bos_token
        self.audio_eos_token = audio_eos_token

    @classmethod
    def from_pretrained(cls, pretrained: str, config: Any, **load: Any) -> OmniThinkerInputs:
        """The parts of a Qwen2.5-Omni checkpoint (folder or Hub id) that audio input needs."""
        from transformers import AutoTokenizer, WhisperFeatureExtractor

        thinker = thinker_config(config)
        tokenizer = AutoTokenizer.from_pretrained(pretrained, **load)
        features = WhisperFeatureExtractor.from_pretrained(
            pretrained, revision=load.get("revision")
        )
        ids = (thinker.audio_token_id, thinker.audio_start_token_id, thinker.audio_end_token_id)
        tokens = tokenizer.convert_ids_to_tokens(list(ids))
        if any(t is None for t in tokens):
            raise ValueError(
                f"{pretrained}: the thinker config's audio token ids {ids} are not in its "
                f"tokenizer (vocabulary of {len(tokenizer)})"
            )
        chat_template = load_chat_template(pretrained, tokenizer, **load)
        return cls(features, tokenizer, chat_template, *tokens)

    def apply_chat_template(
        self, conversation: list[dict[str, Any]], add_generation_prompt: bool = True, **_: Any
    ) -> str:
        """The rendered prompt: each audio part as the template writes it (bos, token, eos)."""
        return self.tokenizer.apply_chat_template(
            conversation,
            chat_template=self.chat_template,
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
        )

    def __call__(
        self,
        text: Sequence[str],
        audio: Sequence[Any],
        sampling_rate: int,
        padding: bool = True,
        return_tensors: str = "pt",
    ) -> Any:
        """Token ids with every audio slot expanded, log-mel features and their frame mask."""
        from transformers import BatchFeature

        features = self.feature_extractor(
            list(audio),
            sampling_rate=sampling_rate,
            padding="max_length",  # the 30 s window, as the thinker was trained
            return_attention_mask=True,
            return_tensors=return_tensors,
        )
        frames = features["attention_mask"].sum(-1).tolist()
        prompts = expand_audio_slots(
            list(text), self.audio_token, [audio_token_count(int(f)) for f in frames]
        )
        tokens = self.tokenizer(prompts, padding=padding, return_tensors=return_tensors)
        return BatchFeature(
            {
                **tokens,
                "input_features": features["input_features"],
                "feature_attention_mask": features["attention_mask"],
            }
        )
