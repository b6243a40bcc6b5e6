"""The model a training run starts from: a fresh LoRA adapter and head, or a checkpoint.

Continuing from a checkpoint (`init_from`, each later curriculum stage) keeps its adapter
and head trainable; its likelihood, CLS token and pooling must match the new configuration.
"""

from __future__ import annotations

from pathlib import Path

import torch

from eval_common.devices import resolve_dtype
from orca_judge.checkpoint import load_model, read_checkpoint
from orca_judge.config import OrcaConfig
from orca_judge.model import (
    OrcaModel,
    add_lora,
    hidden_size_of,
    load_backbone,
    resolved_pooling,
    weights_fingerprint,
)


def build_model(
    cfg: OrcaConfig, device: torch.device, init_from: str | Path | None = None, *, seed: int = 0
):
    """(model, tokenizer, fingerprint): fresh LoRA + head, or continued from a checkpoint.

    `seed` (the training arguments' seed) initialises the LoRA adapter and the head.
    """
    from peft import PeftModel
    from transformers import AutoTokenizer

    torch.manual_seed(seed)
    if init_from is None:
        base = load_backbone(cfg.backbone, resolve_dtype(cfg.dtype, device))
        fingerprint = weights_fingerprint(base)
        tokenizer = AutoTokenizer.from_pretrained(cfg.backbone)
        backbone = add_lora(base, cfg)
        model = OrcaModel(
            backbone,
            cfg.likelihood,
            resolved_pooling(cfg, base.config),
            hidden_size_of(base.config),
            cfg.use_cls_token,
        )
        model.init_head(seed)
        return model.to(device), tokenizer, fingerprint
    ckpt = read_checkpoint(init_from, backbone=cfg.backbone)
    if ckpt.config.likelihood != cfg.likelihood:
        raise ValueError(
            f"{init_from}: likelihood {ckpt.config.likelihood!r} cannot continue as "
            f"{cfg.likelihood!r}"
        )
    if ckpt.config.use_cls_token != cfg.use_cls_token:
        raise ValueError(
            f"{init_from}: use_cls_token={ckpt.config.use_cls_token} cannot continue with "
            f"use_cls_token={cfg.use_cls_token}"
        )
    loaded = load_model(ckpt, device=device, dtype=cfg.dtype, trainable=True)
    model = loaded.model
    pooling = resolved_pooling(cfg, model.backbone.config)
    if pooling != model.pooling:
        raise ValueError(
            f"{init_from}: trained with {model.pooling!r} pooling, cannot continue with {pooling!r}"
        )
    if not isinstance(model.backbone, PeftModel):
        model.backbone = add_lora(model.backbone, cfg)
    return model.to(device), loaded.tokenizer, loaded.backbone_fingerprint


def enable_gradient_checkpointing(model: OrcaModel) -> None:
    """Keep only each layer's input in training; the backward pass recomputes the rest.

    Activations of the frozen backbone dominate training memory (about 5 MB per token at
    fp32 for a 30-layer, 576-wide model with LoRA on every projection), not the weights.
    """
    backbone = model.backbone
    base = backbone.get_base_model() if hasattr(backbone, "get_base_model") else backbone
    if not getattr(base, "supports_gradient_checkpointing", False):
        return  # e.g. a custom backbone: train as before
    # Non-reentrant checkpointing needs no gradient on the inputs (the embeddings are frozen).
    kwargs = {"use_reentrant": False}
    if hasattr(base, "activation_checkpointing_enable"):
        # transformers 5's name; the older `gradient_checkpointing_enable` warns there.
        base.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:  # transformers releases before the rename, which pyproject.toml still allows
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def resolved_backbone(backbone: str) -> str:
    """A local backbone directory as an absolute path (so checkpoints load from anywhere)."""
    path = Path(backbone).expanduser() if backbone else None
    return str(path.resolve()) if path is not None and path.exists() else backbone
