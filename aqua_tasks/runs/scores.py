"""What aqua-score adds to a run's table: conditioning on another run, per-group breakdowns."""

from __future__ import annotations

from collections.abc import Sequence

from aqua_tasks.core.intervals import wilson_interval
from aqua_tasks.core.scoring import Verdict
from aqua_tasks.runs.reader import RunItem
from aqua_tasks.runs.reader import score_items as score_replies


def condition_map(replies: Sequence[RunItem], extractor: str | None) -> dict[str, dict]:
    """Per track: clip -> whether the (other) run answered the clip's Solvable item right."""
    solvable = [r for r in replies if r.item.type == "Solvable"]
    verdicts = score_replies(solvable, extractor=extractor, exclude_defective=False)
    by_track: dict[str, dict] = {}
    for reply, verdict in zip(solvable, verdicts, strict=True):
        by_track.setdefault(reply.item.track, {})[verdict.clip] = verdict.correct
    return by_track


def breakdown(replies: Sequence[RunItem], verdicts: Sequence[Verdict], by: str) -> list[dict]:
    """Accuracy with a Wilson interval per (type, subtype) or (type, true class)."""
    cells: dict[tuple[str, str], list[bool]] = {}
    for reply, verdict in zip(replies, verdicts, strict=True):
        if verdict.excluded:
            continue
        group = reply.item.subtype if by == "subtype" else reply.item.true_class
        cells.setdefault((verdict.type, group or "—"), []).append(verdict.correct)
    rows = []
    for (item_type, group), flags in sorted(cells.items()):
        low, high = wilson_interval(sum(flags), len(flags))
        rows.append(
            {
                "type": item_type,
                by: group,
                "n": len(flags),
                "acc": sum(flags) / len(flags),
                "ci95": [low, high],
            }
        )
    return rows
