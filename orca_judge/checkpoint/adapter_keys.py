"""Matching a saved LoRA adapter's weight names to the LoRA modules of the backbone it loads on.

Wrappers (PEFT, a causal-LM head, a multimodal model) and transformers versions spell one
module's path differently; keys are reduced to one canonical form before they are matched,
and every saved weight must land on exactly one module of the right shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import torch

from orca_judge.errors import CheckpointError

# Spellings of one module's path in different wrappers and transformers versions, all reduced
# to one form before adapter keys are matched to the backbone's LoRA weights.
_MODULE_SPELLINGS = (
    (re.compile(r"^model\."), ""),  # saved on a ...ForCausalLM / ...ForConditionalGeneration
    (re.compile(r"(^|\.)language_model\.model\."), r"\1language_model."),  # Gemma-3, < 4.52
    (re.compile(r"(^|\.)vision_tower\.vision_model\."), r"\1vision_tower."),  # SigLIP, < 5.0
)


def canonical_adapter_key(key: str) -> str:
    """An adapter weight's name with wrapper levels and version-specific spellings removed."""
    key = key.removeprefix("base_model.model.")
    for pattern, replacement in _MODULE_SPELLINGS:
        key = pattern.sub(replacement, key, count=1)
    return key


def _some(keys: set[str] | list[str]) -> str:
    shown = sorted(keys)[:3]
    more = f" and {len(keys) - len(shown)} more" if len(keys) > len(shown) else ""
    return ", ".join(shown) + more


def match_adapter_keys(
    saved: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor], where: Path
) -> dict[str, torch.Tensor]:
    """Saved adapter weights under the backbone's names; every key must land, shapes must fit."""
    by_canonical: dict[str, str] = {}
    for key in expected:
        other = by_canonical.setdefault(canonical_adapter_key(key), key)
        if other != key:
            raise CheckpointError(f"{where}: backbone LoRA weights {other} and {key} collide")
    state: dict[str, torch.Tensor] = {}
    unmatched = []
    for key, value in saved.items():
        target = key if key in expected else by_canonical.get(canonical_adapter_key(key))
        if target is None or target in state:
            unmatched.append(key)
        else:
            state[target] = value
    if unmatched:
        raise CheckpointError(
            f"{where}: {len(unmatched)} adapter weights match no LoRA module of the backbone "
            f"({_some(unmatched)}); is this the backbone the adapter was trained on?"
        )
    missing = set(expected) - set(state)
    if missing:
        raise CheckpointError(
            f"{where}: adapter does not match the backbone; {len(missing)} weights missing "
            f"({_some(missing)})"
        )
    wrong = [k for k in state if tuple(state[k].shape) != tuple(expected[k].shape)]
    if wrong:
        k = sorted(wrong)[0]
        raise CheckpointError(
            f"{where}: {len(wrong)} adapter weights have the wrong shape, e.g. {k} is "
            f"{tuple(state[k].shape)}, the backbone needs {tuple(expected[k].shape)}"
        )
    return state
