"""All-tracks AQUA figures pooled over clips: Σ correct / Σ n, never a mean of track means.

A mean of per-track CAs weights a track by its item count, not by the clips its CA is
conditioned on (lm-eval's group aggregation); the all-tracks CA is the accuracy over every
conditioned clip of every track, with the pooled `n_ca_*`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from aqua_tasks.core.data import TRACKS, UNANSWERABLE_TYPES
from aqua_tasks.core.scoring import ItemOutcome, as_outcome
from aqua_tasks.core.task_name import MAIN_FAMILY, TaskName, choice_task

# The all-tracks row of main tasks is named like lm-eval's group over them.
MAIN_ROW = MAIN_FAMILY


def all_tracks_name(task: str) -> str | None:
    """All-tracks row of a task: 'aqua_music' → 'aqua', 'aqua-cot_vocal' → 'aqua-cot'."""
    name = choice_task(task)
    return name.group if name is not None else None


def all_tracks_rows(tasks: Iterable[str]) -> dict[str, list[str]]:
    """All-tracks row name → its tasks (sorted), for every setting with two tracks or more."""
    rows: dict[str, list[str]] = {}
    for task in tasks:
        name = all_tracks_name(task)
        if name is not None and task not in rows.setdefault(name, []):
            rows[name].append(task)
    return {name: sorted(members) for name, members in rows.items() if len(members) >= 2}


def pooled_tracks(members: Iterable[str]) -> list[str]:
    """The tracks an all-tracks row pools, from its member tasks ('aqua_mmau' → 'mmau')."""
    names = [(task, TaskName.parse(task)) for task in members]
    return [name.track if name is not None else task for task, name in names]


def released_pools(tasks: Iterable[str]) -> tuple[dict[str, list[str]], list[str]]:
    """All-tracks rows over a setting's *released* tracks (two or more) → the tasks each
    pools, and a note for every row a built track (MMAU) is kept out of.

    All means the same in every run and row whether MMAU was built or not: the paper's three
    released tracks (its MMAU columns stand apart), as `--tasks aqua` pools them; lm-eval's
    `aqua` row under 'aqua_*' pools a built track too, and says so in its name.
    """
    pools: dict[str, list[str]] = {}
    notes = []
    for name, members in all_tracks_rows(tasks).items():
        tracks = pooled_tracks(members)
        released = [m for m, track in zip(members, tracks, strict=True) if track in TRACKS]
        built = [m for m in members if m not in released]
        if len(released) >= 2:
            pools[name] = released
        if built:
            kept = "+".join(pooled_tracks(released)) if len(released) >= 2 else "no All row"
            notes.append(
                f"All ({name}) pools the released tracks only ({kept}); "
                f"{', '.join(built)} has its own columns"
            )
    return pools, notes


def pooled_label(name: str, members: Iterable[str]) -> str:
    """An all-tracks row's alias, naming what it pools: 'aqua (animal+music+vocal pooled …)'."""
    return f"{name} ({'+'.join(pooled_tracks(members))} pooled over clips)"


def pool_outcomes(per_task: Mapping[str, Iterable[Mapping | Sequence | int]]) -> list[ItemOutcome]:
    """Every task's per-item values as one run's outcomes, each clip keyed by (task, clip).

    Clip indices and file names are unique within a task only; keying them by task keeps
    every clip's Solvable item paired with its own variants.
    """
    pooled = []
    for task, values in per_task.items():
        for value in values:
            outcome = as_outcome(value)
            pooled.append(outcome._replace(clip=(task, outcome.clip)))
    return pooled


def pool_condition(per_task: Mapping[str, Mapping]) -> dict[tuple[str, object], bool]:
    """Per-task conditioning maps (clip → Solvable right) keyed like `pool_outcomes` clips."""
    return {
        (task, clip): bool(ok) for task, by_clip in per_task.items() for clip, ok in by_clip.items()
    }


def _weighted(rows: Sequence[Mapping[str, float]], rate: str, count: str) -> tuple[float, float]:
    # Σ rate·n / Σ n over the rows where both are defined: exact, as rate·n is a count.
    pairs = [(r.get(rate, math.nan), r.get(count, math.nan)) for r in rows]
    total = sum(n for _, n in pairs if not math.isnan(n))
    hits = sum(v * n for v, n in pairs if n and not math.isnan(n) and not math.isnan(v))
    return (hits / total if total else math.nan), float(total)


def pool_summaries(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Pooled figures from per-track summaries alone (runs without per-item values).

    Exact for Ori (`acc`), CA and the unparsed rate, whose counts the summaries hold;
    `acc_*` and `joint_*` need per-type counts a summary lacks, so they are NaN.
    """
    pooled: dict[str, float] = {}
    pooled["acc"], pooled["n_solvable"] = _weighted(rows, "acc", "n_solvable")
    pooled["unparsed_rate"], pooled["n_items"] = _weighted(rows, "unparsed_rate", "n_items")
    for item_type in UNANSWERABLE_TYPES:
        key = item_type.lower()
        pooled[f"ca_{key}"], pooled[f"n_ca_{key}"] = _weighted(rows, f"ca_{key}", f"n_ca_{key}")
        pooled[f"acc_{key}"] = pooled[f"joint_{key}"] = math.nan
    for count in ("n_excluded", "n_unconditioned"):
        pooled[count] = float(sum(r.get(count, 0.0) for r in rows))
    return pooled
