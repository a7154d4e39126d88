"""Batched math shared by the agents. Shapes: R replicas, K arms, d features.

Products are written as elementwise multiply + sum over the last axis rather
than ``bmm``/``matmul``: that reduction runs the same way whatever ``R`` is,
so replica ``r`` of a batch computes bit for bit what a single run computes.
"""

from __future__ import annotations

import torch

from bandit_gym import _rng


def matvec(matrix: torch.Tensor, vector: torch.Tensor) -> torch.Tensor:
    """``(R, d, d) @ (R, d) -> (R, d)``, reduction order independent of R."""
    return (matrix * vector[:, None, :]).sum(dim=-1)


def quad_form(matrix: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
    """``x^T M x`` for every arm: ``(R, d, d), (R, K, d) -> (R, K)``."""
    mx = (contexts[:, :, None, :] * matrix[:, None, :, :]).sum(dim=-1)  # (R, K, d)
    return (mx * contexts).sum(dim=-1)


def scores(contexts: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Linear scores ``x . theta``: ``(R, K, d), (R, d) -> (R, K)``."""
    return (contexts * theta[:, None, :]).sum(dim=-1)


def sherman_morrison(inverse: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Rank-one update of ``V^-1`` after ``V <- V + x x^T``: ``(R, d, d), (R, d) -> (R, d, d)``."""
    vx = matvec(inverse, x)  # (R, d); V^-1 is symmetric so x^T V^-1 = (V^-1 x)^T
    denom = 1.0 + (vx * x).sum(dim=-1)  # (R,)
    return inverse - vx[:, :, None] * vx[:, None, :] / denom[:, None, None]


def random_argmax(values: torch.Tensor, keys: torch.Tensor, stream: int, counter: int) -> torch.Tensor:
    """Index of the largest value per row, ties broken uniformly at random: ``(R, K) -> (R,)``.

    The tie-breaking draws come from the replicas' counter-based streams, so a
    batched run and a single run break ties identically.
    """
    best = values.max(dim=1, keepdim=True).values  # (R, 1)
    noise = _rng.uniform(keys, stream, counter, (values.shape[1],)).to(values.device)  # (R, K)
    # Among the maximisers pick the one with the largest uniform draw.
    return torch.where(values == best, noise, torch.full_like(noise, -1.0)).argmax(dim=1)
