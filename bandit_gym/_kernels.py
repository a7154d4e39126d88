"""The envs' speed devices: compiled CPU kernels (numba) and torch-level shortcuts, each the same numbers as ONE
torch function, which stays the definition (and what runs on CUDA).

Each device is decided in the first line of the torch function it replaces (``if _kernels.enabled() and ...:
return _kernels.x(...)``); ``BANDIT_GYM_KERNELS=0`` turns every one off (read at each call), so the torch
definition runs instead. ``tests/envs/test_kernels.py`` compares each with its definition;
``benchmarks/speed_devices.py`` measures what each earns (``benchmarks/results/speed_devices.md``).

Kernels:

* :func:`unit_normal` for ``bandit_gym.synthetic._unit_normal_counters`` (the arm features, through
  :func:`bandit_gym._rng_kernels.unit_normal`: the compiled SplitMix64 and Box-Muller of the package);
* :func:`linear_scores` for ``SyntheticBanditSimulator._scores`` (``x . theta*``);
* :func:`best_arms` for :func:`bandit_gym._base.best_arms` (the best value and the first arm that has it).

Torch-level devices (the same numbers, bit for bit, fewer calls):

* :func:`draws_per_call` (and :func:`per_counter`) for ``bandit_gym.synthetic._counters_per_call``: a single env
  (or a few replicas) draws several counters of its context stream per generator call (read when the env is
  built);
* :func:`numpy_step` and :func:`round_arrays` (and :func:`chunk_draws_numpy`) for ``BanditSimulator.step`` with an
  int on CPU and ``BanditSimulator._round_arrays``: the single env's round in numpy on views of the drawn chunk.

All run on the calling thread, so they neither wait for torch's intra-op threads when another process holds a
core nor hang in a forked child.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from bandit_gym import _rng_kernels, rng
from bandit_gym._rng_kernels import enabled  # noqa: F401  (the one switch, read by the envs as _kernels.enabled)


def unit_normal(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...], count: int = 1) -> torch.Tensor:
    """Compiled ``bandit_gym.synthetic._unit_normal_counters`` (CPU keys; within one float32 ulp of
    :func:`bandit_gym.rng.unit_normal`): the draws of counters ``counter .. counter + count - 1``, concatenated
    along axis 1, ``(R, count * shape[0], *shape[1:])``, in one call of :func:`bandit_gym._rng_kernels.unit_normal`.
    """
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
#: Features per replica that one call of the single env's (or a few replicas') generator draws: the draws of
#: several counters of the stream at once (8 at 50 x 20), so the per-call cost of the compiled draw and of the
#: expected rewards is paid every 16 rounds, not every 2. The numbers do not depend on it: a counter's draws are
#: the same however many are drawn together.
CALL_FEATURES = 16384


def draws_per_call(features: int) -> int:
    """``bandit_gym.synthetic._counters_per_call`` with the kernels on: several counters of a stream per generator
    call where a counter's draws are ``features`` features per replica-set (a single env or a few replicas)."""
    return max(1, CALL_FEATURES // features)


def per_counter(function, x: torch.Tensor, rounds: int) -> torch.Tensor:
    """``function`` applied to each counter's ``rounds`` rounds of ``x`` ``(R, B, ...)`` on its own: torch's
    vectorised functions (``sigmoid``, a sum) may round the last elements of a tensor differently from the same
    elements inside a longer one, so the numbers stay those of one counter per call."""
    return torch.cat([function(part.contiguous()) for part in x.split(rounds, dim=1)], dim=1)


# -- the single env's round in numpy (bandit_gym._base.BanditSimulator.step with an int on CPU) --------------------
def numpy_step(sim, action: int) -> tuple[np.ndarray, np.ndarray]:
    """``BanditSimulator.step(action)`` for an int on CPU where ``sim.numpy_rewards``: the chosen arm's scored
    value, its regret and the random rewards in float32 numpy arithmetic on views of the drawn chunk (the same
    numbers as torch's), ``(R,)`` numpy arrays each; then round ``t + 1``'s arms."""
    _, _, best, _, scored = sim._round_arrays()  # (R,), (R, K)
    chosen = scored[:, action]  # (R,)
    regret = best - chosen
    rewards = sim._sample_rewards(chosen, sim.t)  # numpy in, numpy out
    sim.t += 1
    sim._show_arms()
    return rewards, regret


def round_arrays(sim) -> tuple:
    """``BanditSimulator._round_arrays`` (CPU): round ``t``'s rows of numpy views of the drawn chunk, the views
    made once per chunk (kept in ``sim._arrays``); those of ``sim.expected``, ``best``, ``optimal_action`` and
    ``scored`` where they were set after the chunk was drawn (``bandit_gym.feedback.Drift`` sets them)."""
    if sim._arrays is None or sim._arrays[0] is not sim._chunk:
        sim._arrays = (sim._chunk, tuple(x.numpy() for x in sim._chunk))
    row = sim.t % sim.chunk_rounds
    contexts, expected, best, optimal, scored = sim._arrays[1]
    drawn = sim._rounds[row]
    shown = (sim.expected, sim.best, sim.optimal_action, sim.scored)
    if all(x is y for x, y in zip(shown, drawn[1:], strict=True)):
        return contexts[:, row], expected[:, row], best[:, row], optimal[:, row], scored[:, row]
    return contexts[:, row], *(x.numpy() for x in shown)


def chunk_draws_numpy(draws: rng.ChunkDraws, keys: torch.Tensor, t: int) -> np.ndarray:
    """``draws(keys, t).numpy()`` (CPU keys) as a view of the chunk's numpy array, kept with the chunk: the
    reward draws of :func:`numpy_step`'s round (``bandit_gym.synthetic``'s ``_round_noise`` for numpy)."""
    cache = draws._cache
    if cache is None or cache[0] is not keys or cache[1] != t // draws.chunk_rounds or draws._cache_numpy is None \
            or draws._cache_numpy[0] is not cache[2]:
        _rng_kernels.chunk_draws(draws, keys, t)  # the chunk in hand
        draws._cache_numpy = (draws._cache[2], draws._cache[2].numpy())
    return draws._cache_numpy[1][:, t % draws.chunk_rounds]  # (R, *shape)
