"""Read back the per-item results that `metric: orca` writes beside lm-eval's output.

One `orca_<task>_<filter>_<timestamp>.jsonl` per judge pass (see `per_item`);
a run folder may hold several passes of the same task and filter, of which the newest counts
(found and ordered by `aqua_tasks.runs.discovery`, as every other file of a run).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aqua_tasks.errors import JudgeResultsError
from aqua_tasks.runs.discovery import find_outputs, iter_jsonl, name_match

ROW_FIELDS = ("task", "filter", "index", "inputs", "orca", "expected_unit")


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
    """One per-item results file; a RunError (or JudgeResultsError) naming file and line."""
    path = Path(path)
    rows = []
    for line_no, row in iter_jsonl(path):
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
    """(task, filter) -> the newest per-item results of a run folder (or the one file)."""
    if not Path(run).exists():
        return {}
    found = {(r.task, r.filter): r for r in map(read_judge_results, _judge_paths(run))}
    return dict(sorted(found.items(), key=lambda kv: kv[0]))


def judge_files_beside(path: str | Path, tasks: Iterable[str]) -> list[Path]:
    """The per-item judge results of these tasks in the folder of a run's file."""
    prefixes = tuple(f"{task}_" for task in tasks)
    return sorted(
        p
        for p in Path(path).parent.glob("orca_*.jsonl")
        if (found := name_match(p)) is not None
        and found.kind == "judge"
        and found.match.group("name").startswith(prefixes)
    )


def _judge_paths(run: str | Path) -> list[Path]:
    return [f.path for f in find_outputs(run).judges]
