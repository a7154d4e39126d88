"""The speed devices of :mod:`bandit_gym.rng`: the one compiled (numba) SplitMix64 and Box-Muller, and a chunk cache.

:mod:`bandit_gym.rng` is the definition (plain torch, and what runs on CUDA); each of its functions that has a
kernel decides in its first line (``if kernels.enabled() and ...: return kernels.x(...)``). This module imports
nothing of bandit_gym but :mod:`bandit_gym.threads` (which imports none of it), so the definition may import it.
``BANDIT_GYM_KERNELS=0`` turns every kernel off (read at each call); ``tests/envs/test_kernels.py`` and
``tests/envs/test_rng_kernels.py`` compare each with its torch function.

Kernels (each takes the counter's start offset, ``rng``'s ``offset(stream, counter)``, from its caller):

* :func:`random_words` for :func:`bandit_gym.rng.random_words` (the same integers: the arithmetic is exact);
* :func:`uniform` for :func:`bandit_gym.rng.uniform` (the same floats: the top 24 bits of each word, exactly);
* :func:`unit_normal` for :func:`bandit_gym.rng.unit_normal` of the synthetic envs' arm features (decided in
  ``bandit_gym.synthetic._unit_normal_counters``, through :func:`bandit_gym._kernels.unit_normal`; within one float32
  ulp);
* :func:`normal` for :func:`bandit_gym.rng.approx_normal` (the agents' Langevin noise and posterior samples:
  float32 cosines and sines, within 1.5e-6 of :func:`bandit_gym.rng.normal`).

and one torch-level device: :func:`chunk_draws` for :class:`bandit_gym.rng.ChunkDraws` (the chunk of draws kept
in hand for its rounds; the same numbers). What each earns: ``benchmarks/speed_devices.py``
(``benchmarks/results/speed_devices.md``).

SplitMix64 is written once, :func:`_word`; Box-Muller's inputs once, :func:`_box_muller_input`.
"""

from __future__ import annotations

import functools
import math
import os
import threading

import numpy as np
import torch
from numba import njit

from bandit_gym.threads import by_replicas, for_each

#: SplitMix64's constants (Steele, Lea and Flood 2014), unsigned: the golden-ratio increment and the two
#: multipliers of the finaliser. :mod:`bandit_gym.rng` takes them from here (as signed int64 for torch).
GOLDEN = 0x9E3779B97F4A7C15
MUL1 = 0xBF58476D1CE4E5B9
MUL2 = 0x94D049BB133111EB
MASK64 = (1 << 64) - 1

_GOLDEN, _MUL1, _MUL2 = np.uint64(GOLDEN), np.uint64(MUL1), np.uint64(MUL2)


def enabled() -> bool:
    """Whether compiled kernels are on: ``BANDIT_GYM_KERNELS`` unset or anything but ``0``."""
    return os.environ.get("BANDIT_GYM_KERNELS", "1") != "0"


def _starts(keys: torch.Tensor, offsets: list[int]) -> np.ndarray:
    """Word 0 of each replica's draws at each offset (a counter's; signed int64 values), ``(R * len(offsets),)``
    uint64, replica-major: ``key + offset`` modulo ``2**64``."""
    offsets_u64 = np.array([offset & MASK64 for offset in offsets], np.uint64)
    return (keys.numpy().view(np.uint64)[:, None] + offsets_u64).reshape(-1)


@njit(nogil=True, cache=True)
def _word(start, j):
    """Word ``j`` of a counter's draws starting at ``start``: ``mix64(start + j golden)``
    (:func:`bandit_gym.rng.mix64`)."""
    x = start + np.uint64(j) * _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * _MUL1
    x = (x ^ (x >> np.uint64(27))) * _MUL2
    return x ^ (x >> np.uint64(31))


@njit(nogil=True, cache=True)
def _words(start, out):
    for r in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[r, j] = _word(start[r], j)


