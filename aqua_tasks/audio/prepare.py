"""Check that the AQUA-Bench clips are findable; prepare them from the sources at 16 kHz mono."""

from __future__ import annotations

import io
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import soundfile as sf

from aqua_tasks.audio.clips import (
    CANONICAL_DIRS,
    TARGET_SAMPLING_RATE,
    TRACK_SOURCES,
    AudioRoots,
    canonical_relpath,
    fold_name,
    load_audio,
    probe_audio,
    released_parts,
    resolve_audio,
)
from aqua_tasks.core.data import load_items
from aqua_tasks.errors import AudioFileError, PrepareError
from eval_common.cli import progress as progress_bar
from eval_common.outputs import atomic_path

SOURCE_TRACKS: dict[str, str] = {source: track for track, source in TRACK_SOURCES.items()}
AUDIO_SUFFIXES: frozenset[str] = frozenset({".wav", ".flac", ".ogg", ".mp3"})
# Columns that may hold a clip's file name in a Hugging Face copy, most specific first
# (ashraq/esc50 has `filename`); without one, the audio column's stored `path` is used.
NAME_COLUMNS: tuple[str, ...] = (
    "filename",
    "file_name",
    "audio_filename",
    "file",
    "audio_path",
    "path",
    "name",
)
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


@dataclass
class MissingAudio:
    """A referenced clip that `check` could not use, and why."""

    audio_filename: str
    reason: str
    detail: str
    tried: list[str] = field(default_factory=list)


@dataclass
class TrackCheck:
    """What `check` found for one track."""

    track: str
    root: str | None
    referenced: int
    missing: list[MissingAudio]
    sample_rates: dict[int, int]

    @property
    def found(self) -> int:
        """Referenced clips that resolved to a readable file."""
        return self.referenced - len(self.missing)

    def to_json(self) -> dict[str, Any]:
        """Machine-readable summary."""
        return {
            "root": self.root,
            "referenced": self.referenced,
            "found": self.found,
            "missing": len(self.missing),
            "sample_rates": {str(rate): n for rate, n in sorted(self.sample_rates.items())},
            "missing_files": [vars(m) for m in self.missing],
        }


@dataclass(frozen=True)
class SourceClip:
    """One clip of a source dataset: its name as the source spells it and how to decode it."""

    name: str
    origin: str
    load: Callable[[], np.ndarray]


