"""Phi-4-multimodal inputs built from the checkpoint's parts.

Its processor holds an image processor that imports torchvision (families/parts.py says why
that is avoided). For audio it does three things, done here the same way: the checkpoint's
`Phi4MultimodalFeatureExtractor` gives each clip's log-mel features, their frame mask and the
number of embeddings the audio encoder yields for it (`audio_embed_sizes`), and each
`<|audio|>` of the prompt is repeated that many times before tokenising.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aqua_tasks.models.families.parts import (
    PartsInputs,
    audio_token_of,
    expand_audio_slots,
    load_chat_template,
)

MODEL_TYPE = "phi4_multimodal"


def is_phi4_multimodal(config: Any) -> bool:
    """Whether a checkpoint's config is Phi-4-multimodal's."""
    return getattr(config, "model_type", None) == MODEL_TYPE


class Phi4AudioInputs(PartsInputs):
    """Text-plus-audio inputs for `Phi4MultimodalForCausalLM`."""

    @classmethod
    def from_pretrained(cls, pretrained: str, config: Any, **load: Any) -> Phi4AudioInputs:
        """The parts of a Phi-4-multimodal checkpoint (folder or Hub id) that audio input needs."""
        from transformers import AutoTokenizer, Phi4MultimodalFeatureExtractor

        tokenizer = AutoTokenizer.from_pretrained(pretrained, **load)
        features = Phi4MultimodalFeatureExtractor.from_pretrained(
            pretrained, revision=load.get("revision")
        )
        token = audio_token_of(pretrained, tokenizer, config.audio_config.audio_token_id)
        return cls(features, tokenizer, load_chat_template(pretrained, tokenizer, **load), token)

    def __call__(
        self,
        text: Sequence[str],
        audio: Sequence[Any],
        sampling_rate: int,
        text_kwargs: Mapping[str, Any] | None = None,
        return_tensors: str = "pt",
    ) -> Any:
        """Token ids with every audio slot expanded, the features, their sizes and frame mask."""
        from transformers import BatchFeature

        features = self.feature_extractor(
            list(audio), sampling_rate=sampling_rate, return_tensors=return_tensors
        )
        counts = [int(n) for n in features["audio_embed_sizes"].tolist()]
        prompts = expand_audio_slots(list(text), self.audio_token, counts)
        padding = (text_kwargs or {}).get("padding", True)
        tokens = self.tokenizer(prompts, padding=padding, return_tensors=return_tensors)
        # As the processor: all the feature extractor gives (one clip alone has no frame mask).
        return BatchFeature({**tokens, **features})
