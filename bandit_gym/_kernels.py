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