def random_words(keys: torch.Tensor, offset: int, n: int) -> torch.Tensor:
    """:func:`bandit_gym.rng.random_words` of the counter at ``offset`` for CPU keys, ``(R, n)`` int64."""
    out = np.empty((len(keys), n), np.uint64)
    _words(_starts(keys, [offset]), out)
    return torch.from_numpy(out.view(np.int64))


# -- rng.uniform ---------------------------------------------------------------------------------------------------
@njit(nogil=True, cache=True)
def _uniforms(start, out):
    """``out[r, j]``: the top 24 bits of word ``j`` of replica ``r`` times ``2**-24``, float32 (exact)."""
    scale = np.float32(2.0**-24)
    for r in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[r, j] = np.float32(_word(start[r], j) >> np.uint64(40)) * scale


def uniform(keys: torch.Tensor, offset: int, shape: tuple[int, ...]) -> torch.Tensor:
    """:func:`bandit_gym.rng.uniform` of the counter at ``offset`` for CPU keys, ``(R, *shape)`` float32: the same
    words and the same exact conversion, in one loop (the definition: four torch calls after the words)."""
    out = np.empty((len(keys), math.prod(shape)), np.float32)
    _uniforms(_starts(keys, [offset]), out)
    return torch.from_numpy(out).reshape(len(keys), *shape)


@njit(nogil=True, cache=True)
def _box_muller_input(x):
    """A word ``x`` as Box-Muller's inputs (``rng._box_muller``): ``u1 = (high 32 bits + 1/2) 2^-32`` in
    ``(0, 1)`` and the angle ``2 pi (low 32 bits) 2^-32``, both float64."""
    u1 = (np.float64(x >> np.uint64(32)) + 0.5) * 2.0**-32
    angle = np.float64(x & np.uint64(0xFFFFFFFF)) * (2.0 * math.pi * 2.0**-32)
    return u1, angle


# -- rng.approx_normal -------------------------------------------------------------------------------------------
@njit(nogil=True, cache=True, error_model="numpy")
def _normal_rows(words, n, out):
    """Row ``r``: Box-Muller on word ``j`` gives normal ``j`` (cosine) and ``j + m`` (sine), ``m = ceil(n / 2)``:
    the radius in float64, the cosine and sine in float32 (twice as fast as float64's; the draws stay within
    1.5e-6 of the float64 definition, about 7 float32 ulps on average)."""
    m = (n + 1) // 2
    for r in range(out.shape[0]):
        for j in range(m):
            u1, angle = _box_muller_input(words[r, j])
            angle32 = np.float32(angle)
            radius = math.sqrt(-2.0 * math.log(u1))
            out[r, j] = radius * math.cos(angle32)
            if j + m < n:
                out[r, j + m] = radius * math.sin(angle32)


def _normals(n, start, words, out):
    _words(start, words)
    _normal_rows(words, n, out)


