"""The root of every error a command reports in one line, and the shared layer's own errors.

    EvalError                           an input, output or setting the user must fix
    ├── InputFileError (ValueError)     an input file is not what it should be (`inputs`)
    ├── OutputError (ValueError)        an output path that must not (or could not) be written
    ├── aqua_tasks.errors.AquaError     the benchmark's family (drawn in its module)
    └── orca_judge.errors.OrcaError     the judge's family (drawn in its module)

Every message is one line naming the file, field, item or flag and what was expected. The
command wrapper (`eval_common.cli.run_command`) catches the root and maps each family to its
exit status (`eval_common.cli.EXIT_STATUSES`); nothing re-raises one of these messages as
another type. Each class keeps a builtin base (ValueError, …) so that `except ValueError`
still catches it.
"""

from __future__ import annotations


class EvalError(Exception):
    """An input, output or setting the user must fix; the message says which, in one line."""


class InputFileError(EvalError, ValueError):
    """An input file that cannot be read as what it should be; the message names file and line."""


class OutputError(EvalError, ValueError):
    """An output path the command must not write (or could not, the disk being full); one line."""
