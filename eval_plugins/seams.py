"""Every patch of a harness internal is a seam: applied in full only on the exact tested version.

A compat module declares each patch with `@seam(harness, does, required=..., patches=...)`,
naming every harness function it replaces and every private table it writes (the tests count
them). On the version
`eval_common.harness_versions.TESTED` names it runs. On any other release of the harness:

- a skippable seam (`required=False`: the harness runs correctly without it, only less
  helpfully) is skipped with one log line naming the version, what is lost and what to install;
- a required seam (without it a run would give wrong figures or hide a failure) raises
  RuntimeError with one line naming the version and what to install.

The start-up hook turns that refusal into its one warning; `aqua eval` and `register_all()`
stop with it. Which seams there are: `SEAMS`, filled as the compat modules are imported.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from eval_common.harness_versions import install_hint, installed_version, untested_version

F = TypeVar("F", bound=Callable[..., Any])
logger = logging.getLogger(__name__)


class Seam(NamedTuple):
    """One patch of a harness internal: where, what it does, whether a run may go without it."""

    harness: str
    name: str
    does: str
    required: bool
    # The harness functions it replaces ("module.Class.function"), and the private tables of
    # built tasks that the code it installs writes (`eval_plugins.built_tasks`).
    patches: tuple[str, ...]
    tables: tuple[str, ...] = ()
    tested: tuple[str, ...] = ()  # the versions it was tested on; () = the TESTED one


# "module.function" -> its Seam, for the docs and the tests.
SEAMS: dict[str, Seam] = {}


def refusal(seam: Seam, version: str | None) -> str | None:
    """The one line a required seam stops with on this version (None: it may run or skip)."""
    why = untested_version(seam.harness, version, seam.tested)
    if why is None or not seam.required:
        return None
    return f"{why}, and {seam.does} cannot be left out; {install_hint(seam.harness)}"


def skip_notice(seam: Seam, version: str | None) -> str | None:
    """The one line a skippable seam is skipped with on this version (None: it runs)."""
    why = untested_version(seam.harness, version, seam.tested)
    if why is None or seam.required:
        return None
    return f"aqua-bench-eval: {why}: running without {seam.does} ({install_hint(seam.harness)})"


def seam(
    harness: str,
    does: str,
    *,
    required: bool,
    patches: tuple[str, ...],
    tables: tuple[str, ...] = (),
    tested: tuple[str, ...] = (),
) -> Callable[[F], F]:
    """Declare a patch of `harness`: it runs on the tested version(s) only (see the module doc)."""

    def declare(patch: F) -> F:
        name = f"{patch.__module__}.{patch.__name__}"
        entry = Seam(harness, name, does, required, patches, tables, tested)
        SEAMS[entry.name] = entry
        noticed: list[bool] = []  # one line per seam and process

        @functools.wraps(patch)
        def gated(*args: Any, **kwargs: Any) -> Any:
            version = installed_version(harness)
            stop = refusal(entry, version)
            if stop:
                raise RuntimeError(stop)
            notice = skip_notice(entry, version)
            if notice:
                if not noticed:
                    noticed.append(True)
                    logger.warning(notice)
                return None
            return patch(*args, **kwargs)

        gated.seam = entry  # type: ignore[attr-defined]
        return gated  # type: ignore[return-value]

    return declare
