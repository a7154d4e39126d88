"""Compiled CPU kernels of the envs (numba): plain-loop versions of torch functions.

Each kernel computes the same formula as one torch function, which stays the
definition (and what runs on CUDA). A kernel is kept only where it earns at
least 1.5x on a recorded benchmark (``benchmarks/env_throughput.py``; the table
in ``docs/envs.md``). ``BANDIT_GYM_KERNELS=0`` turns every kernel off (read at
each call), so the torch path runs instead; ``tests/envs/test_kernels.py``
compares the two with ``torch.testing.assert_close``.

Kernels:

* :func:`unit_normal` for :func:`bandit_gym.rng.unit_normal` (the arm features);
* :func:`linear_scores` for the synthetic envs' ``x . theta*`` (``(contexts * theta).sum(-1)``);
* :func:`best_arms` for ``torch.max(expected, dim=2)`` (the best value and the first arm that has it).

Both run on one thread, so they neither wait for torch's intra-op threads when another process
holds a core nor hang in a forked child. Their measured gains are in ``docs/envs.md``.
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch
from numba import njit

from bandit_gym import rng


def enabled() -> bool:
    """Whether compiled kernels are on: ``BANDIT_GYM_KERNELS`` unset or anything but ``0``."""
    return os.environ.get("BANDIT_GYM_KERNELS", "1") != "0"


def unit_normal(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...]) -> torch.Tensor:
    """:func:`bandit_gym.rng.unit_normal` (same arguments, same formula): compiled on CPU when kernels are on."""
    if not (enabled() and keys.device.type == "cpu"):
        return rng.unit_normal(keys, stream, counter, shape)
    n = math.prod(shape)
    start = (keys + rng._offset(stream, counter)).numpy().view(np.uint64)  # (R,) word 0 of each block, hashed
    out = np.empty((len(keys), n), np.float32)
    _unit_normal_rows(start, n, shape[-1], out)
    return torch.from_numpy(out).reshape(len(keys), *shape)


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
    first arm that has it ``(R, B)`` int64 (``BanditSimulator._observe``)."""
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


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)


@njit(nogil=True, cache=True)
def _unit_normal_rows(start, n, dim, out):
    """``out[r]`` (``n`` float32): replica ``r``'s unit rows of ``dim`` normals from words
    ``mix64(start[r] + j golden)``.

    Word ``j`` gives two normals (Box-Muller): ``u1 = (high 32 bits + 1/2) 2^-32``,
    ``angle = 2 pi (low 32 bits) 2^-32``,
    ``z[j] = sqrt(-2 ln u1) cos(angle)``, ``z[half + j] = sqrt(-2 ln u1) sin(angle)``; each run of ``dim``
    entries of ``z`` is divided by its norm in float64, then rounded to float32 (as in ``rng.unit_normal``).
    """
    half = (n + 1) // 2
    z = np.empty(2 * half, np.float64)
    for r in range(start.shape[0]):
        for j in range(half):
            x = start[r] + np.uint64(j) * _GOLDEN
            x = (x ^ (x >> np.uint64(30))) * _MUL1
            x = (x ^ (x >> np.uint64(27))) * _MUL2
            x = x ^ (x >> np.uint64(31))
            u1 = (np.float64(x >> np.uint64(32)) + 0.5) * 2.0**-32
            angle = np.float64(x & np.uint64(0xFFFFFFFF)) * (2.0 * math.pi * 2.0**-32)
            radius = math.sqrt(-2.0 * math.log(u1))
            z[j] = radius * math.cos(angle)
            z[half + j] = radius * math.sin(angle)
        for row in range(n // dim):
            squares = 0.0
            for i in range(row * dim, (row + 1) * dim):
                squares += z[i] * z[i]
            norm = math.sqrt(squares)
            for i in range(row * dim, (row + 1) * dim):
                out[r, i] = np.float32(z[i] / norm)
