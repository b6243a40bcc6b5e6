"""Agreement metrics between predicted and human ratings, and clamp-threshold tuning."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from orca_judge.likelihoods import clamp_mean

DEFAULT_THRESHOLDS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2)


def _pair(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"expected two 1-D sequences of equal length, got {a.shape} and {b.shape}")
    return a, b


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation; nan when either side is constant or n < 2."""
    a, b = _pair(x, y)
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    from scipy import stats  # here: scipy.stats takes ≈ 1 s to import, and `--help` needs none

    return float(stats.spearmanr(a, b).statistic)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall tau-b (ties in both sides accounted); nan when undefined."""
    a, b = _pair(x, y)
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    from scipy import stats

    return float(stats.kendalltau(a, b, variant="b").statistic)


def mae(x: Sequence[float], y: Sequence[float]) -> float:
    """Mean absolute error; nan for empty input."""
    a, b = _pair(x, y)
    return float(np.mean(np.abs(a - b))) if len(a) else math.nan


def agreement(
    pred_mean: Sequence[float],
    human_mean: Sequence[float],
    pred_var: Sequence[float | None] | None = None,
    human_var: Sequence[float] | None = None,
    n_ratings: Sequence[int] | None = None,
    min_ratings_var: int = 3,
) -> dict[str, float]:
    """rho, tau, MAE_mu (unit scale) and, when variances are given, MAE_var on items with
    at least `min_ratings_var` ratings."""
    out = {
        "n": len(pred_mean),
        "rho": spearman(pred_mean, human_mean),
        "tau": kendall_tau_b(pred_mean, human_mean),
        "mae_mu": mae(pred_mean, human_mean),
    }
    if (
        pred_var is not None
        and human_var is not None
        and n_ratings is not None
        and all(v is not None for v in pred_var)
    ):
        keep = [i for i, n in enumerate(n_ratings) if n >= min_ratings_var]
        out["n_var"] = len(keep)
        out["mae_var"] = mae([pred_var[i] for i in keep], [human_var[i] for i in keep])
    return out


def clamp_objective(pred_mean: Sequence[float], human_mean: Sequence[float]) -> float:
    """The paper's threshold-tuning objective rho + tau - MAE_mu (nan counts as -inf)."""
    value = (
        spearman(pred_mean, human_mean)
        + kendall_tau_b(pred_mean, human_mean)
        - mae(pred_mean, human_mean)
    )
    return -math.inf if math.isnan(value) else value


def tune_clamp_threshold(
    pred_mean: Sequence[float],
    pred_var: Sequence[float | None],
    human_mean: Sequence[float],
    margin: float = 0.125,
    candidates: Sequence[float] = DEFAULT_THRESHOLDS,
) -> float | None:
    """Threshold maximising rho + tau - MAE_mu after clamping; None if none beats no clamping."""
    best_value, best = clamp_objective(pred_mean, human_mean), None
    for threshold in candidates:
        clamped = [
            clamp_mean(m, v, threshold, margin) for m, v in zip(pred_mean, pred_var, strict=True)
        ]
        value = clamp_objective(clamped, human_mean)
        if value > best_value + 1e-12:
            best_value, best = value, threshold
    return best
