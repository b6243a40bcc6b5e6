"""lm-eval's `--use_cache` for audio requests: cache keys from a digest of the audio content.

lm-eval 0.4.13 keys its response cache on a JSON dump of each request's arguments; its JSON
fallback (`lm_eval.api.model._multimodal_cache_default`) knows bytes and images only, so an
audio request (`{"audio": [LazyAudio | {"array": ndarray, ...}]}`) raises `TypeError` before
anything runs. `install()` extends that fallback: a clip becomes the SHA-256 of its content
(file bytes for a LazyAudio, samples and rate for an array), so the same clip gives the same
key wherever it lives and a changed clip never reuses a stale reply. Everything else is left
to lm-eval's own fallback.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.core.manifest import sha256_file

logger = logging.getLogger(__name__)
_HOOK_NAME = "_multimodal_cache_default"


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


def install() -> bool:
    """Make lm-eval's cache keys accept audio; True if its hook was found (idempotent)."""
    from lm_eval.api import model as lm_model

    current = getattr(lm_model, _HOOK_NAME, None)
    if current is None:
        logger.warning(
            "lm-eval has no %s: --use_cache keys for audio requests are lm-eval's own",
            _HOOK_NAME,
        )
        return False
    if not hasattr(current, "wrapped"):
        setattr(lm_model, _HOOK_NAME, audio_cache_default(current))
    return True
