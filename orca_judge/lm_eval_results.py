"""Read back the per-item results that `metric: orca` writes beside lm-eval's output.

One `orca_<task>_<filter>_<timestamp>.jsonl` per judge pass (see `lm_eval_metric.write_per_item`);
a run folder may hold several passes of the same task and filter, of which the newest counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The file names write_per_item gives; orca_pending_* (judge inputs of a failed pass) are not.
PER_ITEM_NAME = re.compile(
    r"^orca_(?!pending_).+_(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d(?:\.\d+)?)\.jsonl$"
)
ROW_FIELDS = ("task", "filter", "index", "inputs", "orca", "expected_unit")


class JudgeResultsError(ValueError):
    """A per-item judge results file is unreadable or not one written by `metric: orca`."""


@dataclass(frozen=True)
class JudgeResults:
    """The per-item results of one judge pass (one task and filter of one run)."""

    path: Path
    task: str
    filter: str
    rows: tuple[Mapping[str, Any], ...]
    judge: Mapping[str, Any] | None  # checkpoint, fingerprint, clamp; None: not recorded

    def keys(self) -> list[str]:
        """Item keys in row order: the items' ids when unique, else `#<index>`."""
        ids = [row["inputs"].get("id") for row in self.rows]
        if None not in ids and len(set(map(str, ids))) == len(ids):
            return [str(i) for i in ids]
        return [f"#{row['index']}" for row in self.rows]

    def by_key(self) -> dict[str, Mapping[str, Any]]:
        """Rows by item key."""
        return dict(zip(self.keys(), self.rows, strict=True))


def read_judge_results(path: str | Path) -> JudgeResults:
    """One per-item results file; JudgeResultsError naming file and line when malformed."""
    path = Path(path)
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise JudgeResultsError(f"{path}: cannot read ({error})") from None
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise JudgeResultsError(f"{path}:{line_no}: malformed JSON ({error.msg})") from None
        missing = [f for f in ROW_FIELDS if not isinstance(row, dict) or f not in row]
        if missing or not isinstance(row["inputs"], dict):
            raise JudgeResultsError(
                f"{path}:{line_no}: not a per-item ORCA result (missing {', '.join(missing)})"
            )
        rows.append(row)
    if not rows:
        raise JudgeResultsError(f"{path}: no per-item ORCA results in it")
    sites = {(str(r["task"]), str(r["filter"])) for r in rows}
    judges = {json.dumps(r.get("judge"), sort_keys=True) for r in rows}
    if len(sites) > 1 or len(judges) > 1:
        raise JudgeResultsError(f"{path}: mixes several tasks, filters or judges")
    ((task, filter_name),) = sites
    return JudgeResults(path, task, filter_name, tuple(rows), rows[0].get("judge"))


def find_judge_results(run: str | Path) -> dict[tuple[str, str], JudgeResults]:
    """(task, filter) -> the newest per-item results under a run folder (or the one file)."""
    run = Path(run)
    if run.is_file():
        files = [run] if PER_ITEM_NAME.match(run.name) else []
    else:
        files = [p for p in run.rglob("orca_*.jsonl") if PER_ITEM_NAME.match(p.name)]
    # Timestamps sort chronologically; the path breaks ties deterministically.
    files.sort(key=lambda p: (PER_ITEM_NAME.match(p.name).group(1), str(p)))
    found: dict[tuple[str, str], JudgeResults] = {}
    for file in files:
        results = read_judge_results(file)
        found[(results.task, results.filter)] = results
    return dict(sorted(found.items()))
