"""Checkpoint directories: the one place that writes and reads them, and builds models from them.

Every write goes through here: a full save (`save_model` / `write_checkpoint`, one atomic
directory swap) and the later in-place updates of the config and metrics (`update_config`,
`update_metrics`, each an atomic file replace). Every load goes through `load_model`.

Native layout (written by `write_checkpoint`)::

    orca_judge.json          format, OrcaConfig, backbone id + weight fingerprint, pooling
    head.safetensors         linear head (weight, bias)
    adapter/                 PEFT LoRA adapter (absent when lora_r = 0)
    tokenizer/               tokenizer files
    metrics.json             training / dev metrics (optional)
    README.md                model card with data attribution

Published layout (read only): tokenizer/, model/config.yaml, model/lm/ (PEFT adapter),
model/model_minus_lm.pt (state dict with linear.weight / linear.bias and, when config.yaml
says use_cls_token, cls_token), and optionally the reference trainer's args.yaml (at the
root, or one level up for its run folders best/, latest/, checkpoint_N/).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from eval_common.devices import resolve_device, resolve_dtype
from orca_judge.checkpoint.published import ClampChoice, published_clamp
from orca_judge.config import OrcaConfig
from orca_judge.model import (
    OrcaModel,
    hidden_size_of,
    load_backbone,
    resolved_pooling,
    weights_fingerprint,
)

FORMAT = "orca-judge/1"
CONFIG_FILE = "orca_judge.json"
HEAD_FILE = "head.safetensors"
ADAPTER_DIR = "adapter"
TOKENIZER_DIR = "tokenizer"
METRICS_FILE = "metrics.json"
CARD_FILE = "README.md"
TMP_TAG = "tmp-"  # marks the temporary siblings atomic_dir creates, so they can be cleaned up
ARGS_FILE = "args.yaml"
# The reference trainer's input flags (in its args.yaml) -> (OrcaConfig field, flag inverted).
REFERENCE_INPUT_FLAGS = {
    "skip_question": ("use_question", True),
    "skip_rationale": ("use_rationale", True),
    "add_transcript": ("use_transcript", False),
}
# OrcaConfig fields a caller may change when loading a checkpoint (how it reads, not what it is).
LOAD_OVERRIDES = (
    "use_question",
    "use_rationale",
    "use_transcript",
    "max_tokens",
    "clamp_threshold",
)
PUBLISHED_SCORE_TYPES = {
    "beta": "beta",
    "multinomial": "multinomial",
    "bernoulli_kl": "bernoulli",
    "bernoulli": "bernoulli",
}

MODEL_CARD = """---
license: cc-by-4.0
tags: [orca, judge, audio-question-answering]
---
# ORCA judge ({likelihood})

Predicts the distribution of human 1-5 correctness ratings for an answer to an open-ended
question, given the question, the reference answer, a rationale and the candidate answer.

- Backbone: `{backbone}` (weight fingerprint `{fingerprint}`).
- LoRA r={lora_r}; {pooling}-token pooling.
- Likelihood: {likelihood}; input template: {template}; clamp threshold: {clamp_threshold}.
- Load: `OrcaJudge.from_pretrained("<this directory>")`
  or `orca-score --checkpoint <this directory>`.

## Data attribution
Trained on human ratings from the ORCA audio-QA annotations (`BUT-FIT/orca-audio-qa-annotations`),
Speech@FIT, Brno University of Technology, licensed CC-BY-4.0. Questions come from the MMAU and
MMAR benchmarks; candidate answers were produced by audio language models.

