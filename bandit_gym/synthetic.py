"""Synthetic contextual bandits of the LMC-TS paper (Section 5.1).

``theta*`` and every arm feature are drawn from ``N(0, I)`` and scaled to unit
norm. Each problem comes as a single env (``XxxBanditEnv``) and a native
batched env (``XxxBanditVectorEnv``) that share one simulator class.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from bandit_gym import _kernels, rng
from bandit_gym._base import BanditEnv, BanditSimulator, BanditVectorEnv
from bandit_gym.rng import Stream
from bandit_gym.validation import check_bool, check_float, check_int, check_memory

#: The paper's text gives the noise variance sigma^2 = 0.5 (its reference code uses std 0.5).
PAPER_NOISE_STD = math.sqrt(0.5)
#: Changing arm sets: a counter's draws of the context stream hold whole rounds' arms, about this many features
#: per replica (2 rounds at the paper's 50 x 20). Their size is part of the stream's definition, so it
#: depends on the shape only, never on the number of replicas. 2048 normals come from 1024 words:
#: torch runs its float64 cos and sin on that many elements on one thread (on more, on its intra-op
#: threads), so a single env's torch path (BANDIT_GYM_KERNELS=0) never waits on the thread pool.
_COUNTER_FEATURES = 2048
#: Peak bytes per drawn feature (float64 normals and their temporaries on the torch path).
_BYTES_PER_FEATURE = 48
#: Largest ``noise_std``. A reward is ``mean + noise_std * z`` in float32, where a standard normal draw has
#: ``|z| <= sqrt(-2 ln 2^-33) = 6.764`` (Box-Muller's radius at the smallest uniform, :func:`bandit_gym.rng.normal`)
#: and ``|mean| <= 10`` (the quadratic bandit's); ``5e37 * 6.764 + 10 = 3.38e38`` stays below float32's largest
#: number, 3.40e38, so no reward is infinite.
MAX_NOISE_STD = 5e37


class SyntheticBanditSimulator(BanditSimulator):
    """Shared part of the synthetic problems: a unit-norm ``theta*`` and unit-norm arms.

    Args:
        n_arms: Number of arms ``K`` per round.
        dim: Feature dimension ``d``.
        horizon: Rounds per episode ``T``; the env truncates after it.
        changing_arms: New arm set every round (True) or one arm set for the episode (False).
        noise_std: Standard deviation of the Gaussian reward noise (unused by Bernoulli rewards): 0, or
            from float32's smallest normal number (1.18e-38) to :data:`MAX_NOISE_STD` (5e37).
        instance_seed: If given, ``theta*`` and a fixed arm set are drawn from this seed and stay
            the same for every episode and replica (the paper's repeats); if None (default) they
            are drawn from each episode's key, so each seed is a new problem instance.
    """

    feature_low, feature_high = -1.0, 1.0
    numpy_rewards = True  # _sample_rewards takes numpy too: the single env's rounds run without torch
    derived = (*BanditSimulator.derived, "theta", "fixed_arms", "_noise")
    _noise_kind = "normal"  # the per-round reward draws: Gaussian noise or a uniform coin

    def __init__(self, num_replicas: int, device: torch.device | str = "cpu", *, n_arms: int = 50, dim: int = 20,
                 horizon: int = 10_000, changing_arms: bool = True, noise_std: float = PAPER_NOISE_STD,
                 instance_seed: int | None = None) -> None:
        super().__init__(num_replicas, device)
        self.n_arms = check_int("n_arms", n_arms, minimum=2)
        self.dim = check_int("dim", dim)
        self.horizon = check_int("horizon", horizon)
        self.changing_arms = check_bool("changing_arms", changing_arms)
        self.noise_std = _check_noise_std(noise_std)
        self.instance_seed = None if instance_seed is None else check_int("instance_seed", instance_seed, minimum=0)
        self.draw_rounds = max(1, _COUNTER_FEATURES // (self.n_arms * self.dim))  # rounds per counter of the stream
        features = self.num_replicas * self.draw_rounds * self.n_arms * self.dim  # per counter of the stream
        self.counters_per_chunk = _counters_per_call(features)  # counters drawn together
        self.chunk_rounds = self.draw_rounds * self.counters_per_chunk
        check_memory(features * self.counters_per_chunk * _BYTES_PER_FEATURE,
                     f"{self.num_replicas} replica(s) of {self.n_arms} arms x dim {dim}")
        self.theta: torch.Tensor | None = None  # (R or 1, d)
        self.fixed_arms: torch.Tensor | None = None  # (R or 1, K, d) with changing_arms=False
        self._noise: rng.ChunkDraws | None = None  # reward draws, 256 rounds per generator call

    def _new_episode(self) -> None:
        keys = self.keys if self.instance_seed is None else rng.seed_to_key(self.instance_seed).to(self.device)
        self.theta = _unit_normal_counters(keys, Stream.INSTANCE, 0, (self.dim,))  # (R or 1, d)
        if not self.changing_arms:
            self.fixed_arms = _unit_normal_counters(keys, Stream.INSTANCE, 1, (self.n_arms, self.dim))  # (R or 1, K, d)
        self._noise = rng.ChunkDraws(self._noise_kind, Stream.REWARD, (), chunk_rounds=256,
                                     scale=self.noise_std if self._noise_kind == "normal" else None)

    def _contexts(self, chunk: int) -> torch.Tensor:
        shape = (self.chunk_rounds, self.n_arms, self.dim)
        if not self.changing_arms:
            return self.fixed_arms[:, None].expand(self.num_replicas, *shape).clone()  # (R, B, K, d)
        first, count = chunk * self.counters_per_chunk, self.counters_per_chunk  # counters of the CONTEXT stream
        return _unit_normal_counters(self.keys, Stream.CONTEXT, first, (self.draw_rounds, *shape[1:]), count)

    def _scores(self, contexts: torch.Tensor) -> torch.Tensor:
        """``x . theta*`` of every arm, ``(R, B, K, d) -> (R, B, K)``."""
        if _kernels.enabled() and contexts.device.type == "cpu":
            return _kernels.linear_scores(contexts, self.theta)  # the same, compiled
        return self._per_draw(lambda x: (x * self.theta[:, None, None, :]).sum(dim=3), contexts)

    def _round_noise(self, like: torch.Tensor | np.ndarray, t: int) -> torch.Tensor | np.ndarray:
        """Round ``t``'s reward draws ``(R,)``, of the kind of ``like`` (a tensor or a numpy array)."""
        if isinstance(like, np.ndarray):  # the single env's numpy round (bandit_gym._kernels.numpy_step)
            return _kernels.chunk_draws_numpy(self._noise, self.keys, t)  # the same values, a cached numpy view
        return self._noise(self.keys, t)

    def _noise_rounds(self, t: int, n: int) -> torch.Tensor:
        """Rounds ``t .. t + n - 1``'s reward draws ``(R, n)``: those :meth:`_round_noise` gives one round at a time."""
        return torch.stack([self._noise(self.keys, s) for s in range(t, t + n)], dim=1)

    def _per_draw(self, function, x: torch.Tensor) -> torch.Tensor:
        """``function(x)`` for ``x`` ``(R, B, ...)``; per counter of the stream where a call drew several
        (:func:`bandit_gym._kernels.per_counter`)."""
        return function(x) if self.counters_per_chunk == 1 else _kernels.per_counter(function, x, self.draw_rounds)


def _unit_normal_counters(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...],
                          count: int = 1) -> torch.Tensor:
    """:func:`bandit_gym.rng.unit_normal` of counters ``counter .. counter + count - 1``, concatenated along axis 1:
    ``(R, count * shape[0], *shape[1:])`` (a counter's draws are a pure function of key, stream and counter)."""
    if _kernels.enabled() and keys.device.type == "cpu":
        return _kernels.unit_normal(keys, stream, counter, shape, count)  # compiled, within one float32 ulp
    draws = [rng.unit_normal(keys, stream, counter + i, shape) for i in range(count)]
    return draws[0] if count == 1 else torch.cat(draws, dim=1)


