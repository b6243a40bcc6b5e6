"""The harness versions this package extends: one gate for the start-up hook, aqua eval and
register_all, and the exact versions every patch of a harness was tested with.

lm-eval: the range pyproject.toml requires (`lm-eval>=0.4.13,<0.6`: 0.4.13 and the 0.5
line); lmms-eval: the version
scripts/install-lmms-eval-env.sh installs (`lmms-eval==0.7.3`). Outside the range nothing is
done: the start-up hook logs one warning and leaves the harness as it is, `aqua eval` and
`register_all()` stop with the reason. Inside it, a patch of a harness internal is made only on
the exact TESTED version (`eval_plugins.seams`): on another release a patch the harness runs
correctly without is skipped with one line, one it cannot is refused with one line. Standard
library only, and it imports neither harness: the start-up hook asks it as soon as a harness
module has imported.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version

# harness -> (lowest supported release, first release above the range).
SUPPORTED = {"lm-eval": ((0, 4, 13), (0, 6)), "lmms-eval": ((0, 7, 3), (0, 7, 4))}
# harness -> the version the end-to-end tests run against: the only one patched in full.
TESTED = {"lm-eval": "0.4.13", "lmms-eval": "0.7.3"}
# lm-eval's next release line, run by CI's second lm-eval environment: its public scoring
# pipeline (`lm_eval.scorers`) replaces every patch but the task folder's.
NEXT = {"lm-eval": "0.5.0.dev1"}
# harness -> its distribution name, for importlib.metadata.
DISTRIBUTIONS = {"lm-eval": "lm_eval", "lmms-eval": "lmms_eval"}


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string (`0.4.13.dev1` -> (0, 4, 13)); () when none."""
    match = re.match(r"\d+(\.\d+)*", version.strip())
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def supported_range(harness: str) -> str:
    """The supported versions of a harness as a pip requirement (`>=0.4.13,<0.5`)."""
    low, high = SUPPORTED[harness]
    if high == (*low[:-1], low[-1] + 1):
        return "==" + ".".join(map(str, low))
    return f">={'.'.join(map(str, low))},<{'.'.join(map(str, high))}"


def unsupported_version(harness: str, version: str | None) -> str | None:
    """Why this version of the harness cannot be extended (None: it is a supported version)."""
    low, high = SUPPORTED[harness]
    number = release(version) if isinstance(version, str) else ()
    if number and low <= number < high:
        return None
    return (
        f"{harness} {version} is not a version this package supports "
        f"({supported_range(harness)}, tested with {TESTED[harness]})"
    )


def installed_version(harness: str) -> str | None:
    """The installed version of a harness (None when it is not installed)."""
    try:
        return version(DISTRIBUTIONS[harness])
    except PackageNotFoundError:
        return None


def untested_version(
    harness: str, version: str | None, tested: tuple[str, ...] | None = None
) -> str | None:
    """Why this version of the harness is not one a patch was tested with (None: it is).

    `tested`: the versions the patch was tested with (default: the TESTED one).
    """
    tested = tested or (TESTED[harness],)
    if version in tested:
        return None
    return (
        f"{harness} {version} is not the version this package was tested with ({TESTED[harness]})"
    )


def install_hint(harness: str) -> str:
    """What to install for every patch of the harness: the tested version."""
    return f"pip install '{harness}=={TESTED[harness]}'"
