"""Scoring a run: the AQUA figures of every task and all-tracks row, their intervals and sources.

The one pipeline of `aqua score`, `aqua report` and `aqua regress`: `score_items` gives the
verdicts of items (re-scoring notices, conditioning on another run and breakdowns beside it),
`score_task` scores one task's items, `row_figures` turns per-item values into the figures of
every task and of every all-tracks row (its tasks' values pooled over clips; the harness
results step calls it too, with the values lm-eval collected), and `score_run` does both for
a read `Run` under one `ScoreSettings`. `RunScores.to_json` is what `aqua score --json` prints and
`RunScores.from_json` reads it back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aqua_tasks.core.extract import DEFAULT_EXTRACTOR, EXTRACTOR_VERSIONS, rescoring_notice
from aqua_tasks.core.extract.fallback import FALLBACK_EXTRACTOR, fallback_counts
from aqua_tasks.core.intervals import LEVEL, metric_intervals, wilson_interval
from aqua_tasks.core.pooling import (
    all_tracks_rows,
    pool_condition,
    pool_outcomes,
    released_pools,
)
from aqua_tasks.core.scoring import Verdict, metric_value, score_reply, summarize
from aqua_tasks.errors import RunError
from aqua_tasks.runs.model import Run, RunItem, RunSource, iter_tasks, require_aqua_items
from eval_common.cli import progress as progress_bar
from eval_common.jsonio import json_safe

Interval = tuple[float, float]
# How a row's figures are spread: `metric_intervals` (95 % intervals) or `metric_stderrs`.
Spread = Callable[..., Mapping[str, Any]]
BREAKDOWNS = ("subtype", "class")


@dataclass(frozen=True)
class ScoreSettings:
    """How a run is scored: every option `aqua score` takes that changes its figures."""

    extractor: str | None = None  # re-score every item with it; None: each item's recorded one
    exclude_defective: bool = False  # leave out the items the release flags as defective
    condition_on: Run | None = None  # CA on this run's Solvable answers; None: the run's own
    breakdown: str | None = None  # also accuracy per item type and "subtype" or true "class"
    n_boot: int = 2000  # bootstrap resamples of the CA intervals
    seed: int = 0  # seed of the CA bootstrap
    released_only: bool = False  # all-tracks rows pool the released tracks only (the report's)

    def __post_init__(self) -> None:
        if self.breakdown is not None and self.breakdown not in BREAKDOWNS:
            raise ValueError(
                f"breakdown must be one of {BREAKDOWNS} or None, got {self.breakdown!r}"
            )
        if self.n_boot < 1:
            raise ValueError(f"n_boot must be >= 1, got {self.n_boot}")


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
    """Verdicts of AQUA items; each item's recorded extractor is used unless one is given.

    `aqua-rules+llm` applies each item's logged fallback reading: the model is not asked
    again; a reply the rules leave unparsed without one is a RunError.
    """
    verdicts = []
    for i in items:
        try:
            verdicts.append(
                score_reply(
                    i.item,
                    i.reply,
                    extractor=extractor or i.extractor or DEFAULT_EXTRACTOR,
                    exclude_defective=exclude_defective or i.exclude_defective,
                    fallback=i.fallback,
                )
            )
        except ValueError as error:
            raise RunError(
                f"{i.source}: {error}; re-score with aqua-rules, or run lm-eval with "
                f"extractor {FALLBACK_EXTRACTOR}"
            ) from None
    return verdicts


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


@dataclass(frozen=True)
class TaskScoring:
    """One task's items with their verdicts, and the per-item values the AQUA metrics read."""

    items: tuple[RunItem, ...]
    verdicts: tuple[Verdict, ...]

    @property
    def values(self) -> list[dict]:
        """The per-item values (`metric_value`), in item order."""
        return [metric_value(v) for v in self.verdicts]

    @property
    def extractor(self) -> str:
        """The extractors the items were scored with, comma-separated; a fallback run's says
        how many replies the fallback read (MMAU keeps such figures apart from the rules')."""
        names = sorted({v.extractor for v in self.verdicts})
        if FALLBACK_EXTRACTOR not in names:
            return ",".join(names)
        counts = self.fallback_counts()
        read = f"{FALLBACK_EXTRACTOR} ({counts['n_fallback']} read by the fallback)"
        return ",".join(read if n == FALLBACK_EXTRACTOR else n for n in names)

    def fallback_counts(self) -> dict[str, int]:
        """Replies the fallback read into an answer, and replies it failed to read."""
        return fallback_counts(
            [
                i.fallback or 0
                for i, v in zip(self.items, self.verdicts, strict=True)
                if v.extractor == FALLBACK_EXTRACTOR
            ]
        )

    def item_rows(self) -> list[dict]:
        """One JSON-ready row per item: its task, verdict and recorded manifest."""
        return [
            {"task": i.task, **v.to_record(), "manifest": dict(i.manifest)}
            for i, v in zip(self.items, self.verdicts, strict=True)
        ]


