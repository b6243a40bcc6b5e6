"""What every command-line tool shares: error exits, boolean settings, common flags, progress."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable
from typing import Any

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def fail(prog: str, message: str) -> int:
    """Print `prog: error: message` to stderr and return the bad-input exit status 2."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def parse_bool(name: str, value: object) -> bool:
    """A boolean setting from a bool, 1/0, true/false, yes/no or on/off (any case)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in TRUE_WORDS:
            return True
        if text in FALSE_WORDS:
            return False
    raise ValueError(f"{name}={value!r}: expected true/false, yes/no, on/off or 1/0")


def bool_arg(text: str) -> bool:
    """An argparse `type=` for boolean flag values (argparse names the flag in its error)."""
    try:
        return parse_bool("value", text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected true/false, yes/no, on/off or 1/0, got {text!r}"
        ) from None


def number_problem(
    flag: str,
    value: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    open_interval: bool = False,
) -> str | None:
    """Why a numeric flag's value is refused (not finite, or out of range), or None if it is fine.

    argparse's `type=float` takes "nan" and "inf", and NaN passes every `<` check unnoticed:
    a gate given `--max-drop nan` would pass any regression.
    """
    low = "" if minimum is None else f"{minimum} {'<' if open_interval else '<='} "
    high = "" if maximum is None else f" {'<' if open_interval else '<='} {maximum}"
    wanted = f"expected a finite number with {low}{flag}{high}, got {value!r}"
    if not math.isfinite(value):
        return f"{flag}: {wanted}"
    below = minimum is not None and (value <= minimum if open_interval else value < minimum)
    above = maximum is not None and (value >= maximum if open_interval else value > maximum)
    return f"{flag}: {wanted}" if below or above else None


def add_json_flag(
    parser: argparse.ArgumentParser, help: str = "print machine-readable JSON"
) -> None:
    """Add `--json`."""
    parser.add_argument("--json", action="store_true", help=help)


def add_seed_flag(
    parser: argparse.ArgumentParser, default: int = 0, help: str = "random seed"
) -> None:
    """Add `--seed N`."""
    parser.add_argument("--seed", type=int, default=default, help=f"{help} (default: {default})")


def add_progress_flag(parser: argparse.ArgumentParser, help: str = "hide progress bars") -> None:
    """Add `--no-progress` (read it as `not args.no_progress`)."""
    parser.add_argument("--no-progress", action="store_true", help=help)


def progress(
    iterable: Iterable[Any] | None,
    desc: str,
    enabled: bool = True,
    *,
    unit: str = "item",
    total: int | None = None,
    initial: int = 0,
) -> Any:
    """A tqdm bar over `iterable` (or a manual one when it is None), silent when not enabled."""
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, unit=unit, total=total, initial=initial, disable=not enabled)
