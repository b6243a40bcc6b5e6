"""The lmms-eval environment gets what the documented commands need, at the pinned versions.

`scripts/install-lmms-eval-env.sh` installs lmms-eval's dependencies by hand (it must use
--no-deps for lmms-eval); this package's optional `plot` extra (matplotlib, for the charts of
`aqua report`), `wandb` extra (`--wandb_args`, tests_lmms/test_lmms_loggers.py) and `voxtral`
extra (mistral-common, tests_lmms/test_lmms_audio_lm.py) must come with it, pinned in
`constraints/lmms-eval.txt` like the rest and at the versions the main environment passed with.
"""

from __future__ import annotations

import importlib.metadata as md
import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "install-lmms-eval-env.sh"


def pins(name: str) -> dict[str, str]:
    """name (normalised) -> pinned version of a constraints file."""
    found = {}
    for line in (REPO / "constraints" / name).read_text().splitlines():
        if "==" in line:
            package, _, version = line.partition("==")
            found[re.sub(r"[-_.]+", "-", package).lower()] = version.strip()
    return found


def requirement_name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[\s;<>=!~\[]", requirement, maxsplit=1)[0]).lower()


EXTRAS = {"plot": "matplotlib", "wandb": "wandb", "voxtral": "mistral-common"}


def test_the_lmms_eval_environment_installs_the_optional_extras():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for extra, package in EXTRAS.items():
        named = {requirement_name(r) for r in extras["optional-dependencies"][extra]}
        assert package in named, extra
    script = SCRIPT.read_text()
    assert '-e "$HERE[plot,wandb,voxtral]"' in script
    assert "import matplotlib" in script and "import wandb" in script  # the final check


def requirements_of(package: str, seen: set[str]) -> set[str]:
    """`package` and everything it requires on this interpreter (no extras), recursively."""
    from packaging.requirements import Requirement

    if package in seen:
        return seen
    seen.add(package)
    for line in md.requires(package) or []:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            requirements_of(requirement_name(requirement.name), seen)
    return seen


@pytest.mark.parametrize("package", sorted(EXTRAS.values()))
def test_the_extras_and_their_requirements_are_pinned_for_lmms_eval_as_for_main(package):
    lmms, main = pins("lmms-eval.txt"), pins("main.txt")
    needed = requirements_of(package, set())
    assert needed <= set(lmms), sorted(needed - set(lmms))
    assert {n: lmms[n] for n in needed} == {n: main[n] for n in needed}
