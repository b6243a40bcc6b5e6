"""How `aqua-audiolm` groups requests for generation: one job per request, batches of jobs.

A request's gen_kwargs become its job's stop strings and token limit; decoding is always
greedy, so sampling settings are reported as ignored. Jobs with different stop settings
never share a batch: one `generate` call takes one setting.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from lm_eval.api.instance import Instance

from eval_common.cli import parse_bool

DEFAULT_MAX_GEN_TOKS = 256
# Sampling settings a task may carry; decoding here is always greedy.
SAMPLING_KEYS = frozenset({"do_sample", "temperature", "top_p", "top_k"})
SETTING_KEYS = frozenset({"until", "max_gen_toks"})


@dataclass
class Job:
    """One request on its way through generation."""

    index: int
    request: Instance
    prompt: str
    audio: list[Mapping[str, Any]]
    until: tuple[str, ...]
    max_new: int
    seconds: float = 0.0
    key: str = ""


def batches(jobs: list[Job], size: int) -> Iterator[list[Job]]:
    """Consecutive jobs up to `size` at a time, never mixing stop settings."""
    start = 0
    while start < len(jobs):
        batch = [jobs[start]]
        while (
            len(batch) < size
            and start + len(batch) < len(jobs)
            and (jobs[start + len(batch)].until, jobs[start + len(batch)].max_new)
            == (batch[0].until, batch[0].max_new)
        ):
            batch.append(jobs[start + len(batch)])
        start += len(batch)
        yield batch


def stop_strings(gen_kwargs: Mapping[str, Any]) -> list[str]:
    """A task's `until`, one string or several, as a list."""
    until = gen_kwargs.get("until", [])
    return [until] if isinstance(until, str) else list(until or [])


def ignored_gen_kwargs(gen_kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """The settings greedy decoding ignores, when any would have changed it (else empty)."""
    unused = sorted(set(gen_kwargs) - SETTING_KEYS - SAMPLING_KEYS)
    ignored = tuple(sorted(set(gen_kwargs) - SETTING_KEYS))
    # Sampling values without do_sample=true would not sample either: nothing to warn about.
    if parse_bool("do_sample", gen_kwargs.get("do_sample", False)) or unused:
        return ignored
    return ()
