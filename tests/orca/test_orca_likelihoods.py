"""Likelihood maths of the ORCA judge checked against scipy.stats."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from orca_judge import likelihoods as L

RATINGS = [[1, 5, 3], [2, 2, 0], [5, 0, 0], [1, 1, 4]]


def test_beta_nll_equals_scipy_logpdf_with_ratings_clamped_into_open_interval():
    logits = torch.tensor([[0.3, -0.2], [1.0, 2.0], [-1.0, 0.5], [2.0, 2.0]])
    got = L.nll("beta", logits, L.pad_ratings(RATINGS))
    for i, row in enumerate(RATINGS):
        a, b = math.exp(logits[i, 0]), math.exp(logits[i, 1])
        ys = np.clip([(r - 1) / 4 for r in row if r], 0.01, 0.99)
        assert got[i].item() == pytest.approx(-stats.beta.logpdf(ys, a, b).sum(), rel=1e-5)


def test_multinomial_nll_sums_categorical_log_probabilities_of_each_rating():
    logits = torch.randn(4, 5, generator=torch.Generator().manual_seed(0))
    got = L.nll("multinomial", logits, L.pad_ratings(RATINGS))
    for i, row in enumerate(RATINGS):
        probs = torch.softmax(logits[i].double(), 0).numpy()
        expected = -sum(stats.multinomial.logpmf(np.eye(5)[r - 1], 1, probs) for r in row if r)
        assert got[i].item() == pytest.approx(expected, rel=1e-5)


def test_bernoulli_nll_is_cross_entropy_against_the_mean_normalised_rating():
    logits = torch.tensor([[0.4], [-1.2], [3.0], [0.0]])
    got = L.nll("bernoulli", logits, L.pad_ratings(RATINGS))
    for i, row in enumerate(RATINGS):
        ybar = np.mean([(r - 1) / 4 for r in row if r])
        phi = 1 / (1 + math.exp(-logits[i, 0]))
        expected = -(ybar * math.log(phi) + (1 - ybar) * math.log(1 - phi))
        assert got[i].item() == pytest.approx(expected, rel=1e-5)


def test_moments_match_scipy_on_the_unit_scale():
    beta_logits = torch.tensor([[0.5, 1.5]])
    mean, var = L.moments("beta", beta_logits)
    a, b = math.exp(0.5), math.exp(1.5)
    assert mean.item() == pytest.approx(stats.beta.mean(a, b), rel=1e-5)
    assert var.item() == pytest.approx(stats.beta.var(a, b), rel=1e-5)

    multi_logits = torch.tensor([[0.1, -0.3, 1.2, 0.0, 0.7]])
    mean, var = L.moments("multinomial", multi_logits)
    probs = torch.softmax(multi_logits[0].double(), 0).numpy()
    dist = stats.rv_discrete(values=(np.arange(1, 6), probs))
    assert 1 + 4 * mean.item() == pytest.approx(dist.mean(), rel=1e-5)
    assert 16 * var.item() == pytest.approx(dist.var(), rel=1e-5)

    mean, var = L.moments("bernoulli", torch.tensor([[0.8]]))
    assert mean.item() == pytest.approx(1 / (1 + math.exp(-0.8)))
    assert var is None


@pytest.mark.parametrize("likelihood", ["beta", "multinomial", "bernoulli"])
def test_losses_and_moments_stay_finite_at_extreme_logits_and_ratings_one_and_five(likelihood):
    k = L.head_size(likelihood)
    logits = torch.tensor(
        [[1e4] * k, [-1e4] * k, [80.0] + [-80.0] * (k - 1), [0.0] * k], requires_grad=True
    )
    ratings = L.pad_ratings([[1, 5], [1, 1], [5, 5], [1, 5]])
    loss = L.nll(likelihood, logits, ratings)
    loss.sum().backward()
    assert torch.isfinite(loss).all() and torch.isfinite(logits.grad).all()
    mean, var = L.moments(likelihood, logits.detach())
    assert torch.isfinite(mean).all() and ((mean >= 0) & (mean <= 1)).all()
    if var is not None:
        assert torch.isfinite(var).all() and (var >= 0).all()


def test_initial_zero_logits_give_flat_predictions():
    mean, var = L.moments("multinomial", torch.zeros(1, 5))
    assert mean.item() == pytest.approx(0.5) and 16 * var.item() == pytest.approx(2.0)
    mean, var = L.moments("beta", torch.zeros(1, 2))
    assert mean.item() == pytest.approx(0.5) and var.item() == pytest.approx(1 / 12)
    assert L.distribution("multinomial", torch.zeros(1, 5))[0]["probs"] == pytest.approx([0.2] * 5)


def test_clamping_snaps_only_confident_means_near_the_ends():
    assert L.clamp_mean(0.1, 0.01, threshold=0.05) == 0.0
    assert L.clamp_mean(0.9, 0.01, threshold=0.05) == 1.0
    assert L.clamp_mean(0.9, 0.06, threshold=0.05) == 0.9
    assert L.clamp_mean(0.5, 0.0, threshold=0.05) == 0.5
    assert L.clamp_mean(0.1, 0.0, threshold=None) == 0.1
    assert L.clamp_mean(0.95, None, threshold=0.0) == 1.0  # Bernoulli: margin alone decides


def test_invalid_ratings_and_unknown_likelihood_raise_clear_errors():
    with pytest.raises(ValueError, match=r"1\.\.5"):
        L.nll("multinomial", torch.zeros(1, 5), torch.tensor([[6]]))
    with pytest.raises(ValueError, match="at least one rating"):
        L.nll("multinomial", torch.zeros(1, 5), torch.tensor([[0]]))
    with pytest.raises(ValueError, match="unknown likelihood 'gauss'"):
        L.head_size("gauss")


def test_beta_log_parameters_equal_the_head_outputs_where_the_old_clamp_was_inactive():
    typical = torch.linspace(-15.0, 15.0, 601)
    assert torch.equal(L.beta_log_params(typical), typical)  # bit-identical: same alpha, beta
    logits = (torch.rand(64, 2, generator=torch.Generator().manual_seed(0)) * 2 - 1) * 15
    old = logits.clamp(-15, 15).exp()  # the former parameterisation
    mean, var = L.moments("beta", logits)
    s = old.sum(dim=1)
    assert torch.equal(mean, old[:, 0] / s)
    assert torch.equal(var, old[:, 0] * old[:, 1] / (s * s * (s + 1)))


def test_beta_log_parameters_saturate_smoothly_with_gradients_beyond_fifteen():
    z = torch.tensor([15.0, 15.5, 16.0, 20.0, 25.0, 40.0, -16.0, -25.0], requires_grad=True)
    out = L.beta_log_params(z)
    out.sum().backward()
    assert torch.isfinite(z.grad).all() and (z.grad[1:] > 0).all()
    assert (out.detach().abs() < 20.0).all() and (out.detach()[1:6].diff() > 0).all()
    assert z.grad[0] == pytest.approx(1.0)  # continuous slope where the tail starts
    logits = torch.tensor([[16.0, 18.0], [30.0, 14.0]], requires_grad=True)
    L.nll("beta", logits, L.pad_ratings([[5, 4], [1, 2]])).sum().backward()
    assert torch.isfinite(logits.grad).all() and (logits.grad.abs() > 0).all()
