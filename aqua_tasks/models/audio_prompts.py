"""Prompts and clips on their way into an audio LM, local (`aqua-audiolm`) or behind an API.

Task prompts mark each clip with an `<audio>` placeholder; chat messages carry the clips as
audio parts, rendered with a processor's chat template (or its raw audio tokens where it has
none); waveforms go in mono at the model's rate; replies stop at the task's stop strings.
A model that needs audio refuses an explicit text-only run (`"audio": false`) before any
request (`refuse_text_only_run`, called by both harnesses' start-up checks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from aqua_tasks.audio.clips import resample
from aqua_tasks.core.docs import audio_enabled
from aqua_tasks.core.settings_place import settings_place
from aqua_tasks.errors import ModelArgumentError

if TYPE_CHECKING:
    from lm_eval.api.instance import Instance

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


def refuse_text_only_run(model_class: type, settings: Mapping[str, Any]) -> None:
    """ModelArgumentError, one line naming the fix, for a model that needs audio on a text-only run.

    `model_class` needs audio when it names `AUDIO_MODEL` (its registered name) and
    `TEXT_ONLY_MODEL` (what to run text-only instead); any other class passes.
    """
    name, text_only = (getattr(model_class, a, None) for a in ("AUDIO_MODEL", "TEXT_ONLY_MODEL"))
    if name is None or text_only is None or audio_enabled(settings):
        return
    raise ModelArgumentError(
        f'{name} needs audio, but {settings_place()} sets "audio": false (a text-only run): '
        f'drop "audio": false to send the clips, or run text-only with {text_only}'
    )


def request_clips(request: Instance, model: str, text_only: str) -> list[Mapping[str, Any]]:
    """The clips a request carries; ValueError naming the item, the model and `text_only`."""
    extra = request.args[2] if len(request.args) > 2 else None
    audio = extra.get("audio") if isinstance(extra, Mapping) else None
    if not audio:
        raise ValueError(
            f"task {request.task_name!r} doc {request.doc_id}: request carries no audio; "
            f"{model} needs a task with doc_to_audio (text-only runs: {text_only})"
        )
    return list(audio)


def mono_waveform(audio: Mapping[str, Any], target_sr: int) -> np.ndarray:
    """A request's audio mapping as a float32 mono waveform at `target_sr` Hz."""
    wave = np.asarray(audio["array"], dtype=np.float32)
    if wave.ndim != 1:
        raise ValueError(f"audio arrays must be mono (1-D), got shape {wave.shape}")
    return resample(wave, int(audio["sampling_rate"]), target_sr)


def render_chat(
    processor: Any,
    chat_history: Sequence[Mapping[str, str]],
    system_prompt: str | None,
    add_generation_prompt: bool,
) -> str:
    """lm-eval's chat history in a processor's chat template, each clip an audio part."""
    messages = [dict(turn) for turn in chat_history]
    if system_prompt and not any(m["role"] == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": system_prompt})
    if getattr(processor, "chat_template", None) is None:
        # A base model without a template: its raw prompt format, no roles.
        return "\n".join(raw_prompt(processor, m["content"]) for m in messages)
    conversation = [{"role": m["role"], "content": chat_content(m["content"])} for m in messages]
    return processor.apply_chat_template(
        conversation, add_generation_prompt=add_generation_prompt, tokenize=False
    )


def raw_prompt(processor: Any, text: str) -> str:
    """`text` with each placeholder replaced by the processor's own audio tokens."""
    bos = getattr(processor, "audio_bos_token", None) or ""
    eos = getattr(processor, "audio_eos_token", None) or ""
    return text.replace(AUDIO_PLACEHOLDER, f"{bos}{processor.audio_token}{eos}")
