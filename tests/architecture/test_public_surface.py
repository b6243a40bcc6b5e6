"""The public Python API: what users import, importable by those names, and cheap to import."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import aqua_tasks
import orca_judge

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("package", [aqua_tasks, orca_judge], ids=lambda p: p.__name__)
def test_every_exported_name_is_defined_where_the_surface_says(package):
    for name in package.__all__:
        value = getattr(package, name)
        assert getattr(value, "__name__", name) == name
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        package.nothing_here  # noqa: B018


def test_importing_the_packages_loads_no_heavy_library():
    # The start-up hook imports aqua_tasks at every Python start.
    code = (
        "import sys, aqua_tasks, orca_judge, eval_plugins.startup_hook\n"
        "heavy = [m for m in ('numpy', 'torch', 'lm_eval', 'transformers') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"AQUA_LM_EVAL_HOOK": "0", "PATH": ""},
    )
    assert proc.stdout.strip() == ""


def test_the_docs_import_only_public_names():
    imports = re.compile(r"^\s*from (aqua_tasks|orca_judge)(\.[\w.]+)? import (.+)$", re.M)
    bad = []
    for doc in DOCS:
        for match in imports.finditer(doc.read_text(encoding="utf-8")):
            package, deeper, names = match.groups()
            surface = (aqua_tasks if package == "aqua_tasks" else orca_judge).__all__
            wanted = [n.strip().split(" as ")[0] for n in names.split(",")]
            if deeper or not set(wanted) <= set(surface):
                bad.append(f"{doc.name}: {match.group(0).strip()}")
    assert bad == []
