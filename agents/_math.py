"""Batched math shared by the agents. Shapes: R replicas, K arms, d features.

Every function here gives replica ``r`` of a batch the same bits as a single run
(``R = 1``), which is what makes a batched run equal its single-run twins.

On CPU (float32 tensors that need no gradient) the work runs in the compiled kernels of
``agents._kernels`` on zero-copy numpy views of the tensors: one loop per replica, the
same instructions for every replica, so batch-size invariance holds by construction
(``tests/agents/test_math.py``), which ``torch.bmm`` does not promise (measured with torch
2.14 on CPU: it differs for d = 9, 21, 63, and matrix-vector ``bmm`` for most d). The
agents call these functions every round on small arrays, where a call's fixed cost is
most of its time: at R=10, K=50, d=20 a LinUCB update takes 13 us in the kernel against
40 us in numpy and more in torch. Elsewhere (CUDA, autograd) the same math is written as
elementwise multiply + sum over the last axis, whose reduction does not depend on R.
"""

from __future__ import annotations

import operator

import numpy as np
import torch

from agents import _kernels
from bandit_gym import _rng


def _kernel_ok(*tensors: torch.Tensor) -> bool:
    """True when the tensors are plain float32 CPU tensors: the kernels can take numpy views of them."""
    return all(t.is_cpu and not t.requires_grad and t.dtype == torch.float32 for t in tensors)


def scaled_identity(num_replicas: int, dim: int, scale: float, device: torch.device) -> torch.Tensor:
    """``scale * I`` for every replica, ``(R, d, d)`` float32 (a fresh tensor, safe to update)."""
    return (scale * torch.eye(dim, device=device)).expand(num_replicas, dim, dim).clone()


def matvec(matrix: torch.Tensor, vector: torch.Tensor) -> torch.Tensor:
    """``(R, d, d) @ (R, d) -> (R, d)``, reduction order independent of R."""
    if _kernel_ok(matrix, vector):
        return torch.from_numpy(_kernels.matvec(matrix.numpy(), vector.numpy()))
    return (matrix * vector[:, None, :]).sum(dim=-1)


