"""Chat-completions request bodies with audio: 16 kHz mono WAV, as `input_audio` or `audio_url`.

Pure functions: an lm-eval request's text and clips in, JSON-ready messages out. The same
builder renders the audio as digests for the reply cache's key, so the key covers exactly
what is sent.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import soundfile as sf

from aqua_tasks.audio.clips import TARGET_SAMPLING_RATE
from aqua_tasks.models.audio_prompts import AUDIO_PLACEHOLDER, chat_content, mono_waveform

AUDIO_FORMATS = ("input_audio", "audio_url")
Part = dict[str, Any]


def wav_bytes(audio: Mapping[str, Any], rate: int = TARGET_SAMPLING_RATE) -> bytes:
    """A request's clip (`array` + `sampling_rate`) as a 16-bit PCM mono WAV file at `rate` Hz."""
    wave = mono_waveform(audio, rate)
    if not np.isfinite(wave).all():
        raise ValueError("audio holds NaN or infinite samples")
    buffer = io.BytesIO()
    # 16-bit PCM: what every audio chat API decodes; clipping first, since libsndfile would
    # otherwise wrap samples beyond full scale around.
    sf.write(buffer, np.clip(wave, -1.0, 1.0), rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def audio_digest(wav: bytes) -> str:
    """SHA-256 of a clip's WAV bytes (what the reply cache keys on)."""
    return hashlib.sha256(wav).hexdigest()


def audio_part(wav: bytes, audio_format: str) -> Part:
    """One content part carrying a WAV clip, in the server's `audio_format`."""
    data = base64.b64encode(wav).decode("ascii")
    if audio_format == "input_audio":
        return {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}
    if audio_format == "audio_url":
        return {"type": "audio_url", "audio_url": {"url": f"data:audio/wav;base64,{data}"}}
    raise ValueError(f"audio_format={audio_format!r}: expected one of {', '.join(AUDIO_FORMATS)}")


def digest_part(wav: bytes, audio_format: str) -> Part:
    """Stand-in for `audio_part` in cache keys: the clip's digest instead of its bytes."""
    return {"type": audio_format, "sha256": audio_digest(wav)}


def user_content(text: str, wavs: Sequence[bytes], render: Callable[[bytes], Part]) -> list[Part]:
    """A user turn's parts: each `<audio>` placeholder becomes the next clip, text around it.

    A text without placeholders gets all its clips first (where AQUA's prompt puts them).
    """
    slots = text.count(AUDIO_PLACEHOLDER)
    if slots == 0 and wavs:
        text = AUDIO_PLACEHOLDER * len(wavs) + "\n" + text
    elif slots != len(wavs):
        raise ValueError(
            f"prompt has {slots} {AUDIO_PLACEHOLDER!r} placeholders for {len(wavs)} clips; "
            "put one placeholder per clip"
        )
    clips = iter(wavs)
    parts: list[Part] = []
    for part in chat_content(text):
        if part["type"] == "audio":
            parts.append(render(next(clips)))
        else:
            parts.append({"type": "text", "text": part["text"]})
    return parts


def chat_history(context: str) -> list[dict[str, str]] | None:
    """The messages of a context written by `apply_chat_template` (a JSON list), else None."""
    if not context.startswith("[{"):
        return None
    try:
        turns = json.loads(context)
    except ValueError:
        return None
    if isinstance(turns, list) and all(
        isinstance(t, dict) and isinstance(t.get("role"), str) and isinstance(t.get("content"), str)
        for t in turns
    ):
        return turns
    return None


def chat_messages(
    context: str,
    wavs: Sequence[bytes],
    render: Callable[[bytes], Part],
    system_prompt: str | None = None,
) -> list[dict[str, Any]]:
    """The request's messages: clips go into the last user turn, `system_prompt` first.

    `context` is a task's prompt, or the JSON history our `apply_chat_template` wrote for
    lm-eval's `--apply_chat_template` (which also carries `--system_instruction`).
    """
    turns = chat_history(context) or [{"role": "user", "content": context}]
    if system_prompt and not any(t["role"] == "system" for t in turns):
        turns = [{"role": "system", "content": system_prompt}, *turns]
    last_user = max((k for k, t in enumerate(turns) if t["role"] == "user"), default=None)
    if last_user is None:
        raise ValueError("the prompt has no user turn to carry the audio")
    messages: list[dict[str, Any]] = []
    for k, turn in enumerate(turns):
        if k == last_user:
            messages.append(
                {"role": "user", "content": user_content(turn["content"], wavs, render)}
            )
        else:
            messages.append({"role": turn["role"], "content": turn["content"]})
    return messages