def score_task(
    items: Sequence[RunItem], *, extractor: str | None = None, exclude_defective: bool = False
) -> TaskScoring:
    """The verdicts of one task's items (each item's recorded extractor unless one is given)."""
    verdicts = score_items(items, extractor=extractor, exclude_defective=exclude_defective)
    return TaskScoring(tuple(items), tuple(verdicts))


def row_figures(
    values: Mapping[str, Sequence],
    pools: Mapping[str, Sequence[str]],
    *,
    conditions: Mapping[str, Mapping] | None = None,
    spread: Spread | None = metric_intervals,
    n_boot: int = 2000,
    seed: int = 0,
    progress: bool = False,
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, Any]]]:
    """Per task, then per all-tracks row (its tasks' values pooled over clips, Σ correct / Σ n):
    every AQUA figure (`summarize`) and its spread (none when `spread` is None).

    `values` holds each task's per-item values (anything `scoring.as_outcome` reads), `pools`
    each all-tracks row's tasks, `conditions` each task's clip → Solvable-right map of the run
    CA is conditioned on (None: each task's own Solvable answers).
    """
    rows: dict[str, Sequence] = dict(values)
    conditioned: dict[str, Mapping] | None = dict(conditions) if conditions is not None else None
    for name, members in pools.items():
        rows[name] = pool_outcomes({m: values[m] for m in members})
        if conditioned is not None:
            conditioned[name] = pool_condition({m: conditioned[m] for m in members})
    figures: dict[str, dict[str, float]] = {}
    spreads: dict[str, dict[str, Any]] = {}
    for name in progress_bar(rows, "scoring", progress, unit="row"):
        condition = conditioned[name] if conditioned is not None else None
        figures[name] = summarize(rows[name], condition)
        if spread is not None:
            spreads[name] = dict(spread(rows[name], condition=condition, n_boot=n_boot, seed=seed))
    return figures, spreads


