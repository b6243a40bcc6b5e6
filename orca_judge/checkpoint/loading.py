"""Reading either checkpoint layout and building the OrcaModel it describes.

`read_checkpoint` tells the layouts apart; `load_model` loads the backbone, checks its
weights against the recorded fingerprint, attaches the LoRA adapter, fits the head and
decides the clamp threshold (and says why).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from eval_common.devices import resolve_device, resolve_dtype
from orca_judge.checkpoint.adapter_keys import match_adapter_keys
from orca_judge.checkpoint.contents import CheckpointContents, read_tensors
from orca_judge.checkpoint.native import CONFIG_FILE, ENSEMBLE_FILE, read_native
from orca_judge.checkpoint.published import ClampChoice, published_clamp
from orca_judge.checkpoint.published_format import read_published
from orca_judge.errors import BackboneMismatchError, CheckpointError
from orca_judge.model import (
    OrcaModel,
    hidden_size_of,
    load_backbone,
    resolved_pooling,
    weights_fingerprint,
)

# OrcaConfig fields a caller may change when loading a checkpoint (how it reads, not what it is).
LOAD_OVERRIDES = (
    "use_question",
    "use_rationale",
    "use_transcript",
    "max_tokens",
    "clamp_threshold",
)


@dataclass
class LoadedModel:
    """An OrcaModel built from a checkpoint, with the parts a judge or trainer keeps."""

    model: OrcaModel
    tokenizer: Any
    contents: CheckpointContents
    backbone_fingerprint: str
    adapter: tuple[Any, dict[str, torch.Tensor]] | None
    device: torch.device
    clamp: ClampChoice


def read_checkpoint(path: str | Path, backbone: str | None = None) -> CheckpointContents:
    """Read a native or published-layout checkpoint directory (no model is built)."""
    root = Path(path)
    if not root.is_dir():
        raise CheckpointError(f"{root}: not a checkpoint directory")
    if (root / ENSEMBLE_FILE).exists():
        raise CheckpointError(
            f"{root}: an ensemble of judges ({ENSEMBLE_FILE}), not one judge: name one of its "
            "member-N folders here, or score with the whole (orca_judge.load_judge, orca score)"
        )
    if (root / CONFIG_FILE).exists():
        return read_native(root, backbone)
    if (root / "model" / "config.yaml").exists():
        return read_published(root, backbone)
    raise CheckpointError(
        f"{root}: missing {CONFIG_FILE} (native) or model/config.yaml (published layout)"
    )


def load_adapter(backbone: nn.Module, adapter_dir: Path, trainable: bool = False):
    """Attach a saved LoRA adapter, accepting keys saved from a causal-LM wrapper.

    Every saved weight must land on a LoRA module of the backbone and every LoRA module
    must get its weights, otherwise CheckpointError naming the keys.
    Returns (peft_model, lora_config, adapter_state).
    """
    from peft import (
        LoraConfig,
        get_peft_model,
        get_peft_model_state_dict,
        set_peft_model_state_dict,
    )

    lora = LoraConfig.from_pretrained(str(adapter_dir))
    lora.task_type = None
    lora.inference_mode = not trainable
    weights = adapter_dir / "adapter_model.safetensors"
    if not weights.exists() and (adapter_dir / "adapter_model.bin").exists():
        weights = adapter_dir / "adapter_model.bin"
    saved = read_tensors(weights, "adapter weights")
    for p in backbone.parameters():
        p.requires_grad_(False)
    peft_model = get_peft_model(backbone, lora)
    state = match_adapter_keys(saved, get_peft_model_state_dict(peft_model), weights)
    set_peft_model_state_dict(peft_model, state)
    for name, p in peft_model.named_parameters():
        p.requires_grad_(trainable and "lora_" in name)
    return peft_model, lora, {k: state[k] for k in sorted(state)}


def _clamp_choice(
    ckpt: CheckpointContents, overrides: Mapping[str, Any], backbone_config: Any
) -> ClampChoice:
    cfg = ckpt.config
    if "clamp_threshold" in overrides:
        how = "off" if not cfg.clamp_threshold else "on"
        return ClampChoice(cfg.clamp_threshold, f"given when loading (clamping {how})")
    if ckpt.layout == "published":
        return published_clamp(ckpt.recorded_backbones, backbone_config, cfg.likelihood, cfg.lora_r)
    if cfg.clamp_threshold is None:
        return ClampChoice(None, "the checkpoint records none: means are not clamped")
    return ClampChoice(cfg.clamp_threshold, "recorded in the checkpoint")


def _apply_overrides(ckpt: CheckpointContents, overrides: Mapping[str, Any]) -> None:
    unknown = sorted(set(overrides) - set(LOAD_OVERRIDES))
    if unknown:
        raise ValueError(
            f"cannot override {', '.join(unknown)} when loading; "
            f"allowed: {', '.join(LOAD_OVERRIDES)}"
        )
    if overrides.get("clamp_threshold") == 0:
        # 0 given means off: a stored 0 would still clamp a Bernoulli judge, which has no
        # variance and is clamped by the margin alone (a threshold, tuned or recorded, of 0).
        overrides = {**overrides, "clamp_threshold": None}
    if overrides:
        ckpt.config = ckpt.config.replace(**overrides)
    flags = [k for k in ("use_question", "use_rationale", "use_transcript") if k in overrides]
    if flags:
        ckpt.input_settings += f"; {', '.join(flags)} given when loading"


def _check_head(ckpt: CheckpointContents, model: OrcaModel, where: Any) -> None:
    cfg = ckpt.config
    expected = {k: tuple(v.shape) for k, v in model.head_state().items()}
    got = {k: tuple(v.shape) for k, v in ckpt.head.items()}
    if got.get("weight") != expected["weight"]:
        raise CheckpointError(
            f"{where}: head weight shape {got.get('weight')} does "
            f"not fit likelihood {cfg.likelihood!r} on this backbone "
            f"(expected {expected['weight']})"
        )
    if got != expected:
        raise CheckpointError(
            f"{where}: head tensors {sorted(got)} with shapes {got} do not fit this judge "
            f"(use_cls_token={cfg.use_cls_token}: expected {expected})"
        )
    broken = sorted(k for k, v in ckpt.head.items() if not torch.isfinite(v).all())
    if broken:
        raise CheckpointError(f"{where}: head weights {broken} hold NaN or infinite values")


def load_model(
    source: str | Path | CheckpointContents,
    *,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    backbone: str | None = None,
    strict_backbone: bool = False,
    trainable: bool = False,
    merge: bool = True,
    overrides: Mapping[str, Any] | None = None,
) -> LoadedModel:
    """Build the OrcaModel (backbone + LoRA adapter + head) a checkpoint describes.

    `source` is a directory or what read_checkpoint made of one. `dtype` defaults to the
    checkpoint's own setting; `backbone` (with a directory) loads the base weights from
    elsewhere (warning, or with strict_backbone raising, when they differ from the recorded
    ones). trainable=True keeps the adapter unmerged with LoRA and head weights trainable;
    otherwise every weight is frozen and the adapter merged unless merge=False. `overrides`
    changes how the judge reads items (LOAD_OVERRIDES: input flags, token limit, clamp).
    """
    from transformers import AutoTokenizer

    ckpt = source if isinstance(source, CheckpointContents) else read_checkpoint(source, backbone)
    overrides = dict(overrides or {})
    _apply_overrides(ckpt, overrides)
    cfg = ckpt.config
    where = ckpt.root if ckpt.root is not None else cfg.backbone
    dev = resolve_device(device)
    tokenizer = AutoTokenizer.from_pretrained(str(ckpt.tokenizer_dir))
    base = load_backbone(cfg.backbone, resolve_dtype(dtype or cfg.dtype, dev))
    fingerprint = weights_fingerprint(base)
    if ckpt.backbone_fingerprint and fingerprint != ckpt.backbone_fingerprint:
        msg = (
            f"{where}: backbone {cfg.backbone!r} has weight fingerprint {fingerprint}, but the "
            f"checkpoint was trained on {ckpt.backbone_fingerprint}; predictions are not valid"
        )
        if strict_backbone:
            raise BackboneMismatchError(msg)
        warnings.warn(msg, stacklevel=3)
    clamp = _clamp_choice(ckpt, overrides, base.config)
    ckpt.config = cfg = cfg.replace(clamp_threshold=clamp.threshold)
    adapter = None
    if ckpt.adapter_dir is not None:
        peft_model, lora, state = load_adapter(base, ckpt.adapter_dir, trainable=trainable)
        adapter = (lora, state)
        base = peft_model.merge_and_unload() if merge and not trainable else peft_model
    pooling = ckpt.pooling or resolved_pooling(cfg, base.config)
    model = OrcaModel(base, cfg.likelihood, pooling, hidden_size_of(base.config), cfg.use_cls_token)
    _check_head(ckpt, model, where)
    model.head.load_state_dict({k: ckpt.head[k].float() for k in ("weight", "bias")})
    if model.cls_token is not None:
        with torch.no_grad():
            model.cls_token.copy_(ckpt.head["cls_token"].float())
    if trainable:
        for p in model.head_parameters():
            p.requires_grad_(True)
    else:
        for p in model.parameters():
            p.requires_grad_(False)
    model.to(dev)
    return LoadedModel(model, tokenizer, ckpt, fingerprint, adapter, dev, clamp)
