"""Find, probe and load the AQUA-Bench audio clips as 16 kHz mono arrays."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from math import gcd
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import numpy as np
import soundfile as sf

from aqua_tasks.core.data import BUILT_TRACKS, check_track
from aqua_tasks.core.settings_place import settings_place
from aqua_tasks.errors import AquaDataError, AudioFileError

TARGET_SAMPLING_RATE = 16000

# Canonical layout under an audio root: what `aqua audio prepare` writes and what the resolver
# tries first. Each is the tail of the released `audio_filename`, minus the authors' machine.
CANONICAL_DIRS: dict[str, str] = {
    "animal": "ESC-50-master/audio_16k",
    "vocal": "vocalsound_16k/audio_16k",
    "music": "music_dataset",
    "mmau": "test-mini-audios",
}
# Source dataset that provides each released track (the `--source` of `aqua audio prepare`).
TRACK_SOURCES: dict[str, str] = {"animal": "esc50", "vocal": "vocalsound", "music": "music"}
SETTING_KEYS: dict[str, str] = {
    track: f"{track}_audio_root" for track in (*TRACK_SOURCES, *BUILT_TRACKS)
}


@dataclass(frozen=True)
class AudioRoots:
    """Where the clips of each track live: a per-track root, else the shared `audio_root`."""

    audio_root: str | None = None
    animal: str | None = None
    music: str | None = None
    vocal: str | None = None
    mmau: str | None = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None) -> AudioRoots:
        """Read `audio_root` and `<track>_audio_root` from lm-eval metadata (or any mapping)."""
        settings = settings or {}
        values: dict[str, str | None] = {}
        for field_name, key in [("audio_root", "audio_root"), *SETTING_KEYS.items()]:
            value = settings.get(key)
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise ValueError(f"{key} must be a folder path, got {type(value).__name__}")
            values[field_name] = os.path.expanduser(os.fspath(value)) if value else None
        return cls(**values)

    def root_for(self, track: str) -> str | None:
        """The root to search for a track's clips, or None when none is configured."""
        return getattr(self, check_track(track)) or self.audio_root


@dataclass(frozen=True)
class AudioInfo:
    """Header facts of an audio file."""

    path: str
    sampling_rate: int
    channels: int
    frames: int

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return self.frames / self.sampling_rate


def fold_name(name: str) -> str:
    """Compare key for folder names: case, spaces, underscores and hyphens ignored."""
    return re.sub(r"[\s_\-]+", "", name).casefold()


def relative_parts(audio_filename: str) -> tuple[str, ...]:
    """A built track's `audio_filename` as parts relative to its audio root, `.` dropped.

    The file is written by aqua build from a source's own paths, so it is not trusted: an
    absolute path or a `..` part would read outside the audio root and is refused.
    """
    path = PurePosixPath(audio_filename.replace("\\", "/"))
    parts = tuple(part for part in path.parts if part != ".")
    if path.is_absolute() or re.match(r"^[A-Za-z]:", audio_filename) or ".." in parts:
        raise AquaDataError(
            f"audio_filename {audio_filename!r} escapes its audio root: a built track's "
            "audio path must be relative (e.g. ./test-mini-audios/<id>.wav), with no '..'"
        )
    if not parts:
        raise AquaDataError(f"audio_filename {audio_filename!r} has no file name")
    return parts


def released_parts(track: str, audio_filename: str) -> tuple[str, ...]:
    """The parts of a released `audio_filename` that identify the clip."""
    check_track(track)
    if track in BUILT_TRACKS:
        return (relative_parts(audio_filename)[-1],)
    # The release uses POSIX paths; a Windows-edited copy may carry backslashes.
    parts = PurePosixPath(audio_filename.replace("\\", "/")).parts
    if not parts or not parts[-1]:
        raise ValueError(f"audio_filename {audio_filename!r} has no file name")
    if track != "music":
        return _inside_root(audio_filename, (parts[-1],))
    if len(parts) < 2 or parts[-2] == "/":
        raise ValueError(f"music audio_filename {audio_filename!r} must end in <Class>/<file>")
    return _inside_root(audio_filename, (parts[-2], parts[-1]))


def _inside_root(audio_filename: str, parts: tuple[str, ...]) -> tuple[str, ...]:
    # The identifying parts are joined under the audio root: a `..` there (a class folder
    # of `..`) would reach outside it, and the clip would be read, or sent to an API, from
    # wherever it points.
    if any(part in ("..", ".") for part in parts):
        raise AquaDataError(
            f"audio_filename {audio_filename!r} escapes its audio root: its "
            f"{'class folder and ' if len(parts) > 1 else ''}file name may not be '..' or '.'"
        )
    return parts


