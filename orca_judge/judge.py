"""OrcaJudge: load a checkpoint, score items, save it back."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from eval_common.cli import progress as progress_bar
from orca_judge import likelihoods
from orca_judge.checkpoint import (
    ClampChoice,
    load_model,
    recorded_settings,
    save_model,
)
from orca_judge.config import OrcaConfig
from orca_judge.data import OrcaItem, load_items
from orca_judge.errors import CheckpointError
from orca_judge.model import OrcaModel, context_length_of, is_encoder
from orca_judge.processes import RECORD_FIELDS, Processes
from orca_judge.template import Encoded, encode

__all__ = [
    "OrcaJudge",
    "OrcaPrediction",
    "batched_logits",
    "encode_item",
    "pad_token_id",
    "predictions_from_logits",
]


# Config fields added after judges were first fingerprinted: left out of the fingerprint at
# these values, so that judges recorded before the field existed keep their identity.
_LATER_FIELDS = {"use_cls_token": False}
# Where the backbone lies and how many processes trained the judge say nothing of its weights.
_NOT_IDENTITY = frozenset({"backbone", *RECORD_FIELDS})


@dataclass
class OrcaPrediction:
    """The judge's output for one item (means on 1-5 and [0, 1]; variance None for Bernoulli)."""

    id: str
    expected: float
    expected_unit: float
    variance: float | None
    variance_unit: float | None
    distribution: dict[str, Any]
    clamped: float
    clamped_unit: float
    n_tokens: int
    truncated: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class OrcaJudge:
    """A trained judge: tokenizer + backbone (LoRA merged) + head, with its OrcaConfig."""

    def __init__(
        self,
        model: OrcaModel,
        tokenizer: Any,
        config: OrcaConfig,
        *,
        backbone_fingerprint: str,
        adapter: tuple[Any, dict[str, torch.Tensor]] | None = None,
        metrics: dict[str, Any] | None = None,
        device: torch.device | None = None,
        clamp: ClampChoice | None = None,
        input_settings: str = "the checkpoint's config",
        training: Mapping[str, Any] | None = None,
    ):
        self.model = model.eval()
        self.clamp = clamp or ClampChoice(config.clamp_threshold, "given to the judge")
        self.input_settings = input_settings
        self.tokenizer = tokenizer
        self.config = config
        self.backbone_fingerprint = backbone_fingerprint
        self.adapter = adapter
        self.metrics = metrics or {}
        self.training = dict(training or {})  # how it was trained, as its checkpoint records
        self.device = device or torch.device("cpu")

    @classmethod
    def from_pretrained(
        cls,
        path_or_hub_id: str | Path,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        *,
        backbone: str | None = None,
        strict_backbone: bool = False,
        merge: bool = True,
        use_question: bool | None = None,
        use_rationale: bool | None = None,
        use_transcript: bool | None = None,
        max_tokens: int | None = None,
        clamp_threshold: float | None = None,
    ) -> OrcaJudge:
        """Load a native or published-layout checkpoint (a directory, or a Hub id if cached).

        The keyword settings, when given, replace the checkpoint's: which blocks the input
        text has, the token limit (default: the checkpoint's, else the backbone's context)
        and the clamp threshold (0 turns clamping off; default: the checkpoint's, or the
        paper's for a recognised published judge; `judge.clamp` says which and why).
        """
        path = Path(path_or_hub_id)
        if not path.exists():
            path = hub_snapshot(str(path_or_hub_id))
        given = {
            "use_question": use_question,
            "use_rationale": use_rationale,
            "use_transcript": use_transcript,
            "max_tokens": max_tokens,
            "clamp_threshold": clamp_threshold,
        }
        loaded = load_model(
            path,
            device=device,
            dtype=dtype,
            backbone=backbone,
            strict_backbone=strict_backbone,
            merge=merge,
            overrides={k: v for k, v in given.items() if v is not None},
        )
        return cls(
            loaded.model,
            loaded.tokenizer,
            loaded.contents.config,
            backbone_fingerprint=loaded.backbone_fingerprint,
            adapter=loaded.adapter,
            metrics=loaded.contents.metrics,
            device=loaded.device,
            clamp=loaded.clamp,
            input_settings=loaded.contents.input_settings,
            training=loaded.contents.training,
        )

    @property
    def token_limit(self) -> int | None:
        """Longest input in tokens: the config's max_tokens, else the backbone's context."""
        return token_limit(self.config, self.model.backbone.config)

    def describe(self) -> dict[str, Any]:
        """How this judge reads items and clamps its means, and where each setting came from."""
        cfg = self.config
        return {
            "inputs": {
                "question": cfg.use_question,
                "rationale": cfg.use_rationale,
                "transcript": cfg.use_transcript,
            },
            "input_settings": self.input_settings,
            "token_limit": self.token_limit,
            "token_limit_source": "max_tokens"
            if cfg.max_tokens is not None
            else "the backbone's context length",
            "clamp_threshold": self.clamp.threshold,
            "clamp_reason": self.clamp.reason,
        }

    def fingerprint(self) -> str:
        """Identity of this judge's trained parts: what scores with it are comparable by.

        sha256 (first 16 hex digits) over the config and training arguments (less the
        backbone's location and the number of processes), the backbone's weight fingerprint,
        the head and the LoRA adapter. The same checkpoint copied elsewhere keeps it; a
        retrained one gets another. Computed once.
        """
        cached = getattr(self, "_fingerprint", None)
        if cached is not None:
            return cached
        digest = hashlib.sha256()
        config = {
            k: v
            for k, v in recorded_settings(self.config, self.training).items()
            if k not in _NOT_IDENTITY and not (k in _LATER_FIELDS and v == _LATER_FIELDS[k])
        }
        digest.update(json.dumps(config, sort_keys=True, default=str).encode())
        digest.update(str(self.backbone_fingerprint).encode())
        tensors = {f"head.{k}": v for k, v in self.model.head_state().items()}
        if self.adapter is not None:
            tensors |= {f"adapter.{k}": v for k, v in self.adapter[1].items()}
        for name in sorted(tensors):
            value = tensors[name].detach().to("cpu", torch.float32).contiguous()
            digest.update(name.encode())
            digest.update(value.numpy().tobytes())
        self._fingerprint = digest.hexdigest()[:16]
        return self._fingerprint

    def save_pretrained(self, directory: str | Path, *, overwrite: bool = False) -> Path:
        """Write this judge as a native checkpoint that from_pretrained reads back exactly.

        An earlier checkpoint in `directory` is replaced; a non-empty folder that is not a
        checkpoint is refused unless `overwrite`. Files that are not the checkpoint's own
        are never deleted.
        """
        return save_model(
            directory,
            self.model,
            self.tokenizer,
            config=self.config,
            backbone_fingerprint=self.backbone_fingerprint,
            metrics=self.metrics,
            adapter=self.adapter,
            training=self.training,
            overwrite=overwrite,
        )

    def encode(self, item: OrcaItem | Mapping[str, Any]) -> Encoded:
        """Token ids for one item under this judge's template and token limit."""
        return encode_item(self.tokenizer, item, self.config, self.model.backbone.config)

    def logits(
        self,
        items: Sequence[OrcaItem],
        batch_size: int | None = None,
        progress: bool = False,
        processes: Processes | None = None,
    ) -> tuple[torch.Tensor, list[Encoded]]:
        """Head outputs for items, computed in length-sorted batches (shared by `processes`)."""
        encoded = [self.encode(it) for it in items]
        out = batched_logits(
            self.model,
            encoded,
            pad_id=pad_token_id(self.tokenizer),
            batch_size=batch_size or self.config.eval_batch_size,
            device=self.device,
            progress=progress,
            processes=processes,
        )
        return out, encoded

    def score(
        self,
        records: Iterable[OrcaItem | Mapping[str, Any]],
        batch_size: int | None = None,
        progress: bool = False,
        processes: Processes | None = None,
    ) -> list[OrcaPrediction]:
        """Predict the rating distribution of each record (dicts with the public column names).

        With several `processes` (every rank calls this with the same records), each rank
        scores a share of the batches and every rank returns all predictions.
        """
        records = list(records)
        if all(isinstance(r, OrcaItem) for r in records):
            items = records
        else:
            items = load_items([r.as_dict() if isinstance(r, OrcaItem) else r for r in records])
        logits, encoded = self.logits(
            items, batch_size=batch_size, progress=progress, processes=processes
        )
        return predictions_from_logits(self.config, [it.id for it in items], logits, encoded)


