"""Where a user gives a run's AQUA settings, so that every hint names the harness's place.

lm-eval takes the settings as `--metadata` JSON; lmms-eval has no such flag and takes the same
JSON from the `AQUA_METADATA` environment variable. The lmms-eval adapter builds its tasks and
their docs inside `settings_given_in(LMMS_EVAL_PLACE)`; a hint that tells the user to set a
key asks `settings_place()` (or `settings_example`) where, instead of naming lm-eval's flag.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

LM_EVAL_PLACE = "--metadata"
LMMS_EVAL_PLACE = "AQUA_METADATA"
_PLACE: ContextVar[str] = ContextVar("aqua_settings_place", default=LM_EVAL_PLACE)


def settings_place() -> str:
    """`--metadata` (lm-eval, the default) or `AQUA_METADATA` (inside the lmms-eval adapter)."""
    return _PLACE.get()


def settings_example(settings_json: str) -> str:
    """The settings as the user passes them here: `--metadata '…'` or `AQUA_METADATA='…'`."""
    place = settings_place()
    return (
        f"{place}='{settings_json}'" if place == LMMS_EVAL_PLACE else f"{place} '{settings_json}'"
    )


@contextmanager
def settings_given_in(place: str) -> Iterator[None]:
    """Hints raised inside name `place` as where the settings are given."""
    token = _PLACE.set(place)
    try:
        yield
    finally:
        _PLACE.reset(token)
