"""lm-eval samples (e.g. from --predict_only) as orca-score input (behind `orca-lm-eval-items`).

Each sample becomes the record `metric: orca` would have judged in the run: the same doc
fields, reference and filtered reply, with the same id, so `orca-score` on the output gives
the numbers of judging in the run.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aqua_tasks.runs import iter_jsonl

from .payloads import judge_inputs
from .settings import OrcaMetricSettings

# The metric settings stand in for field names only here; no judge is loaded.
NOT_LOADED = "(field names only)"


def read_samples(path: str | Path) -> list[dict[str, Any]]:
    """The samples of one lm-eval `samples_<task>_<time>.jsonl` file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    samples = []
    for line_no, sample in iter_jsonl(path):
        if not isinstance(sample, dict) or "doc" not in sample or "target" not in sample:
            raise ValueError(f"{path}:{line_no}: not an lm-eval sample (no doc/target)")
        samples.append(sample)
    return samples


def prompt_of(sample: dict[str, Any]) -> str | None:
    """The prompt lm-eval sent for a sample (its first request's context), if recorded."""
    arguments = sample.get("arguments")
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0")
        if isinstance(first, dict) and isinstance(first.get("arg_0"), str):
            return first["arg_0"]
    return None


def items_from_samples(
    samples: Iterable[dict[str, Any]],
    settings: OrcaMetricSettings | None,
    filter_name: str | None = None,
) -> list[dict[str, Any]]:
    """orca-score records for the samples of one filter (settings None: the doc-less form)."""
    samples = list(samples)
    filters = list(dict.fromkeys(s.get("filter", "none") for s in samples))
    if filter_name is None:
        if len(filters) > 1:
            raise ValueError(f"samples have several filters ({', '.join(filters)}); pick --filter")
        filter_name = filters[0] if filters else "none"
    elif filter_name not in filters:
        raise ValueError(f"no samples for filter {filter_name!r} (have: {', '.join(filters)})")
    items = []
    for index, sample in enumerate(s for s in samples if s.get("filter", "none") == filter_name):
        replies = sample.get("filtered_resps") or [""]
        record = judge_inputs(
            settings,
            reference=sample["target"],
            candidate=replies[0],
            doc=sample["doc"],
            index=index,
            prompt=prompt_of(sample),
        )
        record["id"] = record["id"] if record["id"] is not None else str(index)
        items.append(record)
    return items
