"""Qwen Omni thinker inputs (Qwen2.5-Omni, Qwen3-Omni) built from the checkpoint's parts.

Their processors need a video processor, hence torchvision (families/parts.py says why
that is avoided); their inputs are a Whisper feature extractor's log-mel features and frame
mask, and each clip's audio token repeated as many times as the thinker's audio encoder
yields embeddings for that clip. The two generations differ in two places, each said by
`OmniFamily`: Qwen2.5-Omni's encoder sees every clip padded to its 30 s window, Qwen3-Omni's
clips as they are, cut into windows of `2 × n_window` frames that each yield 13 embeddings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aqua_tasks.models.families.parts import (
    PartsInputs,
    audio_token_of,
    expand_audio_slots,
    load_chat_template,
)


def audio_token_count(mel_frames: int) -> int:
    """Embeddings Qwen2.5-Omni's audio encoder yields for a clip of `mel_frames` frames."""
    # A stride-2 convolution, then stride-2 average pooling (the encoder's own arithmetic).
    after_conv = (mel_frames - 1) // 2 + 1
    return (after_conv - 2) // 2 + 1


def qwen3_audio_token_count(mel_frames: int, n_window: int) -> int:
    """Embeddings Qwen3-Omni's audio encoder yields: 13 per full window of 2·n_window frames,
    and for the rest three stride-2 convolutions."""
    window = 2 * n_window
    rest = mel_frames % window
    after_first = (rest - 1) // 2 + 1
    return ((after_first - 1) // 2 + 1 - 1) // 2 + 1 + (mel_frames // window) * 13


@dataclass(frozen=True)
class OmniFamily:
    """What differs between the Qwen Omni generations for audio input."""

    thinker_class: str  # the transformers class of the thinker alone
    pad_to_window: bool  # features padded to the 30 s window (else to the longest clip)
    token_count: Callable[[int, Any], int]  # (mel frames, thinker config) -> embeddings


QWEN2_5_OMNI = OmniFamily(
    "Qwen2_5OmniThinkerForConditionalGeneration", True, lambda frames, _: audio_token_count(frames)
)
QWEN3_OMNI = OmniFamily(
    "Qwen3OmniMoeThinkerForConditionalGeneration",
    False,
    lambda frames, thinker: qwen3_audio_token_count(frames, thinker.audio_config.n_window),
)
# Config model types (the full model, or its thinker alone) -> their family.
OMNI_FAMILIES = {
    "qwen2_5_omni": QWEN2_5_OMNI,
    "qwen2_5_omni_thinker": QWEN2_5_OMNI,
    "qwen3_omni_moe": QWEN3_OMNI,
    "qwen3_omni_moe_thinker": QWEN3_OMNI,
}


def omni_family(config: Any) -> OmniFamily | None:
    """The Omni family of a checkpoint's config (the full model or its thinker), or None."""
    return OMNI_FAMILIES.get(getattr(config, "model_type", None))


def is_omni(config: Any) -> bool:
    """Whether a checkpoint's config is a Qwen Omni model or its thinker alone."""
    return omni_family(config) is not None


def thinker_config(config: Any) -> Any:
    """The thinker's config: the config itself, or the full Omni config's `thinker_config`."""
    return getattr(config, "thinker_config", None) or config


class OmniThinkerInputs(PartsInputs):
    """Text-plus-audio inputs for a Qwen Omni thinker (`family` says which generation)."""

    def __init__(
        self,
        feature_extractor: Any,
        tokenizer: Any,
        chat_template: str | None,
        audio_token: str,
        audio_bos_token: str,
        audio_eos_token: str,
        family: OmniFamily = QWEN2_5_OMNI,
        thinker: Any = None,
    ) -> None:
        super().__init__(feature_extractor, tokenizer, chat_template, audio_token)
        self.family = family
        self.thinker = thinker
        self.audio_bos_token = audio_bos_token
        self.audio_eos_token = audio_eos_token

    @classmethod
    def from_pretrained(cls, pretrained: str, config: Any, **load: Any) -> OmniThinkerInputs:
        """The parts of a Qwen Omni checkpoint (folder or Hub id) that audio input needs."""
        from transformers import AutoTokenizer, WhisperFeatureExtractor

        thinker = thinker_config(config)
        tokenizer = AutoTokenizer.from_pretrained(pretrained, **load)
        features = WhisperFeatureExtractor.from_pretrained(
            pretrained, revision=load.get("revision")
        )
        ids = (thinker.audio_token_id, thinker.audio_start_token_id, thinker.audio_end_token_id)
        tokens = [audio_token_of(pretrained, tokenizer, token_id) for token_id in ids]
        chat_template = load_chat_template(pretrained, tokenizer, **load)
        family = omni_family(config) or QWEN2_5_OMNI
        return cls(features, tokenizer, chat_template, *tokens, family=family, thinker=thinker)

    def __call__(
        self,
        text: Sequence[str],
        audio: Sequence[Any],
        sampling_rate: int,
        text_kwargs: Mapping[str, Any] | None = None,
        return_tensors: str = "pt",
    ) -> Any:
        """Token ids with every audio slot expanded, log-mel features and their frame mask."""
        from transformers import BatchFeature

        pad_to_window = self.family.pad_to_window
        features = self.feature_extractor(
            list(audio),
            sampling_rate=sampling_rate,
            # As each thinker was trained: Qwen2.5 the 30 s window, Qwen3 the clip itself.
            padding="max_length" if pad_to_window else "longest",
            truncation=pad_to_window,
            return_attention_mask=True,
            return_tensors=return_tensors,
        )
        frames = features["attention_mask"].sum(-1).tolist()
        counts = [self.family.token_count(int(f), self.thinker) for f in frames]
        prompts = expand_audio_slots(list(text), self.audio_token, counts)
        padding = (text_kwargs or {}).get("padding", True)
        tokens = self.tokenizer(prompts, padding=padding, return_tensors=return_tensors)
        return BatchFeature(
            {
                **tokens,
                "input_features": features["input_features"],
                "feature_attention_mask": features["attention_mask"],
            }
        )
