"""Every error of the ORCA judge, in one family under `OrcaError`.

    eval_common.errors.EvalError
    └── OrcaError
        ├── DataError (ValueError)             an input item: source, line and field
        ├── CalibrationError (ValueError)      predictions and rated items give no calibration
        ├── CheckpointError (ValueError)       a checkpoint directory: the file at fault
        │   └── BackboneMismatchError          backbone weights other than the trained-on ones
        ├── BackboneLoadError (RuntimeError)   a backbone that cannot be loaded (e.g. offline)
        ├── OrcaMetricError (ValueError)       a `metric: orca` entry or its judge
        ├── LlmJudgeError (ValueError)         a prompted judge's settings (`metric: llm_judge`)
        ├── JudgeEndpointError (RuntimeError)  a judge endpoint that refuses every request, or
        │                                      fails more judgements than a stage allows
        └── RunConflictError (ValueError)      training would replace what is not its own

Callers catch the narrowest class they handle, or `OrcaError`; every console script runs
through `eval_common.cli.run_command`, which turns the family into one line and an exit status.
A message is written once, where the problem is found, and never re-raised as another type.
This module imports nothing but the shared root, so catching a judge error loads no torch.
"""

from __future__ import annotations

from eval_common.errors import EvalError


class OrcaError(EvalError):
    """An input, checkpoint or setting of the judge the user must fix; one line says which."""


class DataError(OrcaError, ValueError):
    """An input item is malformed; the message names the source, line and field."""


class CalibrationError(OrcaError, ValueError):
    """Predictions, rated items or a run cannot give a calibration; the message says why."""


class CheckpointError(OrcaError, ValueError):
    """A checkpoint directory is incomplete or inconsistent; the message names the file."""


class BackboneMismatchError(CheckpointError):
    """The backbone weights differ from those the checkpoint was trained on."""


class BackboneLoadError(OrcaError, RuntimeError):
    """The backbone could not be loaded (for example offline with no local copy)."""


class OrcaMetricError(OrcaError, ValueError):
    """The orca metric is misconfigured or its judge cannot be loaded; the message says where."""


class LlmJudgeError(OrcaError, ValueError):
    """A prompted judge's setting is missing or invalid; the message names it and where."""


class JudgeEndpointError(OrcaError, RuntimeError):
    """A judge endpoint refuses every request (key, URL, model name, server down), or fails
    more of a judge-rated stage's judgements than its `max_failed_share`."""


class RunConflictError(OrcaError, ValueError):
    """Training would replace something that is not this run's own state; names what and why."""