## Metrics
{metrics}
"""


class CheckpointError(ValueError):
    """A checkpoint directory is incomplete or inconsistent; the message names the file."""


class BackboneMismatchError(CheckpointError):
    """The backbone weights differ from those the checkpoint was trained on."""


@dataclass
class CheckpointContents:
    """Everything read from a checkpoint directory, before any model is built."""

    config: OrcaConfig
    head: dict[str, torch.Tensor]
    adapter_dir: Path | None
    tokenizer_dir: Path
    backbone_fingerprint: str | None
    pooling: str | None
    metrics: dict[str, Any] = field(default_factory=dict)
    layout: str = "native"
    root: Path | None = None
    recorded_backbones: dict[str, str] = field(default_factory=dict)  # record -> backbone id
    input_settings: str = "the checkpoint's config"  # where the input flags were read from


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


@contextlib.contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling directory that replaces `target` only if the block succeeds."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.{TMP_TAG}", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.replace(target, old)
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Replace a text file in one step: readers see the old or the new content, never a mix."""
    path = Path(path)
    # A unique sibling (same file system, so os.replace is atomic); os.open honours the
    # umask, unlike mkstemp's private 0600 files.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _json_text(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def atomic_write_json(path: str | Path, data: Any) -> None:
    """Replace a JSON file atomically (serialised first, so a bad value leaves it untouched)."""
    atomic_write_text(path, _json_text(data))