@dataclass(frozen=True)
class RunScores:
    """A scored run: per task and all-tracks row its figures, intervals, extractor and sources.

    `results` holds every task's AQUA metrics (`summarize`), then every all-tracks row's
    (`pooled`: row → its tasks); `sources` per row the files its items were read from (a
    pooled row: its tasks'). `tasks` (the per-item verdicts) and `rescoring` (what re-scoring
    a recorded extractor version changed) are not part of the JSON form.
    """

    source: str
    harness: str
    results: dict[str, dict[str, float]]
    intervals: dict[str, dict[str, Interval]]
    extractors: dict[str, str]
    sources: dict[str, tuple[RunSource, ...]]
    pooled: dict[str, list[str]]
    seed: int = 0
    n_boot: int = 2000
    level: float = LEVEL
    conditioned_on: str | None = None
    breakdown: str | None = None
    breakdowns: dict[str, list[dict]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    extractor_versions: dict[str, str] = field(default_factory=lambda: dict(EXTRACTOR_VERSIONS))
    rescoring: tuple[str, ...] = ()
    tasks: dict[str, TaskScoring] = field(default_factory=dict)

    def item_rows(self) -> list[dict]:
        """One JSON-ready row per scored item (`aqua score --per-item`), task by task."""
        return [row for scored in self.tasks.values() for row in scored.item_rows()]

    def to_json(self) -> dict[str, Any]:
        """The JSON form (`aqua score --json`): NaN as null, intervals as [low, high]."""
        payload: dict[str, Any] = {
            "results": self.results,
            "intervals": {
                "level": self.level,
                "seed": self.seed,
                "n_boot": self.n_boot,
                **self.intervals,
            },
            "extractor": self.extractors,
            "extractor_versions": self.extractor_versions,
            "conditioned_on": self.conditioned_on,
            "source": self.source,
            "harness": self.harness,
            # Which file, model and date every figure comes from (pooled rows: their tracks').
            "sources": {row: [s.as_record() for s in found] for row, found in self.sources.items()},
            "notes": list(self.notes),
        }
        if self.breakdown:
            payload["breakdown"] = self.breakdowns
        return json_safe(payload)

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> RunScores:
        """The scores `to_json` wrote (null read as NaN); entries that are no figures are skipped.

        The all-tracks rows are taken to pool every task of their setting, as `score_run`'s
        default does.
        """
        results = {
            row: {k: _number(v) for k, v in m.items() if v is None or _is_number(v)}
            for row, m in _mapping(payload.get("results")).items()
            if isinstance(m, Mapping)
        }
        recorded = _mapping(payload.get("intervals"))
        intervals = {
            row: {m: (_number(v[0]), _number(v[1])) for m, v in pairs.items() if _is_pair(v)}
            for row, pairs in recorded.items()
            if isinstance(pairs, Mapping)
        }
        sources = {
            row: tuple(_source(r) for r in found if isinstance(r, Mapping))
            for row, found in _mapping(payload.get("sources")).items()
            if isinstance(found, Sequence)
        }
        breakdowns = _mapping(payload.get("breakdown"))
        return cls(
            source=str(payload.get("source") or ""),
            harness=str(payload.get("harness") or ""),
            results=results,
            intervals=intervals,
            extractors={t: str(e) for t, e in _mapping(payload.get("extractor")).items()},
            sources=sources,
            pooled={r: m for r, m in all_tracks_rows(results).items() if r in results},
            seed=int(recorded.get("seed", 0)),
            n_boot=int(recorded.get("n_boot", 0)),
            level=float(recorded.get("level", LEVEL)),
            conditioned_on=payload.get("conditioned_on"),
            breakdown=_breakdown_of(breakdowns) if "breakdown" in payload else None,
            breakdowns=dict(breakdowns),
            notes=tuple(str(n) for n in payload.get("notes") or ()),
            extractor_versions=dict(_mapping(payload.get("extractor_versions"))),
        )


def is_run_scores(payload: object) -> bool:
    """Whether a JSON payload is a `RunScores.to_json` form (`aqua score --json` output)."""
    return isinstance(payload, Mapping) and "extractor_versions" in payload


def score_run(
    run: Run, settings: ScoreSettings | None = None, *, progress: bool = False
) -> RunScores:
    """Every AQUA task of a run scored, its all-tracks rows pooled over clips, with intervals.

    RunError when the run holds no AQUA replies, or CA is conditioned on a run lacking the
    Solvable items of one of its tracks.
    """
    settings = settings or ScoreSettings()
    items = require_aqua_items(run)
    by_track = (
        condition_map(require_aqua_items(settings.condition_on), settings.extractor)
        if settings.condition_on is not None
        else None
    )
    scored: dict[str, TaskScoring] = {}
    conditions: dict[str, Mapping] = {}
    for task, task_items in iter_tasks(items):
        scored[task] = score_task(
            task_items,
            extractor=settings.extractor,
            exclude_defective=settings.exclude_defective,
        )
        if by_track is not None:
            track = task_items[0].item.track
            if track not in by_track:
                raise RunError(
                    f"--condition-on {settings.condition_on.path} has no {track} Solvable items"
                )
            conditions[task] = by_track[track]
    pools = released_pools(scored)[0] if settings.released_only else all_tracks_rows(scored)
    figures, intervals = row_figures(
        {task: s.values for task, s in scored.items()},
        pools,
        conditions=conditions if by_track is not None else None,
        n_boot=settings.n_boot,
        seed=settings.seed,
        progress=progress,
    )
    extractors = {task: s.extractor for task, s in scored.items()}
    for name, members in pools.items():
        extractors[name] = ",".join(sorted({extractors[t] for t in members}))
    found: dict[str, list[RunSource]] = {row: [] for row in figures}
    for source in run.sources():
        if source.task in scored:
            found[source.task].append(source)
    for name, members in pools.items():
        found[name] = [s for member in members for s in found[member]]
    by = settings.breakdown
    return RunScores(
        source=str(run.path),
        harness=run.harness,
        results=figures,
        intervals=intervals,
        extractors=extractors,
        sources={row: tuple(s) for row, s in found.items()},
        pooled=pools,
        seed=settings.seed,
        n_boot=settings.n_boot,
        conditioned_on=str(settings.condition_on.path) if settings.condition_on else None,
        breakdown=by,
        breakdowns={
            task: breakdown(list(s.items), list(s.verdicts), by) for task, s in scored.items()
        }
        if by
        else {},
        notes=run.notes,
        rescoring=tuple(rescoring_notices(items)) if settings.extractor is None else (),
        tasks=scored,
    )


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: object) -> float:
    return math.nan if value is None else float(value)


def _is_pair(value: object) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) == 2
        and all(v is None or _is_number(v) for v in value)
    )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _source(record: Mapping[str, Any]) -> RunSource:
    results = record.get("results")
    return RunSource(
        task=str(record.get("task")),
        file=Path(str(record.get("file"))),
        model=record.get("model"),
        date=str(record.get("date")),
        dated_by=str(record.get("dated_by")),
        results=Path(results) if results is not None else None,
    )


def _breakdown_of(breakdowns: Mapping[str, Any]) -> str:
    # Each cell names the grouping it is by; with no cell at all, either reads the same.
    cells = [c for found in breakdowns.values() for c in found or () if isinstance(c, Mapping)]
    return next((b for b in BREAKDOWNS for c in cells if b in c), BREAKDOWNS[0])