def _counters_per_call(features: int) -> int:
    """Counters of the context stream drawn per generator call where a counter's draws are ``features`` features
    (all replicas): 1, the definition (read when the env is built; a counter's draws are the same whatever is drawn
    with them)."""
    if _kernels.enabled():
        return _kernels.draws_per_call(features)  # several for a single env or a few replicas: the same numbers
    return 1


def _check_noise_std(noise_std: float) -> float:
    """0, or a number in ``[float32's smallest normal number, MAX_NOISE_STD]`` (noise is drawn in float32:
    a smaller one would round to subnormal or zero noise, a larger one give infinite rewards)."""
    tiny = float(np.finfo(np.float32).tiny)
    value = check_float("noise_std", noise_std, minimum=0.0, maximum=MAX_NOISE_STD)
    if 0 < value < tiny:
        raise ValueError(f"noise_std must be 0 or in [{tiny:.3g}, {MAX_NOISE_STD:g}] (the noise is drawn in "
                         f"float32, whose smallest normal number is {tiny:.3g}), got {noise_std!r}")
    return value


class LinearBanditSimulator(SyntheticBanditSimulator):
    """Linear rewards ``r = x . theta* + N(0, noise_std^2)``."""

    def _mean_rewards(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._scores(contexts)  # (R, B, K)

    def _sample_rewards(self, chosen_mean: torch.Tensor, t: int) -> torch.Tensor:
        return chosen_mean + self._round_noise(chosen_mean, t)  # (R,) the noise drawn times noise_std

    def _arm_rewards(self, expected: torch.Tensor, t: int) -> torch.Tensor:
        return expected + self._noise_rounds(t, expected.shape[1])[:, :, None]  # (R, n, K) a round's noise per arm


class LogisticBanditSimulator(SyntheticBanditSimulator):
    """Bernoulli rewards ``r ~ Bernoulli(sigmoid(x . theta*))``."""

    _noise_kind = "uniform"

    def _mean_rewards(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._per_draw(torch.sigmoid, self._scores(contexts))  # (R, B, K)

    def _sample_rewards(self, chosen_mean: torch.Tensor, t: int) -> torch.Tensor:
        coins = self._round_noise(chosen_mean, t) < chosen_mean  # (R,) True with probability chosen_mean
        return coins.astype(np.float32) if isinstance(coins, np.ndarray) else coins.to(torch.float32)

    def _arm_rewards(self, expected: torch.Tensor, t: int) -> torch.Tensor:
        coins = self._noise_rounds(t, expected.shape[1])[:, :, None] < expected  # (R, n, K) a round's coin per arm
        return coins.to(torch.float32)


class QuadraticBanditSimulator(SyntheticBanditSimulator):
    """Quadratic rewards ``r = 10 (x . theta*)^2 + N(0, noise_std^2)``."""

    def _mean_rewards(self, contexts: torch.Tensor) -> torch.Tensor:
        return 10.0 * self._scores(contexts) ** 2  # (R, B, K)

    _sample_rewards = LinearBanditSimulator._sample_rewards
    _arm_rewards = LinearBanditSimulator._arm_rewards


# -- the Gymnasium faces: each pair shares its simulator, so the math exists once --------
class LinearBanditEnv(BanditEnv):
    """Linear contextual bandit (LMC-TS paper, Section 5.1); see ``docs/envs.md``.

    ## Description
    ``theta*`` and each arm's features are drawn from ``N(0, I)`` and scaled to
    unit norm; the arm set is new every round (``LinearBandit-v0``) or fixed for
    the episode (``LinearBanditFixed-v0``, ``changing_arms=False``).

    ## Observation Space
    ``Box(-1, 1, (n_arms, dim), float32)``: one unit-norm feature row per arm.

    ## Action Space
    ``Discrete(n_arms)``: the index of the arm to play.

    ## Rewards
    ``x . theta* + eps``, ``eps ~ N(0, noise_std^2)``. ``noise_std`` defaults to
    ``sqrt(0.5)``: the paper's text says ``sigma^2 = 0.5``.

    ## Info
    ``expected_rewards`` ``(n_arms,)`` and ``optimal_action`` of the observation
    returned with it; ``step`` adds ``regret``, the expected-reward gap between
    the best arm and the chosen arm of the round just played.

    ## Arguments
    See :class:`SyntheticBanditSimulator`: ``n_arms`` (50), ``dim`` (20),
    ``horizon`` (10,000), ``changing_arms``, ``noise_std``, ``instance_seed``;
    and ``render_mode`` (None or ``"ansi"``).

    ## Version History
    * v0: initial version.
    """

    simulator_class = LinearBanditSimulator


class LinearBanditVectorEnv(BanditVectorEnv):
    """Batched :class:`LinearBanditEnv`: replica ``i`` of ``reset(seed=s)`` is the single env with ``seed=s + i``."""

    simulator_class = LinearBanditSimulator


class LogisticBanditEnv(BanditEnv):
    """Logistic contextual bandit (LMC-TS paper, Section 5.1); see ``docs/envs.md``.

    Same spaces, info and arguments as :class:`LinearBanditEnv`, with an arm set
    fixed for the episode and rewards ``Bernoulli(sigmoid(x . theta*))`` in {0, 1}.
    """

    simulator_class = LogisticBanditSimulator


class LogisticBanditVectorEnv(BanditVectorEnv):
    """Batched :class:`LogisticBanditEnv`: replica ``i`` of ``reset(seed=s)`` is the single env with ``seed=s + i``."""

    simulator_class = LogisticBanditSimulator


class QuadraticBanditEnv(BanditEnv):
    """Quadratic contextual bandit (LMC-TS paper, Section 5.1); see ``docs/envs.md``.

    Same spaces, info and arguments as :class:`LinearBanditEnv`, with a new arm
    set every round and rewards ``10 (x . theta*)^2 + N(0, noise_std^2)``
    (``noise_std`` 1 in the registry, as in the paper).
    """

    simulator_class = QuadraticBanditSimulator


class QuadraticBanditVectorEnv(BanditVectorEnv):
    """Batched :class:`QuadraticBanditEnv`: replica ``i`` of ``reset(seed=s)`` is the single env with ``seed=s + i``."""

    simulator_class = QuadraticBanditSimulator
