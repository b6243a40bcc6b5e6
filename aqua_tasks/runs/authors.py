"""The AQUA-Bench authors' results JSON (the released entries with a `response`) as run items."""

from __future__ import annotations

from pathlib import Path

from aqua_tasks.core.data import (
    detect_variant,
    entry_track,
    load_json_file,
    name_track,
    parse_item,
)
from aqua_tasks.core.task_name import TaskName
from aqua_tasks.errors import RunError, TrackMismatchError
from aqua_tasks.runs.model import RunItem, reply_text


def _entry_tracks(path: Path, entries: list, track: str | None) -> list[str]:
    """The track of every entry: as asked, else as the file name or the audio paths say."""
    if track is not None:
        return [track] * len(entries)
    told = [entry_track(e) for e in entries]
    tracks = sorted({t for t in told if t is not None})
    named = name_track(path.name)
    if named is not None:
        if tracks and tracks != [named]:
            index = next(i for i, t in enumerate(told) if t not in (None, named))
            raise TrackMismatchError(
                f"{path}: the file name says track {named} but entry {index}'s audio path says "
                f"{told[index]}; pass --track to override"
            )
        return [named] * len(entries)
    if not tracks:
        raise RunError(
            f"{path}: cannot tell the track from the file name or audio paths; pass --track"
        )
    if len(tracks) == 1:
        return [tracks[0]] * len(entries)
    unknown = [i for i, t in enumerate(told) if t is None]
    if unknown:  # a file mixing tracks is split by track, which needs every entry's track
        raise TrackMismatchError(
            f"{path}: mixes tracks ({', '.join(tracks)}) and entry {unknown[0]}'s audio path "
            "tells none; split the file per track"
        )
    return [t for t in told if t is not None]


def read_authors_results(path: str | Path, track: str | None = None) -> list[RunItem]:
    """Entries of the released JSON format with the reply under `response`, split by track."""
    path = Path(path)
    entries = load_json_file(path)
    if not isinstance(entries, list) or not entries:
        raise RunError(f"{path}: expected a non-empty JSON list of result entries")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise RunError(f"{path}: entry {index}: expected a JSON object")
    tracks = _entry_tracks(path, entries, track)
    variants = {
        t: detect_variant(
            [e.get("options", []) for e, et in zip(entries, tracks, strict=True) if et == t],
            path.name,
        )
        for t in set(tracks)
    }
    items = []
    for index, (entry, entry_track_) in enumerate(zip(entries, tracks, strict=True)):
        where = f"{path}: entry {index}"
        variant = variants[entry_track_]
        item = parse_item(entry, track=entry_track_, variant=variant, where=where)
        if "response" not in entry:
            raise RunError(f"{where}: missing key 'response' (the model's reply)")
        items.append(
            RunItem(
                task=TaskName.for_questions(entry_track_, variant).format(),
                item=item,
                reply=reply_text(entry["response"], where, "response"),
                source=where,
                file=path,
                doc_id=index,
            )
        )
    return items
