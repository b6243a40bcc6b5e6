"""Per-item judge results written beside lm-eval's samples: `orca_<task>_<filter>_<time>.jsonl`.

A judge failure at aggregation instead leaves the judge inputs in
`orca_pending_<task>_<filter>_<time>.jsonl`, ready for `orca score`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from eval_common.jsonio import write_jsonl
from orca_judge.metric.judge_pass import JudgePass, item_id

logger = logging.getLogger(__name__)


def per_item_rows(judged: JudgePass, task: str, filter_name: str) -> list[dict[str, Any]]:
    """One row per judged item: its inputs, which of them the judge read, and its prediction."""
    rows = []
    for inputs, pred, seen in zip(judged.inputs, judged.predictions, judged.seen, strict=True):
        score = pred.clamped_unit if judged.settings.clamp else pred.expected_unit
        rows.append(
            {
                "task": task,
                "filter": filter_name,
                "index": inputs["index"],
                "inputs": {k: v for k, v in inputs.items() if k != "index"},
                "seen": seen,
                "judge": judged.identity,
                "orca": score,
                **pred.to_dict(),
            }
        )
    return rows


def file_name(prefix: str, task: str, filter_name: str) -> str:
    """`<prefix>_<task>_<filter>_<timestamp>.jsonl`, with unsafe characters replaced."""
    stamp = datetime.now().isoformat().replace(":", "-")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{task}_{filter_name}")
    return f"{prefix}_{safe}_{stamp}.jsonl"


def write_per_item(
    judged: JudgePass,
    task: str,
    filter_name: str,
    payload: Mapping[str, Any],
    folder: Path | None,
) -> Path | None:
    """Write the pass's per-item results into `folder` (None: only log the figures)."""
    figures = ", ".join(f"{k}={v:.4f}" for k, v in judged.figures.items())
    truncated = sum(bool(p.truncated) for p in judged.predictions)
    if truncated:
        logger.warning(
            "%s/%s: orca truncated %d of %d judge inputs to the judge's %s-token limit "
            "(per-item field 'truncated')",
            task,
            filter_name,
            truncated,
            len(judged.predictions),
            judged.identity.get("token_limit"),
        )
    logger.info(
        "%s/%s: orca clamp threshold %s: %s",
        task,
        filter_name,
        judged.identity.get("clamp_threshold"),
        judged.identity.get("clamp_reason"),
    )
    if folder is None:
        logger.warning(
            "%s/%s: orca judged %d items in one pass (%s); per-item results not written: no "
            "output folder (set output_dir: on the entry, or run with --output_path)",
            task,
            filter_name,
            len(judged.inputs),
            figures,
        )
        return None
    path = write_jsonl(
        folder / file_name("orca", task, filter_name), per_item_rows(judged, task, filter_name)
    )
    saw = "the doc" if payload.get("doc_aware") else "only references and predictions"
    logger.info(
        "%s/%s: orca judged %d items in one pass (%s; judge saw %s); per-item results: %s",
        task,
        filter_name,
        len(judged.inputs),
        figures,
        saw,
        path,
    )
    return path


def write_pending(
    folder: Path, task: str, filter_name: str, inputs: Sequence[Mapping[str, Any]]
) -> Path:
    """Save judge inputs that could not be judged, for `orca score --input` (once per name)."""
    path = folder / file_name("orca_pending", task, filter_name)
    if not path.exists():
        write_jsonl(path, [{**item, "id": item_id(item)} for item in inputs])
    return path
