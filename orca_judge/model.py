"""The judge network: a Hugging Face base model (hidden states only), pooling, and a linear head."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

import torch
from torch import nn

from aqua_tasks.deprecation import moved

from .config import OrcaConfig
from .likelihoods import head_size

# Projection names LoRA adapts, by family; the first family whose names exist in the model wins.
_LORA_FAMILIES = (
    (
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    ),  # Llama, Gemma, OLMo, Qwen
    ("qkv_proj", "o_proj", "gate_up_proj", "down_proj"),  # Phi-3
    ("q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"),  # OPT
    ("c_attn", "c_proj", "c_fc"),  # GPT-2
    ("query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"),  # GPT-NeoX, Falcon
    ("query", "key", "value", "dense"),  # BERT, RoBERTa, MiniLM
)


class BackboneLoadError(RuntimeError):
    """The backbone could not be loaded (for example offline with no local copy)."""


# Device and dtype resolution moved to aqua_tasks.devices (one rule for every model).
__getattr__ = moved(
    __name__, {"resolve_device": "aqua_tasks.devices", "resolve_dtype": "aqua_tasks.devices"}
)


def load_backbone(backbone: str, dtype: torch.dtype) -> nn.Module:
    """AutoModel (no LM head) for an id or directory, with an error that says what to do."""
    from transformers import AutoModel

    try:
        return AutoModel.from_pretrained(backbone, dtype=dtype)
    except (OSError, ValueError) as err:
        offline = os.environ.get("HF_HUB_OFFLINE") == "1"
        hint = " (HF_HUB_OFFLINE=1: pass a local directory)" if offline else ""
        raise BackboneLoadError(f"cannot load backbone {backbone!r}{hint}: {err}") from err


def is_encoder(config) -> bool:
    """True for bidirectional encoders (BERT-like), which get mean pooling."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    return bool(config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not config.is_decoder)


def detect_lora_targets(model: nn.Module) -> list[str]:
    """Leaf module names of the projections LoRA should adapt in this architecture."""
    leaves = {
        name.rsplit(".", 1)[-1]
        for name, mod in model.named_modules()
        if isinstance(mod, nn.Linear) or type(mod).__name__ == "Conv1D"
    }
    for family in _LORA_FAMILIES:
        found = [n for n in family if n in leaves]
        if len(found) >= 2:
            return found
    linear = sorted(leaves - {"lm_head", "score", "classifier", "pooler"})
    if not linear:
        raise ValueError(f"no linear layers found for LoRA in {type(model).__name__}")
    return linear


def weights_fingerprint(model: nn.Module, samples_per_tensor: int = 4096) -> str:
    """A short hash of the weights (bf16-rounded samples), equal for fp32 and bf16 loads."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        flat = tensor.detach().reshape(-1)
        step = max(1, flat.numel() // samples_per_tensor)
        sample = flat[::step][:samples_per_tensor].to("cpu", torch.bfloat16).view(torch.int16)
        digest.update(f"{name}:{tuple(tensor.shape)}".encode())
        digest.update(sample.numpy().tobytes())
    return digest.hexdigest()[:32]


def pool_last(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Hidden state of each row's last non-pad token (works for left and right padding)."""
    positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)
    last = (attention_mask.long() * positions).argmax(dim=1)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def pool_mean(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of hidden states over non-pad tokens."""
    mask = attention_mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


class OrcaModel(nn.Module):
    """Backbone hidden states -> pooled vector -> linear head logits (fp32)."""

    def __init__(self, backbone: nn.Module, likelihood: str, pooling: str, hidden_size: int):
        super().__init__()
        self.backbone = backbone
        self.pooling = pooling
        self.head = nn.Linear(hidden_size, head_size(likelihood))

    def init_head(self, seed: int) -> None:
        """Near-zero head (xavier, gain 0.01; bias 0): training starts from a flat distribution."""
        gen = torch.Generator().manual_seed(seed)
        weight = torch.empty_like(self.head.weight, device="cpu")
        fan_out, fan_in = weight.shape
        bound = 0.01 * (6.0 / (fan_in + fan_out)) ** 0.5
        with torch.no_grad():
            self.head.weight.copy_(weight.uniform_(-bound, bound, generator=gen))
            self.head.bias.zero_()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        kwargs = {"use_cache": False} if self.pooling == "last" else {}
        if self.pooling == "last":
            # Positions count real tokens only, so left padding gives the unpadded result.
            kwargs["position_ids"] = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
        out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        pool = pool_last if self.pooling == "last" else pool_mean
        return self.head(pool(out.last_hidden_state, attention_mask).float())


def resolved_pooling(cfg: OrcaConfig, backbone_config) -> str:
    if cfg.pooling != "auto":
        return cfg.pooling
    return "mean" if is_encoder(backbone_config) else "last"


def add_lora(backbone: nn.Module, cfg: OrcaConfig) -> nn.Module:
    """Wrap the backbone with fresh LoRA adapters (no-op for lora_r = 0); base weights frozen."""
    for p in backbone.parameters():
        p.requires_grad_(False)
    if cfg.lora_r == 0:
        return backbone
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha or cfg.lora_r,
        lora_dropout=cfg.lora_dropout,
        target_modules=cfg.lora_target_modules or detect_lora_targets(backbone),
    )
    return get_peft_model(backbone, lora)


def collate(
    batch: Sequence[Sequence[int]],
    pad_id: int,
    padding_side: str = "right",
    device: torch.device | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad token-id lists into (input_ids, attention_mask)."""
    width = max(len(ids) for ids in batch)
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for i, ids in enumerate(batch):
        span = slice(0, len(ids)) if padding_side == "right" else slice(width - len(ids), width)
        input_ids[i, span] = torch.as_tensor(ids, dtype=torch.long)
        mask[i, span] = 1
    return input_ids.to(device), mask.to(device)
