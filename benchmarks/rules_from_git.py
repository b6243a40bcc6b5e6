"""An earlier `aqua-rules`, read from git with its own lexicon, to measure against in one run.

The extractor package at a commit is copied into a temporary package of its own name
(`aqua_rules_3_1`, …) so that it runs beside today's code; its modules import each other, and
its `languages.py` reads the `lexicon.json` copied beside it, never today's.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "aqua_tasks/core/extract"


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True,
                          text=True)  # fmt: skip
    return done.stdout


def last_commit_with(version: str) -> str:
    """The last commit whose registry still recorded `aqua-rules` at `version`."""
    removed = _git("log", "-1", "--format=%H", "-S", f'"aqua-rules": "{version}"', "--",
                   f"{PACKAGE}/registry.py").strip()  # fmt: skip
    if not removed:
        raise LookupError(f"no commit in git history records aqua-rules {version}")
    return f"{removed}^"


def rules_from_git(version: str, ref: str | None = None) -> tuple[str, ModuleType]:
    """(short commit, its `rules` module) of `aqua-rules` `version` as committed at `ref`."""
    ref = ref or last_commit_with(version)
    name = "aqua_rules_" + version.replace(".", "_")
    folder = Path(tempfile.mkdtemp(prefix=f"{name}_")) / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    files = _git("ls-tree", "--name-only", f"{ref}:{PACKAGE}").split()
    for file in files:
        if not file.endswith((".py", ".json")) or file == "__init__.py":
            continue
        source = _git("show", f"{ref}:{PACKAGE}/{file}")
        if file.endswith(".py"):
            source = source.replace("aqua_tasks.core.extract.", f"{name}.")
            # Its own lexicon, not today's: languages.py reads the data next to itself.
            source = source.replace('"aqua_tasks.core.extract"', f'"{name}"')
        (folder / file).write_text(source, encoding="utf-8")
    sys.path.insert(0, str(folder.parent))
    return _git("rev-parse", "--short", ref).strip(), importlib.import_module(f"{name}.rules")