@dataclass
class PrepareReport:
    """What `prepare` did."""

    source: str
    track: str
    source_path: str
    layout: str
    wanted: int = 0
    written: int = 0
    skipped: int = 0
    not_found: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every wanted clip is now in the layout."""
        return not self.not_found and not self.failed

    def to_json(self) -> dict[str, Any]:
        """Machine-readable summary."""
        return {
            "source": self.source,
            "track": self.track,
            "from": self.source_path,
            "layout": self.layout,
            "wanted": self.wanted,
            "written": self.written,
            "skipped": self.skipped,
            "not_found": len(self.not_found),
            "failed": len(self.failed),
            "not_found_files": self.not_found,
            "failed_files": self.failed,
        }


def referenced_files(data_dir: str | os.PathLike, track: str, variant: str = "main") -> list[str]:
    """Distinct `audio_filename`s of a released track file, in file order."""
    return list(dict.fromkeys(item.audio_filename for item in load_items(data_dir, track, variant)))


def check_track_audio(
    data_dir: str | os.PathLike,
    track: str,
    roots: AudioRoots,
    variant: str = "main",
    progress: bool = True,
) -> TrackCheck:
    """Resolve and probe every clip a track references."""
    names = referenced_files(data_dir, track, variant)
    missing: list[MissingAudio] = []
    rates: Counter[int] = Counter()
    for name in progress_bar(names, f"check {track}", progress, unit="file"):
        try:
            path = resolve_audio(track, name, roots)
        except AudioFileError as error:
            missing.append(MissingAudio(name, "not found", str(error), list(error.tried)))
            continue
        try:
            rates[probe_audio(path).sampling_rate] += 1
        except AudioFileError as error:
            missing.append(MissingAudio(name, "unreadable", str(error), [str(path)]))
    return TrackCheck(track, roots.root_for(track), len(names), missing, dict(rates))


def source_key(track: str, name: str) -> str:
    """Match key between released names and source names (extension and case ignored)."""
    parts = released_parts(track, name)
    stem = PurePosixPath(parts[-1]).stem.casefold()
    return f"{fold_name(parts[0])}/{stem}" if track == "music" else stem


def folder_clips(folder: Path, track: str) -> dict[str, SourceClip]:
    """Index the audio files of a local copy of a source dataset."""
    clips: dict[str, SourceClip] = {}
    files = sorted(
        p for p in folder.rglob("*") if p.suffix.lower() in AUDIO_SUFFIXES and p.is_file()
    )
    for path in files:
        # Music classes are folder names, so a file straight under the source has none.
        if track == "music" and path.parent == folder:
            continue
        name = f"{path.parent.name}/{path.name}" if track == "music" else path.name
        clip = SourceClip(name, str(path), partial(load_audio, path))
        clips.setdefault(source_key(track, name), clip)
    if not clips:
        expected = "<Class>/<file>" if track == "music" else "<file>"
        raise PrepareError(
            f"no {expected} audio files ({', '.join(sorted(AUDIO_SUFFIXES))}) under {folder}"
        )
    return clips


def _describe_columns(dataset: Any) -> str:
    import datasets

    kinds = {
        name: feature.dtype if isinstance(feature, datasets.Value) else type(feature).__name__
        for name, feature in dataset.features.items()
    }
    return ", ".join(f"{name} ({kind})" for name, kind in kinds.items())


def _audio_column(dataset: Any, label: str) -> str:
    import datasets

    # An Audio feature, or an undeclared {bytes, path} struct as parquet exports may leave.
    audio = [
        column
        for column, feature in dataset.features.items()
        if isinstance(feature, datasets.Audio) or (isinstance(feature, dict) and "bytes" in feature)
    ]
    if len(audio) == 1:
        return audio[0]
    if "audio" in audio:
        return "audio"
    raise PrepareError(
        f"{label}: expected one audio column (Audio or bytes/path); columns: "
        f"{_describe_columns(dataset)}"
    )


def _clip_names(dataset: Any, audio_column: str, name_column: str | None, label: str) -> list[str]:
    if name_column is not None:
        if name_column not in dataset.column_names:
            raise PrepareError(
                f"{label}: no column {name_column!r}; columns: {_describe_columns(dataset)}"
            )
        return [str(v) for v in dataset[name_column]]
    for column in NAME_COLUMNS:
        if column in dataset.column_names and getattr(dataset.features[column], "dtype", "") in (
            "string",
            "large_string",
        ):
            return list(dataset[column])
    import pyarrow.compute as pc

    # Reading the struct field from Arrow avoids materialising every clip's bytes.
    stored = pc.struct_field(dataset.with_format("arrow")[audio_column], "path").to_pylist()
    if stored and all(p and PurePosixPath(p).suffix for p in stored):
        return [PurePosixPath(p.replace("\\", "/")).name for p in stored]
    raise PrepareError(
        f"{label}: cannot find the clips' file names: no column among "
        f"{', '.join(NAME_COLUMNS)} and the audio column stores no file paths; columns: "
        f"{_describe_columns(dataset)}. Pass --name-column"
    )


def _decode_row(dataset: Any, audio_column: str, row: int, origin: str) -> np.ndarray:
    value = dataset[row][audio_column]
    if value.get("bytes"):
        return load_audio(io.BytesIO(value["bytes"]))
    if value.get("path") and Path(value["path"]).is_file():
        return load_audio(value["path"])
    raise AudioFileError(f"{origin}: the audio holds neither bytes nor a readable path")


def dataset_clips(
    dataset_or_dict: Any, track: str, label: str, name_column: str | None = None
) -> dict[str, SourceClip]:
    """Index the clips of a Hugging Face `Dataset` or `DatasetDict` (all splits)."""
    import datasets

    if isinstance(dataset_or_dict, datasets.DatasetDict):
        splits = list(dataset_or_dict.items())
    else:
        splits = [(str(dataset_or_dict.split or "data"), dataset_or_dict)]
    clips: dict[str, SourceClip] = {}
    for split, dataset in splits:
        where = f"{label} [{split}]"
        column = _audio_column(dataset, where)
        if isinstance(dataset.features[column], datasets.Audio):
            # datasets 5 decodes audio through torchcodec; soundfile decodes the raw bytes here.
            dataset = dataset.cast_column(column, datasets.Audio(decode=False))
        names = _clip_names(dataset, column, name_column, where)
        audio = dataset.select_columns([column])
        for row, name in enumerate(names):
            try:
                key = source_key(track, name)
            except ValueError as error:
                raise PrepareError(f"{where} row {row}: {error}") from None
            origin = f"{where} row {row}"
            load = partial(_decode_row, audio, column, row, origin)
            clips.setdefault(key, SourceClip(name, origin, load))
    if not clips:
        raise PrepareError(f"{label}: the dataset has no rows")
    return clips


def load_source(spec: str, track: str, name_column: str | None = None) -> dict[str, SourceClip]:
    """Index a source given as a local folder, a saved dataset folder or a Hub dataset id."""
    path = Path(spec).expanduser()
    if path.is_dir():
        if (path / "dataset_info.json").is_file() or (path / "dataset_dict.json").is_file():
            import datasets

            return dataset_clips(datasets.load_from_disk(str(path)), track, spec, name_column)
        return folder_clips(path, track)
    if path.exists():
        raise PrepareError(f"--from {spec!r} is a file; expected a folder or a dataset id")
    if not HUB_ID.fullmatch(spec):
        raise PrepareError(
            f"--from {spec!r}: no such folder, and not a Hugging Face dataset id like ashraq/esc50"
        )
    import datasets

    try:
        loaded = datasets.load_dataset(spec)
    except Exception as error:  # the Hub client raises many unrelated types
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise PrepareError(f"cannot load Hugging Face dataset {spec!r}: {first_line}") from None
    return dataset_clips(loaded, track, spec, name_column)


def write_clip(array: np.ndarray, target: Path) -> None:
    """Write a 16 kHz mono clip as 16-bit WAV, atomically."""
    # Resampling can overshoot full scale slightly; clip instead of wrapping around.
    samples = np.clip(array, -1.0, 1.0)
    with atomic_path(target) as tmp:
        sf.write(tmp, samples, TARGET_SAMPLING_RATE, subtype="PCM_16", format="WAV")


def prepare_audio(
    source: str,
    source_path: str,
    audio_root: str | os.PathLike,
    data_dir: str | os.PathLike | None = None,
    variant: str = "main",
    overwrite: bool = False,
    name_column: str | None = None,
    progress: bool = True,
) -> PrepareReport:
    """Write a source dataset's clips into the canonical 16 kHz mono layout under `audio_root`."""
    if source not in SOURCE_TRACKS:
        raise PrepareError(f"unknown source {source!r}; expected one of {', '.join(SOURCE_TRACKS)}")
    track = SOURCE_TRACKS[source]
    root = Path(audio_root).expanduser()
    if root.exists() and not root.is_dir():
        raise PrepareError(f"--audio-root {str(root)!r} is not a folder")
    # Read the questions first: a bad data_dir should fail before a long download.
    released = referenced_files(data_dir, track, variant) if data_dir is not None else None
    clips = load_source(source_path, track, name_column)
    if released is None:
        wanted = [
            (canonical_relpath(track, c.name).with_suffix(".wav"), k) for k, c in clips.items()
        ]
    else:
        wanted = [(canonical_relpath(track, n), source_key(track, n)) for n in released]
    report = PrepareReport(source, track, source_path, str(root / CANONICAL_DIRS[track]))
    report.wanted = len(wanted)
    for relpath, key in progress_bar(wanted, f"prepare {source}", progress, unit="file"):
        target = root / relpath
        if target.exists() and not overwrite:
            report.skipped += 1
            continue
        clip = clips.get(key)
        if clip is None:
            report.not_found.append(str(relpath))
            continue
        try:
            array = clip.load()
        except AudioFileError as error:
            report.failed.append(f"{clip.origin}: {error}")
            continue
        write_clip(array, target)
        report.written += 1
    return report
