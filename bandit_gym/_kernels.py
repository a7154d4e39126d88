"""Compiled CPU kernels of the envs (numba): plain-loop versions of torch functions.

Each kernel computes the same formula as one torch function, which stays the
definition (and what runs on CUDA). A kernel is kept only where it earns at
least 1.5x on a recorded benchmark (``benchmarks/env_throughput.py``; the table
in ``docs/envs.md``). ``BANDIT_GYM_KERNELS=0`` turns every kernel off (read at
each call), so the torch path runs instead; ``tests/envs/test_kernels.py``
compares the two with ``torch.testing.assert_close``.

Kernels:

* :func:`unit_normal` for :func:`bandit_gym.rng.unit_normal` (the arm features): the loop is
  :func:`bandit_gym._rng_kernels.unit_normal`, with the compiled SplitMix64 and Box-Muller of the package;
* :func:`linear_scores` for the synthetic envs' ``x . theta*`` (``(contexts * theta).sum(-1)``);
* :func:`best_arms` for ``torch.max(expected, dim=2)`` (the best value and the first arm that has it).

and two torch-level devices of the synthetic envs (the same numbers, bit for bit, fewer calls):

* :func:`draws_per_call` and :func:`per_counter`: a single env (or a few replicas) draws several counters of
  its context stream per generator call (kernels off: one, read when the env is built);
* :func:`block_draws_numpy`: a single env's reward draws as a cached numpy view of their block (kernels
  off: the round's tensor, converted).

All run on the calling thread, so they neither wait for torch's intra-op threads when another process holds a
core nor hang in a forked child. Their measured gains are in ``docs/envs.md``.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from bandit_gym import _rng_kernels, rng
from bandit_gym._rng_kernels import enabled


def unit_normal(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...], count: int = 1) -> torch.Tensor:
    """:func:`bandit_gym.rng.unit_normal` (same arguments, same formula): compiled on CPU when kernels are on
    (:func:`bandit_gym._rng_kernels.unit_normal`, within one float32 ulp).

    ``count`` > 1 draws the blocks of counters ``counter .. counter + count - 1`` in one call, concatenated
    along axis 1: ``(R, count * shape[0], *shape[1:])``, the same as concatenating ``count`` calls.
    """
    if not (enabled() and keys.device.type == "cpu"):
        blocks = [rng.unit_normal(keys, stream, counter + i, shape) for i in range(count)]
        return blocks[0] if count == 1 else torch.cat(blocks, dim=1)
    return _rng_kernels.unit_normal(keys, [rng._offset(stream, counter + i) for i in range(count)], shape)


def linear_scores(contexts: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Compiled ``(contexts * theta[:, None, None, :]).sum(dim=3)`` (``SyntheticBanditSimulator._scores``) for CPU
    float32 tensors: ``(R, B, K, d), (R or 1, d) -> (R, B, K)``."""
    R, B, K, d = contexts.shape
    out = np.empty((R, B * K), np.float32)
    _scores(contexts.reshape(R, B * K, d).numpy(), theta.numpy(), out)
    return torch.from_numpy(out).reshape(R, B, K)


@njit(nogil=True, cache=True)
def _scores(x, theta, out):
    """``out[r, i] = sum_k x[r, i, k] theta[r or 0, k]`` (summed in float64, rounded once)."""
    for r in range(x.shape[0]):
        t = theta[0] if theta.shape[0] == 1 else theta[r]
        for i in range(x.shape[1]):
            total = 0.0
            for k in range(x.shape[2]):
                total += np.float64(x[r, i, k]) * np.float64(t[k])
            out[r, i] = np.float32(total)


def best_arms(expected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Compiled ``torch.max(expected, dim=2)`` for CPU float32 ``(R, B, K)``: the largest value ``(R, B)`` and the
    first arm that has it ``(R, B)`` int64 (``BanditSimulator._show_arms``)."""
    R, B, K = expected.shape
    best, optimal = np.empty(R * B, np.float32), np.empty(R * B, np.int64)
    _best_arms(expected.reshape(R * B, K).numpy(), best, optimal)
    return torch.from_numpy(best).reshape(R, B), torch.from_numpy(optimal).reshape(R, B)


@njit(nogil=True, cache=True)
def _best_arms(values, best, optimal):
    for i in range(values.shape[0]):
        best[i], optimal[i] = values[i, 0], 0
        for k in range(1, values.shape[1]):
            if values[i, k] > best[i]:  # strictly larger: ties keep the first arm
                best[i], optimal[i] = values[i, k], k


# -- the synthetic envs (bandit_gym.synthetic): fewer generator calls, the same numbers -------------------
#: Features per replica that one call of the single env's (or a few replicas') generator draws: several blocks of
#: the stream at once (8 at 50 x 20), so the per-call cost of the compiled draw and of the expected rewards is paid
#: every 16 rounds, not every 2. The numbers do not depend on it: a block is a block of the stream however many are
#: drawn together.
CALL_FEATURES = 16384


def draws_per_call(features: int) -> int:
    """Counters of a stream drawn per generator call when one counter's block has ``features`` features per
    replica-set: several for a single env or a few replicas with the kernels on, else 1 (the definition)."""
    return max(1, CALL_FEATURES // features) if enabled() else 1


def per_counter(function, x: torch.Tensor, rounds: int) -> torch.Tensor:
    """``function`` applied to each counter's ``rounds`` rounds of ``x`` ``(R, B, ...)`` on its own: torch's
    vectorised functions (``sigmoid``, a sum) may round the last elements of a tensor differently from the same
    elements inside a longer one, so the numbers stay those of one counter per call."""
    return torch.cat([function(part.contiguous()) for part in x.split(rounds, dim=1)], dim=1)


def block_draws_numpy(draws: rng.BlockDraws, keys: torch.Tensor, t: int) -> np.ndarray:
    """``draws(keys, t).numpy()`` (CPU keys) as a view of the block's numpy array, kept with the block: a
    single env's round then makes no torch call."""
    cache = draws._cache
    if cache is None or cache[0] is not keys or cache[1] != t // draws.block or draws._cache_numpy is None \
            or draws._cache_numpy[0] is not cache[2]:
        draws(keys, t)
        draws._cache_numpy = (draws._cache[2], draws._cache[2].numpy())
    return draws._cache_numpy[1][:, t % draws.block]  # (R, *shape)
