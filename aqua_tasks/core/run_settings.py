"""Check a run's `--metadata` for AQUA tasks before lm-eval spends time indexing and loading."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path

from aqua_tasks.core.data import BUILT_TRACKS, data_help, file_stem, has_track_file
from aqua_tasks.core.docs import audio_enabled
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR, get_extractor_name
from aqua_tasks.core.extract.fallback import fallback_settings
from aqua_tasks.core.task_name import OPEN_FAMILY, TaskName
from aqua_tasks.errors import AquaDataError
from eval_common.cli import parse_bool

AQUA_METADATA_KEYS: tuple[str, ...] = (
    "data_dir",
    "audio_root",
    "animal_audio_root",
    "music_audio_root",
    "vocal_audio_root",
    "mmau_audio_root",
    "extractor",
    "exclude_defective",
    "audio",
    "judge",
    "judge_threshold",
    # The open tasks' judge settings (backbone, device, batch_size, ...) of their orca entry.
    "orca",
    # The LLM fallback's client (extractor aqua-rules+llm): model, base_url or backend hf, ...
    "fallback",
)
AUDIO_ROOT_KEYS = AQUA_METADATA_KEYS[1:6]


def selects_aqua_tasks(tasks: Sequence[str] | str | None) -> bool:
    """Whether a --tasks value names AQUA tasks, the `aqua` group or a pattern over them."""
    if not tasks:
        return False
    names = tasks.split(",") if isinstance(tasks, str) else [t for x in tasks for t in x.split(",")]
    return any(name.strip().startswith("aqua") for name in names)


def check_aqua_metadata(metadata: Mapping | None) -> None:
    """Raise AquaDataError naming the key and the fix for settings an AQUA run cannot use."""
    metadata = dict(metadata or {})
    for key in metadata:
        if key in AQUA_METADATA_KEYS:
            continue
        # Other tasks of the same run may use other keys: only near-misses are errors.
        close = difflib.get_close_matches(key, AQUA_METADATA_KEYS, n=1, cutoff=0.8)
        if close:
            raise AquaDataError(f"unknown --metadata key {key!r}; did you mean {close[0]!r}?")
    data_dir = metadata.get("data_dir")
    if not data_dir:
        raise AquaDataError(f"no data_dir given. {data_help()}")
    if not Path(str(data_dir)).expanduser().is_dir():
        raise AquaDataError(f"data_dir {str(data_dir)!r} is not a directory. {data_help()}")
    try:
        get_extractor_name(str(metadata.get("extractor") or DEFAULT_EXTRACTOR))
    except ValueError as error:
        raise AquaDataError(f"--metadata extractor: {error}") from None
    try:
        fallback_settings(metadata)
    except ValueError as error:
        raise AquaDataError(f"--metadata {error}") from None
    for key in ("audio", "exclude_defective"):
        try:
            parse_bool(key, metadata.get(key, False))
        except ValueError as error:
            raise AquaDataError(f"--metadata {error}") from None
    if audio_enabled(metadata) and not any(metadata.get(k) for k in AUDIO_ROOT_KEYS):
        raise AquaDataError(
            "no audio_root given: set audio_root (or animal_/music_/vocal_/mmau_audio_root) in "
            "--metadata to the folder holding the clips (`aqua audio check` tells what is "
            'missing), or pass "audio": false for an explicit text-only run'
        )


def unbuilt_matches(
    patterns: Sequence[str], matches: Sequence[str], metadata: Mapping | None
) -> dict[str, str]:
    """Built-track tasks a glob matched whose file data_dir lacks → why each is left out.

    `--tasks 'aqua_*'` must keep running for a user with the released tracks only; a task
    named outright (`--tasks aqua_mmau`) is never left out, so its missing file is an error.
    """
    named = {p.strip() for p in patterns}
    data_dir = (metadata or {}).get("data_dir") if isinstance(metadata, Mapping) else None
    left_out = {}
    tasks = [(t, TaskName.for_questions(t).format()) for t in BUILT_TRACKS]
    tasks += [(t, TaskName(OPEN_FAMILY, t).format()) for t in BUILT_TRACKS]
    for track, task in tasks:
        if task in matches and task not in named and not has_track_file(data_dir, track):
            left_out[task] = (
                f"{task} left out of {', '.join(sorted(named))}: data_dir {str(data_dir)!r} has "
                f"no {file_stem(track)}.json (build it with `aqua build --source {track}`, "
                "docs/build.md)"
            )
    return left_out
