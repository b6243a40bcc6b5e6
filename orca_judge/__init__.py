"""ORCA: a learned judge of open-ended answers that predicts the distribution of human ratings."""

from .config import OrcaConfig
from .judge import OrcaJudge, OrcaPrediction

__all__ = ["OrcaConfig", "OrcaJudge", "OrcaPrediction"]
