"""ORCA: a learned judge of open-ended answers that predicts the distribution of human ratings.

The names below are the public Python API. They are loaded on first use: the lm-eval adapter
(`eval_plugins.lm_eval`) imports this package when lm-eval starts (see eval_plugins.startup_hook),
which must not pull in torch for `lm_eval ls tasks`.
"""

from __future__ import annotations

from eval_common.lazy_exports import lazy_getattr

# public name -> module that defines it
_EXPORTS = {
    # the error family: every error of the judge is an OrcaError
    "OrcaError": "orca_judge.errors",
    "OrcaConfig": "orca_judge.config",
    "OrcaJudge": "orca_judge.judge",
    "OrcaPrediction": "orca_judge.judge",
    # a judge folder or an ensemble folder (several judges, their predictions mixed)
    "load_judge": "orca_judge.checkpoint.ensemble",
    "OrcaEnsemble": "orca_judge.checkpoint.ensemble",
    "OrcaItem": "orca_judge.data",
    "DataError": "orca_judge.errors",
    "load_items": "orca_judge.data",
    "agreement": "orca_judge.metrics",
    "Calibration": "orca_judge.calibration",
    "load_calibration": "orca_judge.calibration",
    "TrainingArguments": "orca_judge.training.arguments",
    "train": "orca_judge.training.loop",
    "train_curriculum": "orca_judge.training.curriculum",
    "Curriculum": "orca_judge.training.curriculum",
    "run_curriculum": "orca_judge.training.curriculum",
    "StagePlan": "orca_judge.training.plan",
    "plan_stages": "orca_judge.training.plan",
    "load_stages": "orca_judge.training.plan",
    "split_heldout": "orca_judge.training.heldout",
    # several processes under torchrun / accelerate launch
    "Processes": "orca_judge.processes",
    "launched_group": "orca_judge.processes",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
