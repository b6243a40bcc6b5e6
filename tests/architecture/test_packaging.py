"""pyproject.toml lists every package folder: a new room that is not listed would be left out
of the wheel and fail only on a user's machine."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_listed_and_every_listed_package_exists():
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = setuptools["package-dir"]
    found = {
        ".".join(init.parent.relative_to(REPO).parts)
        for root in ("aqua_tasks", "orca_judge", "eval_common", "eval_plugins")
        for init in (REPO / root).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert set(setuptools["packages"]) == found | set(mapped)
    assert all((REPO / folder / "__init__.py").is_file() for folder in mapped.values())
