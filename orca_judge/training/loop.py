"""Fine-tuning loop for the ORCA judge, readable top to bottom.

One optimiser step = `grad_accum` forward/backward passes of `batch_size` items (both
`TrainingArguments`). Under a launcher (`torchrun`, `accelerate launch`; see
`orca_judge.processes`) every batch is split over the processes, the gradients are summed
over them, and rank 0 alone writes files. The run folder (default `<output>-run/`, see
`run_folder`) holds the log and the resume state (with the judge's config, the training
arguments and a fingerprint of the data it belongs to); the output directory always holds
the best checkpoint so far, written atomically. An existing output directory is only ever
replaced when it is this run's own checkpoint or `overwrite=True`.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from eval_common.cli import progress as progress_bar
from eval_common.devices import peak_memory_mb
from eval_common.outputs import check_output_folder
from orca_judge import likelihoods
from orca_judge.checkpoint import clean_interrupted, recover_interrupted, save_model
from orca_judge.config import OrcaConfig
from orca_judge.data import (
    OrcaItem,
    filter_by_length,
    items_fingerprint,
    undefined_correlation_reason,
)
from orca_judge.errors import RunConflictError
from orca_judge.judge import encode_item, pad_token_id
from orca_judge.model import OrcaModel, collate
from orca_judge.processes import Processes
from orca_judge.training.arguments import TrainingArguments, run_settings
from orca_judge.training.evaluation import evaluate, finalize
from orca_judge.training.model_init import (
    build_model,
    enable_gradient_checkpointing,
    resolved_backbone,
)
from orca_judge.training.run_folder import RunFolder


@dataclass
class TrainResult:
    """Where the best checkpoint is and how training went."""

    checkpoint: Path
    best_step: int
    best_dev_rho: float
    steps: int
    stopped_early: bool
    metrics: dict[str, Any]


@dataclass
class TrainState:
    """Where a run stands between steps; the resume state stores it beside the weights."""

    step: int = 0
    best_rho: float = -math.inf
    best_step: int = -1
    bad_evals: int = 0
    done: bool = False
    best_dev: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_saved(cls, saved: Mapping[str, Any]) -> TrainState:
        """The position a resume state recorded."""
        return cls(**{f.name: saved[f.name] for f in fields(cls)})

    def saved(self) -> dict[str, Any]:
        """The fields as the resume state stores them, in this order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def count_evaluation(
        self,
        metrics: dict[str, float],
        means: list[float],
        variances: list[float | None],
        patience: int,
        select: str = "best",
    ) -> bool:
        """Count a dev evaluation at the current step against patience; True if the one to keep.

        `select="last"` keeps every evaluation with a defined rho, so the last one is written.
        """
        rho = metrics["rho"]
        # An undefined rho is never kept: the judge predicted one mean for every dev item.
        best = math.isfinite(rho) and (rho > self.best_rho or select == "last")
        if best:
            self.best_rho, self.best_step, self.bad_evals = rho, self.step, 0
            self.best_dev = {"metrics": metrics, "means": means, "variances": variances}
        else:
            self.bad_evals += 1
        self.done = self.bad_evals >= patience > 0
        return best


def lr_multiplier(step: int, training: TrainingArguments) -> float:
    """Linear warmup from 0 to 1, then linear decay to lr_floor at max_steps."""
    if step < training.warmup_steps:
        return step / training.warmup_steps
    span = max(1, training.max_steps - training.warmup_steps)
    progress = min(1.0, (step - training.warmup_steps) / span)
    return 1.0 - (1.0 - training.lr_floor) * progress


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


def trainable_state(model: OrcaModel) -> dict[str, torch.Tensor]:
    """Copies of the weights being trained (LoRA and head), for the resume state."""
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def save_best(
    output: Path,
    cfg: OrcaConfig,
    training: Mapping[str, Any],
    model: OrcaModel,
    tokenizer: Any,
    fingerprint: str,
    metrics: dict[str, Any],
) -> None:
    """Write the current weights as a native checkpoint (`_claim` made `output` ours).

    `training`: the training record (the arguments and the processes that trained it).
    """
    save_model(
        output,
        model,
        tokenizer,
        config=cfg,
        backbone_fingerprint=fingerprint,
        metrics=metrics,
        training=training,
        overwrite=True,
    )


