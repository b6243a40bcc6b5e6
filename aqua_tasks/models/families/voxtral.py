"""Voxtral inputs: the conversation, rendered together with its clips by Voxtral's processor.

Voxtral's processor takes audio only inside a conversation (`apply_chat_template` with audio
parts): its tokenizer (mistral-common's Tekken) writes the chat format and each clip's audio
tokens itself, as many as the clip's length needs, and no text form of a prompt can be
tokenised back. So a Voxtral prompt is rendered only once its clips are at hand: the prompt
`aqua-audiolm` keeps (in its reply journal and lm-eval's samples) is the conversation as JSON,
`[AUDIO]` where each clip goes, and the processor renders it with the clips at generation.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

MODEL_TYPE = "voxtral"
# The model card's limit for audio understanding (its 32k-token context).
MAX_AUDIO_SECONDS = 40 * 60
# The clip a prompt is checked with (0.1 s of silence at 16 kHz).
CHECK_CLIP_RATE = 16000
CHECK_CLIP_SAMPLES = 1600
# What lm-eval records as the chat template: the format lives in mistral-common.
CHAT_FORMAT = "mistral-common instruct format (the checkpoint's tekken.json)"


def is_voxtral(config: Any) -> bool:
    """Whether a checkpoint's config is Voxtral's."""
    return getattr(config, "model_type", None) == MODEL_TYPE


def wav_base64(wave: np.ndarray, sampling_rate: int) -> str:
    """A mono waveform as a base64 WAV file of 32-bit floats (no precision lost)."""
    import soundfile

    buffer = io.BytesIO()
    soundfile.write(buffer, wave, sampling_rate, format="WAV", subtype="FLOAT")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class VoxtralInputs:
    """What `aqua-audiolm` asks of a processor, for Voxtral's conversation-only processor."""

    chat_template = CHAT_FORMAT
    max_audio_len = MAX_AUDIO_SECONDS  # seconds (read by clip_limits)
    audio_bos_token: str | None = None
    audio_eos_token: str | None = None
    # transformers' stop-string matcher needs the vocabulary as token strings, which
    # mistral-common's tokenizer does not give: replies are cut after decoding instead.
    stops_in_generate = False

    def __init__(self, processor: Any) -> None:
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.feature_extractor = processor.feature_extractor
        self.audio_token = processor.audio_token

    def apply_chat_template(
        self, conversation: list[dict[str, Any]], add_generation_prompt: bool = True, **_: Any
    ) -> str:
        """The conversation as JSON, each message's text with `[AUDIO]` where a clip goes;
        ValueError where Voxtral's tokenizer refuses the conversation."""
        messages = []
        for message in conversation:
            content = message["content"]
            if not isinstance(content, str):
                content = "".join(
                    self.audio_token if part["type"] == "audio" else part.get("text", "")
                    for part in content
                )
            messages.append({"role": message["role"], "content": content})
        prompt = json.dumps(messages, ensure_ascii=False)
        self.check(prompt)
        return prompt

    def check(self, prompt: str) -> None:
        """Render `prompt` with a short silent clip per slot: mistral-common's own rules (a
        system prompt beside audio before tokenizer v11, the last turn a user's, …) refuse a
        conversation here, before any generation, rather than at each item."""
        silent = wav_base64(np.zeros(CHECK_CLIP_SAMPLES, dtype=np.float32), CHECK_CLIP_RATE)
        clips = [silent] * prompt.count(self.audio_token)
        try:
            self.tokenizer.apply_chat_template(self.conversation(prompt, clips), tokenize=True)
        except Exception as error:  # mistral-common's own exceptions and pydantic's
            first = " ".join(str(error).split())[:300]
            raise ValueError(
                f"Voxtral's tokenizer (mistral-common) refuses the conversation: {first}"
            ) from None

    def conversation(self, prompt: str, clips: list[str]) -> list[dict[str, Any]]:
        """A prompt of `apply_chat_template` with its clips (base64 WAV, taken from the front
        of `clips`) as audio parts."""
        try:
            messages = json.loads(prompt)
        except json.JSONDecodeError:
            raise ValueError(
                "Voxtral prompts are conversations (JSON) rendered by aqua-audiolm; a task "
                "prompt in the model's own format cannot carry its clips: use <audio> "
                "placeholders in the task prompt"
            ) from None
        rendered = []
        for message in messages:
            parts: list[dict[str, str]] = []
            for k, piece in enumerate(message["content"].split(self.audio_token)):
                if k:
                    parts.append({"type": "audio", "base64": clips.pop(0)})
                if piece:
                    parts.append({"type": "text", "text": piece})
            rendered.append({"role": message["role"], "content": parts})
        return rendered

    def __call__(
        self,
        text: Sequence[str],
        audio: Sequence[Any],
        sampling_rate: int,
        text_kwargs: Mapping[str, Any] | None = None,
        return_tensors: str = "pt",
    ) -> Any:
        """Token ids (each clip's audio tokens written by the tokenizer) and log-mel features."""
        slots = sum(prompt.count(self.audio_token) for prompt in text)
        if slots != len(audio):
            raise ValueError(f"prompts hold {slots} audio slots for {len(audio)} clips")
        clips = [wav_base64(np.asarray(wave, dtype=np.float32), sampling_rate) for wave in audio]
        conversations = [self.conversation(prompt, clips) for prompt in text]
        return self.processor.apply_chat_template(
            conversations, tokenize=True, return_dict=True, return_tensors=return_tensors
        )
