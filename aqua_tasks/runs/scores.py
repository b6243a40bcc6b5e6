"""Scoring a run's items: verdicts, re-scoring notices, conditioning on another run, breakdowns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from aqua_tasks.core.extract import DEFAULT_EXTRACTOR, rescoring_notice
from aqua_tasks.core.intervals import wilson_interval
from aqua_tasks.core.scoring import Verdict, score_reply
from aqua_tasks.runs.model import RunItem


def rescoring_notices(items: Iterable[RunItem]) -> list[str]:
    """One line per recorded extractor (name, version) that the current code re-scores."""
    recorded = {
        (i.extractor or DEFAULT_EXTRACTOR, i.manifest.get("extractor_version"))
        for i in items
        if i.item is not None
    }
    notices = (rescoring_notice(name, version) for name, version in sorted(recorded, key=str))
    return [n for n in notices if n]


def score_items(
    items: Sequence[RunItem], *, extractor: str | None = None, exclude_defective: bool = False
) -> list[Verdict]:
    """Verdicts of AQUA items; each item's recorded extractor is used unless one is given."""
    return [
        score_reply(
            i.item,
            i.reply,
            extractor=extractor or i.extractor or DEFAULT_EXTRACTOR,
            exclude_defective=exclude_defective or i.exclude_defective,
        )
        for i in items
    ]


def condition_map(replies: Sequence[RunItem], extractor: str | None) -> dict[str, dict]:
    """Per track: clip -> whether the (other) run answered the clip's Solvable item right."""
    solvable = [r for r in replies if r.item.type == "Solvable"]
    verdicts = score_items(solvable, extractor=extractor, exclude_defective=False)
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
