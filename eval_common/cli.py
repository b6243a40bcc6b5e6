"""What every command-line tool shares: the command wrapper, error exits, boolean settings,
common flags, progress."""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from eval_common.errors import EvalError

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


# The exit status of bad input: argparse's own for a bad flag.
EXIT_BAD_INPUT = 2


def fail(prog: str, message: str) -> int:
    """Print `prog: error: message` to stderr and return the bad-input exit status 2."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


# What Ctrl-C prints after "interrupted; ": commands that keep their progress say how to go on,
# the others that they left nothing behind (their outputs are written at the end, atomically).
RESUMES = "rerun the same command to continue"
NOTHING_WRITTEN = "nothing was written"
# The shell's status for a command ended by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130
# The Python documentation's status for a reader that closed the pipe (signal handling docs).
EXIT_BROKEN_PIPE = 1

# Each error family and the exit status its one line ends in; the first row that matches wins.
# Every family of ours (`eval_common.errors`, `aqua_tasks.errors`, `orca_judge.errors`: one
# root) is something the user must fix; a command's `errors=` (builtin types) join them.
EXIT_STATUSES: tuple[tuple[type[Exception], int], ...] = ((EvalError, EXIT_BAD_INPUT),)

Main = Callable[[Sequence[str] | None], int]


def run_command(
    prog: str,
    main: Main,
    argv: Sequence[str] | None = None,
    *,
    on_interrupt: str = NOTHING_WRITTEN,
    errors: tuple[type[BaseException], ...] = (),
) -> int:
    """Run a console script's `main`: a closed pipe, Ctrl-C and known errors end in one line.

    An error of the family (`EvalError`) and the command's own bad-input types `errors`
    print `prog: error: message` and end in their `EXIT_STATUSES` status (2 for `errors`)
    instead of a traceback; any other error still raises.
    """
    try:
        status = main(argv)
        sys.stdout.flush()  # inside the try: a reader that left shows up at this flush
        return status
    except BrokenPipeError:
        if not _stdout_is_closed_pipe():
            raise
        # The reader (e.g. `| head -1`) has all it wanted. Point stdout at devnull so that
        # the interpreter's own flush at exit does not fail again (the Python docs' recipe).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; {on_interrupt}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (EvalError, *errors) as error:
        fail(prog, str(error))
        return exit_status(error)


def exit_status(error: BaseException) -> int:
    """The exit status an error ends a command in: its family's row, else bad input (2)."""
    return next((s for family, s in EXIT_STATUSES if isinstance(error, family)), EXIT_BAD_INPUT)


def command(
    prog: str,
    *,
    on_interrupt: str = NOTHING_WRITTEN,
    errors: tuple[type[BaseException], ...] = (),
) -> Callable[[Main], Main]:
    """Decorate a console script's `main(argv) -> int` to run through `run_command`."""

    def wrap(main: Main) -> Main:
        @functools.wraps(main)
        def wrapped(argv: Sequence[str] | None = None) -> int:
            return run_command(prog, main, argv, on_interrupt=on_interrupt, errors=errors)

        return wrapped

    return wrap


def _stdout_is_closed_pipe() -> bool:
    """Whether stdout is a pipe whose reader has gone (not a socket of ours that broke)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    import select
    import stat

    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return False
    if not hasattr(select, "poll"):
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def parse_bool(name: str, value: object, error: type[Exception] = ValueError) -> bool:
    """A boolean setting from a bool, 1/0, true/false, yes/no or on/off (any case); else `error`."""
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
    raise error(f"{name}={value!r}: expected true/false, yes/no, on/off or 1/0")


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


def flags_problem(args: argparse.Namespace, **minimums: float) -> str | None:
    """The first `number_problem` of the flags named by their dest, each with its minimum.

    E.g. `flags_problem(args, batch_size=1, clamp_threshold=0)` checks `--batch-size` and
    `--clamp-threshold`; flags left unset (None) pass.
    """
    for dest, minimum in minimums.items():
        value = getattr(args, dest)
        flag = "--" + dest.replace("_", "-")
        if value is not None and (problem := number_problem(flag, value, minimum=minimum)):
            return problem
    return None


def add_json_flag(
    parser: argparse.ArgumentParser, help: str = "print machine-readable JSON"
) -> None:
    """Add `--json`."""
    parser.add_argument("--json", action="store_true", help=help)


def add_seed_flag(
    parser: argparse.ArgumentParser, default: int = 0, help: str = "random seed"
) -> None:
    """Add `--seed N`, an integer >= 0 (numpy refuses negatives): argparse refuses others."""
    parser.add_argument(
        "--seed", type=seed_value, default=default, help=f"{help} (default: {default})"
    )


def seed_value(text: str) -> int:
    """A `--seed` value: an integer >= 0, else argparse's one-line error (exit 2)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


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


def dispatch(
    prog: str, commands: dict[str, tuple[str, str]], argv: Sequence[str] | None = None
) -> int:
    """Run the subcommand `argv[0]` of `prog`: `commands` maps each name to (the module whose
    `main(argv)` runs it, one line of help). Modules are imported only when chosen, so
    `orca score` never pays for what `orca train` imports."""
    import importlib

    argv = list(sys.argv[1:] if argv is None else argv)
    listing = "\n".join(f"  {name:<17} {about}" for name, (_, about) in commands.items())
    usage = f"usage: {prog} COMMAND [ARGS ...]   ({prog} COMMAND --help for its flags)"
    if not argv or argv[0] in ("-h", "--help"):
        print(f"{usage}\n\ncommands:\n{listing}", file=sys.stdout if argv else sys.stderr)
        return 0 if argv else EXIT_BAD_INPUT
    name, rest = argv[0], argv[1:]
    if name not in commands:
        return fail(prog, f"unknown command {name!r}; expected one of: {', '.join(commands)}")
    return importlib.import_module(commands[name][0]).main(rest)
