"""lm-eval's `--use_cache` for audio requests: cache keys from a digest of the audio content.

lm-eval 0.4.13 keys its response cache on a JSON dump of each request's arguments; the JSON
fallback it uses for multimodal arguments knows bytes and images only, so an audio request
(`{"audio": [LazyAudio | {"array": ndarray, ...}]}`) raises `TypeError` before anything runs.
`audio_cache_default` extends a fallback: a clip becomes the SHA-256 of its content (file bytes
for a LazyAudio, samples and rate for an array), so the same clip gives the same key wherever it
lives and a changed clip never reuses a stale reply; everything else is left to the fallback.
Pure: no harness is imported or touched here; the plugin edge puts it in place of lm-eval's
(`eval_plugins.lm_eval.compat.patch_cache_keys`, the one place that names lm-eval's internal).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.core.manifest import sha256_file


def audio_cache_default(fallback: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A JSON `default` that digests clips and arrays, deferring all else to `fallback`."""

    def default(obj: Any) -> Any:
        if isinstance(obj, LazyAudio):
            return {"__audio_file_sha256__": sha256_file(obj.path), "sr": obj.sampling_rate}
        if isinstance(obj, np.ndarray):
            data = np.ascontiguousarray(obj)
            digest = hashlib.sha256(f"{data.dtype.str}{data.shape}".encode())
            digest.update(data.tobytes())
            return {"__ndarray_sha256__": digest.hexdigest()}
        if isinstance(obj, np.generic):
            return obj.item()
        return fallback(obj)

    default.wrapped = fallback  # type: ignore[attr-defined]
    return default
