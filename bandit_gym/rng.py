"""Counter-based random numbers, batched over replicas: the one source of randomness of
every bandit-gym env and of the agents built on it.

Every random number is a pure function of ``(replica key, stream, counter, index)``:
word ``j`` of the counter's draws ``(stream, counter)`` is ``mix64(key + offset(stream, counter) + j * golden)``
(SplitMix64 started at a pseudo-random point per replica, stream and counter). Nothing is
carried from one draw to the next, so

* ``R`` replicas draw in one batched call, with no Python loop over replicas;
* replica ``r`` of a batch seeded with ``s`` draws exactly the words of a single run seeded
  with ``s + r`` (``seed_to_key(s + r)``), whatever the batch size;
* a draw never depends on which other draws were made before it.

The hashing is int64 arithmetic (which wraps modulo 2**64 like uint64), exact on every device.
Floats: a uniform keeps 24 bits of a word (exact in float32); a normal is Box-Muller in float64,
rounded once to float32, so CPU and CUDA agree up to that rounding.

Streams (:class:`Stream`) keep the different uses of randomness independent; every id is
registered here, so an env and an agent given the same seed never share a stream.

References:
    Steele, Lea and Flood (2014), "Fast splittable pseudorandom number generators" (SplitMix64).
    Salmon et al. (2011), "Parallel random numbers: as easy as 1, 2, 3" (counter-based generators).
"""

from __future__ import annotations

import enum
import math
import numbers
from collections.abc import Callable, Iterable, Sequence

import torch

from bandit_gym import _rng_kernels as kernels

__all__ = [
    "Stream", "seed_to_key", "next_episode_key", "random_words", "uniform", "normal", "approx_normal",
    "unit_normal", "permutation", "ChunkDraws", "mix64",
]

# SplitMix64 constants (bandit_gym._rng_kernels.GOLDEN, ...) as signed int64: torch has no uint64 arithmetic.
_GOLDEN = kernels.GOLDEN - (1 << 64)
_MUL1 = kernels.MUL1 - (1 << 64)
_MUL2 = kernels.MUL2 - (1 << 64)
_MASK64 = kernels.MASK64


class Stream(enum.IntEnum):
    """Stream ids: one per use of randomness. Add new ones here, never reuse one."""

    # envs
    INSTANCE = 1  #: the problem instance (theta*, a fixed arm set, a data subset)
    CONTEXT = 2  #: per-round arm features / the order of data rows
    REWARD = 3  #: per-round reward noise
    EPISODE = 4  #: the next episode's key after an unseeded reset
    DRIFT = 5  #: the new worlds of bandit_gym.feedback.Drift
    FEEDBACK = 6  #: the random delays of bandit_gym.feedback.DelayedFeedback
    # agents
    TIES = 16  #: random tie-breaking among maximisers
    SAMPLE = 17  #: posterior samples and Langevin noise
    EXPLORE = 18  #: epsilon-greedy coins and random arms
    MINIBATCH = 19  #: mini-batch indices of stochastic-gradient steps
    INIT = 20  #: initial parameters of a model
    ACCEPT = 21  #: Metropolis accept/reject coins of the MCMC samplers
    PROPENSITY = 22  #: the re-keyed draws of agents.loop.propensity's Monte Carlo probabilities


def _shift_right(x: torch.Tensor, k: int) -> torch.Tensor:
    """Logical right shift of int64 viewed as uint64 (torch's ``>>`` is arithmetic)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def mix64(x: torch.Tensor) -> torch.Tensor:
    """SplitMix64 finaliser on int64 tensors: a bijection of 64-bit words with full avalanche."""
    x = (x ^ _shift_right(x, 30)) * _MUL1
    x = (x ^ _shift_right(x, 27)) * _MUL2
    return x ^ _shift_right(x, 31)


def _mix64_int(x: int) -> int:
    """:func:`mix64` on one Python integer in ``[0, 2**64)``."""
    x = ((x ^ (x >> 30)) * kernels.MUL1) & _MASK64
    x = ((x ^ (x >> 27)) * kernels.MUL2) & _MASK64
    return x ^ (x >> 31)


def _as_int64(value: int) -> int:
    """An unsigned 64-bit value as the signed int64 with the same bits."""
    return value - (1 << 64) if value >= (1 << 63) else value


def _fold_seed(seed: int) -> int:
    """A non-negative integer seed of any size as 64 bits: seeds below ``2**63`` are themselves;
    larger ones are folded 64 bits at a time through the mixer (so ``2**64`` and ``0`` differ)."""
    if seed < (1 << 63):
        return seed
    folded = 0
    while seed:
        folded = _mix64_int(folded ^ (seed & _MASK64))
        seed >>= 64
    return _as_int64(folded | (1 << 63))  # negative as int64: never equal to a small seed


def check_seed(seed: object, name: str = "seed") -> int:
    """Validate a seed as Gymnasium does (a non-negative integer), naming it in the error."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {seed!r}")
    return int(seed)