def recover_interrupted(target: str | Path) -> None:
    """Restore a checkpoint left as `.NAME.old` by a crash between the two renames."""
    target = Path(target)
    old = target.with_name(f".{target.name}.old")
    if not target.exists() and old.exists():
        os.replace(old, target)


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def clean_temporary_files(folder: str | Path) -> list[Path]:
    """Remove hidden `.NAME...tmp` files that a killed atomic file write left in `folder`."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    stale = [p for p in folder.iterdir() if re.fullmatch(r"\..+\.tmp", p.name) and p.is_file()]
    for entry in stale:
        _remove(entry)
    return stale


def clean_interrupted(target: str | Path) -> list[Path]:
    """Recover `target`, then remove temporaries that a killed writer left beside and inside it.

    Beside it: atomic_dir's `.NAME.tmp-XXXXXXXX` folders (`.NAME.XXXXXXXX` before the tag)
    and a stale `.NAME.old`; inside it: hidden `.FILE...tmp` files. Call it only when no
    other process writes `target`. Returns what was removed.
    """
    target = Path(target)
    recover_interrupted(target)
    stem = re.escape(target.name)
    pattern = rf"\.{stem}\.(({TMP_TAG})?[a-z0-9_]{{8}}|old)"
    beside = []
    if target.parent.is_dir():
        beside = [p for p in target.parent.iterdir() if re.fullmatch(pattern, p.name)]
    for entry in beside:
        _remove(entry)
    return beside + clean_temporary_files(target)


def write_checkpoint(
    target: str | Path,
    *,
    config: OrcaConfig,
    head: dict[str, torch.Tensor],
    adapter_config: Any | None,
    adapter_state: dict[str, torch.Tensor] | None,
    tokenizer: Any,
    backbone_fingerprint: str,
    pooling: str,
    metrics: dict[str, Any] | None = None,
) -> Path:
    """Write a native checkpoint directory atomically."""
    from safetensors.torch import save_file

    with atomic_dir(target) as tmp:
        meta = {
            "format": FORMAT,
            "config": config.to_dict(),
            "pooling": pooling,
            "backbone": {"id": config.backbone, "fingerprint": backbone_fingerprint},
        }
        (tmp / CONFIG_FILE).write_text(_json_text(meta))
        save_file({k: v.detach().cpu().contiguous() for k, v in head.items()}, tmp / HEAD_FILE)
        if adapter_config is not None:
            (tmp / ADAPTER_DIR).mkdir()
            adapter_config.save_pretrained(tmp / ADAPTER_DIR)
            save_file(
                {k: v.detach().cpu().contiguous() for k, v in adapter_state.items()},
                tmp / ADAPTER_DIR / "adapter_model.safetensors",
            )
        tokenizer.save_pretrained(tmp / TOKENIZER_DIR)
        metrics = metrics or {}
        (tmp / METRICS_FILE).write_text(_json_text(metrics))
        (tmp / CARD_FILE).write_text(model_card(config, backbone_fingerprint, pooling, metrics))
    return Path(target)


def model_card(
    config: OrcaConfig, backbone_fingerprint: str, pooling: str, metrics: Mapping[str, Any]
) -> str:
    """The README.md of a native checkpoint: what it is, how to load it, data attribution."""
    shown = {k: v for k, v in metrics.items() if isinstance(v, (int, float, str))}
    return MODEL_CARD.format(
        fingerprint=backbone_fingerprint,
        pooling=pooling,
        metrics="\n".join(f"- {k}: {v}" for k, v in sorted(shown.items())) or "- none recorded",
        **{
            k: getattr(config, k)
            for k in ("likelihood", "backbone", "lora_r", "template", "clamp_threshold")
        },
    )


def peft_adapter(backbone: nn.Module) -> tuple[Any, dict[str, torch.Tensor]] | None:
    """(LoRA config, adapter weights) of an unmerged PEFT backbone; None for a plain one."""
    from peft import PeftModel, get_peft_model_state_dict

    if not isinstance(backbone, PeftModel):
        return None
    return backbone.peft_config["default"], get_peft_model_state_dict(backbone)


def save_model(
    target: str | Path,
    model: OrcaModel,
    tokenizer: Any,
    *,
    config: OrcaConfig,
    backbone_fingerprint: str,
    metrics: dict[str, Any] | None = None,
    adapter: tuple[Any, dict[str, torch.Tensor]] | None = None,
) -> Path:
    """Write an OrcaModel as a native checkpoint; `adapter` is needed once LoRA was merged."""
    lora, state = adapter or peft_adapter(model.backbone) or (None, None)
    return write_checkpoint(
        target,
        config=config,
        head=model.head_state(),
        adapter_config=lora,
        adapter_state=state,
        tokenizer=tokenizer,
        backbone_fingerprint=backbone_fingerprint,
        pooling=model.pooling,
        metrics=metrics,
    )


def _native_meta(root: Path) -> dict[str, Any]:
    if not (root / CONFIG_FILE).exists():
        raise CheckpointError(f"{root}: missing {CONFIG_FILE} (only native checkpoints update)")
    try:
        return json.loads((root / CONFIG_FILE).read_text())
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{root / CONFIG_FILE}: unreadable ({err})") from None


def update_config(target: str | Path, **changes: Any) -> OrcaConfig:
    """Change OrcaConfig fields stored in a native checkpoint atomically; returns the new config."""
    root = Path(target)
    meta = _native_meta(root)
    config = OrcaConfig.from_dict(meta["config"]).replace(**changes)
    meta["config"] = config.to_dict()
    atomic_write_json(root / CONFIG_FILE, meta)
    metrics_path = root / METRICS_FILE
    _refresh_card(root, meta, json.loads(metrics_path.read_text()) if metrics_path.exists() else {})
    return config


def update_metrics(
    target: str | Path, entries: Mapping[str, Any], *, replace: bool = False
) -> dict[str, Any]:
    """Merge `entries` into a checkpoint's metrics.json (replace=True: overwrite it), atomically."""
    root = Path(target)
    meta = _native_meta(root)
    path = root / METRICS_FILE
    current = json.loads(path.read_text()) if path.exists() and not replace else {}
    metrics = {**current, **entries}
    atomic_write_json(path, metrics)
    _refresh_card(root, meta, metrics)
    return metrics


def _refresh_card(root: Path, meta: dict[str, Any], metrics: Mapping[str, Any]) -> None:
    # The model card quotes the config and metrics, so it follows every update of them.
    config = OrcaConfig.from_dict(meta["config"])
    fingerprint = meta.get("backbone", {}).get("fingerprint")
    card = model_card(config, fingerprint, meta.get("pooling"), metrics)
    atomic_write_text(root / CARD_FILE, card)


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise CheckpointError(f"{path}: missing {what}")
    return path


