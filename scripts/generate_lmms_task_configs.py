"""Write the lmms-eval track YAMLs (lmms_task_configs/) from the lm-eval ones (task_configs/).

The track YAMLs of both harnesses are the same text: each names its task and dataset_kwargs
and includes the `_aqua_base` of its own folder, which is where the harnesses differ (and
which is written by hand). Like lm-eval's `tasks/mmlu/_generate_configs.py`, this script keeps
the family from drifting: edit task_configs/, run it, commit both.

    python scripts/generate_lmms_task_configs.py          # write lmms_task_configs/aqua*_*.yaml
    python scripts/generate_lmms_task_configs.py --check  # exit 1 naming every stale file
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE, TARGET = "task_configs", "lmms_task_configs"
# The track YAMLs (aqua_<track>, aqua-<ablation>_<track>); not the `aqua` group, not orca_human.
PATTERN = "aqua*_*.yaml"


def expected(root: Path = REPO) -> dict[str, bytes]:
    """Every generated file's name and content, read from the lm-eval task folder."""
    return {path.name: path.read_bytes() for path in sorted((root / SOURCE).glob(PATTERN))}


def stale(root: Path = REPO) -> list[str]:
    """Generated files that are missing, differ from their source, or have no source."""
    want = expected(root)
    have = {path.name: path.read_bytes() for path in (root / TARGET).glob(PATTERN)}
    return sorted(name for name in want.keys() | have.keys() if want.get(name) != have.get(name))


def write(root: Path = REPO) -> list[str]:
    """Bring lmms_task_configs/ in line with task_configs/; returns the files changed."""
    changed = stale(root)
    want = expected(root)
    for name in changed:
        path = root / TARGET / name
        if name in want:
            path.write_bytes(want[name])
        else:
            path.unlink()
    return changed


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, only compare) the generated lmms-eval task YAMLs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if stale")
    parser.add_argument("--root", type=Path, default=REPO, help="project folder (default: this)")
    args = parser.parse_args(argv)
    if args.check:
        names = stale(args.root)
        for name in names:
            print(
                f"{TARGET}/{name} is stale: run scripts/generate_lmms_task_configs.py",
                file=sys.stderr,
            )
        return 1 if names else 0
    for name in write(args.root):
        print(f"wrote {TARGET}/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
