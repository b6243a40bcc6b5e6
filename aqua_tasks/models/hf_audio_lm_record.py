"""What an `aqua-audiolm` run records: its counts, time and peak memory, and its model setting.

The counts reach lm-eval's results file (`get_model_info`); the model setting names the reply
journal's folder, so replies of another model, dtype or library version are never reused.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aqua_tasks.models.reply_journal import local_model_files

CLIP_COUNT_KEYS = ("clips_checked", "clips_silent", "clips_over_window")
COUNT_KEYS = ("items", "generated", "reused", "failed", *CLIP_COUNT_KEYS)


def peak_memory_mb(device: Any) -> dict[str, float]:
    """Peak memory of this process so far: accelerator memory on CUDA, else resident RAM."""
    import torch

    peak: dict[str, float] = {}
    if getattr(device, "type", "") == "cuda":
        for index in range(torch.cuda.device_count()):
            used = torch.cuda.max_memory_allocated(index)
            if used:  # under data parallel a rank touches only its own GPU
                peak[f"cuda:{index}"] = used / 2**20
    try:
        import resource
    except ImportError:  # not on Windows
        return {k: round(v, 1) for k, v in peak.items()}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    peak["cpu_rss"] = rss / (2**20 if sys.platform == "darwin" else 2**10)
    return {k: round(v, 1) for k, v in peak.items()}


def add_call(info: dict[str, Any], ranks: Sequence[dict[str, Any]]) -> None:
    """Add one `generate_until` call of every rank to the run's record `info`, in place."""
    for key in COUNT_KEYS:
        info[key] = info.get(key, 0) + sum(r[key] for r in ranks)
    # Ranks run side by side: the run took as long as its slowest rank.
    info["generation_seconds"] = info.get("generation_seconds", 0.0) + max(
        r["generation_seconds"] for r in ranks
    )
    info["items_per_second"] = (
        info["generated"] / info["generation_seconds"] if info["generation_seconds"] else None
    )
    info["peak_memory_mb"] = [r["peak_memory_mb"] for r in ranks]


def journal_setting(pretrained: str, revision: str, dtype: str, device_type: str) -> dict[str, Any]:
    """The model setting a reply journal is kept for: model identity, dtype, device, libraries."""
    import torch
    import transformers

    source = Path(pretrained)
    identity: dict[str, Any] = (
        {"path": str(source.resolve()), "files": local_model_files(source)}
        if source.is_dir()
        else {"id": pretrained, "revision": revision}
    )
    return {
        "class": "aqua-audiolm",
        "model": identity,
        "dtype": dtype,
        "device_type": device_type,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    }
