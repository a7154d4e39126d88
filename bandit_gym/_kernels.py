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
* :func:`best_arms` for ``torch.max(expected, dim=2)`` (the best value and the first arm that has it);
* :func:`random_words` for :func:`bandit_gym.rng.random_words` (SplitMix64's words: what every draw of the
  package and of the agents starts from, so the agents' kernels take their words from it).

and two torch-level devices of the synthetic envs (the same numbers, bit for bit, fewer calls):

* :func:`draws_per_call` and :func:`per_counter`: a single env (or a few replicas) draws several counters of
  its context stream per generator call (kernels off: one, read when the env is built);
* :func:`block_draws_numpy`: a single env's reward draws as a cached numpy view of their block (kernels
  off: the round's tensor, converted).

All run on the calling thread (``unit_normal``'s torch calls too: chunks that torch keeps on it), so
they neither wait for torch's intra-op threads when another process holds a core nor hang in a
forked child. Their measured gains are in ``docs/envs.md``.
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


#: Words per torch call of the float64 ``sin`` and ``cos`` in :func:`unit_normal`. Torch runs these two on its
#: intra-op threads from a much smaller size than most operations (about 1,600 elements here; most operations
#: from 32,768); 1,024 stay on the calling thread. (On one thread, the threading policy's default, one call takes
#: them all: an element's sine is the same whatever the call's length.)
_TORCH_CHUNK = 1024
#: Words per pass of :func:`unit_normal` (a group of whole replicas, at least one): its float64 buffers stay in cache.
_PASS_WORDS = 16384


def unit_normal(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...], count: int = 1) -> torch.Tensor:
    """:func:`bandit_gym.rng.unit_normal` (same arguments, same formula): compiled on CPU when kernels are on.

    ``count`` > 1 draws the blocks of counters ``counter .. counter + count - 1`` in one call, concatenated
    along axis 1: ``(R, count * shape[0], *shape[1:])``, the same as concatenating ``count`` calls.

    The loop's C library ``log``, ``cos`` and ``sin`` would not vectorise, so each pass over a group of replicas
    runs in three steps: the words' ``u1`` and angle (compiled), numpy's vectorised float64 ``log`` and torch's
    ``sin`` and ``cos`` in place, then the radius, the normals and their unit rows (compiled).
    """
    if not (enabled() and keys.device.type == "cpu"):
        blocks = [rng.unit_normal(keys, stream, counter + i, shape) for i in range(count)]
        return blocks[0] if count == 1 else torch.cat(blocks, dim=1)
    n = math.prod(shape)
    half = (n + 1) // 2  # words per block
    offsets = np.array([rng._offset(stream, counter + i) for i in range(count)], np.int64).view(np.uint64)
    start = (keys.numpy().view(np.uint64)[:, None] + offsets).reshape(-1)  # (R count,) word 0 of each block, hashed
    R = len(start)  # a block of each replica and counter: rows of their own
    out = np.empty((R, n), np.float32)
    group = max(1, _PASS_WORDS // half)  # replicas per pass
    buffers = np.empty((3, min(group, R), half))
    for first in range(0, R, group):
        replicas = slice(first, min(first + group, R))
        log_u1, cos, sin = buffers[:, : replicas.stop - first]  # (G, half) each
        _box_muller_inputs(start[replicas], log_u1, sin)  # u1 and the angle
        np.log(log_u1, out=log_u1)
        cos[:] = sin  # the angle
        chunk = cos.size if torch.get_num_threads() == 1 else _TORCH_CHUNK  # one call where no pool can be entered
        for cos_chunk, sin_chunk in zip(torch.from_numpy(cos).view(-1).split(chunk),
                                        torch.from_numpy(sin).view(-1).split(chunk), strict=True):
            cos_chunk.cos_()
            sin_chunk.sin_()
        _unit_rows(log_u1, cos, sin, shape[-1], out[replicas])
    return torch.from_numpy(out).reshape(len(keys), count * shape[0], *shape[1:])


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
_MASK64 = (1 << 64) - 1


@njit(nogil=True, cache=True)
def _word(start, j):
    """Word ``j`` of a block starting at ``start``: ``mix64(start + j golden)`` (:func:`bandit_gym.rng.mix64`)."""
    x = start + np.uint64(j) * _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * _MUL1
    x = (x ^ (x >> np.uint64(27))) * _MUL2
    return x ^ (x >> np.uint64(31))


@njit(nogil=True, cache=True)
def _words(keys, offset, out):
    for r in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[r, j] = _word(keys[r] + offset, j)


def random_words(keys: torch.Tensor, stream: int, counter: int, n: int) -> torch.Tensor:
    """Compiled :func:`bandit_gym.rng.random_words` for CPU keys (the same integers: the arithmetic is exact)."""
    out = np.empty((len(keys), n), np.uint64)
    _words(keys.numpy().view(np.uint64), np.uint64(rng._offset(stream, counter) & _MASK64), out)
    return torch.from_numpy(out.view(np.int64))


@njit(nogil=True, cache=True)
def _box_muller_inputs(start, u1, angle):
    """Word ``j`` of replica ``r``, ``x = mix64(start[r] + j golden)``, as Box-Muller's inputs (``rng._box_muller``):
    ``u1[r, j] = (high 32 bits + 1/2) 2^-32`` and ``angle[r, j] = 2 pi (low 32 bits) 2^-32``."""
    for r in range(u1.shape[0]):
        for j in range(u1.shape[1]):
            x = _word(start[r], j)
            u1[r, j] = (np.float64(x >> np.uint64(32)) + 0.5) * 2.0**-32
            angle[r, j] = np.float64(x & np.uint64(0xFFFFFFFF)) * (2.0 * math.pi * 2.0**-32)


@njit(nogil=True, cache=True)
def _unit_rows(log_u1, cos, sin, dim, out):
    """``out[r]``: replica ``r``'s normals ``z[j] = sqrt(-2 ln u1) cos``, ``z[half + j] = sqrt(-2 ln u1) sin``
    (``half`` words), each run of ``dim`` divided by its norm in float64, then rounded to float32."""
    half = log_u1.shape[1]
    z = np.empty(2 * half, np.float64)
    for r in range(out.shape[0]):
        for j in range(half):
            radius = math.sqrt(-2.0 * log_u1[r, j])
            z[j] = radius * cos[r, j]
            z[half + j] = radius * sin[r, j]
        for row in range(out.shape[1] // dim):
            squares = 0.0
            for i in range(row * dim, (row + 1) * dim):
                squares += z[i] * z[i]
            norm = math.sqrt(squares)
            for i in range(row * dim, (row + 1) * dim):
                out[r, i] = np.float32(z[i] / norm)


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
