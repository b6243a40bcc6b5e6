"""The one rule of every writer in the project: nothing a command reads or did not write is lost.

- An output file is refused when it is one of the command's inputs (symlinks resolved), when
  it would replace a file inside an input folder, and when it names a folder.
- An output folder is refused when it is a file, the current folder (or holds it), an input,
  inside an input, or holds an input under a name the command writes; and, when it is not
  empty, unless it is this command's own output (its marker file `MARKER` names the command,
  or it holds only names the command writes) or the user passed an explicit overwrite flag.
  Writing into a folder only ever replaces the files the command writes; nothing else in it
  is deleted.
- Files are written atomically: a temporary sibling moved over the target, removed on any
  failure; a full disk is one line, "disk full writing X".
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from eval_common.errors import OutputError
from eval_common.inputs import read_json

MARKER = ".written-by.json"  # what a command leaves in a folder it wrote, naming itself
# Errors that mean the disk (or the user's quota) is full.
FULL_DISK = frozenset({errno.ENOSPC, errno.EDQUOT})


def _resolved(path: str | os.PathLike) -> Path:
    return Path(path).expanduser().resolve()


def _inside(path: Path, folder: Path) -> bool:
    return path != folder and path.is_relative_to(folder)


def _existing_inputs(inputs: Iterable[str | os.PathLike | None]) -> list[tuple[Path, Path]]:
    return [(Path(i), _resolved(i)) for i in inputs if i is not None and str(i) != ""]


def check_output_file(
    path: str | os.PathLike, *, inputs: Iterable[str | os.PathLike | None] = (), flag: str
) -> Path:
    """`path` as a file this command may write, or OutputError saying why not (`flag` names it)."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{flag} {path} is a folder; name a file to write")
    target = _resolved(path)
    for given, source in _existing_inputs(inputs):
        if target == source:
            raise OutputError(
                f"{flag} {path} is also an input ({given}); writing it would destroy it, "
                "choose another file"
            )
        if source.is_dir() and _inside(target, source) and target.exists():
            raise OutputError(
                f"{flag} {path} would replace a file inside the input folder {given}; "
                "choose a file outside it (or a new name)"
            )
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{flag} {path}: {parent} is a file, not a folder")
            break
    return path


def _matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def own_output(folder: Path, command: str, owned: Iterable[str] = ()) -> bool:
    """Whether `folder` is `command`'s output: marked by it, or holding only names it writes."""
    entries = [e.name for e in folder.iterdir() if e.name != MARKER]
    marker = folder / MARKER
    if marker.is_file():
        try:
            if read_json(marker).get("command") == command:
                return True
        except (ValueError, AttributeError, OSError):
            pass  # an unreadable marker proves nothing; fall back on the names
    patterns = list(owned)
    return all(_matches(n, patterns) for n in entries)


def check_output_folder(
    path: str | os.PathLike,
    *,
    command: str,
    flag: str,
    inputs: Iterable[str | os.PathLike | None] = (),
    owned: Iterable[str] = (),
    overwrite: bool = False,
    overwrite_flag: str = "--overwrite",
    is_own: Callable[[Path], bool] | None = None,
) -> Path:
    """`path` as a folder `command` may write into, or OutputError saying why not.

    `owned`: glob patterns of the top-level names the command writes; `is_own` replaces the
    marker-or-names test (e.g. "a judge checkpoint").
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{flag} {path} is a file; name a folder to write")
    target = _resolved(path)
    cwd = Path.cwd().resolve()
    if target == cwd or _inside(cwd, target):
        raise OutputError(
            f"{flag} {path} is the current folder or holds it; name a folder of its own"
        )
    patterns = list(owned)
    for given, source in _existing_inputs(inputs):
        # An input inside the folder is only at risk when it bears a name the command writes.
        replaced = source.parent == target and _matches(source.name, patterns)
        if target == source or _inside(target, source) or replaced:
            raise OutputError(
                f"{flag} {path} overlaps the input {given}; choose a folder outside the inputs"
            )
    if not path.is_dir() or overwrite or not any(path.iterdir()):
        return path
    own = is_own(path) if is_own is not None else own_output(path, command, owned)
    if not own:
        shown = sorted(e.name for e in path.iterdir())
        listed = ", ".join(shown[:3]) + (", …" if len(shown) > 3 else "")
        raise OutputError(
            f"{flag} {path} exists and is not empty (it holds {listed}) and is not {command}'s "
            f"own output; pass {overwrite_flag} to write {command}'s files into it (nothing "
            "else in it is deleted), or choose a new folder"
        )
    return path


def mark_output_folder(folder: str | os.PathLike, command: str) -> None:
    """Leave the marker that makes `folder` recognisable as `command`'s own output."""
    write_text(Path(folder) / MARKER, json.dumps({"command": command}) + "\n")


def temporary_sibling(path: Path) -> Path:
    """A unique hidden `.NAME.PID.XXXXXXXX.tmp` beside `path` (one file system: atomic rename)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path to write; it replaces `path` only if the block succeeds.

    The temporary is removed on any failure; a full disk raises OutputError("disk full ...").
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        if error.errno in FULL_DISK:
            raise OutputError(f"disk full writing {path}") from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _special(path: Path) -> bool:
    # A device or pipe (/dev/stdout, a FIFO) is written in place: it cannot be replaced.
    return path.exists() and not path.is_file() and not path.is_dir()


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Replace a file in one step: readers see the old or the new content, never a mix."""
    path = Path(path)
    if _special(path):
        with open(path, "wb") as fh:
            fh.write(data)
        return path
    with atomic_path(path) as tmp:
        # os.open honours the umask, unlike mkstemp's private 0600 files.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    return path


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Replace a UTF-8 text file in one step (encoded first, so bad text leaves it untouched)."""
    return write_bytes(path, text.encode("utf-8"))


def append_text(path: str | os.PathLike, text: str) -> Path:
    """Add `text` at the end of a file (created if missing), replacing it in one step."""
    path = Path(path)
    data = text.encode("utf-8")
    if _special(path):
        with open(path, "ab") as fh:
            fh.write(data)
        return path
    return write_bytes(path, (path.read_bytes() if path.is_file() else b"") + data)
