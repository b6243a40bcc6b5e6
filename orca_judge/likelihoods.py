"""Rating likelihoods (Beta, Multinomial, Bernoulli): losses, moments, clamping; pure tensor maths.

Ratings are integers 1..5; the unit scale is y = (r - 1) / 4. Ratings arrive as a padded
(batch, max_ratings) integer tensor where 0 marks padding.
"""

from __future__ import annotations

import torch

HEAD_SIZES = {"beta": 2, "multinomial": 5, "bernoulli": 1}
BETA_Y_RANGE = (0.01, 0.99)  # the Beta density is infinite at 0 and 1; clamp inside the loss only
# Beta: log alpha, log beta equal the head outputs on [-15, 15] (what every checkpoint was
# trained with); beyond, a tanh tail approaches +-20 smoothly, so exp(), lgamma and the
# moments stay finite in fp32 while gradients stay non-zero (a hard clamp zeroed them).
BETA_LOG_LINEAR = 15.0
BETA_LOG_TAIL = 5.0


def head_size(likelihood: str) -> int:
    """Number of head outputs for a likelihood."""
    try:
        return HEAD_SIZES[likelihood]
    except KeyError:
        raise ValueError(
            f"unknown likelihood {likelihood!r}; expected one of {tuple(HEAD_SIZES)}"
        ) from None


def pad_ratings(ratings: list[list[int]]) -> torch.Tensor:
    """Pack per-item rating lists into a (batch, max_len) long tensor padded with 0."""
    width = max((len(r) for r in ratings), default=0)
    out = torch.zeros(len(ratings), max(width, 1), dtype=torch.long)
    for i, row in enumerate(ratings):
        out[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
    return out


def beta_log_params(logits: torch.Tensor) -> torch.Tensor:
    """(log alpha, log beta) from Beta head outputs: identity on [-15, 15], smooth tail to +-20."""
    z = logits.float()
    excess = z.abs() - BETA_LOG_LINEAR
    tail = z.sign() * (BETA_LOG_LINEAR + BETA_LOG_TAIL * torch.tanh(excess / BETA_LOG_TAIL))
    return torch.where(excess > 0, tail, z)


def _beta_params(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    log_ab = beta_log_params(logits)
    return log_ab[:, 0].exp(), log_ab[:, 1].exp()


def nll(likelihood: str, logits: torch.Tensor, ratings: torch.Tensor) -> torch.Tensor:
    """Per-item negative log-likelihood (batch,), summed over each item's ratings.

    Beta and Multinomial add one term per rating; Bernoulli one term per item against the
    item's mean normalised rating.
    """
    mask = ratings > 0
    if not bool(mask.any(dim=1).all()):
        raise ValueError("every item needs at least one rating in 1..5")
    if bool(((ratings < 0) | (ratings > 5)).any()):
        raise ValueError("ratings must be integers in 1..5 (0 marks padding)")
    y = (ratings.float() - 1.0) / 4.0
    if likelihood == "beta":
        a, b = _beta_params(logits)
        yc = y.clamp(*BETA_Y_RANGE)
        log_norm = torch.lgamma(a + b) - torch.lgamma(a) - torch.lgamma(b)
        logp = (a[:, None] - 1) * yc.log() + (b[:, None] - 1) * torch.log1p(-yc) + log_norm[:, None]
        return -(logp * mask).sum(dim=1)
    if likelihood == "multinomial":
        logphi = torch.log_softmax(logits.float(), dim=-1)
        index = (ratings - 1).clamp(min=0)
        logp = logphi.gather(1, index)
        return -(logp * mask).sum(dim=1)
    if likelihood == "bernoulli":
        ybar = (y * mask).sum(dim=1) / mask.sum(dim=1)
        z = logits.float()[:, 0]
        return torch.nn.functional.binary_cross_entropy_with_logits(z, ybar, reduction="none")
    raise ValueError(f"unknown likelihood {likelihood!r}")


def moments(likelihood: str, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Predicted mean and variance on the unit scale; variance is None for Bernoulli."""
    if likelihood == "beta":
        a, b = _beta_params(logits)
        s = a + b
        return a / s, a * b / (s * s * (s + 1))
    if likelihood == "multinomial":
        phi = torch.softmax(logits.float(), dim=-1)
        k = torch.arange(1, 6, dtype=phi.dtype, device=phi.device)
        mu = (phi * k).sum(dim=-1)
        var = (phi * (k - mu[:, None]) ** 2).sum(dim=-1)
        return (mu - 1) / 4, var / 16
    if likelihood == "bernoulli":
        return torch.sigmoid(logits.float()[:, 0]), None
    raise ValueError(f"unknown likelihood {likelihood!r}")


def distribution(likelihood: str, logits: torch.Tensor) -> list[dict[str, float | list[float]]]:
    """The full predicted distribution per item: rating probabilities, Beta parameters, or p."""
    if likelihood == "multinomial":
        return [{"probs": row} for row in torch.softmax(logits.float(), dim=-1).tolist()]
    if likelihood == "beta":
        a, b = _beta_params(logits)
        return [{"alpha": x, "beta": y} for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    if likelihood == "bernoulli":
        return [{"p": p} for p in torch.sigmoid(logits.float()[:, 0]).tolist()]
    raise ValueError(f"unknown likelihood {likelihood!r}")


def clamp_mean(
    mean_unit: float, var_unit: float | None, threshold: float | None, margin: float = 0.125
) -> float:
    """Snap a confident mean near 0 or 1 to exactly 0 or 1 (variance None counts as 0)."""
    if threshold is None or (var_unit or 0.0) > threshold:
        return mean_unit
    if mean_unit < margin:
        return 0.0
    if mean_unit > 1.0 - margin:
        return 1.0
    return mean_unit