def quad_form(matrix: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
    """``x^T M x`` for every arm and a symmetric ``M``: ``(R, d, d), (R, K, d) -> (R, K)``.

    The CPU kernel reads only the upper triangle of ``M`` (half the work); ``V^-1`` kept by
    :func:`sherman_morrison` is exactly symmetric.
    """
    if _kernel_ok(matrix, contexts):
        return torch.from_numpy(_kernels.quad_form(matrix.numpy(), contexts.numpy()))
    mx = (contexts[:, :, None, :] * matrix[:, None, :, :]).sum(dim=-1)  # (R, K, d)
    return (mx * contexts).sum(dim=-1)


def scores(contexts: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Linear scores ``x . theta``: ``(R, K, d), (R, d) -> (R, K)``."""
    if _kernel_ok(contexts, theta):
        return torch.from_numpy(_kernels.scores(contexts.numpy(), theta.numpy()))
    return (contexts * theta[:, None, :]).sum(dim=-1)


def sampled_scores(contexts: torch.Tensor, center: torch.Tensor, factor: torch.Tensor, z: torch.Tensor,
                   scale: float) -> torch.Tensor:
    """Thompson scores ``x . theta`` for the draw ``theta = center + scale * S z``: ``(R, K)``.

    ``contexts (R, K, d), center (R, d), factor S (R, d, d), z (R, d)``; one call instead of
    :func:`matvec`, two elementwise ops and :func:`scores`, with the same bits on CPU.
    """
    if _kernel_ok(contexts, center, factor, z):
        values, _, _ = _kernels.sampled_scores(contexts.numpy(), center.numpy(), factor.numpy(), z.numpy(), scale)
        return torch.from_numpy(values)
    return scores(contexts, center + scale * matvec(factor, z))


def sampled_argmax(contexts: torch.Tensor, center: torch.Tensor, factor: torch.Tensor, z: torch.Tensor,
                   scale: float, ties: tuple[torch.Tensor, int, int]) -> torch.Tensor:
    """:func:`random_argmax` of :func:`sampled_scores` (``ties``: its keys, stream and counter), one call on CPU."""
    if _kernel_ok(contexts, center, factor, z):
        values, first, unique = _kernels.sampled_scores(contexts.numpy(), center.numpy(), factor.numpy(),
                                                        z.numpy(), scale)
        return torch.from_numpy(first) if unique else random_argmax(torch.from_numpy(values), *ties)
    return random_argmax(sampled_scores(contexts, center, factor, z, scale), *ties)


def optimistic_scores(contexts: torch.Tensor, theta: torch.Tensor, inverse: torch.Tensor, nu: float) -> torch.Tensor:
    """Upper confidence bounds ``x . theta + nu sqrt(x^T V^-1 x)`` for every arm: ``(R, K)``.

    One call instead of :func:`scores`, :func:`quad_form` and four elementwise ops.
    """
    if _kernel_ok(contexts, theta, inverse):
        values, _, _ = _kernels.optimistic_scores(contexts.numpy(), theta.numpy(), inverse.numpy(), nu)
        return torch.from_numpy(values)
    width = quad_form(inverse, contexts).clamp_(min=0.0).sqrt_()  # (R, K)
    return scores(contexts, theta) + nu * width


def optimistic_argmax(contexts: torch.Tensor, theta: torch.Tensor, inverse: torch.Tensor, nu: float,
                      ties: tuple[torch.Tensor, int, int]) -> torch.Tensor:
    """:func:`random_argmax` of :func:`optimistic_scores` (``ties``: its keys, stream and counter), one call on CPU."""
    if _kernel_ok(contexts, theta, inverse):
        values, first, unique = _kernels.optimistic_scores(contexts.numpy(), theta.numpy(), inverse.numpy(), nu)
        return torch.from_numpy(first) if unique else random_argmax(torch.from_numpy(values), *ties)
    return random_argmax(optimistic_scores(contexts, theta, inverse, nu), *ties)


def epsilon_greedy_argmax(contexts: torch.Tensor, theta: torch.Tensor, uniforms: torch.Tensor, epsilon: float,
                          ties: tuple[torch.Tensor, int, int]) -> torch.Tensor:
    """Epsilon-greedy's arms ``(R,)``: where ``u_0 < epsilon`` a uniformly random arm ``min(floor(K u_1), K - 1)``,
    elsewhere :func:`random_argmax` of the scores ``x . theta`` (``ties``: its keys, stream and counter).

    ``contexts (R, K, d), theta (R, d), uniforms (R, 2)`` holding ``u_0, u_1``; one call on CPU.
    """
    if _kernel_ok(contexts, theta, uniforms):
        values, choice, unique = _kernels.epsilon_greedy(contexts.numpy(), theta.numpy(), uniforms.numpy(), epsilon)
        if unique:
            return torch.from_numpy(choice)
        greedy = random_argmax(torch.from_numpy(values), *ties)
    else:
        greedy = random_argmax(scores(contexts, theta), *ties)
    n_arms = contexts.shape[1]
    random_arm = (uniforms[:, 1] * n_arms).long().clamp_(max=n_arms - 1)  # (R,)
    return torch.where(uniforms[:, 0] < epsilon, random_arm, greedy)


def ridge_update(inverse: torch.Tensor, reward_sum: torch.Tensor, x: torch.Tensor,
                 rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Add one observation per replica to ridge statistics: ``V^-1``, ``b`` -> ``V^-1``, ``b``, ``V^-1 b``.

    ``(R, d, d), (R, d), x (R, d), rewards (R,)``: Sherman-Morrison for ``V <- V + x x^T``,
    ``b <- b + r x`` and the new estimate ``theta_hat = V^-1 b``, as new tensors.
    """
    if _kernel_ok(inverse, reward_sum, x, rewards):
        state = (inverse.clone(), reward_sum.clone(), torch.empty_like(reward_sum))
        played_ridge_update_(*state, x[:, None, :], torch.zeros(len(x), dtype=torch.int64), rewards)
        return state  # x as each replica's one arm, played
    inverse = sherman_morrison(inverse, x)
    reward_sum = reward_sum + rewards[:, None] * x
    return inverse, reward_sum, matvec(inverse, reward_sum)


class NumpyViews:
    """numpy views of an agent's CPU state tensors, made again only when a tensor is replaced.

    ``views(a, b, c)`` returns ``(a.numpy(), b.numpy(), c.numpy())``, or None when the tensors
    cannot take the compiled kernels (not float32 CPU tensors without gradient); a round's kernels
    then skip the ~2 us of each ``.numpy()`` and of each check. Identity is safe here: the cached
    views keep their tensors alive.
    """

    __slots__ = ("_arrays", "_tensors")

    def __init__(self) -> None:
        self._tensors: tuple[torch.Tensor, ...] = ()
        self._arrays: tuple[np.ndarray, ...] | None = None

    def __call__(self, *tensors: torch.Tensor) -> tuple[np.ndarray, ...] | None:
        if len(tensors) != len(self._tensors) or not all(map(operator.is_, tensors, self._tensors)):
            self._tensors = tensors
            self._arrays = tuple(t.numpy() for t in tensors) if _kernel_ok(*tensors) else None
        return self._arrays

    def __reduce__(self):
        # A copy starts empty: copied arrays would no longer be views of the copied tensors.
        return NumpyViews, ()


def _played_update_(statistic, reward_sum, theta, contexts, actions, rewards, views, square_root, update) -> bool:
    """The in-place played update: the compiled kernel on CPU, else ``update`` in torch copied into the state."""
    state = (views if views is not None else NumpyViews())(statistic, reward_sum, theta)
    if state is not None and _kernel_ok(contexts, rewards) and actions.is_cpu:
        return bool(_kernels.played_update(*state, contexts.numpy(), actions.numpy(), rewards.numpy(), square_root))
    new = update(statistic, reward_sum, chosen_rows(contexts, actions), rewards)
    for old, value in zip((statistic, reward_sum, theta), new, strict=True):
        old.copy_(value)
    return all_finite(theta)


def played_ridge_update_(inverse: torch.Tensor, reward_sum: torch.Tensor, theta: torch.Tensor,
                         contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor,
                         views: NumpyViews | None = None) -> bool:
    """:func:`ridge_update` for the played arms ``x = contexts[r, actions[r]]``, in place; whether ``theta`` is finite.

    ``V^-1 (R, d, d), b (R, d), theta (R, d)`` are overwritten; ``contexts (R, K, d), actions (R,),
    rewards (R,)``. What an agent does with a round, in one call on CPU (the same numbers as
    :func:`chosen_rows`, :func:`ridge_update` and :func:`all_finite`). ``views`` caches the
    state's numpy views between rounds.
    """
    return _played_update_(inverse, reward_sum, theta, contexts, actions, rewards, views, False, ridge_update)


def potter_update(factor: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Square root of ``V^-1`` after ``V <- V + x x^T``: ``S (R, d, d), x (R, d) -> S``, ``S S^T = V^-1``.

    Potter's square-root update: with ``p = S^T x`` and ``q = sqrt(1 + |p|^2)``,
    ``S <- S - S p p^T / (q (1 + q))`` gives ``S S^T <- S (I - p p^T / q^2) S^T``, which is
    Sherman-Morrison's ``(V + x x^T)^-1``: O(d^2), no factorisation, and ``S`` need not be
    triangular. ``1 / (q (1 + q))`` is ``(1 - 1/q) / |p|^2`` without its cancellation for
    small ``|p|``. In float32 over 10,000 unit-norm updates in d = 20 it stays as close to the
    float64 inverse as Sherman-Morrison does (1e-8 absolute at entries of 2e-3).

    References:
        Potter and Stern (1963), "Statistical filtering of space navigation measurements";
        Bierman (1977), "Factorization methods for discrete sequential estimation", Chapter V.
    """
    if _kernel_ok(factor, x):
        return torch.from_numpy(_kernels.potter_update(factor.numpy(), x.numpy()))
    p = (factor * x[:, :, None]).sum(dim=1)  # (R, d): S^T x
    q = (1.0 + (p * p).sum(dim=-1)).sqrt()  # (R,)
    sp = matvec(factor, p) / (q * (1.0 + q))[:, None]  # (R, d)
    return factor - sp[:, :, None] * p[:, None, :]


def square_root_update(factor: torch.Tensor, reward_sum: torch.Tensor, x: torch.Tensor,
                       rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`ridge_update` for statistics kept as a square root ``S`` of ``V^-1`` (:func:`potter_update`).

    ``(R, d, d), (R, d), x (R, d), rewards (R,)`` -> ``S, b, theta_hat = S (S^T b)``, as new tensors.
    """
    if _kernel_ok(factor, reward_sum, x, rewards):
        state = (factor.clone(), reward_sum.clone(), torch.empty_like(reward_sum))
        played_square_root_update_(*state, x[:, None, :], torch.zeros(len(x), dtype=torch.int64), rewards)
        return state  # x as each replica's one arm, played
    factor = potter_update(factor, x)
    reward_sum = reward_sum + rewards[:, None] * x
    return factor, reward_sum, matvec(factor, (factor * reward_sum[:, :, None]).sum(dim=1))


def played_square_root_update_(factor: torch.Tensor, reward_sum: torch.Tensor, theta: torch.Tensor,
                               contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor,
                               views: NumpyViews | None = None) -> bool:
    """:func:`square_root_update` for the played arms, in place (see :func:`played_ridge_update_`)."""
    return _played_update_(factor, reward_sum, theta, contexts, actions, rewards, views, True, square_root_update)


def sherman_morrison(inverse: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Rank-one update of ``V^-1`` after ``V <- V + x x^T``: ``(R, d, d), (R, d) -> (R, d, d)``."""
    if _kernel_ok(inverse, x):
        return torch.from_numpy(_kernels.sherman_morrison(inverse.numpy(), x.numpy()))
    vx = matvec(inverse, x)  # (R, d); V^-1 is symmetric so x^T V^-1 = (V^-1 x)^T
    denom = 1.0 + (vx * x).sum(dim=-1)  # (R,)
    # (vx_i vx_j) / denom, not vx_i (vx_j / denom): only the former keeps the update exactly
    # symmetric, and over 200 rounds with lambda = 1e-3 the latter drifts 300x further from V^-1.
    return inverse - vx[:, :, None] * vx[:, None, :] / denom[:, None, None]


def all_finite(tensor: torch.Tensor) -> bool:
    """Whether every entry is finite (no NaN or Inf)."""
    if _kernel_ok(tensor):
        return bool(_kernels.all_finite(tensor.numpy()))
    return bool(torch.isfinite(tensor).all())


def random_argmax(values: torch.Tensor, keys: torch.Tensor, stream: int, counter: int) -> torch.Tensor:
    """Index of the largest value per row, ties broken uniformly at random: ``(R, K) -> (R,)``.

    The tie-breaking draws come from the replicas' counter-based streams, so a
    batched run and a single run break ties identically. On CPU the draws are
    skipped when no row has a tie (they could not change the answer): that saves
    the ~100 us of a draw in almost every round of continuous-valued scores.
    """
    if _kernel_ok(values):
        first, unique = _kernels.first_argmax(values.numpy())  # (R,)
        if unique:
            return torch.from_numpy(first)  # every row has a unique maximiser (and no NaN)
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
    if contexts.is_cpu and not contexts.requires_grad and actions.is_cpu:
        return torch.from_numpy(contexts.numpy()[np.arange(len(actions)), actions.numpy()])
    return contexts.gather(1, actions[:, None, None].expand(-1, 1, contexts.shape[2]))[:, 0]


