"""Old import paths kept working: a one-line DeprecationWarning, then the name from its new home."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def moved(module: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` serving `names` (name -> new module) with a DeprecationWarning."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target = names[name]
        warnings.warn(f"{module}.{name} moved to {target}.{name}", DeprecationWarning, stacklevel=2)
        # Imported on first use: the new home may be heavy (torch) or import the old module.
        return getattr(importlib.import_module(target), name)

    return __getattr__


def module_moved(module: str, new_home: str) -> None:
    """Warn, once per import of the deprecated `module`, that it now lives in `new_home`."""
    # stacklevel 3: the line importing the deprecated module, not the module itself.
    warnings.warn(f"{module} is deprecated; use {new_home}", DeprecationWarning, stacklevel=3)
