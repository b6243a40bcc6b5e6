"""The judge network: a Hugging Face base model (hidden states only), pooling, and a linear head."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from orca_judge.config import OrcaConfig
from orca_judge.errors import BackboneLoadError
from orca_judge.likelihoods import head_size

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


def pickle_refusal(path: str | os.PathLike[str], err: BaseException) -> str | None:
    """Why torch refused a pickled weights file, and what to use instead; None for other errors.

    torch.load(weights_only=True) reads plain tensors only: anything else in a pickle could run
    code while loading, so it is never loaded here.
    """
    import pickle

    if not isinstance(err, pickle.UnpicklingError):
        return None
    found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(err))
    holds = f" (it holds {found.group(1)})" if found else ""
    return (
        f"{path} is a pickle with more than tensors{holds}, and pickles are not loaded for "
        "safety (loading one can run code); use safetensors weights: load the model once where "
        "you trust the file and save it with save_pretrained(folder), which writes "
        "model.safetensors"
    )


def load_backbone(backbone: str, dtype: torch.dtype) -> nn.Module:
    """AutoModel (no LM head) for an id or directory, with an error that says what to do."""
    import pickle

    from transformers import AutoModel

    try:
        return AutoModel.from_pretrained(backbone, dtype=dtype)
    except pickle.UnpicklingError as err:
        pickled = sorted(p.name for p in Path(backbone).glob("*.bin")) or ["its .bin weights"]
        where = Path(backbone) / pickled[0] if Path(backbone).is_dir() else backbone
        raise BackboneLoadError(
            f"cannot load backbone {backbone!r}: {pickle_refusal(where, err)}"
        ) from None
    except (OSError, ValueError) as err:
        offline = os.environ.get("HF_HUB_OFFLINE") == "1"
        hint = " (HF_HUB_OFFLINE=1: pass a local directory)" if offline else ""
        raise BackboneLoadError(f"cannot load backbone {backbone!r}{hint}: {err}") from err


def text_config(config: Any) -> Any:
    """The language-model part of a backbone config (multimodal configs such as Gemma-3 nest it)."""
    get = getattr(config, "get_text_config", None)
    return get() if callable(get) else config


def hidden_size_of(config: Any) -> int:
    """Width of the backbone's final hidden states."""
    return int(text_config(config).hidden_size)


def context_length_of(config: Any) -> int | None:
    """How many positions the backbone was built for; None when its config does not say."""
    cfg = text_config(config)
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(cfg, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


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


def last_positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index of each row's last non-pad token (works for left and right padding)."""
    positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)
    return (attention_mask.long() * positions).argmax(dim=1)


def pool_last(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Hidden state of each row's last non-pad token (works for left and right padding)."""
    last = last_positions(attention_mask)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def pool_mean(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of hidden states over non-pad tokens."""
    mask = attention_mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


class OrcaModel(nn.Module):
    """Backbone hidden states -> pooled vector -> linear head logits (fp32).

    With `use_cls_token`, a learned vector is placed right after each row's last token and
    its hidden state is pooled. It is a key no token attends to (its own mask entry is 0),
    which is what the reference implementation computes for a single item; placing it per
    row, not after the padded batch, makes the result independent of the batch.
    """

    def __init__(
        self,
        backbone: nn.Module,
        likelihood: str,
        pooling: str,
        hidden_size: int,
        use_cls_token: bool = False,
    ):
        super().__init__()
        if use_cls_token and pooling != "last":
            raise ValueError(f"a CLS token needs last-token pooling, not {pooling!r}")
        self.backbone = backbone
        self.pooling = pooling
        self.head = nn.Linear(hidden_size, head_size(likelihood))
        cls = nn.Parameter(torch.zeros(hidden_size)) if use_cls_token else None
        self.register_parameter("cls_token", cls)

    def init_head(self, seed: int) -> None:
        """Near-zero head (xavier, gain 0.01; bias 0): training starts from a flat distribution.

        A CLS token starts as a standard normal vector, as in the reference implementation.
        """
        gen = torch.Generator().manual_seed(seed)
        weight = torch.empty_like(self.head.weight, device="cpu")
        fan_out, fan_in = weight.shape
        bound = 0.01 * (6.0 / (fan_in + fan_out)) ** 0.5
        with torch.no_grad():
            self.head.weight.copy_(weight.uniform_(-bound, bound, generator=gen))
            self.head.bias.zero_()
            if self.cls_token is not None:
                cls = torch.randn(self.cls_token.shape, generator=gen)
                self.cls_token.copy_(cls)

    def head_state(self) -> dict[str, torch.Tensor]:
        """The trained tensors outside the backbone: head weight and bias, and the CLS token."""
        state = dict(self.head.state_dict())
        if self.cls_token is not None:
            state["cls_token"] = self.cls_token.detach()
        return state

    def head_parameters(self) -> list[nn.Parameter]:
        """Parameters outside the backbone (trained alongside LoRA)."""
        return [*self.head.parameters(), *([self.cls_token] if self.cls_token is not None else [])]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if self.cls_token is not None:
            return self._head(self._cls_hidden(input_ids, attention_mask))
        kwargs = {"use_cache": False} if self.pooling == "last" else {}
        if self.pooling == "last":
            # Positions count real tokens only, so left padding gives the unpadded result.
            kwargs["position_ids"] = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
        out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        pool = pool_last if self.pooling == "last" else pool_mean
        return self._head(pool(out.last_hidden_state, attention_mask))

    def _head(self, pooled: torch.Tensor) -> torch.Tensor:
        # fp32 even under a training run's autocast: the head is tiny, and the rating
        # distribution's logits are what the loss and every figure read.
        with torch.autocast(pooled.device.type, enabled=False):
            return self.head(pooled.float())

    def _cls_hidden(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        rows = torch.arange(input_ids.shape[0], device=input_ids.device)
        slot = last_positions(attention_mask) + 1
        embeds = self.backbone.get_input_embeddings()(input_ids)
        # One more column, so the longest row has room; other rows use a pad position.
        embeds = torch.cat([embeds, embeds[:, -1:]], dim=1)
        columns = torch.arange(embeds.shape[1], device=embeds.device)
        is_cls = (columns[None, :] == slot[:, None]).long()
        cls = self.cls_token.to(embeds.dtype)
        embeds = torch.where(is_cls[..., None].bool(), cls, embeds)
        mask = torch.cat([attention_mask.long(), attention_mask.new_zeros((len(rows), 1))], 1)
        positions = ((mask + is_cls).cumsum(dim=1) - 1).clamp(min=0)
        out = self.backbone(
            inputs_embeds=embeds, attention_mask=mask, position_ids=positions, use_cache=False
        )
        return out.last_hidden_state[rows, slot]


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
