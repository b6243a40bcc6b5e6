"""Agreement metrics and clamp-threshold tuning."""

import math

import numpy as np
import pytest
from scipy import stats

from orca_judge.metrics import agreement, kendall_tau_b, mae, spearman, tune_clamp_threshold


def test_rank_correlations_match_scipy_including_ties():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, 30).astype(float)
    y = x + rng.normal(0, 1, 30)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y, variant="b").statistic)


def test_constant_predictions_give_nan_correlation_not_an_exception():
    assert math.isnan(spearman([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]))
    assert mae([0.5, 0.5], [0.0, 1.0]) == pytest.approx(0.5)


def test_variance_error_uses_only_items_with_three_or_more_ratings():
    out = agreement(
        [0.1, 0.5, 0.9], [0.0, 0.5, 1.0], [0.01, 0.2, 0.05], [0.0, 0.1, 0.05], [1, 3, 4]
    )
    assert out["n_var"] == 2 and out["mae_var"] == pytest.approx((0.1 + 0.0) / 2)
    assert out["mae_mu"] == pytest.approx(0.2 / 3)


def test_threshold_tuning_picks_a_threshold_that_improves_rho_tau_minus_mae():
    human = [0.0, 0.0, 0.25, 0.5, 1.0, 1.0]
    means = [0.05, 0.1, 0.3, 0.5, 0.9, 0.95]
    variances = [0.004, 0.03, 0.02, 0.05, 0.004, 0.03]
    assert tune_clamp_threshold(means, variances, human) == pytest.approx(0.03)


def test_threshold_tuning_returns_none_when_clamping_never_helps():
    human = [0.2, 0.4, 0.6, 0.8]
    assert tune_clamp_threshold([0.2, 0.4, 0.6, 0.8], [0.0] * 4, human) is None