def canonical_relpath(track: str, audio_filename: str) -> PurePosixPath:
    """Where a clip sits in the canonical layout, relative to the audio root."""
    return PurePosixPath(CANONICAL_DIRS[track], *released_parts(track, audio_filename))


def _subdir_index(parent: Path) -> Mapping[str, str]:
    try:
        stat = parent.stat()
    except OSError:
        return {}
    # Keyed on mtime and link count so that folders created later (by `prepare`) are seen.
    return _cached_subdir_index(str(parent), stat.st_mtime_ns, stat.st_nlink)


@functools.lru_cache(maxsize=256)
def _cached_subdir_index(parent: str, mtime_ns: int, nlink: int) -> Mapping[str, str]:
    index: dict[str, str] = {}
    try:
        with os.scandir(parent) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.is_dir():
                    index.setdefault(fold_name(entry.name), entry.name)
    except OSError:
        return {}
    return index


def candidate_paths(track: str, audio_filename: str, root: str | os.PathLike | None) -> list[Path]:
    """Paths to try, in order, for a released `audio_filename` under `root`."""
    parts = released_parts(track, audio_filename)
    if track in BUILT_TRACKS:
        return _built_candidates(audio_filename, root)
    if root is None:
        return [Path(audio_filename).expanduser()]
    base = Path(root).expanduser()
    if track == "animal":
        (name,) = parts
        # Canonical, then stock ESC-50 (44.1 kHz `audio/`), then a flat folder of clips.
        folders = ["ESC-50-master/audio_16k", "audio_16k", "ESC-50-master/audio", "audio", ""]
        return [base / folder / name for folder in folders]
    if track == "vocal":
        (name,) = parts
        return [base / folder / name for folder in ("vocalsound_16k/audio_16k", "audio_16k", "")]
    class_name, name = parts
    paths = []
    for parent in (base / "music_dataset", base):
        paths.append(parent / class_name / name)
        # Users' copies may spell the class folder differently (`Flute` vs released `flute`).
        actual = _subdir_index(parent).get(fold_name(class_name))
        if actual is not None and actual != class_name:
            paths.append(parent / actual / name)
    return paths


def _built_candidates(audio_filename: str, root: str | os.PathLike | None) -> list[Path]:
    # Relative to the root only (never the working folder): the path as written, then a
    # flat folder of clips. Both stay inside the root, also after normalisation.
    if root is None:
        return []
    parts = relative_parts(audio_filename)
    base = Path(os.path.normpath(Path(root).expanduser().absolute()))
    paths = [base.joinpath(*parts), base / parts[-1]]
    for path in paths:
        inside = os.path.normpath(path)
        if os.path.commonpath([inside, base]) != str(base):
            raise AquaDataError(f"audio_filename {audio_filename!r} escapes audio root {root!r}")
    return list(dict.fromkeys(paths))


def fix_hint(track: str) -> str:
    """The settings and the command that make a track's missing clips findable."""
    if track in BUILT_TRACKS:
        return (
            f"Set {SETTING_KEYS[track]} (or audio_root) in {settings_place()} to the folder "
            f"that holds {CANONICAL_DIRS[track]}/ (downloaded from the MMAU release; see "
            "docs/build.md)."
        )
    layout = CANONICAL_DIRS[track] + ("/<Class>" if track == "music" else "")
    return (
        f"Set audio_root (or {SETTING_KEYS[track]}) in {settings_place()} to the folder that "
        f"holds {layout}/, or build that layout with `aqua audio prepare --source "
        f"{TRACK_SOURCES[track]} --from <source> --audio-root <root>` (see docs/audio.md)."
    )


def resolve_audio(track: str, audio_filename: str, roots: AudioRoots) -> Path:
    """The existing file for a released `audio_filename`; AudioFileError if none."""
    root = roots.root_for(track)
    tried = candidate_paths(track, audio_filename, root)
    for path in tried:
        if path.is_file():
            return path
    where = "no audio root configured" if root is None else f"audio root {root!r}"
    if root is not None and not Path(root).expanduser().is_dir():
        where += " does not exist"
    raise AudioFileError(
        f"{track} audio {audio_filename!r} not found ({where}); tried: "
        f"{', '.join(str(p) for p in tried)}. {fix_hint(track)}",
        audio_filename=audio_filename,
        tried=tuple(str(p) for p in tried),
    )


