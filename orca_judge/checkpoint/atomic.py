"""Atomic checkpoint folders: readers see the old or the new version, never a half-written one.

A folder is written as a temporary sibling and swapped in with two renames; files go through
the project's one writer (`eval_common.outputs`). What a killed writer leaves behind (the
temporaries, or a `.NAME.old` between the two renames) is recovered or removed here too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from eval_common.errors import OutputError
from eval_common.outputs import FULL_DISK, write_text

TMP_TAG = "tmp-"  # marks the temporary siblings atomic_dir creates, so they can be cleaned up
# The one writer's temporaries (`.NAME.PID.XXXXXXXX.tmp`) and the resume state's older
# `.state.pt.tmp`: a user's own `.notes.tmp` is not ours to delete.
TEMPORARY = r"\..+\.\d+\.[0-9a-f]{8}\.tmp|\.state\.pt\.tmp"


@contextlib.contextmanager
def atomic_dir(target: str | Path, owned: Collection[str] | None = None) -> Iterator[Path]:
    """Yield a temporary sibling directory that replaces `target` only if the block succeeds.

    With `owned` (the top-level names the writer owns), every other entry already in `target`
    is moved into the new version first: replacing a folder never deletes files it did not
    write. A full disk raises OutputError("disk full writing ...").
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.{TMP_TAG}", dir=target.parent))
    try:
        yield tmp
    except BaseException as error:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(error, OSError) and error.errno in FULL_DISK:
            raise OutputError(f"disk full writing {target}") from None
        raise
    # Renames within one folder: once the new version is complete, the rest moves across.
    if owned is not None and target.is_dir():
        for entry in target.iterdir():
            if entry.name not in owned and not (tmp / entry.name).exists():
                os.replace(entry, tmp / entry.name)
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.replace(target, old)
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Replace a text file in one step: readers see the old or the new content, never a mix."""
    write_text(path, text)


def json_text(data: Any) -> str:
    """The JSON text every checkpoint file is written as: indented, keys sorted, newline-ended."""
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def atomic_write_json(path: str | Path, data: Any) -> None:
    """Replace a JSON file atomically (serialised first, so a bad value leaves it untouched)."""
    atomic_write_text(path, json_text(data))


def recover_interrupted(target: str | Path) -> None:
    """Restore a checkpoint left as `.NAME.old` by a crash between the two renames."""
    target = Path(target)
    old = target.with_name(f".{target.name}.old")
    if not target.exists() and old.exists():
        os.replace(old, target)


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def clean_temporary_files(folder: str | Path) -> list[Path]:
    """Remove the hidden temporary files that a killed atomic file write left in `folder`."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    stale = [p for p in folder.iterdir() if re.fullmatch(TEMPORARY, p.name) and p.is_file()]
    for entry in stale:
        _remove(entry)
    return stale


def clean_interrupted(target: str | Path) -> list[Path]:
    """Recover `target`, then remove temporaries that a killed writer left beside and inside it.

    Beside it: atomic_dir's `.NAME.tmp-XXXXXXXX` folders (`.NAME.XXXXXXXX` before the tag)
    and a stale `.NAME.old`; inside it: hidden `.FILE...tmp` files. Call it only when no
    other process writes `target`. Returns what was removed.
    """
    target = Path(target)
    recover_interrupted(target)
    stem = re.escape(target.name)
    pattern = rf"\.{stem}\.(({TMP_TAG})?[a-z0-9_]{{8}}|old)"
    beside = []
    if target.parent.is_dir():
        beside = [p for p in target.parent.iterdir() if re.fullmatch(pattern, p.name)]
    for entry in beside:
        _remove(entry)
    return beside + clean_temporary_files(target)
