"""What the families whose processors cannot be built for audio alone share.

Qwen Omni's processors need a video processor and Phi-4-multimodal's an image processor, both
importing torchvision, which audio-only runs do without (and which often fails to import
on CPU boxes). Their inputs are built from the checkpoint's parts instead: its feature
extractor, tokenizer and chat template, each clip's audio token repeated as many times as
the model's audio encoder yields embeddings for that clip. `PartsInputs` offers what
`aqua-audiolm` asks of a processor; each family's module (omni.py, phi4.py)
says how many embeddings a clip yields and what the model takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eval_common.inputs import read_json, read_text

# Processor-level chat template files, newest layout first (the tokenizer may have its own).
CHAT_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")


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


def audio_token_of(pretrained: str, tokenizer: Any, token_id: int) -> str:
    """The token of `token_id` in the checkpoint's tokenizer; ValueError where it has none."""
    token = tokenizer.convert_ids_to_tokens(int(token_id))
    if token is None:
        raise ValueError(
            f"{pretrained}: the config's audio token id {token_id} is not in its tokenizer "
            f"(vocabulary of {len(tokenizer)})"
        )
    return token


class PartsInputs:
    """A feature extractor, a tokenizer and a chat template standing in for a processor."""

    audio_bos_token: str | None = None
    audio_eos_token: str | None = None

    def __init__(
        self, feature_extractor: Any, tokenizer: Any, chat_template: str | None, audio_token: str
    ) -> None:
        self.feature_extractor = feature_extractor
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.audio_token = audio_token

    def apply_chat_template(
        self, conversation: list[dict[str, Any]], add_generation_prompt: bool = True, **_: Any
    ) -> str:
        """The rendered prompt, each audio part as the checkpoint's template writes it."""
        return self.tokenizer.apply_chat_template(
            conversation,
            chat_template=self.chat_template,
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
        )
