"""Synthetic contextual bandits of the LMC-TS paper (Section 5.1).

``theta*`` and every arm feature are drawn from ``N(0, I)`` and scaled to unit
norm. Each problem comes as a single env (``XxxBanditEnv``) and a native
batched env (``XxxBanditVectorEnv``) that share one simulator class.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import torch

from bandit_gym import _kernels, _rng
from bandit_gym._base import (
    BanditEnv,
    BanditSimulator,
    BanditVectorEnv,
    check_nonnegative_float,
    check_positive_int,
)

#: The paper's text gives the noise variance sigma^2 = 0.5 (its reference code uses std 0.5).
PAPER_NOISE_STD = math.sqrt(0.5)


_WORKER: tuple[int, ThreadPoolExecutor] | None = None


def _background() -> ThreadPoolExecutor:
    """The process's one background thread for computing blocks ahead (made again in a forked
    child, which does not inherit the parent's thread)."""
    global _WORKER
    if _WORKER is None or _WORKER[0] != os.getpid():
        _WORKER = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="bandit_gym-prefetch"))
    return _WORKER[1]


class SyntheticBanditSimulator(BanditSimulator):
    """Shared part of the synthetic problems: a unit-norm ``theta*`` and unit-norm arms.

    Args:
        n_arms: Number of arms ``K`` per round.
        dim: Feature dimension ``d``.
        horizon: Rounds per episode ``T``; the env truncates after it.
        changing_arms: New arm set every round (True) or one arm set for the episode (False).
        noise_std: Standard deviation of the Gaussian reward noise (unused by Bernoulli rewards).
        instance_seed: If given, ``theta*`` and a fixed arm set are drawn from this seed and stay
            the same for every episode and replica (the paper's repeats); if None (default) they
            are drawn from each episode's key, so each seed is a new problem instance.
    """

    feature_low, feature_high = -1.0, 1.0
    _reward_kind = "normal"  # what the per-round reward draws are (Gaussian noise or a uniform coin)

    def __init__(
        self,
        num_replicas: int,
        device: torch.device | str = "cpu",
        *,
        n_arms: int = 50,
        dim: int = 20,
        horizon: int = 10_000,
        changing_arms: bool = True,
        noise_std: float = PAPER_NOISE_STD,
        instance_seed: int | None = None,
    ) -> None:
        super().__init__(num_replicas, device)
        self.n_arms = check_positive_int("n_arms", n_arms, minimum=2)
        self.dim = check_positive_int("dim", dim)
        self.horizon = check_positive_int("horizon", horizon)
        if not isinstance(changing_arms, bool):
            raise ValueError(f"changing_arms must be True or False, got {changing_arms!r}")
        self.changing_arms = changing_arms
        self.noise_std = check_nonnegative_float("noise_std", noise_std)
        if instance_seed is not None:
            check_positive_int("instance_seed", instance_seed, minimum=0)
        self.instance_seed = instance_seed
        self.theta: torch.Tensor | None = None  # (R or 1, d)
        self.fixed_arms: torch.Tensor | None = None  # (R or 1, K, d)
        # Per-round draws come several rounds per generator call (same numbers, less overhead);
        # the block sizes are part of the seed derivation, so they depend on nothing but the shape.
        # A batched env computes changing arm sets a group of blocks at a time (about 2^20 numbers,
        # to pay the per-call costs rarely), with their expected rewards; the group size changes no
        # number. A single env keeps one block (8 rounds at the paper's sizes): many of them side
        # by side (SyncVectorEnv) would otherwise hold megabytes each.
        self._context_block = max(1, 8192 // (self.n_arms * self.dim))
        numbers = self.num_replicas * self._context_block * self.n_arms * self.dim
        self._group_blocks = max(1, 2**20 // numbers) if self.num_replicas > 1 else 1
        self._group_index = -1
        # Round j of the group: (R, K, d) features, (R, K) expected rewards, (R,) best value, (R,) first optimal arm.
        self._group: list[tuple[torch.Tensor, ...]] | None = None
        self._fixed: tuple[torch.Tensor, ...] | None = None  # (R, K), (R,), (R,) with a fixed arm set
        self._reward_draws = _rng.BlockDraws(self._reward_kind, _rng.STREAM_REWARD, (), block=256)
        #: Compute the next group of changing arm sets on a background thread while this one is
        #: played (batched envs on CPU): the same numbers, and on a machine with a spare core the
        #: arm sets cost the main thread little. The group's kernel releases the GIL.
        self.prefetch = self.device.type == "cpu" and self.num_replicas > 1
        self._pending: tuple[int, int, Future] | None = None  # (group index, process id, its computation)

    def _new_episode(self) -> None:
        self._drop_pending()  # before theta changes: a group being computed reads it
        if self.instance_seed is None:
            keys = self.keys  # (R,)
        else:
            keys = _rng.seed_to_key(torch.tensor([self.instance_seed])).to(self.device)  # (1,)
        self.theta = _rng.unit_normal(keys, _rng.STREAM_INSTANCE, 0, (self.dim,))  # (R or 1, d)
        self._group_index = -1  # the cached group belongs to the previous episode's keys
        if not self.changing_arms:
            arms = _rng.unit_normal(keys, _rng.STREAM_INSTANCE, 1, (self.n_arms, self.dim))  # (R or 1, K, d)
            self.fixed_arms = arms.expand(self.num_replicas, -1, -1).contiguous()  # (R, K, d)
            expected = self._mean_rewards(self.fixed_arms)  # (R, K)
            self._fixed = (expected, *expected.max(dim=1))  # expected, best, first optimal arm

    def _round(self, t: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        # The features are the caller's: a fixed arm set is copied each round; a changing one is a
        # view of this round's rows of the group, which nothing reads again.
        if not self.changing_arms:
            return self.fixed_arms.clone(), *self._fixed
        group, row = divmod(t, self._group_blocks * self._context_block)
        if group != self._group_index:
            pending, self._pending = self._pending, None
            # A forked child inherits the parent's pending group but not the thread computing it.
            if pending is not None and pending[0] == group and pending[1] == os.getpid():
                contexts, scores = pending[2].result()
            else:
                contexts, scores = self._arms_and_scores(self.keys, group)
            expected = self._rewards_of_scores(scores)  # (R, G B, K)
            # Split once per group into its rounds' views: one list lookup per round instead of four slicings.
            parts = (contexts, expected, *expected.max(dim=2))  # (R, G B, K, d), (R, G B, K), (R, G B), (R, G B)
            self._group, self._group_index = list(zip(*(part.unbind(1) for part in parts), strict=True)), group
            # Only then start the next group: its start holds the GIL, which the lines above need.
            if self.prefetch and (group + 1) * self._group_blocks * self._context_block <= self.horizon:
                future = _background().submit(self._arms_and_scores, self.keys, group + 1)
                self._pending = (group + 1, os.getpid(), future)
        return self._group[row]  # (R, K, d), (R, K), (R,), (R,)

    def _arms_and_scores(self, keys: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Group ``group`` of changing arm sets, ``(R, G B, K, d)``, and their scores ``x . theta*``, ``(R, G B, K)``.

        Its blocks are ``G group, ..., G group + G - 1``, those that hold a round up to the
        horizon. Block ``b`` (rounds ``b B`` to ``b B + B - 1``) is ``unit_normal(keys, STREAM_CONTEXT,
        b, (B, K, d))``. On CPU one compiled call that releases the GIL (what the background
        thread runs).
        """
        B, K, d = self._context_block, self.n_arms, self.dim
        first = group * self._group_blocks
        blocks = range(first, min(first + self._group_blocks, self.horizon // B + 1))
        if self.device.type != "cpu":
            contexts = torch.cat([_rng.unit_normal(keys, _rng.STREAM_CONTEXT, b, (B, K, d)) for b in blocks], dim=1)
            return contexts, self._linear_scores(contexts)
        R, G = len(keys), len(blocks)
        starts = np.stack([_rng.start_words(keys, _rng.STREAM_CONTEXT, b) for b in blocks])  # (G, R)
        arms, scores = np.empty((R, G, B * K * d), np.float32), np.empty((R, G, B * K), np.float32)
        _kernels.unit_arms_and_scores(starts, d, self.theta.numpy(), arms, scores)
        return torch.from_numpy(arms.reshape(R, G * B, K, d)), torch.from_numpy(scores.reshape(R, G * B, K))

    def _drop_pending(self) -> None:
        """Forget the group computed ahead, after it has finished (it reads ``theta``)."""
        pending, self._pending = self._pending, None
        if pending is not None and pending[1] == os.getpid() and not pending[2].cancel():
            pending[2].exception()  # waits; an error there belongs to a group nobody will play

    def __getstate__(self) -> dict:
        # A group computed ahead is derived state (and a Future does not pickle).
        self._drop_pending()
        return {**self.__dict__, "_pending": None}

    def _mean_rewards(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._rewards_of_scores(self._linear_scores(contexts))  # (R, ..., K)

    def _rewards_of_scores(self, scores: torch.Tensor) -> torch.Tensor:
        """Expected rewards from the scores ``x . theta*`` (each problem's link function)."""
        raise NotImplementedError

    def _linear_scores(self, contexts: torch.Tensor) -> torch.Tensor:
        """``x . theta*`` for ``(R, ..., d)`` features -> ``(R, ...)``, summed in float64 and rounded once."""
        if contexts.is_cpu and contexts.dtype == torch.float32:  # one compiled call that releases the GIL
            rows = contexts.reshape(contexts.shape[0], -1, self.dim).numpy()  # (R, N, d)
            return torch.from_numpy(_kernels.linear_scores(rows, self.theta.numpy())).reshape(contexts.shape[:-1])
        theta = self.theta.reshape(self.theta.shape[0], *([1] * (contexts.ndim - 2)), self.dim)  # (R or 1, 1.., d)
        return (contexts.double() * theta.double()).sum(dim=-1).float()

    def _gaussian_outcome(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.device.type == "cpu":  # choice, regret and noisy reward in one compiled call, same numbers
            noise = self._reward_draws(self.keys, self.t).numpy()  # (R,)
            rewards, regret = _kernels.gaussian_outcome(self.expected.numpy(), self.best.numpy(), actions.numpy(),
                                                        noise, self.noise_std)
            return torch.from_numpy(rewards), torch.from_numpy(regret)
        return BanditSimulator._outcome(self, actions)

    def _gaussian_rewards(self, chosen_mean: torch.Tensor, t: int) -> torch.Tensor:
        noise = self._reward_draws(self.keys, t)  # (R,)
        if chosen_mean.is_cpu:  # the same float32 ops through numpy views, at a third of torch's per-call cost
            return torch.from_numpy(chosen_mean.numpy() + np.float32(self.noise_std) * noise.numpy())
        return chosen_mean + self.noise_std * noise  # (R,)


class LinearBanditSimulator(SyntheticBanditSimulator):
    """Linear rewards ``r = x . theta* + N(0, noise_std^2)``."""

    def _rewards_of_scores(self, scores: torch.Tensor) -> torch.Tensor:
        return scores

    _sample_rewards = SyntheticBanditSimulator._gaussian_rewards
    _outcome = SyntheticBanditSimulator._gaussian_outcome


class LogisticBanditSimulator(SyntheticBanditSimulator):
    """Bernoulli rewards ``r ~ Bernoulli(sigmoid(x . theta*))``."""

    reward_low, reward_high = 0.0, 1.0
    _reward_kind = "uniform"

    def _rewards_of_scores(self, scores: torch.Tensor) -> torch.Tensor:
        # torch's float32 sigmoid rounds differently in its SIMD body and its scalar tail, so a
        # replica's value would depend on the batch size; in float64, rounded to float32, the two
        # paths agree (they differ by ~1e-16, a float32 rounding boundary is hit with p ~ 1e-8).
        return torch.sigmoid(scores.double()).float()

    def _sample_rewards(self, chosen_mean: torch.Tensor, t: int) -> torch.Tensor:
        return (self._reward_draws(self.keys, t) < chosen_mean).to(torch.float32)  # (R,)


class QuadraticBanditSimulator(SyntheticBanditSimulator):
    """Quadratic rewards ``r = 10 (x . theta*)^2 + N(0, noise_std^2)``."""

    def _rewards_of_scores(self, scores: torch.Tensor) -> torch.Tensor:
        return 10.0 * scores**2

    _sample_rewards = SyntheticBanditSimulator._gaussian_rewards
    _outcome = SyntheticBanditSimulator._gaussian_outcome


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
    ``horizon`` (10,000), ``changing_arms``, ``noise_std``, ``instance_seed``.

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
