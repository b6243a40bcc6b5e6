"""Every error of the benchmark, in one family under `AquaError`.

    eval_common.errors.EvalError
    └── AquaError
        ├── AquaDataError (ValueError)                 a released question file or an AQUA setting
        │   └── RunError                               a run cannot be read as asked
        │       ├── AmbiguousRunError                  several runs in one folder
        │       ├── TrackMismatchError                 file name, content and track disagree
        │       ├── DuplicateItemError                 an item of a task twice in a run
        │       ├── LmmsLogError                       an lmms-eval log and its rebuilt data
        │       ├── JudgeResultsError                  a per-item file of `metric: orca`
        │       └── RunReadError                       no AQUA results to report
        ├── AudioFileError (FileNotFoundError, ValueError)   a clip missing or unreadable
        │   └── ClipCheckError                         clips the model cannot take
        ├── PrepareError (ValueError)                  a source of `aqua audio prepare`
        ├── BuildError (ValueError)                    a source set or setting of `aqua build`
        ├── ModelArgumentError (ValueError)            a model argument of our models
        ├── EndpointError (RuntimeError)               a server that refuses every request
        ├── UncollectedOutcomesError (RuntimeError)    per-item values that never reached results
        ├── PlottingUnavailable (RuntimeError)         matplotlib (the `plot` extra) is missing
        └── LoggerUnavailable (RuntimeError)           wandb (the `wandb` extra) is missing

Callers catch the narrowest class they handle, or `AquaError`; every console script runs
through `eval_common.cli.run_command`, which turns the family into one line and an exit status.
A message is written once, where the problem is found, and never re-raised as another type:
a reader that needs a wider type subclasses it here instead.

Control flow, not errors: three exceptions carry a reason label between the functions of one
room and are always caught there, so they are not in this family (one that escaped would be a
bug, and keeps its traceback): `Skip` (a clip `aqua build` leaves out, private to
`build/builder.py`), `InvalidDraft` (a draft that breaks an IAQD rule, `build/iaqd.py`, caught
by the generators) and `RequestFailure` (one failed HTTP attempt, `eval_common/http.py`, caught
by the chat client, the IAQD generator and the prompted judge).
"""

from __future__ import annotations

from eval_common.errors import EvalError


class AquaError(EvalError):
    """An input, output or setting of the benchmark the user must fix; one line says which."""


class AquaDataError(AquaError, ValueError):
    """A released question file is missing or malformed."""


class RunError(AquaDataError):
    """A run cannot be read as asked; the message is one line naming the file, line or field."""


class AmbiguousRunError(RunError):
    """A folder holds the outputs of several runs in different sub-folders (e.g. two models)."""


class TrackMismatchError(RunError):
    """A file's name, its content or the track asked for disagree on the track."""


class DuplicateItemError(RunError):
    """The same item of a task appears more than once in a run."""


class LmmsLogError(RunError):
    """An lmms-eval log cannot be read, or does not match the data it is rebuilt from."""


class JudgeResultsError(RunError):
    """A per-item judge results file is unreadable or not one written by `metric: orca`."""


class RunReadError(RunError):
    """A run folder or file is missing, malformed, or holds no AQUA results."""


class AudioFileError(AquaError, FileNotFoundError, ValueError):
    """An audio clip referenced by a question is missing or unreadable."""

    def __init__(self, message: str, *, audio_filename: str = "", tried: tuple[str, ...] = ()):
        super().__init__(message)
        self.audio_filename = audio_filename
        self.tried = tried


class ClipCheckError(AudioFileError):
    """Clips of a run that the model cannot take; raised before any inference.

    An AudioFileError, so `aqua eval` reports it in one line like a missing clip.
    """


class PrepareError(AquaError, ValueError):
    """The source given to `aqua audio prepare` cannot be used."""


class BuildError(AquaError, ValueError):
    """The source set or a build setting is unusable; the message names file, item and field."""


class ModelArgumentError(AquaError, ValueError):
    """A model argument the model cannot use; the message names it, its value, what is allowed."""


class EndpointError(AquaError, RuntimeError):
    """The server refuses every request (bad key, wrong URL or model): the run stops."""


class UncollectedOutcomesError(AquaError, RuntimeError):
    """An AQUA task's per-item values did not reach the results step: nothing to pool."""


class PlottingUnavailable(AquaError, RuntimeError):
    """matplotlib (the `plot` extra) is not installed."""


class LoggerUnavailable(AquaError, RuntimeError):
    """wandb (the `wandb` extra), which `--wandb_args` needs, is not installed."""
