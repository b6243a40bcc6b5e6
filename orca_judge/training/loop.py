"""Fine-tuning loop for the ORCA judge, readable top to bottom, plus multi-stage curricula.

One optimiser step = `grad_accum` forward/backward passes of `batch_size` items. The run
directory (default `<output>-run/`) holds `log.jsonl` and `state.pt` (the resume point,
with the configuration and a fingerprint of the data it belongs to); the output directory
always holds the best checkpoint so far, written atomically. An existing output directory
is only ever replaced when it is this run's own checkpoint or `overwrite=True`.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from eval_common.cli import progress as progress_bar
from eval_common.devices import peak_memory_mb, resolve_device, resolve_dtype
from orca_judge import likelihoods
from orca_judge.checkpoint import (
    atomic_write_text,
    clean_interrupted,
    clean_temporary_files,
    load_model,
    read_checkpoint,
    recover_interrupted,
    save_model,
    update_config,
    update_metrics,
)
from orca_judge.config import OrcaConfig
from orca_judge.data import (
    OrcaItem,
    filter_by_length,
    items_fingerprint,
    undefined_correlation_reason,
)
from orca_judge.judge import batched_logits, encode_item, pad_token_id
from orca_judge.metrics import agreement, tune_clamp_threshold
from orca_judge.model import (
    OrcaModel,
    add_lora,
    collate,
    hidden_size_of,
    load_backbone,
    resolved_pooling,
    weights_fingerprint,
)

STATE_FILE = "state.pt"
EVALUATIONS_DIR = "evaluations"
LOG_FILE = "log.jsonl"


class RunConflictError(ValueError):
    """Training would replace something that is not this run's own state; names what and why."""


@dataclass
class TrainResult:
    """Where the best checkpoint is and how training went."""

    checkpoint: Path
    best_step: int
    best_dev_rho: float
    steps: int
    stopped_early: bool
    metrics: dict[str, Any]