def _check_sets(train_items: Sequence[OrcaItem], dev_items: Sequence[OrcaItem]) -> None:
    """ValueError unless both sets are non-empty and rated, and dev ratings differ."""
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


def _require_replaceable(output: Path, overwrite: bool) -> None:
    """Refuse to start a run whose first save would replace an existing, non-empty folder."""
    if not output.exists():
        return
    if any(output.iterdir()) and not overwrite:
        raise RunConflictError(
            f"{output}: exists, is not empty and is not this run's resumable state; pass "
            "--overwrite (overwrite=True) to replace it, or choose another output"
        )


def _claim(
    output: Path,
    folder: RunFolder,
    settings: dict[str, Any],
    identity: dict[str, Any],
    overwrite: bool,
) -> dict[str, Any] | None:
    """The resume state to continue from (None: a fresh run), once `output` is ours to write."""
    recover_interrupted(output)
    saved = folder.resumable_state(settings, identity, overwrite)
    if saved is None:
        _require_replaceable(output, overwrite)
        folder.require_no_evaluations(overwrite)
    # Only now is `output` known to be ours (or ours to replace): clear what killed writes left.
    clean_interrupted(output)
    folder.clean_temporary_files()
    return saved


def train(
    cfg: OrcaConfig,
    train_items: Sequence[OrcaItem],
    dev_items: Sequence[OrcaItem],
    output: str | Path,
    *,
    training: TrainingArguments | None = None,
    run_dir: str | Path | None = None,
    init_from: str | Path | None = None,
    device: str | torch.device | None = None,
    progress: bool = True,
    on_step: Callable[[int, dict[str, Any]], None] | None = None,
    overwrite: bool = False,
    provenance: Mapping[str, Any] | None = None,
    keep_evaluations: int = 0,
    processes: Processes | None = None,
) -> TrainResult:
    """Train a judge, keeping the best dev-rho checkpoint in `output`; resumes from `run_dir`.

    `training`: how (learning rate, steps, batches, seed, …; default `TrainingArguments()`),
    recorded beside the checkpoint in training_args.json; a resume with other settings is
    refused. `provenance` describes where the data came from (file names and hashes, split
    settings): stored in the run state and the metrics; a resume with different values (or
    different items) is refused. `overwrite=True` allows replacing an existing output
    folder and discarding a run state that belongs to another run. `keep_evaluations=N`
    also keeps the checkpoints of the last N dev evaluations in `run_dir/evaluations/`
    (`step-000120`, …), for checkpoint averaging (`orca average`).

    `processes` (default: the process group already joined, else one process): every rank
    calls `train` with the same arguments; each takes `batch_size / world_size` items of every
    batch and the run ends as one process would (within float rounding).
    """
    if keep_evaluations < 0:
        raise ValueError(f"keep_evaluations must be 0 or more, got {keep_evaluations}")
    processes = processes or Processes.current()
    training = training or TrainingArguments()
    # Checked on every rank before any collective call, so all of them stop with the reason.
    training_record = {**training.to_dict(), **processes.record(training.batch_size)}
    # A file, the current folder (`--output .`) or a training file's folder is never ours.
    output = check_output_folder(
        output,
        command="orca train",
        flag="--output",
        inputs=[v for k, v in (provenance or {}).items() if k.endswith("_file")],
        overwrite=True,  # whether a non-empty folder may be replaced is decided by _claim
    )
    folder = RunFolder(Path(run_dir) if run_dir else output.with_name(output.name + "-run"))
    cfg = cfg.replace(backbone=resolved_backbone(cfg.backbone))
    settings = run_settings(cfg, training)
    dev = processes.device(device)
    _check_sets(train_items, dev_items)
    provenance = dict(provenance or {})
    identity = {
        "train_items_sha256": items_fingerprint(train_items),
        "dev_items_sha256": items_fingerprint(dev_items),
        # file names are reported, not compared: moving the data does not change it
        **{k: v for k, v in provenance.items() if not k.endswith("_file")},
    }
    # Rank 0 alone decides whether this resumes and clears what a killed run left; the others
    # get the resume state from it rather than reading a folder it may be changing.
    saved = processes.on_main(lambda: _claim(output, folder, settings, identity, overwrite))
    template_opts = {
        "template": cfg.template,
        "use_question": cfg.use_question,
        "use_rationale": cfg.use_rationale,
        "use_transcript": cfg.use_transcript,
    }
    train_items, n_long = filter_by_length(train_items, training.max_chars, **template_opts)
    if not train_items:
        raise ValueError(f"all training items exceed max_chars={training.max_chars}")

    # The model and the encoded data.
    model, tokenizer, fingerprint = build_model(cfg, dev, init_from, seed=training.seed)
    if training.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    pad_id = pad_token_id(tokenizer)
    backbone_config = model.backbone.config
    train_enc = [encode_item(tokenizer, it, cfg, backbone_config) for it in train_items]
    dev_enc = [encode_item(tokenizer, it, cfg, backbone_config) for it in dev_items]
    lengths = [len(e.input_ids) for e in train_enc]
    n_batches = math.ceil(len(train_items) / training.batch_size)
    data_counts = {
        **({"data": provenance} if provenance else {}),
        "train_items": len(train_items),
        "train_removed_over_max_chars": n_long,
        "train_truncated": sum(e.truncated for e in train_enc),
        "dev_items": len(dev_items),
        "dev_truncated": sum(e.truncated for e in dev_enc),
    }

    # The optimiser, fresh or where the resume state left it.
    params = [p for p in model.parameters() if p.requires_grad]
    # Every rank seeded the same initialisation; starting from rank 0's values makes the
    # replicas equal even where a backbone's own initialisation is not seeded.
    processes.same_weights(params)
    optimizer = torch.optim.AdamW(params, lr=training.lr, weight_decay=training.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_multiplier(s, training))
    state = TrainState()
    if saved is not None:
        model.load_state_dict(saved["trainable"], strict=False)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["torch_rng"])
        state = TrainState.from_saved(saved)
        processes.on_main(lambda: folder.resume(state.step))
    else:
        start = {
            "event": "start",
            "config": settings,
            **data_counts,
            "init_from": str(init_from) if init_from else None,
            "processes": processes.record(training.batch_size),
        }
        processes.on_main(lambda: folder.start(start))

    def log(record: dict[str, Any]) -> None:
        if processes.is_main:
            folder.log(record)

    bar = progress_bar(
        None,
        "train",
        progress and processes.is_main,
        unit="step",
        total=training.max_steps,
        initial=state.step,
    )
    started = time.perf_counter()

    def validate(record: dict[str, Any]) -> None:
        """Dev evaluation; keeps the best checkpoint, counts patience, saves the resume state."""
        # Every rank gets every dev prediction, so every rank takes the same decisions below.
        with training.autocast_context(dev):  # early stopping reads the training precision
            metrics, means, variances = evaluate(
                model, cfg, dev_items, dev_enc, pad_id, dev, processes=processes
            )
        model.train()
        record["dev"] = metrics
        best = state.count_evaluation(metrics, means, variances, training.patience, training.select)
        record["best_dev_rho"] = state.best_rho
        bar.set_postfix(
            loss=f"{record.get('loss', math.nan):.3f}",
            dev_rho=f"{metrics['rho']:.3f}",
            best=f"{state.best_rho:.3f}",
        )
        processes.on_main(lambda: write_evaluation(best, metrics))

    def write_evaluation(best: bool, metrics: dict[str, float]) -> None:
        """The best checkpoint, the kept evaluation and the resume state of this evaluation."""
        if best:
            best_record = {"best_step": state.best_step, "dev": metrics, **data_counts}
            save_best(output, cfg, training_record, model, tokenizer, fingerprint, best_record)
        if keep_evaluations:
            # written before the resume state: a crash in between leaves a snapshot that the
            # resume drops and rewrites, never a state pointing at a missing snapshot
            snapshot = {"step": state.step, "dev": metrics}
            folder.keep_evaluation(
                state.step,
                keep_evaluations,
                lambda target: save_best(
                    target, cfg, training_record, model, tokenizer, fingerprint, snapshot
                ),
            )
        folder.save_state(
            {
                "config": settings,
                "data": identity,
                "trainable": trainable_state(model),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "torch_rng": torch.get_rng_state(),
                **state.saved(),
            }
        )

    # A resume state exists only after the step-0 evaluation: repeating it would log step 0
    # twice and count it as an evaluation without improvement (spending patience).
    if saved is None:
        first: dict[str, Any] = {"step": 0}
        validate(first)  # the untrained judge, as a reference point
        log(first)
    model.train()
    while state.step < training.max_steps and not state.done:
        # One optimiser step over grad_accum micro-batches. Each process takes its share of
        # every batch; the loss is the batch's mean over all of it, so the gradients summed
        # over the processes are those of one process. `sums` carries the step's loss and
        # which micro-batches had a non-finite loss, summed with the gradients.
        sums = torch.zeros(1 + training.grad_accum, dtype=torch.float64)
        batches_of_step = []
        for micro in range(training.grad_accum):
            k = state.step * training.grad_accum + micro
            batches = epoch_batches(lengths, training.batch_size, k // n_batches, training.seed)
            batch = batches[k % n_batches]
            batches_of_step.append(batch)
            share = processes.share(batch)
            if not share:  # a last batch of an epoch smaller than the number of processes
                continue
            ids, mask = collate([train_enc[i].input_ids for i in share], pad_id, device=dev)
            ratings = likelihoods.pad_ratings([list(train_items[i].ratings) for i in share]).to(dev)
            with training.autocast_context(dev):
                logits = model(ids, mask)
            nll = likelihoods.nll(cfg.likelihood, logits.float(), ratings)
            loss = nll.sum() / (len(batch) * training.grad_accum)
            if not torch.isfinite(loss):
                sums[1 + micro] = 1
                continue
            loss.backward()
            sums[0] += loss.item()
        processes.sum_gradients(params, sums)
        if bad := sums[1:].nonzero().flatten().tolist():
            raise FloatingPointError(
                f"non-finite loss at step {state.step} on items "
                f"{[train_items[i].id for i in batches_of_step[bad[0]]]}"
            )
        total_loss = float(sums[0])
        grad_norm = torch.nn.utils.clip_grad_norm_(
            params, training.grad_clip if training.grad_clip > 0 else math.inf
        )
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        state.step += 1
        record = {
            "step": state.step,
            "loss": total_loss,
            "lr": scheduler.get_last_lr()[0],
            "grad_norm": float(grad_norm),
            "epoch": state.step * training.grad_accum / n_batches,
            "seconds": round(time.perf_counter() - started, 2),
            **peak_memory_mb(dev),
        }

        if state.step % training.eval_every == 0 or state.step == training.max_steps:
            validate(record)
        else:
            bar.set_postfix(loss=f"{total_loss:.3f}", best=f"{state.best_rho:.3f}")
        log(record)
        bar.update(1)
        if on_step is not None:
            on_step(state.step, record)
    bar.close()
    if state.best_step < 0:
        raise ValueError(
            f"no dev evaluation in {state.step} steps gave a defined Spearman rho (the judge "
            f"predicted one mean for all dev items); nothing was written to {output}"
        )

    stopped_early = state.step < training.max_steps
    summary = {"best_step": state.best_step, "steps": state.step, "stopped_early": stopped_early}

    def finish() -> dict[str, Any]:
        """Tune and store the clamp threshold, mark the run done: rank 0's last writes."""
        metrics = finalize(output, cfg, state.best_dev, dev_items, {**summary, **data_counts})
        folder.mark_done()
        folder.log(
            {
                "event": "done",
                "step": state.step,
                "best_step": state.best_step,
                "best_dev_rho": state.best_rho,
                "clamp_threshold": metrics.get("clamp_threshold"),
            }
        )
        return metrics

    metrics = processes.on_main(finish)
    return TrainResult(output, state.best_step, state.best_rho, state.step, stopped_early, metrics)
