"""Check every clip of a run before any inference: what a model cannot take is refused up front.

A truncated download (a clip of a few milliseconds) used to crash Qwen2-Audio inside
transformers only after every other generation had run, and clips holding NaN samples passed
silently. The rules, applied to all clips before the first `generate` call:

- **refused** (the run stops before inference, listing every such clip with its path and
  the fix): unreadable files, clips shorter than the model's minimum (fewer than
  `min_samples` at the model's rate; Qwen2-Audio crashes at 960 samples = 60 ms, runs at
  961), clips with NaN or infinite samples.
- **counted** (the clip runs as is; the count is logged and recorded in the results):
  all-zero (silent) clips, which are valid input but often a failed conversion; clips longer
  than the model's window (`max_samples`; 30 s for Whisper-style feature extractors), of
  which the model hears only the first window.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import soundfile as sf

from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.errors import ClipCheckError

FIX_HINT = (
    "Re-create the file from its source (`aqua audio prepare`, see docs/audio.md) or leave "
    "the item out (--samples); `aqua audio check` lists missing files"
)


@dataclass(frozen=True)
class ClipLimits:
    """What a model accepts: its sampling rate and the shortest and longest useful clip."""

    sampling_rate: int
    min_samples: int
    max_samples: int | None = None


@dataclass(frozen=True)
class ClipFacts:
    """What one clip holds: length at the model's rate, sample health and a content digest."""

    source: str
    samples: int
    finite: bool
    silent: bool
    digest: str


@dataclass
class ClipReport:
    """The outcome of checking a run's clips: facts per clip in input order, counted notes."""

    facts: list[ClipFacts] = field(default_factory=list)
    distinct: int = 0
    silent: list[str] = field(default_factory=list)
    over_window: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Counts recorded in the results: distinct clips checked, silent, over the window."""
        return {
            "clips_checked": self.distinct,
            "clips_silent": len(self.silent),
            "clips_over_window": len(self.over_window),
        }


def _file_key(audio: Mapping[str, Any]) -> tuple[str, int, int] | None:
    if not isinstance(audio, LazyAudio):
        return None
    try:
        stat = os.stat(audio.path)
    except OSError:
        return None  # inspect_clip names the unreadable file
    return audio.path, stat.st_size, stat.st_mtime_ns


def inspect_clip(audio: Mapping[str, Any], target_sr: int) -> ClipFacts:
    """Facts about one request clip (a LazyAudio file or an `array`/`sampling_rate` mapping)."""
    if isinstance(audio, LazyAudio):
        try:
            with open(audio.path, "rb") as handle:
                raw = handle.read()
            data, rate = sf.read(io.BytesIO(raw), dtype="float32", always_2d=True)
        except (sf.SoundFileError, OSError) as error:
            raise ClipCheckError(f"{audio.path}: unreadable audio ({error}). {FIX_HINT}") from None
        # The file's bytes identify the clip; decoding is deterministic from them.
        digest = hashlib.sha256(raw).hexdigest()
        frames = data.shape[0]
    else:
        data = np.asarray(audio["array"], dtype=np.float32)
        rate = int(audio["sampling_rate"])
        if data.ndim != 1:
            raise ClipCheckError(f"audio arrays must be mono (1-D), got shape {data.shape}")
        frames = data.shape[0]
        digest = hashlib.sha256(
            rate.to_bytes(8, "little") + np.ascontiguousarray(data).tobytes()
        ).hexdigest()
    return ClipFacts(
        source=audio.path if isinstance(audio, LazyAudio) else "<in-memory array>",
        samples=round(frames * target_sr / rate),
        finite=bool(np.isfinite(data).all()),
        silent=not bool(np.any(data)),
        digest=digest,
    )


def check_clips(clips: Iterable[Mapping[str, Any]], limits: ClipLimits) -> ClipReport:
    """Inspect every clip once; ClipCheckError listing all refused clips, else the report."""
    report = ClipReport()
    by_file: dict[Any, ClipFacts] = {}
    refused: list[str] = []
    min_ms = 1000 * limits.min_samples / limits.sampling_rate
    for audio in clips:
        key = _file_key(audio)
        facts = by_file.get(key) if key is not None else None
        known = facts is not None
        if facts is None:
            facts = inspect_clip(audio, limits.sampling_rate)
            if key is not None:
                by_file[key] = facts
        report.facts.append(facts)
        if known:
            continue  # the items of one clip share its file: judged once
        report.distinct += 1
        if not facts.finite:
            refused.append(f"{facts.source}: holds NaN or infinite samples")
        elif facts.samples < limits.min_samples:
            ms = 1000 * facts.samples / limits.sampling_rate
            refused.append(
                f"{facts.source}: {ms:.1f} ms long, shorter than the model's minimum of "
                f"{min_ms:.1f} ms (a truncated file?)"
            )
        if facts.silent:
            report.silent.append(facts.source)
        if limits.max_samples and facts.samples > limits.max_samples:
            report.over_window.append(facts.source)
    if refused:
        shown = "; ".join(refused[:10])
        more = f" (and {len(refused) - 10} more)" if len(refused) > 10 else ""
        raise ClipCheckError(
            f"{len(refused)} clip(s) cannot be run, nothing was generated: {shown}{more}. "
            f"{FIX_HINT}"
        )
    return report