def lr_multiplier(step: int, cfg: OrcaConfig) -> float:
    """Linear warmup from 0 to 1, then linear decay to lr_floor at max_steps."""
    if step < cfg.warmup_steps:
        return step / cfg.warmup_steps
    span = max(1, cfg.max_steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    return 1.0 - (1.0 - cfg.lr_floor) * progress


def epoch_batches(
    lengths: Sequence[int], batch_size: int, epoch: int, seed: int
) -> list[list[int]]:
    """Shuffled batches of similar-length items (less padding), deterministic per epoch."""
    rng = random.Random(seed * 1_000_003 + epoch)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    pool = batch_size * 32
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        batches += [chunk[j : j + batch_size] for j in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def build_model(cfg: OrcaConfig, device: torch.device, init_from: str | Path | None = None):
    """(model, tokenizer, fingerprint): fresh LoRA + head, or continued from a checkpoint."""
    from peft import PeftModel
    from transformers import AutoTokenizer

    torch.manual_seed(cfg.seed)
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
        model.init_head(cfg.seed)
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
    base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def resolved_backbone(backbone: str) -> str:
    """A local backbone directory as an absolute path (so checkpoints load from anywhere)."""
    path = Path(backbone).expanduser() if backbone else None
    return str(path.resolve()) if path is not None and path.exists() else backbone


def trainable_state(model: OrcaModel) -> dict[str, torch.Tensor]:
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def save_best(
    output: Path,
    cfg: OrcaConfig,
    model: OrcaModel,
    tokenizer: Any,
    fingerprint: str,
    metrics: dict[str, Any],
) -> None:
    """Write the current weights as a native checkpoint."""
    save_model(
        output, model, tokenizer, config=cfg, backbone_fingerprint=fingerprint, metrics=metrics
    )


def evaluate(
    model: OrcaModel,
    cfg: OrcaConfig,
    items: Sequence[OrcaItem],
    encoded,
    pad_id: int,
    device: torch.device,
) -> tuple[dict[str, float], list[float], list[float | None]]:
    """Dev metrics plus the predicted means and variances (unit scale)."""
    logits = batched_logits(
        model, encoded, pad_id=pad_id, batch_size=cfg.eval_batch_size, device=device
    )
    mean, var = likelihoods.moments(cfg.likelihood, logits)
    means = mean.tolist()
    variances = var.tolist() if var is not None else [None] * len(means)
    if not torch.isfinite(logits).all():
        raise FloatingPointError("the judge produced NaN or infinite outputs on the dev set")
    metrics = agreement(
        means,
        [it.human_mean_unit for it in items],
        variances,
        [it.human_var_unit for it in items],
        [len(it.ratings) for it in items],
    )
    return metrics, means, variances


def _differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    keys = sorted(set(saved) | set(current))
    changed = [k for k in keys if saved.get(k) != current.get(k)]
    return [f"{k} {saved.get(k)!r} -> {current.get(k)!r}" for k in changed]


def _read_state(path: Path) -> dict[str, Any]:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a truncated file raises one of several types
        reason = " ".join(str(err).split()) or type(err).__name__
        raise RunConflictError(
            f"{path}: unreadable resume state ({reason}); pass --overwrite "
            "(overwrite=True) to start over"
        ) from None
    if not isinstance(state, dict) or "config" not in state:
        raise RunConflictError(f"{path}: not a resume state written by orca-train")
    return state


def _state_conflict(state: Mapping[str, Any], config: dict, identity: dict) -> str | None:
    """Why a saved state does not belong to this run (settings or data), or None."""
    runtime_only = set(OrcaConfig.RUNTIME_ONLY)
    changed = _differences(
        {k: v for k, v in state["config"].items() if k not in runtime_only},
        {k: v for k, v in config.items() if k not in runtime_only},
    )
    if changed:
        return f"saved for a different configuration ({'; '.join(changed)})"
    # States written before data fingerprints existed carry none; their config still matches.
    changed = _differences(state["data"], identity) if "data" in state else []
    if changed:
        return f"saved for different data or split settings ({'; '.join(changed)})"
    return None


def _require_replaceable(output: Path, overwrite: bool) -> None:
    """Refuse to start a run whose first save would replace an existing, non-empty folder."""
    if not output.exists():
        return
    if not output.is_dir():
        raise RunConflictError(f"{output}: exists and is not a directory")
    if any(output.iterdir()) and not overwrite:
        raise RunConflictError(
            f"{output}: exists, is not empty and is not this run's resumable state; pass "
            "--overwrite (overwrite=True) to replace it, or choose another output"
        )


def _trim_log(path: Path, last_step: int) -> None:
    """Keep the log lines up to the resume point, so replayed steps appear once."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by the interruption
            continue
        if record.get("step", 0) <= last_step:
            kept.append(line + "\n")
    atomic_write_text(path, "".join(kept))


def _evaluation_steps(folder: Path) -> dict[int, Path]:
    """The evaluation checkpoints in `folder` by step (`step-000120` -> 120)."""
    if not folder.is_dir():
        return {}
    found = {}
    for entry in folder.iterdir():
        match = re.fullmatch(r"step-(\d+)", entry.name)
        if match and entry.is_dir():
            found[int(match.group(1))] = entry
    return found


def _require_no_evaluations(folder: Path, overwrite: bool) -> None:
    """A fresh run must not mix its evaluation checkpoints with another run's.

    A step-0 snapshot alone (or hidden half-written ones) is what a run killed before its
    first resume state leaves: the same command run again replaces it without asking.
    """
    if not folder.is_dir():
        return
    later = [path for step, path in _evaluation_steps(folder).items() if step > 0]
    if later and not overwrite:
        raise RunConflictError(
            f"{folder}: holds evaluation checkpoints of an earlier run without its resume "
            "state; pass --overwrite (overwrite=True) to discard them, or use a new --run-dir"
        )
    shutil.rmtree(folder)


def _discard(snapshot: Path) -> None:
    """Remove an evaluation checkpoint; renamed away first, so a kill midway never leaves a
    half-deleted folder that looks like a checkpoint (the hidden rest goes on resume)."""
    hidden = snapshot.with_name(f".{snapshot.name}.old")
    shutil.rmtree(hidden, ignore_errors=True)
    os.replace(snapshot, hidden)
    shutil.rmtree(hidden)


def _drop_evaluations_after(folder: Path, step: int) -> None:
    """Remove snapshots newer than the resume point (they are written again) and the hidden
    half-written ones a killed run left."""
    for at, path in _evaluation_steps(folder).items():
        if at > step:
            _discard(path)
    if folder.is_dir():
        for entry in folder.iterdir():
            if entry.name.startswith(".step-"):
                shutil.rmtree(entry, ignore_errors=True)


def _keep_evaluation(folder: Path, step: int, keep: int, write: Callable[[Path], Any]) -> None:
    """Write this evaluation's checkpoint and keep only the newest `keep` of them."""
    folder.mkdir(parents=True, exist_ok=True)
    write(folder / f"step-{step:06d}")
    steps = sorted(_evaluation_steps(folder))
    for old in steps[: max(0, len(steps) - keep)]:
        _discard(folder / f"step-{old:06d}")


def _save_state(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def _log(run_dir: Path, record: dict[str, Any]) -> None:
    with (run_dir / LOG_FILE).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


def train(
    cfg: OrcaConfig,
    train_items: Sequence[OrcaItem],
    dev_items: Sequence[OrcaItem],
    output: str | Path,
    *,
    run_dir: str | Path | None = None,
    init_from: str | Path | None = None,
    device: str | torch.device | None = None,
    progress: bool = True,
    on_step: Callable[[int, dict[str, Any]], None] | None = None,
    overwrite: bool = False,
    provenance: Mapping[str, Any] | None = None,
    keep_evaluations: int = 0,
) -> TrainResult:
    """Train a judge, keeping the best dev-rho checkpoint in `output`; resumes from `run_dir`.

    `provenance` describes where the data came from (file names and hashes, split
    settings): stored in the run state and the metrics; a resume with different values (or
    different items) is refused. `overwrite=True` allows replacing an existing output
    folder and discarding a run state that belongs to another run. `keep_evaluations=N`
    also keeps the checkpoints of the last N dev evaluations in `run_dir/evaluations/`
    (`step-000120`, …), for checkpoint averaging (`orca-average`).
    """
    if keep_evaluations < 0:
        raise ValueError(f"keep_evaluations must be 0 or more, got {keep_evaluations}")
    output = Path(output)
    run_dir = Path(run_dir) if run_dir else output.with_name(output.name + "-run")
    cfg = cfg.replace(backbone=resolved_backbone(cfg.backbone))
    dev = resolve_device(device)
    for name, items in (("train", train_items), ("dev", dev_items)):
        unrated = [it.id for it in items if not it.ratings]
        if unrated:
            raise ValueError(
                f"{name} item {unrated[0]!r} has no ratings ({len(unrated)} such items)"
            )
        if not items:
            raise ValueError(f"{name} set is empty")
    reason = undefined_correlation_reason(dev_items)
    if reason:
        raise ValueError(
            f"dev set: Spearman rho is undefined ({reason}); early stopping and the clamp "
            "threshold need dev items with different mean ratings"
        )
    provenance = dict(provenance or {})
    identity = {
        "train_items_sha256": items_fingerprint(train_items),
        "dev_items_sha256": items_fingerprint(dev_items),
        # file names are reported, not compared: moving the data does not change it
        **{k: v for k, v in provenance.items() if not k.endswith("_file")},
    }
    state_path = run_dir / STATE_FILE
    recover_interrupted(output)
    state: dict[str, Any] | None = None
    if state_path.exists():
        try:
            state = _read_state(state_path)
        except RunConflictError:
            if not overwrite:
                raise
        conflict = state and _state_conflict(state, cfg.to_dict(), identity)
        if conflict:
            if not overwrite:
                raise RunConflictError(
                    f"{state_path}: {conflict}; rerun with the original settings to resume, "
                    "pass --overwrite (overwrite=True) to start over, or use a new --run-dir"
                )
            state = None
    if state is None:
        _require_replaceable(output, overwrite)
        _require_no_evaluations(run_dir / EVALUATIONS_DIR, overwrite)
    # Only now is `output` known to be ours (or ours to replace): clear what killed writes left.
    clean_interrupted(output)
    clean_temporary_files(run_dir)
    template_opts = {
        "template": cfg.template,
        "use_question": cfg.use_question,
        "use_rationale": cfg.use_rationale,
        "use_transcript": cfg.use_transcript,
    }
    train_items, n_long = filter_by_length(train_items, cfg.max_chars, **template_opts)
    if not train_items:
        raise ValueError(f"all training items exceed max_chars={cfg.max_chars}")

    model, tokenizer, fingerprint = build_model(cfg, dev, init_from)
    if cfg.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    pad_id = pad_token_id(tokenizer)
    backbone_config = model.backbone.config
    train_enc = [encode_item(tokenizer, it, cfg, backbone_config) for it in train_items]
    dev_enc = [encode_item(tokenizer, it, cfg, backbone_config) for it in dev_items]
    lengths = [len(e.input_ids) for e in train_enc]
    n_batches = math.ceil(len(train_items) / cfg.batch_size)
    data_counts = {
        **({"data": provenance} if provenance else {}),
        "train_items": len(train_items),
        "train_removed_over_max_chars": n_long,
        "train_truncated": sum(e.truncated for e in train_enc),
        "dev_items": len(dev_items),
        "dev_truncated": sum(e.truncated for e in dev_enc),
    }

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_multiplier(s, cfg))
    step, best_rho, best_step, bad_evals, done = 0, -math.inf, -1, 0, False
    best_dev: dict[str, Any] = {}
    run_dir.mkdir(parents=True, exist_ok=True)
    if state is not None:
        model.load_state_dict(state["trainable"], strict=False)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        step, best_rho, best_step = state["step"], state["best_rho"], state["best_step"]
        bad_evals, done, best_dev = state["bad_evals"], state["done"], state["best_dev"]
        _trim_log(run_dir / LOG_FILE, step)
        _drop_evaluations_after(run_dir / EVALUATIONS_DIR, step)
        _log(run_dir, {"event": "resume", "step": step})
    else:
        state_path.unlink(missing_ok=True)
        atomic_write_text(run_dir / LOG_FILE, "")
        _log(
            run_dir,
            {
                "event": "start",
                "config": cfg.to_dict(),
                **data_counts,
                "init_from": str(init_from) if init_from else None,
            },
        )

    bar = progress_bar(None, "train", progress, unit="step", total=cfg.max_steps, initial=step)
    started = time.perf_counter()

    def validate(record: dict[str, Any]) -> None:
        """Dev evaluation; keeps the best checkpoint, counts patience, saves the resume state."""
        nonlocal best_rho, best_step, bad_evals, done, best_dev
        metrics, means, variances = evaluate(model, cfg, dev_items, dev_enc, pad_id, dev)
        model.train()
        rho = metrics["rho"]
        record["dev"] = metrics
        if math.isfinite(rho) and rho > best_rho:  # an undefined rho is never the best
            best_rho, best_step, bad_evals = rho, step, 0
            best_dev = {"metrics": metrics, "means": means, "variances": variances}
            save_best(
                output,
                cfg,
                model,
                tokenizer,
                fingerprint,
                {"best_step": best_step, "dev": metrics, **data_counts},
            )
        else:
            bad_evals += 1
        if keep_evaluations:
            # written before the resume state: a crash in between leaves a snapshot that the
            # resume drops and rewrites, never a state pointing at a missing snapshot
            _keep_evaluation(
                run_dir / EVALUATIONS_DIR,
                step,
                keep_evaluations,
                lambda target: save_best(
                    target, cfg, model, tokenizer, fingerprint, {"step": step, "dev": metrics}
                ),
            )
        done = bad_evals >= cfg.patience > 0
        record["best_dev_rho"] = best_rho
        bar.set_postfix(
            loss=f"{record.get('loss', math.nan):.3f}", dev_rho=f"{rho:.3f}", best=f"{best_rho:.3f}"
        )
        _save_state(
            state_path,
            {
                "config": cfg.to_dict(),
                "data": identity,
                "trainable": trainable_state(model),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "torch_rng": torch.get_rng_state(),
                "step": step,
                "best_rho": best_rho,
                "best_step": best_step,
                "bad_evals": bad_evals,
                "done": done,
                "best_dev": best_dev,
            },
        )

    # A resume state exists only after the step-0 evaluation: repeating it would log step 0
    # twice and count it as an evaluation without improvement (spending patience).
    if state is None:
        record: dict[str, Any] = {"step": 0}
        validate(record)  # the untrained judge, as a reference point
        _log(run_dir, record)
    model.train()
    while step < cfg.max_steps and not done:
        # one optimiser step over grad_accum micro-batches
        total_loss = 0.0
        for micro in range(cfg.grad_accum):
            k = step * cfg.grad_accum + micro
            batch = epoch_batches(lengths, cfg.batch_size, k // n_batches, cfg.seed)[k % n_batches]
            ids, mask = collate([train_enc[i].input_ids for i in batch], pad_id, device=dev)
            ratings = likelihoods.pad_ratings([list(train_items[i].ratings) for i in batch]).to(dev)
            loss = (
                likelihoods.nll(cfg.likelihood, model(ids, mask), ratings).mean() / cfg.grad_accum
            )
            if not torch.isfinite(loss):
                raise FloatingPointError(
                    f"non-finite loss at step {step} on items {[train_items[i].id for i in batch]}"
                )
            loss.backward()
            total_loss += loss.item()
        grad_norm = torch.nn.utils.clip_grad_norm_(
            params, cfg.grad_clip if cfg.grad_clip > 0 else math.inf
        )
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        record = {
            "step": step,
            "loss": total_loss,
            "lr": scheduler.get_last_lr()[0],
            "grad_norm": float(grad_norm),
            "epoch": step * cfg.grad_accum / n_batches,
            "seconds": round(time.perf_counter() - started, 2),
            **peak_memory_mb(dev),
        }

        if step % cfg.eval_every == 0 or step == cfg.max_steps:
            validate(record)
        else:
            bar.set_postfix(loss=f"{total_loss:.3f}", best=f"{best_rho:.3f}")
        _log(run_dir, record)
        bar.update(1)
        if on_step is not None:
            on_step(step, record)
    bar.close()
    if best_step < 0:
        raise ValueError(
            f"no dev evaluation in {step} steps gave a defined Spearman rho (the judge "
            f"predicted one mean for all dev items); nothing was written to {output}"
        )

    stopped_early = step < cfg.max_steps
    metrics = finalize(
        output,
        cfg,
        best_dev,
        dev_items,
        {"best_step": best_step, "steps": step, "stopped_early": stopped_early, **data_counts},
    )
    _save_state(state_path, {**torch.load(state_path, weights_only=True), "done": True})
    _log(
        run_dir,
        {
            "event": "done",
            "step": step,
            "best_step": best_step,
            "best_dev_rho": best_rho,
            "clamp_threshold": metrics.get("clamp_threshold"),
        },
    )
    return TrainResult(output, best_step, best_rho, step, stopped_early, metrics)


def finalize(
    output: Path,
    cfg: OrcaConfig,
    best_dev: dict[str, Any],
    dev_items: Sequence[OrcaItem],
    info: dict[str, Any],
) -> dict[str, Any]:
    """Tune the clamp threshold on the best model's dev predictions; store it in the checkpoint."""
    from orca_judge.likelihoods import clamp_mean

    means, variances = best_dev["means"], best_dev["variances"]
    human = [it.human_mean_unit for it in dev_items]
    threshold = tune_clamp_threshold(means, variances, human, cfg.clamp_margin)
    clamped = [
        clamp_mean(m, v, threshold, cfg.clamp_margin) for m, v in zip(means, variances, strict=True)
    ]
    update_config(output, clamp_threshold=threshold)
    metrics = {
        **info,
        "dev": best_dev["metrics"],
        "clamp_threshold": threshold,
        "dev_clamped": agreement(clamped, human),
    }
    return update_metrics(output, metrics, replace=True)


@dataclass
class Stage:
    """One curriculum stage: its data and its full configuration."""

    name: str
    config: OrcaConfig
    train_items: Sequence[OrcaItem]
    dev_items: Sequence[OrcaItem]
    provenance: dict[str, Any] = field(default_factory=dict)


def train_curriculum(
    stages: Sequence[Stage],
    output: str | Path,
    *,
    run_dir: str | Path | None = None,
    overwrite: bool = False,
    device: str | None = None,
    progress: bool = True,
    keep_evaluations: int = 0,
) -> list[TrainResult]:
    """Run stages in order, each from the previous stage's best checkpoint with a fresh optimiser.

    The last stage writes `output`, earlier ones `<output>-stages/<name>`. Run state goes to
    `run_dir` (one stage) or `run_dir/<name>` (several); default `<checkpoint>-run`.
    """
    output = Path(output)
    results: list[TrainResult] = []
    previous: Path | None = None
    for i, stage in enumerate(stages):
        last = i == len(stages) - 1
        target = output if last else output.with_name(output.name + "-stages") / stage.name
        stage_run = None
        if run_dir is not None:
            stage_run = Path(run_dir) / stage.name if len(stages) > 1 else Path(run_dir)
        results.append(
            train(
                stage.config,
                stage.train_items,
                stage.dev_items,
                target,
                run_dir=stage_run,
                init_from=previous,
                device=device,
                progress=progress,
                overwrite=overwrite,
                provenance=stage.provenance,
                keep_evaluations=keep_evaluations,
            )
        )
        previous = target
    return results
