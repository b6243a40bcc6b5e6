"""Phi-4-multimodal inputs built from the checkpoint's parts.

Its processor holds an image processor that imports torchvision (families/parts.py says why
that is avoided). For audio it does three things, done here the same way: the checkpoint's
`Phi4MultimodalFeatureExtractor` gives each clip's log-mel features, their frame mask and the
number of embeddings the audio encoder yields for it (`audio_embed_sizes`), and each
`<|audio|>` of the prompt is repeated that many times before tokenising.

Its weights in transformers' format are the base model: what it learnt for speech is a LoRA
adapter in the checkpoint's `speech-lora/` folder, which transformers' Phi-4 page loads and
activates for audio input; `load_speech_adapter` merges it into the weights (peft directly:
transformers' own adapter loading asks for a newer peft than the pinned one).
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
SPEECH_ADAPTER = "speech-lora"  # the checkpoint's folder holding the LoRA for audio input


def is_phi4_multimodal(config: Any) -> bool:
    """Whether a checkpoint's config is Phi-4-multimodal's."""
    return getattr(config, "model_type", None) == MODEL_TYPE


def load_speech_adapter(
    model: Any, pretrained: str, revision: str | None
) -> tuple[Any, str | None]:
    """The model with the checkpoint's speech LoRA merged, and its folder; the model as it is
    and None where the checkpoint has none."""
    from peft import PeftModel
    from transformers.utils.hub import cached_file

    config = cached_file(
        pretrained,
        f"{SPEECH_ADAPTER}/adapter_config.json",
        revision=revision,
        _raise_exceptions_for_missing_entries=False,
        _raise_exceptions_for_connection_errors=False,
    )
    if config is None:
        return model, None
    with_lora = PeftModel.from_pretrained(
        model, pretrained, subfolder=SPEECH_ADAPTER, revision=revision, adapter_name="speech"
    )
    return with_lora.merge_and_unload(), SPEECH_ADAPTER


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
