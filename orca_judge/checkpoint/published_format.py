"""Reading the authors' published checkpoint layout (read only) into CheckpointContents.

Layout: tokenizer/, model/config.yaml, model/lm/ (PEFT adapter), model/model_minus_lm.pt
(state dict with linear.weight / linear.bias and, when config.yaml says use_cls_token,
cls_token), and optionally the reference trainer's args.yaml (at the root, or one level up
for its run folders best/, latest/, checkpoint_N/).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from eval_common.inputs import load_yaml, read_json
from orca_judge.checkpoint.contents import CheckpointContents, read_tensors, require
from orca_judge.config import OrcaConfig
from orca_judge.errors import CheckpointError

ARGS_FILE = "args.yaml"
# The reference trainer's input flags (in its args.yaml) -> (OrcaConfig field, flag inverted).
REFERENCE_INPUT_FLAGS = {
    "skip_question": ("use_question", True),
    "skip_rationale": ("use_rationale", True),
    "add_transcript": ("use_transcript", False),
}
PUBLISHED_SCORE_TYPES = {
    "beta": "beta",
    "multinomial": "multinomial",
    "bernoulli_kl": "bernoulli",
    "bernoulli": "bernoulli",
}


def _reference_args(root: Path) -> tuple[dict[str, Any], Path | None]:
    """The reference trainer's args.yaml for a checkpoint (root, or its run folder), if any."""
    candidates = [root / ARGS_FILE]
    if root.name in ("best", "latest") or re.fullmatch(r"checkpoint_\d+", root.name):
        candidates.append(root.parent / ARGS_FILE)
    for path in candidates:
        if not path.is_file():
            continue
        data = load_yaml(path, CheckpointError)
        if not isinstance(data, Mapping):
            raise CheckpointError(f"{path}: expected a mapping of trainer settings")
        return dict(data), path
    return {}, None


def _input_flags(args: Mapping[str, Any], where: Path | None) -> dict[str, bool]:
    """OrcaConfig input flags from the reference trainer's settings (defaults when absent)."""
    flags = {}
    for key, (name, inverted) in REFERENCE_INPUT_FLAGS.items():
        value = args.get(key, False)
        if value is None:
            value = False
        if not isinstance(value, bool):
            raise CheckpointError(f"{where}: field {key!r} must be true or false, got {value!r}")
        flags[name] = value != inverted
    # The reference puts the transcript inside the rationale's context block, so skipping the
    # rationale drops the transcript too.
    flags["use_transcript"] = flags["use_transcript"] and flags["use_rationale"]
    return flags


def _published_head(path: Path, likelihood: str, use_cls: bool) -> dict[str, torch.Tensor]:
    """Head (and CLS token) from model_minus_lm.pt; every tensor in it must be accounted for."""
    state = read_tensors(path, "head state dict")
    found: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        names = ("linear.weight", "linear.bias", "cls_token")
        name = next((n for n in names if key.endswith(n)), None)
        if name is None:
            raise CheckpointError(
                f"{path}: unexpected tensor {key!r}; expected linear.weight, linear.bias and "
                "(with use_cls_token) cls_token"
            )
        found[name] = value
    if "linear.weight" not in found or "linear.bias" not in found:
        raise CheckpointError(f"{path}: no linear.weight / linear.bias")
    weight, bias = found["linear.weight"].float(), found["linear.bias"].float()
    if likelihood == "bernoulli" and weight.shape[0] == 2:
        # softmax over two logits with p = first equals sigmoid(z0 - z1)
        weight, bias = (weight[0] - weight[1])[None], (bias[0] - bias[1])[None]
    head = {"weight": weight, "bias": bias}
    if use_cls and "cls_token" not in found:
        raise CheckpointError(f"{path}: config.yaml sets use_cls_token but there is no cls_token")
    if use_cls:
        head["cls_token"] = found["cls_token"].float()
    elif "cls_token" in found:
        # The reference's own loader ignores it too (use_cls_token decides). The warning
        # points at read_checkpoint's caller: _published_head <- read_published <- it.
        warnings.warn(
            f"{path}: holds a cls_token but config.yaml does not set use_cls_token; it is not used",
            stacklevel=4,
        )
    return head


def read_published(root: Path, backbone: str | None) -> CheckpointContents:
    """Read a published-layout directory; `backbone` replaces the adapter's recorded base."""
    model_dir = root / "model"
    settings = load_yaml(model_dir / "config.yaml", CheckpointError) or {}
    if not isinstance(settings, Mapping):
        raise CheckpointError(f"{model_dir / 'config.yaml'}: expected a mapping")
    score_type = settings.get("score_type")
    if score_type not in PUBLISHED_SCORE_TYPES:
        raise CheckpointError(
            f"{model_dir / 'config.yaml'}: score_type {score_type!r} is not one of "
            f"{sorted(PUBLISHED_SCORE_TYPES)}"
        )
    use_cls = settings.get("use_cls_token") or False
    if not isinstance(use_cls, bool):
        raise CheckpointError(
            f"{model_dir / 'config.yaml'}: use_cls_token must be true or false, got {use_cls!r}"
        )
    likelihood = PUBLISHED_SCORE_TYPES[score_type]
    adapter_dir = model_dir / "lm"
    adapter_cfg = read_json(
        require(adapter_dir / "adapter_config.json", "PEFT adapter config"), CheckpointError
    )
    head = _published_head(model_dir / "model_minus_lm.pt", likelihood, use_cls)
    args, args_path = _reference_args(root)
    recorded = {
        "adapter_config.json base_model_name_or_path": adapter_cfg.get("base_model_name_or_path"),
        f"{ARGS_FILE} model": args.get("model"),
    }
    recorded = {k: v for k, v in recorded.items() if isinstance(v, str) and v}
    config = OrcaConfig(
        backbone=backbone or adapter_cfg.get("base_model_name_or_path") or "",
        likelihood=likelihood,
        template="reference",
        pooling="last",
        lora_r=int(adapter_cfg.get("r", 0)),
        lora_alpha=adapter_cfg.get("lora_alpha"),
        use_cls_token=use_cls,
        max_tokens=None,
        add_special_tokens=False,
        **_input_flags(args, args_path),
    )
    return CheckpointContents(
        config=config,
        head=head,
        adapter_dir=adapter_dir,
        tokenizer_dir=require(root / "tokenizer", "tokenizer directory"),
        backbone_fingerprint=None,
        pooling="last",
        layout="published",
        metrics={"published_config": settings},
        # The authors' trainer kept items of any length (what their fingerprints cover).
        training={"max_chars": None},
        root=root,
        recorded_backbones=recorded,
        input_settings=str(args_path) if args_path else f"defaults (no {ARGS_FILE})",
    )