def seed_to_key(seeds: int | Sequence[int] | torch.Tensor) -> torch.Tensor:
    """Replica keys ``(R,)`` int64 of integer seeds: an int, a sequence of ints, or an int tensor ``(R,)``.

    The seed derivation of the whole package: a single env (or agent) seeded with ``s`` uses
    ``seed_to_key(s)``; replica ``r`` of a batch seeded with ``s`` uses ``seed_to_key(s + r)``.
    """
    if not isinstance(seeds, torch.Tensor):
        iterable = isinstance(seeds, Iterable) and not isinstance(seeds, (str, bytes))
        values = list(seeds) if iterable else [seeds]
        seeds = torch.tensor([_fold_seed(check_seed(s)) for s in values], dtype=torch.int64)
    return mix64(seeds.to(torch.int64) * _GOLDEN + 0x5EED)


def next_episode_key(keys: torch.Tensor) -> torch.Tensor:
    """Key of the next episode after an unseeded ``reset`` (a pure function of the key)."""
    return mix64(keys ^ mix64(torch.full_like(keys, int(Stream.EPISODE))))


def _offset(stream: int, counter: int) -> int:
    """Pseudo-random 64-bit start of the counter's draws ``(stream, counter)``, as a signed int64 value."""
    return _as_int64(_mix64_int(((int(stream) << 40) + counter) & _MASK64))


def random_words(keys: torch.Tensor, stream: int, counter: int, n: int) -> torch.Tensor:
    """``n`` random 64-bit words per replica of the counter's draws ``(stream, counter)``: ``(R,)`` -> ``(R, n)`` int64.

    Word ``j`` is ``mix64(key + offset(stream, counter) + j golden)``. On CPU with compiled kernels on
    (``BANDIT_GYM_KERNELS``) a loop computes the same integers (``bandit_gym._rng_kernels.random_words``).
    """
    if keys.device.type == "cpu" and kernels.enabled():
        return kernels.random_words(keys, _offset(stream, counter), n)
    index = torch.arange(n, dtype=torch.int64, device=keys.device) * _GOLDEN  # (n,)
    return mix64((keys + _offset(stream, counter))[:, None] + index)  # (R, n)


def uniform(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Uniform ``[0, 1)`` float32 draws ``(R, *shape)``: the top 24 bits of each word, times ``2**-24``.

    On CPU with compiled kernels on, one loop computes the same floats (``bandit_gym._rng_kernels.uniform``).
    """
    if keys.device.type == "cpu" and kernels.enabled():
        return kernels.uniform(keys, _offset(stream, counter), shape)
    return uniform_of_words(random_words(keys, stream, counter, math.prod(shape)), shape)


def uniform_of_words(words: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """:func:`uniform`'s floats of its words ``(R, n)``: the top 24 bits of each, times ``2**-24`` (exact in float32),
    as ``(R, *shape)``."""
    return (_shift_right(words, 40).to(torch.float32) * 2.0**-24).reshape(len(words), *shape)


def _box_muller(keys: torch.Tensor, stream: int, counter: int, n: int) -> torch.Tensor:
    """``n`` standard normals per replica in float64 ``(R, n)``, two per word (Box-Muller).

    A word's upper 32 bits ``h`` give ``u1 = (h + 1/2) 2^-32`` in ``(0, 1)``, its lower 32 bits ``l``
    the angle ``2 pi l 2^-32``: ``z = sqrt(-2 ln u1) (cos angle, sin angle)``.
    """
    words = random_words(keys, stream, counter, (n + 1) // 2)  # (R, n/2)
    u1 = (_shift_right(words, 32).double() + 0.5) * 2.0**-32  # (R, n/2) in (0, 1)
    angle = (words & 0xFFFFFFFF).double() * (2.0 * math.pi * 2.0**-32)  # (R, n/2)
    radius = torch.sqrt(-2.0 * torch.log(u1))
    return torch.cat((radius * torch.cos(angle), radius * torch.sin(angle)), dim=1)[:, :n]  # (R, n)


def normal(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Standard normal float32 draws ``(R, *shape)``: float64 Box-Muller rounded once."""
    return _box_muller(keys, stream, counter, math.prod(shape)).float().reshape(len(keys), *shape)


def approx_normal(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...]) -> torch.Tensor:
    """:func:`normal`'s draws to within ``1.5e-6``, ``(R, *shape)`` float32: the agents' draws.

    On CPU with compiled kernels on, a loop of the same words and formula with float32 cosines and sines
    (``bandit_gym._rng_kernels.normal``: 8x on the agents' Langevin noise, ``docs/agents.md``); else
    :func:`normal` itself.
    """
    if keys.device.type == "cpu" and kernels.enabled():
        return kernels.normal(keys, _offset(stream, counter), shape)
    return normal(keys, stream, counter, shape)


