"""A saved run, read once: its items with their replies, from every supported source.

Sources: an lm-eval output folder, an lmms-eval one, one samples file, and the AQUA-Bench
authors' results JSON (a file, or a folder of them). `find_outputs` says which files of a
path make the run and which harness wrote them; `read_run` reads them into one `Run` with
one reader per kind of file. lmms-eval logs no docs: their items are rebuilt from the
released data by doc id (`aqua_tasks.runs.lmms_eval_logs`), which needs the data folder.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from aqua_tasks.errors import DuplicateItemError, TrackMismatchError
from aqua_tasks.runs.authors import read_authors_results
from aqua_tasks.runs.discovery import (
    HARNESS_LMMS_EVAL,
    RunFiles,
    evaluation_results,
    find_outputs,
    recorded_manifests,
    recorded_metadata,
)
from aqua_tasks.runs.lm_eval_samples import read_samples_file
from aqua_tasks.runs.lmms_eval_logs import read_lmms_samples_file
from aqua_tasks.runs.model import Run, RunItem

SHOWN_IDS = 5


def refuse_duplicates(items: Iterable[RunItem]) -> None:
    """DuplicateItemError naming the ids when an item of a task appears more than once."""
    seen: dict[tuple, RunItem] = {}
    repeated: dict[str, list[RunItem]] = {}
    for it in items:
        # AQUA items are one per id whatever the filter; other tasks log a sample per filter.
        key = it.key if it.item is not None else (*it.key, it.filter)
        if key in seen:
            repeated.setdefault(it.task, []).append(it)
        else:
            seen[key] = it
    if repeated:
        task, dups = next(iter(repeated.items()))
        ids = ", ".join(str(d.key[1]) for d in dups[:SHOWN_IDS])
        more = " …" if len(dups) > SHOWN_IDS else ""
        raise DuplicateItemError(
            f"{dups[0].source}: {task} has {len(dups)} items more than once (id {ids}{more}); "
            "a run holds each item once"
        )


def read_samples_items(
    path: str | Path, *, data_dir: str | Path | None = None
) -> tuple[RunFiles, list[RunItem], list[str]]:
    """The items of every samples file at a path, each read by its harness's one reader.

    Each file is read with its evaluation's results file (recorded manifests, settings and
    data folder); `notes` say where lmms-eval items were rebuilt from when not `data_dir`.
    The checks across files (`--track`, duplicates) are `read_run`'s.
    """
    files = find_outputs(path)
    items: list[RunItem] = []
    notes: list[str] = []
    for sample_file in files.samples:
        if files.harness == HARNESS_LMMS_EVAL:
            result = evaluation_results(files, sample_file)
            read = read_lmms_samples_file(
                sample_file.path,
                sample_file.name or None,
                data_dir=data_dir,
                metadata=recorded_metadata(files, sample_file),
                recorded_in=str(result.path) if result is not None else None,
            )
            items.extend(read.items)
            notes.extend([read.note] if read.note else [])
            continue
        items.extend(
            read_samples_file(
                sample_file.path,
                sample_file.name or None,
                recorded_manifests(files, sample_file),
            )
        )
    return files, items, notes


def read_run(
    path: str | Path, *, track: str | None = None, data_dir: str | Path | None = None
) -> Run:
    """Every item of the run at a path, each file read once; typed errors on bad input.

    `data_dir` (the released AQUA-Bench files) is for lmms-eval logs only, whose items are
    rebuilt from it (without it, from the folder the run recorded if its files hash as
    recorded; `Run.notes` says so); other runs carry their items and ignore it.
    """
    files, items, notes = read_samples_items(path, data_dir=data_dir)
    if track is not None:
        differing = sorted({i.item.track for i in items if i.item is not None} - {track})
        if differing:
            raise TrackMismatchError(
                f"{files.path}: --track {track} but the logged docs are of track "
                f"{', '.join(differing)}"
            )
    for authors_file in files.authors:
        items.extend(read_authors_results(authors_file, track))
    refuse_duplicates(items)
    return Run(path=Path(path), items=tuple(items), files=files, notes=tuple(notes))
