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
    """``x^T M x`` for every arm: ``(R, d, d), (R, K, d) -> (R, K)``.

    Multiply-and-sum, not ``bmm``: ``bmm`` is 9x faster at R=10, K=50, d=20 but gives
    batch-size-dependent bits for shapes such as d = 9, 21 or 63 (``tests/agents/test_math.py``).
    """
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
    batched run and a single run break ties identically. On CPU the draws are
    skipped when no row has a tie (they could not change the answer): that saves
    the ~100 us of a draw in almost every round of continuous-valued scores.
    """
    if values.device.type == "cpu" and values.shape[1] >= 2:
        top = values.topk(2, dim=1)  # the two largest per row: values, indices (R, 2)
        if bool((top.values[:, 0] > top.values[:, 1]).all()):
            return top.indices[:, 0]  # every row has a unique maximiser
    best = values.max(dim=1, keepdim=True).values  # (R, 1)
    noise = _rng.uniform(keys, stream, counter, (values.shape[1],)).to(values.device)  # (R, K)
    # Among the maximisers pick the one with the largest uniform draw.
    return torch.where(values == best, noise, torch.full_like(noise, -1.0)).argmax(dim=1)


#: Rows handed to elementwise transcendental kernels are padded to a multiple of this length.
ROW_MULTIPLE = 64


def sigmoid(z: torch.Tensor) -> torch.Tensor:
    """``torch.sigmoid`` over the last axis, padded so that a replica's values do not depend on R.

    CPU kernels for ``exp``-like functions run SIMD code on whole vector chunks and a scalar
    loop on the tail, and the two can differ in the last ulp; which entries land in the tail
    depends on the tensor's total size. Padding every row to a multiple of :data:`ROW_MULTIPLE`
    puts every entry on the SIMD path for any R (with 1 or 2 threads), so ``(R, n) -> (R, n)``
    of a batch equals the single run bit for bit.
    """
    n = z.shape[-1]
    pad = -n % ROW_MULTIPLE
    if pad:
        z = torch.nn.functional.pad(z, (0, pad))
    return torch.sigmoid(z)[..., :n]


def inverse_cholesky_factor(matrix: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``S = L^-T`` with ``L L^T = M``, so ``S S^T = M^-1``: ``(R, d, d) -> (R, d, d), info (R,)``.

    ``theta + S z`` with ``z ~ N(0, I)`` then has covariance ``M^-1`` (draw it with :func:`matvec`).
    Factoring ``M`` itself (not a running inverse) keeps the draw as accurate as ``M``. ``L^-1``
    comes from a triangular solve against the identity: that LAPACK call (like the Cholesky)
    gives each replica the same bits whatever R, which a solve against a single vector does
    not (measured: it differs for d = 9, 21, 33, 50, 63). ``info`` is nonzero where ``M`` is
    not positive definite.
    """
    lower, info = torch.linalg.cholesky_ex(matrix)  # (R, d, d), (R,)
    eye = torch.eye(matrix.shape[-1], dtype=matrix.dtype, device=matrix.device).expand_as(matrix)
    return torch.linalg.solve_triangular(lower, eye, upper=False).mT, info


def chosen_rows(contexts: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Features of the played arms: ``(R, K, d), (R,) -> (R, d)``."""
    return contexts.gather(1, actions[:, None, None].expand(-1, 1, contexts.shape[2]))[:, 0]