def _unreadable(name: str, error: Exception) -> AudioFileError:
    return AudioFileError(f"audio file {name!r} is unreadable: {error}", audio_filename=name)


def probe_audio(path: str | os.PathLike) -> AudioInfo:
    """Read an audio file's header only; AudioFileError if it is not readable audio."""
    name = os.fspath(path)
    try:
        info = sf.info(name)
    except (sf.SoundFileError, OSError) as error:
        raise _unreadable(name, error) from None
    if info.frames <= 0:
        raise AudioFileError(f"audio file {name!r} holds no audio frames", audio_filename=name)
    return AudioInfo(name, info.samplerate, info.channels, info.frames)


def load_audio(
    source: str | os.PathLike | BinaryIO, target_sr: int = TARGET_SAMPLING_RATE
) -> np.ndarray:
    """Decode an audio file (path or binary file object) to float32 mono at `target_sr`."""
    if not isinstance(target_sr, int) or target_sr <= 0:
        raise ValueError(f"target_sr must be a positive integer, got {target_sr!r}")
    name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "<audio bytes>"
    try:
        data, rate = sf.read(source, dtype="float32", always_2d=True)
    except (sf.SoundFileError, OSError) as error:
        raise _unreadable(name, error) from None
    return resample(data.mean(axis=1, dtype=np.float32), rate, target_sr)


def resample(wave: np.ndarray, rate: int, target_sr: int = TARGET_SAMPLING_RATE) -> np.ndarray:
    """A mono waveform at `rate` Hz as contiguous float32 at `target_sr` Hz."""
    if not isinstance(rate, int) or rate <= 0:
        raise ValueError(f"rate must be a positive integer, got {rate!r}")
    if rate != target_sr and wave.size:
        divisor = gcd(rate, target_sr)
        up, down = target_sr // divisor, rate // divisor
        taps = _lowpass(up, down)
        if np.issubdtype(wave.dtype, np.floating):
            taps = taps.astype(wave.dtype)  # what resample_poly itself does to its filter
        # Imported here: scipy.signal takes ≈ 1 s to import, and most runs never resample.
        from scipy.signal import resample_poly

        wave = resample_poly(wave, up, down, window=taps)
    return np.ascontiguousarray(wave, dtype=np.float32)


@functools.lru_cache(maxsize=32)
def _lowpass(up: int, down: int) -> np.ndarray:
    # resample_poly's own default filter (Kaiser, beta 5, 10 zero crossings per side), designed
    # once per ratio: redesigning it for every clip took a third of a 2 s clip's resampling.
    from scipy.signal import firwin

    max_rate = max(up, down)
    taps = firwin(2 * 10 * max_rate + 1, 1.0 / max_rate, window=("kaiser", 5.0))
    taps.flags.writeable = False
    return taps


class LazyAudio(Mapping[str, Any]):
    """An lm-eval audio argument that decodes its file on every `["array"]` access."""

    __slots__ = ("_path", "_sampling_rate")
    _KEYS = ("array", "sampling_rate", "path")

    def __init__(self, path: str | os.PathLike, sampling_rate: int = TARGET_SAMPLING_RATE):
        self._path = os.fspath(path)
        self._sampling_rate = int(sampling_rate)

    @property
    def path(self) -> str:
        """The audio file this argument reads."""
        return self._path

    @property
    def sampling_rate(self) -> int:
        """The rate `["array"]` is resampled to."""
        return self._sampling_rate

    def __getitem__(self, key: str) -> Any:
        if key == "array":
            # Not cached: lm-eval keeps every request alive until the run ends.
            return load_audio(self._path, self._sampling_rate)
        if key == "sampling_rate":
            return self._sampling_rate
        if key == "path":
            return self._path
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._KEYS)

    def __len__(self) -> int:
        return len(self._KEYS)

    def __eq__(self, other: object) -> bool:
        # Mapping's own equality would decode both files and compare arrays.
        if not isinstance(other, LazyAudio):
            return NotImplemented
        return (self._path, self._sampling_rate) == (other._path, other._sampling_rate)

    def __hash__(self) -> int:
        return hash((self._path, self._sampling_rate))

    def __repr__(self) -> str:
        return f"LazyAudio({self._path!r}, {self._sampling_rate} Hz)"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyAudio, (self._path, self._sampling_rate))


def audio_for_item(item_track: str, audio_filename: str, roots: AudioRoots) -> LazyAudio:
    """Resolve and probe a question's clip; the returned mapping decodes it on demand."""
    path = resolve_audio(item_track, audio_filename, roots)
    probe_audio(path)
    return LazyAudio(path)
