"""Compiled CPU kernels (numba): plain loop versions of torch functions of the agents.

Torch defines every computation; a kernel here is an accelerator of ONE torch function, named
in its docstring, kept only because it makes the benchmark run it serves at least 1.5x faster
(the measured gains are in ``docs/agents.md``). Each is tested against its torch function with
``torch.testing.assert_close`` (``tests/agents/test_kernels.py``).

``BANDIT_GYM_KERNELS=0`` in the environment switches every kernel off (the agents then run
their torch code); the envs' kernels (``bandit_gym/_kernels.py``) obey the same variable.
The variable is read at each call, so a test can switch it.
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch
from numba import njit

from bandit_gym import rng

_JIT = {"nogil": True, "cache": True, "error_model": "numpy"}

def enabled(*tensors: torch.Tensor) -> bool:
    """Whether the kernels are on (``BANDIT_GYM_KERNELS`` is not ``0``) and can take these tensors
    (float32 or int64 CPU tensors that need no gradient)."""
    return os.environ.get("BANDIT_GYM_KERNELS", "1") != "0" and all(
        t.is_cpu and not t.requires_grad and t.dtype in (torch.float32, torch.int64) for t in tensors)


# -- bandit_gym.rng.normal --------------------------------------------------------------------
@njit(**_JIT)
def _normal_rows(words, n, out):
    """Row ``r``: Box-Muller on word ``j`` gives normal ``j`` (cosine) and ``j + m`` (sine), ``m = ceil(n / 2)``:
    the radius in float64, the cosine and sine in float32 (twice as fast as float64's; the draws stay within
    1e-6 of the float64 definition, about 7 float32 ulps on average)."""
    m = (n + 1) // 2
    for r in range(words.shape[0]):
        for j in range(m):
            word = words[r, j]
            u1 = (np.float64(word >> np.uint64(32)) + 0.5) * 2.0**-32
            angle = np.float32(np.float64(word & np.uint64(0xFFFFFFFF)) * (2.0 * math.pi * 2.0**-32))
            radius = math.sqrt(-2.0 * math.log(u1))
            out[r, j] = radius * math.cos(angle)
            if j + m < n:
                out[r, j + m] = radius * math.sin(angle)


def normal(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Loop version of ``bandit_gym.rng.normal``: the same words (``bandit_gym.rng.random_words``) and formula,
    with float32 cosines and sines (within 1e-6 of the torch draws, which round a float64 Box-Muller once)."""
    n = math.prod(shape)
    words = rng.random_words(keys, stream, counter, (n + 1) // 2)  # (R, m) int64: the public draw of the words
    out = np.empty((len(keys), n), np.float32)
    _normal_rows(words.numpy().view(np.uint64), n, out)
    return torch.from_numpy(out).reshape(len(keys), *shape)


# -- agents.lmcts.langevin_steps with the linear model ----------------------------------------
@njit(**_JIT)
def _linear_langevin(gram, moment, theta, step_size, inverse_temperature, noise, out):
    R, K, d = noise.shape
    grad = np.empty(d, np.float32)
    two = np.float32(2.0)
    for r in range(R):
        out[r] = theta[r]
        eta = step_size[r]
        noise_scale = np.sqrt(two * eta / inverse_temperature[r])
        for k in range(K):
            for i in range(d):  # grad = 2 (V theta - b), V theta as a sum of V's rows (V is symmetric)
                grad[i] = -moment[r, i]
            for j in range(d):
                theta_j = out[r, j]
                for i in range(d):
                    grad[i] += gram[r, j, i] * theta_j
            for i in range(d):
                out[r, i] = out[r, i] - eta * (two * grad[i]) + noise_scale * noise[r, k, i]


def linear_langevin(gram: torch.Tensor, moment: torch.Tensor, theta: torch.Tensor, step_size: torch.Tensor,
                    inverse_temperature: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """Loop version of :func:`agents.lmcts.langevin_steps` for :class:`agents.models.LinearModel`:
    ``K`` steps ``theta <- theta - eta 2 (V theta - b) + sqrt(2 eta / beta) eps_k`` per replica."""
    out = np.empty(theta.shape, np.float32)
    _linear_langevin(gram.numpy(), moment.numpy(), theta.numpy(), step_size.numpy(), inverse_temperature.numpy(),
                     noise.numpy(), out)
    return torch.from_numpy(out)


# -- agents.models ---------------------------------------------------------------------------
@njit(**_JIT)
def _linear_scores(x, theta, out):
    R, K, d = x.shape
    for r in range(R):
        for k in range(K):
            acc = np.float32(0.0)
            for j in range(d):
                acc += x[r, k, j] * theta[r, j]
            out[r, k] = acc


def linear_scores(contexts: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Loop version of :func:`agents.models.linear_scores`: ``x . theta`` per arm, ``(R, K)``."""
    out = np.empty(contexts.shape[:2], np.float32)
    _linear_scores(contexts.numpy(), theta.numpy(), out)
    return torch.from_numpy(out)


@njit(**_JIT)
def _add_observation(gram, moment, x, rewards, gram_new, moment_new):
    R, d = moment.shape
    for r in range(R):
        for i in range(d):
            for j in range(d):
                gram_new[r, i, j] = gram[r, i, j] + x[r, i] * x[r, j]
            moment_new[r, i] = moment[r, i] + rewards[r] * x[r, i]


def add_observation(gram: torch.Tensor, moment: torch.Tensor, x: torch.Tensor,
                    rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Loop version of :func:`agents.models.add_observation`: ``V + x x^T`` and ``b + r x``."""
    gram_new, moment_new = np.empty(gram.shape, np.float32), np.empty(moment.shape, np.float32)
    _add_observation(gram.numpy(), moment.numpy(), x.numpy(), rewards.numpy(), gram_new, moment_new)
    return torch.from_numpy(gram_new), torch.from_numpy(moment_new)
