"""Compiled CPU kernels of the envs' per-step bookkeeping (numba).

A batched env's ``step`` on CPU is a dozen small array operations, each costing
more in call overhead than in arithmetic at the paper's sizes (R = 10 replicas,
K = 50 arms). These kernels do the per-replica work of several of them in one
call; they are exact (indexing, comparisons, one subtraction), so the env's
numbers are the same as with the numpy or torch operations they replace.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bandit_gym._rng import _normal_row, _scratch

_JIT = {"nogil": True, "cache": True}


@njit(**_JIT)
def first_invalid_action(actions, n_arms):
    """Index of the first action outside ``[0, n_arms)``, or -1 when all are valid."""
    for i in range(actions.shape[0]):
        if actions[i] < 0 or actions[i] >= n_arms:
            return i
    return -1


@njit(**_JIT)
def chosen_and_regret(expected, best, actions):
    """Expected reward of each replica's chosen arm and its regret ``best - chosen``: ``(R, K), (R,), (R,)``."""
    R = actions.shape[0]
    chosen = np.empty(R, np.float32)
    regret = np.empty(R, np.float32)
    for r in range(R):
        chosen[r] = expected[r, actions[r]]
        regret[r] = best[r] - chosen[r]  # exactly 0 for the best arm
    return chosen, regret


@njit(**_JIT)
def gaussian_outcome(expected, best, actions, noise, noise_std):
    """:func:`chosen_and_regret`, and rewards ``chosen + noise_std * noise``: ``(R,)`` rewards and regrets.

    The same float32 operations as the numpy expression (no fused multiply-add), so the same numbers.
    """
    R = actions.shape[0]
    rewards, regret = np.empty(R, np.float32), np.empty(R, np.float32)
    std = np.float32(noise_std)
    for r in range(R):
        chosen = expected[r, actions[r]]
        regret[r] = best[r] - chosen
        rewards[r] = chosen + std * noise[r]
    return rewards, regret


@njit(**_JIT)
def _dot(x, theta):
    """``x . theta`` of two float32 vectors, summed in float64 in index order, rounded once."""
    total = 0.0
    for k in range(x.shape[0]):
        total += np.float64(x[k]) * np.float64(theta[k])
    return np.float32(total)


@njit(**_JIT)
def _scores_into(x, theta, out):
    """``out[i] = _dot(x[i], theta)`` for the rows of ``x`` ``(N, d)``: four rows side by side (the
    same sums, in index order, as four independent chains of adds rather than one)."""
    N, d = x.shape
    i = 0
    while i + 4 <= N:
        a0, a1, a2, a3 = 0.0, 0.0, 0.0, 0.0
        for k in range(d):
            tk = np.float64(theta[k])
            a0 += np.float64(x[i, k]) * tk
            a1 += np.float64(x[i + 1, k]) * tk
            a2 += np.float64(x[i + 2, k]) * tk
            a3 += np.float64(x[i + 3, k]) * tk
        out[i], out[i + 1], out[i + 2], out[i + 3] = np.float32(a0), np.float32(a1), np.float32(a2), np.float32(a3)
        i += 4
    for j in range(i, N):
        out[j] = _dot(x[j], theta)


@njit(**_JIT)
def linear_scores(features, theta):
    """``x . theta`` for every row: ``(R, N, d), (R or 1, d) -> (R, N)`` float32 (see :func:`_dot`)."""
    R, N = features.shape[0], features.shape[1]
    out = np.empty((R, N), np.float32)
    for r in range(R):
        _scores_into(features[r], theta[0] if theta.shape[0] == 1 else theta[r], out[r])
    return out


@njit(**_JIT)
def unit_arms_and_scores(starts, dim, theta, arms, scores):
    """Blocks of unit-norm arms and their scores in one call, with no Python in between.

    ``starts (G, R)``: where block ``g`` of replica ``r`` starts its words (``_rng.start_words``).
    ``arms[r, g]`` (``rows dim`` float32) gets that block's ``_rng.unit_normal`` rows and
    ``scores[r, g]`` (``rows``) their :func:`linear_scores` with ``theta`` ``(R or 1, d)``: the
    same numbers as those calls. One call holds the GIL only to start, so it runs beside the
    caller's thread.
    """
    G, R = starts.shape
    n = arms.shape[2]
    rows = n // dim
    scratch = _scratch(n)
    for r in range(R):
        t = theta[0] if theta.shape[0] == 1 else theta[r]
        for g in range(G):
            _normal_row(starts[g, r], n, dim, arms[r, g], scratch)
            _scores_into(arms[r, g].reshape(rows, dim), t, scores[r, g])