def predictions_from_logits(
    cfg: OrcaConfig, ids: Sequence[str], logits: torch.Tensor, encoded: Sequence[Encoded]
) -> list[OrcaPrediction]:
    """Turn head outputs into OrcaPredictions (moments on both scales, clamped mean)."""
    bad = [ids[i] for i in (~torch.isfinite(logits).all(dim=-1)).nonzero().flatten().tolist()]
    if bad:
        raise ValueError(
            f"the judge produced NaN or infinite outputs for {len(bad)} item(s) (e.g. "
            f"{bad[0]!r}); its weights are broken, no predictions written"
        )
    mean, var = likelihoods.moments(cfg.likelihood, logits)
    dists = likelihoods.distribution(cfg.likelihood, logits)
    preds = []
    for i, item_id in enumerate(ids):
        mu = float(mean[i])
        v = None if var is None else float(var[i])
        clamped = likelihoods.clamp_mean(mu, v, cfg.clamp_threshold, cfg.clamp_margin)
        preds.append(
            OrcaPrediction(
                id=item_id,
                expected=1 + 4 * mu,
                expected_unit=mu,
                variance=None if v is None else 16 * v,
                variance_unit=v,
                distribution=dists[i],
                clamped=1 + 4 * clamped,
                clamped_unit=clamped,
                n_tokens=len(encoded[i].input_ids),
                truncated=encoded[i].truncated,
            )
        )
    return preds