def normal(keys: torch.Tensor, offset: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Loop version of :func:`bandit_gym.rng.normal` of the counter at ``offset``: the same words and formula, with
    float32 cosines and sines (within 1.5e-6 of the torch draws, which round a float64 Box-Muller once). The words
    first, in a loop of their own (measured faster than hashing each word inside the trigonometry's loop)."""
    n = math.prod(shape)
    words = np.empty((len(keys), (n + 1) // 2), np.uint64)
    out = np.empty((len(keys), n), np.float32)
    by_replicas(functools.partial(_normals, n), _starts(keys, [offset]), words, out)  # in groups for large draws
    return torch.from_numpy(out).reshape(len(keys), *shape)


# -- rng.unit_normal ---------------------------------------------------------------------------------------------
#: Words per torch call of the float64 ``sin`` and ``cos`` in :func:`unit_normal`. Torch runs these two on its
#: intra-op threads from a much smaller size than most operations (about 1,600 elements here; most operations
#: from 32,768); 1,024 stay on the calling thread. (On one thread, the threading policy's default, one call takes
#: them all: an element's sine is the same whatever the call's length.)
_TORCH_PIECE = 1024
#: Words per pass of :func:`unit_normal` (a group of whole replicas, at least one): its float64 buffers stay in cache.
_PASS_WORDS = 16384


def unit_normal(keys: torch.Tensor, offsets: list[int], shape: tuple[int, ...]) -> torch.Tensor:
    """:func:`bandit_gym.rng.unit_normal` of the counters at ``offsets`` (one offset each) for CPU keys, concatenated
    along axis 1: ``(R, len(offsets) * shape[0], *shape[1:])``.

    The loop's C library ``log``, ``cos`` and ``sin`` would not vectorise, so each pass over a group of replicas
    runs in three steps: the words' ``u1`` and angle (compiled), numpy's vectorised float64 ``log`` and torch's
    ``sin`` and ``cos`` in place, then the radius, the normals and their unit rows (compiled); torch's calls in
    pieces that it keeps on the thread that makes them. The passes run on the threading policy's replica-group
    threads (:func:`bandit_gym.threads.for_each`: one by default, every core for large rounds), each the same
    numbers on any thread.
    """
    n = math.prod(shape)
    half = (n + 1) // 2  # words per counter's draws
    start = _starts(keys, offsets)  # (R count,) word 0 of each counter's draws, hashed
    R = len(start)  # the draws of each replica and counter: rows of their own
    out = np.empty((R, n), np.float32)
    group = max(1, _PASS_WORDS // half)  # replicas per pass
    buffers = threading.local()  # each thread's float64 buffers, (3, group, half)

    def one_pass(first: int) -> None:
        replicas = slice(first, min(first + group, R))
        if getattr(buffers, "array", None) is None:
            buffers.array = np.empty((3, min(group, R), half))
        log_u1, cos, sin = buffers.array[:, : replicas.stop - first]  # (G, half) each
        _box_muller_inputs(start[replicas], log_u1, sin)  # u1 and the angle
        np.log(log_u1, out=log_u1)
        cos[:] = sin  # the angle
        piece = cos.size if torch.get_num_threads() == 1 else _TORCH_PIECE  # one call where no pool can be entered
        for cos_piece, sin_piece in zip(torch.from_numpy(cos).view(-1).split(piece),
                                        torch.from_numpy(sin).view(-1).split(piece), strict=True):
            cos_piece.cos_()
            sin_piece.sin_()
        _unit_rows(log_u1, cos, sin, shape[-1], out[replicas])

    for_each(one_pass, range(0, R, group))  # the passes, on the policy's threads (one by default)
    return torch.from_numpy(out).reshape(len(keys), len(offsets) * shape[0], *shape[1:])


@njit(nogil=True, cache=True)
def _box_muller_inputs(start, u1, angle):
    """Word ``j`` of replica ``r``, ``mix64(start[r] + j golden)``, as Box-Muller's inputs ``u1[r, j]`` and
    ``angle[r, j]`` (:func:`_box_muller_input`)."""
    for r in range(u1.shape[0]):
        for j in range(u1.shape[1]):
            u1[r, j], angle[r, j] = _box_muller_input(_word(start[r], j))


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


# -- rng.ChunkDraws: the chunk in hand ---------------------------------------------------------------------------
def chunk_draws(draws, keys: torch.Tensor, t: int) -> torch.Tensor:
    """``rng.ChunkDraws.__call__`` (``draws(keys, t)``, ``(R, *shape)``) with the chunk in hand: chunk
    ``t // draws.chunk_rounds`` is drawn once (``draws.draw_chunk``) and kept in ``draws._cache`` for its other rounds
    (with the switch off every round draws its chunk: the same rows)."""
    index = t // draws.chunk_rounds
    if draws._cache is None or draws._cache[0] is not keys or draws._cache[1] != index:
        draws._cache = (keys, index, draws.draw_chunk(keys, index))
    return draws._cache[2].select(1, t % draws.chunk_rounds)  # (R, *shape)
