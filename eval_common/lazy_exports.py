"""A package's public names, imported from their modules on first use.

Both packages are imported at every Python start (the start-up hook), so their `__init__`
must not import numpy, torch or a harness; users still write `from orca_judge import OrcaJudge`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` serving `exports` (public name -> defining module)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(exports[name]), name)

    return __getattr__