def encode_item(
    tokenizer: Any, item: OrcaItem | Mapping[str, Any], cfg: OrcaConfig, backbone_config: Any
) -> Encoded:
    """Encode one item with the config's template, flags and token limit."""
    record = item.as_dict() if isinstance(item, OrcaItem) else item
    special = cfg.add_special_tokens
    if special is None:
        special = is_encoder(backbone_config)
    return encode(
        tokenizer,
        record,
        template=cfg.template,
        max_tokens=token_limit(cfg, backbone_config),
        add_special_tokens=special,
        use_question=cfg.use_question,
        use_rationale=cfg.use_rationale,
        use_transcript=cfg.use_transcript,
    )


def token_limit(cfg: OrcaConfig, backbone_config: Any) -> int | None:
    """The config's max_tokens, else the backbone's context length (None: no limit known)."""
    return cfg.max_tokens if cfg.max_tokens is not None else context_length_of(backbone_config)


def pad_token_id(tokenizer: Any) -> int:
    """Pad id; decoders without one pad with EOS (masked out anyway)."""
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0


def batched_logits(
    model: OrcaModel,
    encoded: Sequence[Encoded],
    *,
    pad_id: int,
    batch_size: int,
    device: torch.device,
    progress: bool = False,
    processes: Processes | None = None,
) -> torch.Tensor:
    """Logits for all encoded items in the original order, using length-sorted batches.

    With several `processes`, each rank runs every world_size-th batch and all ranks get all
    logits: the batches are those of one process, so the logits are too.
    """
    from orca_judge.model import collate

    processes = processes or Processes()
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].input_ids))
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    mine = processes.share(batches)
    out = torch.empty(len(encoded), model.head.out_features)
    was_training = model.training
    model.eval()
    computed = []
    with torch.inference_mode():
        for idx in progress_bar(mine, "scoring", progress and processes.is_main, unit="batch"):
            ids, mask = collate([encoded[i].input_ids for i in idx], pad_id, device=device)
            computed.append((idx, model(ids, mask).float().cpu()))
    model.train(was_training)
    for share in processes.gather(computed):
        for idx, logits in share:
            out[idx] = logits
    return out


def hub_snapshot(repo_id: str) -> Path:
    """Resolve a Hub id through the local cache (downloads only when online)."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id))
    except Exception as err:
        raise CheckpointError(
            f"{repo_id}: not a local directory and not available from the Hub "
            f"cache ({type(err).__name__}: {err})"
        ) from None