def unit_normal(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Rows uniform on the unit sphere ``(R, *shape)``: normal draws divided by their norm along the
    last axis, in float64 before the one rounding to float32."""
    z = _box_muller(keys, stream, counter, math.prod(shape)).reshape(len(keys), *shape)  # (R, ..., d)
    return (z / torch.linalg.vector_norm(z, dim=-1, keepdim=True)).float()


def permutation(keys: torch.Tensor, stream: int, n: int, counter: int = 0) -> torch.Tensor:
    """A random permutation of ``range(n)`` per replica, ``(R, n)`` int64 (argsort of random words)."""
    return torch.argsort(random_words(keys, stream, counter, n), dim=1)


class ChunkDraws:
    """Per-round draws fetched ``chunk_rounds`` rounds at a time: ``draws(keys, t) -> (R, *shape)``.

    Round ``t`` is row ``t % chunk_rounds`` of
    ``draw(keys, stream, t // chunk_rounds, (chunk_rounds, *shape))``: still a
    pure function of (replica key, stream, t), so the chunk size changes which counters are used
    (part of the stream's definition) but nothing else. One generator call costs tens of
    microseconds whatever its size; with the kernels on (:func:`bandit_gym._rng_kernels.chunk_draws`) the chunk
    is drawn once and kept, so the call is paid once per ``chunk_rounds`` rounds (``BANDIT_GYM_KERNELS=0``: each
    round draws its chunk, the definition).

    Args:
        kind: ``"normal"`` or ``"uniform"``.
        stream: The stream id (a :class:`Stream`).
        shape: Shape of one round's draw per replica.
        chunk_rounds: Rounds per generator call.
        scale: A number each draw is multiplied by (in float32, once per chunk: the same numbers as
            multiplying each round's draws).
    """

    def __init__(self, kind: str, stream: int, shape: tuple[int, ...] = (), chunk_rounds: int = 128,
                 scale: float | None = None) -> None:
        draws: dict[str, Callable[..., torch.Tensor]] = {"normal": normal, "uniform": uniform}
        if kind not in draws:
            raise ValueError(f"kind must be one of {sorted(draws)}, got {kind!r}")
        self.kind, self.stream, self.shape, self.chunk_rounds = (kind, int(stream), tuple(shape),
                                                                int(chunk_rounds))
        self.scale = scale
        self._draw = draws[kind]
        # the chunk in hand (keys, chunk index, values) and its numpy view (values, view): the speed devices
        # bandit_gym._rng_kernels.chunk_draws and bandit_gym._kernels.chunk_draws_numpy keep them here
        self._cache: tuple[torch.Tensor, int, torch.Tensor] | None = None
        self._cache_numpy: tuple | None = None

    def __call__(self, keys: torch.Tensor, t: int) -> torch.Tensor:
        """Round ``t``'s draws ``(R, *shape)``: row ``t % chunk_rounds`` of chunk ``t // chunk_rounds``."""
        if kernels.enabled():
            return kernels.chunk_draws(self, keys, t)  # the same rows, each chunk drawn once and kept
        return self.draw_chunk(keys, t // self.chunk_rounds).select(1, t % self.chunk_rounds)  # (R, *shape)

    def draw_chunk(self, keys: torch.Tensor, index: int) -> torch.Tensor:
        """Chunk ``index``'s draws, ``(R, chunk_rounds, *shape)``, times ``scale``."""
        values = self._draw(keys, self.stream, index, (self.chunk_rounds, *self.shape))  # (R, chunk_rounds, *shape)
        return values if self.scale is None else self.scale * values

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_cache": None, "_cache_numpy": None}  # derived state: pickles stay small
