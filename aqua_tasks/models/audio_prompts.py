"""Prompts and clips on their way into an audio LM, local (`aqua-audiolm`) or behind an API.

Task prompts mark each clip with an `<audio>` placeholder; chat messages carry the clips as
audio parts; waveforms go in mono at the model's rate; replies stop at the task's stop strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from aqua_tasks.audio.clips import resample

AUDIO_PLACEHOLDER = "<audio>"  # what task prompts put where a clip goes


def chat_content(text: str) -> list[dict[str, str]]:
    """A message's content parts: one audio part per `<audio>` placeholder, text around them."""
    parts: list[dict[str, str]] = []
    for k, piece in enumerate(text.split(AUDIO_PLACEHOLDER)):
        if k:
            parts.append({"type": "audio"})
            # Chat templates end an audio part with their own line break.
            piece = piece.removeprefix("\n")
        if piece:
            parts.append({"type": "text", "text": piece})
    return parts


def cut_at_stop(text: str, until: Sequence[str]) -> str:
    """`text` up to the earliest occurrence of any stop string (all of it when none occurs)."""
    cut = min((i for i in (text.find(s) for s in until if s) if i >= 0), default=len(text))
    return text[:cut]


def mono_waveform(audio: Mapping[str, Any], target_sr: int) -> np.ndarray:
    """A request's audio mapping as a float32 mono waveform at `target_sr` Hz."""
    wave = np.asarray(audio["array"], dtype=np.float32)
    if wave.ndim != 1:
        raise ValueError(f"audio arrays must be mono (1-D), got shape {wave.shape}")
    return resample(wave, int(audio["sampling_rate"]), target_sr)
