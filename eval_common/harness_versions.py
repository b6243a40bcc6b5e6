"""The harness versions this package extends: one gate for the start-up hook, aqua-eval and
register_all.

lm-eval: the range pyproject.toml requires (`lm-eval>=0.4.13,<0.5`); lmms-eval: the version
scripts/install-lmms-eval-env.sh installs (`lmms-eval==0.7.3`). Inside the range every patch
of the harness is made (each compat module lists them); outside it none is: the start-up hook
logs one warning and leaves the harness as it is, `aqua-eval` and `register_all()` stop with
the reason. Standard library only, and it imports neither harness: the start-up hook asks it
as soon as a harness module has imported.
"""

from __future__ import annotations

import re

# harness -> (lowest supported release, first release above the range).
SUPPORTED = {"lm-eval": ((0, 4, 13), (0, 5)), "lmms-eval": ((0, 7, 3), (0, 7, 4))}
# harness -> the version the end-to-end tests run against.
TESTED = {"lm-eval": "0.4.13", "lmms-eval": "0.7.3"}


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