def read_tensors(path: Path, what: str) -> dict[str, torch.Tensor]:
    """Tensors from a safetensors or torch file; CheckpointError naming it when unreadable."""
    from safetensors.torch import load_file

    _require(path, what)
    try:
        if path.suffix == ".safetensors":
            return load_file(path)
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated or corrupt files raise many different types
        reason = " ".join(str(err).split()) or type(err).__name__
        raise CheckpointError(f"{path}: unreadable {what} ({reason})") from None
    if not isinstance(state, Mapping):
        raise CheckpointError(f"{path}: {what} is not a mapping of tensors")
    return dict(state)


def read_checkpoint(path: str | Path, backbone: str | None = None) -> CheckpointContents:
    """Read a native or published-layout checkpoint directory (no model is built)."""
    root = Path(path)
    if not root.is_dir():
        raise CheckpointError(f"{root}: not a checkpoint directory")
    if (root / CONFIG_FILE).exists():
        return _read_native(root, backbone)
    if (root / "model" / "config.yaml").exists():
        return _read_published(root, backbone)
    raise CheckpointError(
        f"{root}: missing {CONFIG_FILE} (native) or model/config.yaml (published layout)"
    )


def _read_native(root: Path, backbone: str | None) -> CheckpointContents:
    try:
        meta = json.loads((root / CONFIG_FILE).read_text())
        config = OrcaConfig.from_dict(meta["config"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{root / CONFIG_FILE}: unreadable ({err})") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{root / CONFIG_FILE}: format {meta.get('format')!r}, expected {FORMAT!r}"
        )
    head = read_tensors(root / HEAD_FILE, "head weights")
    adapter = root / ADAPTER_DIR
    if config.lora_r > 0:
        _require(adapter / "adapter_config.json", "LoRA adapter config")
        _require(adapter / "adapter_model.safetensors", "LoRA adapter weights")
    metrics_path = root / METRICS_FILE
    metrics = json.loads(metrics_path.read_text()) if metrics_path.exists() else {}
    if backbone:
        config = config.replace(backbone=backbone)
    return CheckpointContents(
        config=config,
        head=head,
        adapter_dir=adapter if config.lora_r > 0 else None,
        tokenizer_dir=_require(root / TOKENIZER_DIR, "tokenizer directory"),
        backbone_fingerprint=meta.get("backbone", {}).get("fingerprint"),
        pooling=meta.get("pooling"),
        metrics=metrics,
        root=root,
    )


def _reference_args(root: Path) -> tuple[dict[str, Any], Path | None]:
    """The reference trainer's args.yaml for a checkpoint (root, or its run folder), if any."""
    candidates = [root / ARGS_FILE]
    if root.name in ("best", "latest") or re.fullmatch(r"checkpoint_\d+", root.name):
        candidates.append(root.parent / ARGS_FILE)
    import yaml

    for path in candidates:
        if not path.is_file():
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as err:
            reason = " ".join(str(err).split())
            raise CheckpointError(f"{path}: unreadable trainer settings ({reason})") from None
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
        # The reference's own loader ignores it too (use_cls_token decides).
        warnings.warn(
            f"{path}: holds a cls_token but config.yaml does not set use_cls_token; it is not used",
            stacklevel=4,
        )
    return head


def _read_published(root: Path, backbone: str | None) -> CheckpointContents:
    import yaml

    model_dir = root / "model"
    settings = yaml.safe_load((model_dir / "config.yaml").read_text()) or {}
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
    adapter_cfg = json.loads(
        _require(adapter_dir / "adapter_config.json", "PEFT adapter config").read_text()
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
        max_chars=None,
        add_special_tokens=False,
        **_input_flags(args, args_path),
    )
    return CheckpointContents(
        config=config,
        head=head,
        adapter_dir=adapter_dir,
        tokenizer_dir=_require(root / "tokenizer", "tokenizer directory"),
        backbone_fingerprint=None,
        pooling="last",
        layout="published",
        metrics={"published_config": settings},
        root=root,
        recorded_backbones=recorded,
        input_settings=str(args_path) if args_path else f"defaults (no {ARGS_FILE})",
    )


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
