"""The synthetic bandits of the Deep Bayesian Bandits Showdown: the Wheel, linear and sparse linear arms.

Riquelme, Tucker and Snoek's code (``deep_contextual_bandits``, ``synthetic_data_sampler.py``) draws each
round as a row ``(context, reward of every arm)`` and scores a run by ``sum(opt_rewards) - sum(rewards)``,
where ``opt_rewards`` is the reward row's entry at the optimal arm (the arm of the highest expected
reward). The envs here draw the same rows from :mod:`bandit_gym.rng` streams and score them the same way:

* ``info["expected_rewards"]`` holds the arms' expected rewards (their means given the context), as every
  env's does, and ``info["optimal_action"]`` the Showdown's optimal arm: the one of the highest mean;
* ``info["reward_row"]`` is the round's reward row: what every arm pays this round (the step's reward);
* ``info["optimal_reward"]`` is the value the round's regret is scored against, ``opt_reward``: with
  ``regret="sampled"`` (the code's) the optimal arm's entry of the row, with ``regret="expected"`` its mean
  (TF-Agents' scoring);
* ``info["regret"]`` is ``opt_reward - reward``: scored against a draw, a lucky draw of another arm can give
  a negative round.

The context ``x`` (``d`` values) is shown as ``K`` one-hot-block arm rows: row ``j`` holds ``x`` in columns
``j d .. (j + 1) d - 1`` and zeros elsewhere, so every agent of the package runs on them unchanged.

References:
    Riquelme, Tucker and Snoek (2018), "Deep Bayesian Bandits Showdown: An Empirical Comparison of Bayesian
    Deep Networks for Thompson Sampling", ICLR (arXiv 1802.09127).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from bandit_gym import rng
from bandit_gym._base import BanditEnv, BanditSimulator, BanditVectorEnv
from bandit_gym.rng import Stream
from bandit_gym.validation import check_bool, check_choice, check_float, check_int, short_repr

#: Rounds the Showdown's ``example_main.py`` plays (its ``num_contexts``): the default horizon.
SHOWDOWN_HORIZON = 2000
#: Rounds drawn per generator call. Part of the streams' definition (never depends on the number of replicas).
CHUNK_ROUNDS = 32
#: Bound of the linear bandits' context values: :func:`bandit_gym.rng.normal`'s largest ``|z|`` is Box-Muller's radius
#: at its smallest uniform, ``sqrt(-2 ln 2^-33) = 6.764``.
NORMAL_BOUND = 6.765
#: How ``info["regret"]`` scores a round: against the optimal arm's drawn reward (the code's) or its mean.
REGRET_KINDS = ("sampled", "expected")


def one_hot_blocks(x: torch.Tensor, n_arms: int) -> torch.Tensor:
    """Contexts ``(R, B, d)`` as arm rows ``(R, B, K, K d)``: arm ``j`` holds ``x`` in block ``j``."""
    R, B, d = x.shape
    arm_rows = x.new_zeros(R, B, n_arms, n_arms, d)  # (R, B, K, K, d)
    arms = torch.arange(n_arms, device=x.device)
    arm_rows[:, :, arms, arms, :] = x[:, :, None, :]
    return arm_rows.view(R, B, n_arms, n_arms * d)


class ShowdownSimulator(BanditSimulator):
    """A Showdown problem: each round the arms' means, a row of what every arm pays, the value regret is scored
    against and the optimal arm. Subclasses define :meth:`_draw_rows`; the rest of a round is the same for all.

    ``expected`` holds the means and ``scored`` the reward row, so a step pays ``scored[chosen]`` and its regret
    is ``best - scored[chosen]``, with ``best`` (``opt_reward``) and ``optimal_action`` the Showdown's (set here,
    not the means' maximum and its arm).
    """

    derived = (*BanditSimulator.derived, "_drawn")

    @abstractmethod
    def _draw_rows(self, chunk: int) -> tuple[torch.Tensor, ...]:
        """Chunk ``chunk``'s arms ``(R, B, K, D)``, the arms' means and reward rows ``(R, B, K)``, the values regret
        is scored against and the optimal arms ``(R, B)``."""

    def _contexts(self, chunk: int) -> torch.Tensor:
        contexts, *self._drawn = self._draw_rows(chunk)  # _drawn: means, rows (R, B, K), best, optimal (R, B)
        return contexts

    def _mean_rewards(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._drawn[0]  # (R, B, K) the arms' means

    def _draw_chunk(self, chunk: int) -> tuple[torch.Tensor, ...]:
        contexts, means, _, _, _ = super()._draw_chunk(chunk)  # best and optimal: the Showdown's, not the means'
        _, rows, best, optimal = self._drawn
        return contexts, means, best, optimal, rows  # a step scores the reward rows

    def _sample_rewards(self, chosen_mean: torch.Tensor, t: int) -> torch.Tensor:
        return chosen_mean.clone()  # (R,) the row holds what the chosen arm pays

    def _arm_rewards(self, rows: torch.Tensor, t: int) -> torch.Tensor:
        return rows.clone()  # (R, n, K)


def _optimal_reward(rows: torch.Tensor, means: torch.Tensor, optimal: torch.Tensor, regret: str) -> torch.Tensor:
    """The value ``(R, B)`` regret is scored against: the optimal arm's entry of the rows or of the means."""
    values = rows if regret == "sampled" else means  # (R, B, K)
    return values.gather(2, optimal[..., None]).squeeze(2)


def _check_regret(regret: str) -> str:
    return check_choice("regret", regret, REGRET_KINDS)


class WheelBanditSimulator(ShowdownSimulator):
    """The Wheel bandit (Showdown, Section 5.4; ``sample_wheel_bandit_data``).

    A context ``x`` is uniform in the unit disc (polar draw: radius ``sqrt(u)``, angle ``2 pi u'``; the code
    rejects points of the square, the same distribution). Every arm pays ``N(base_mean, base_std^2)``, the
    centre arm ``N(centre_mean, base_std^2)``; where ``|x| >= delta`` the arm of ``x``'s quadrant pays
    ``N(large_mean, large_std^2)`` instead and is optimal, elsewhere the centre arm is. Linear methods
    cannot learn the circle: the larger ``delta``, the rarer and the costlier the outer rounds.

    Arms (the code's order): 0 ``x_1 > 0, x_2 > 0``; 1 ``x_1 > 0, x_2 <= 0``; 2 ``x_1 <= 0, x_2 > 0``;
    3 ``x_1 <= 0, x_2 <= 0``; 4 the centre. ``centre_arm_first=True`` numbers the centre 0 and the quadrants
    1 to 4 in the same order (TF-Agents').

    Args:
        delta: Radius of the inner disc, in ``[0, 1]`` (the Showdown's default 0.95; RLlib's 0.5).
        horizon: Rounds per episode (2,000, the code's ``num_contexts``).
        base_mean: Mean of the four quadrant arms inside the disc (1.0).
        centre_mean: Mean of the centre arm (1.2); must exceed ``base_mean``.
        large_mean: Mean of the quadrant's arm outside the disc (50); must exceed ``centre_mean``.
        base_std: Standard deviation of the arms' rewards (0.05; RLlib's 0.01).
        large_std: Standard deviation of the large reward (0.01).
        centre_arm_first: Number the centre arm 0 (TF-Agents' and RLlib's layout) instead of 4.
        strict_boundary: The outer region is ``|x| > delta`` (TF-Agents') instead of ``|x| >= delta``.
        regret: ``"sampled"`` (the code's: against the optimal arm's drawn reward) or ``"expected"``
            (TF-Agents': against its mean).
    """

    n_arms = 5
    context_dim = 2
    feature_low, feature_high = -1.0, 1.0

    def __init__(self, num_replicas: int, device: torch.device | str = "cpu", *, delta: float = 0.95,
                 horizon: int = SHOWDOWN_HORIZON, base_mean: float = 1.0, centre_mean: float = 1.2,
                 large_mean: float = 50.0, base_std: float = 0.05, large_std: float = 0.01,
                 centre_arm_first: bool = False, strict_boundary: bool = False, regret: str = "sampled") -> None:
        super().__init__(num_replicas, device)
        self.delta = check_float("delta", delta, minimum=0.0, maximum=1.0)
        self.horizon = check_int("horizon", horizon)
        self.base_mean = check_float("base_mean", base_mean)
        self.centre_mean = check_float("centre_mean", centre_mean)
        if self.centre_mean <= self.base_mean:
            raise ValueError(f"centre_mean must exceed base_mean={self.base_mean!r} (the centre arm is optimal "
                             f"inside the disc), got {centre_mean!r}")
        self.large_mean = check_float("large_mean", large_mean)
        if self.large_mean <= self.centre_mean:
            raise ValueError(f"large_mean must exceed centre_mean={self.centre_mean!r} (the quadrant's arm is optimal "
                             f"outside the disc), got {large_mean!r}")
        self.base_std = check_float("base_std", base_std, minimum=0.0)
        self.large_std = check_float("large_std", large_std, minimum=0.0)
        self.centre_arm_first = check_bool("centre_arm_first", centre_arm_first)
        self.strict_boundary = check_bool("strict_boundary", strict_boundary)
        self.regret = _check_regret(regret)
        self.dim = self.n_arms * self.context_dim
        self.chunk_rounds = CHUNK_ROUNDS

    def _new_episode(self) -> None:
        pass  # nothing is fixed for an episode: every round draws a new context and reward row

    def _draw_rows(self, chunk: int) -> tuple[torch.Tensor, ...]:
        B = self.chunk_rounds
        u = rng.uniform(self.keys, Stream.CONTEXT, chunk, (B, 2))  # (R, B, 2)
        radius, angle = torch.sqrt(u[..., 0]), (2 * math.pi) * u[..., 1]  # (R, B)
        x = torch.stack((radius * torch.cos(angle), radius * torch.sin(angle)), dim=2)  # (R, B, 2)
        norm = torch.linalg.vector_norm(x, dim=2)  # (R, B)
        outer = norm > self.delta if self.strict_boundary else norm >= self.delta  # (R, B)
        quadrant = 2 * (x[..., 0] <= 0).long() + (x[..., 1] <= 0).long()  # (R, B) the code's arms 0..3
        optimal = torch.where(outer, quadrant, torch.full_like(quadrant, 4))  # (R, B) the centre arm: 4
        means = torch.full((len(self.keys), B, self.n_arms), self.base_mean, device=self.device)  # (R, B, K)
        means[..., 4] = self.centre_mean
        stds = torch.full_like(means, self.base_std)  # (R, B, K)
        large = outer[..., None] & (torch.arange(self.n_arms, device=self.device) == quadrant[..., None])  # (R, B, K)
        means, stds = means.masked_fill(large, self.large_mean), stds.masked_fill(large, self.large_std)
        rows = means + stds * rng.normal(self.keys, Stream.REWARD, chunk, (B, self.n_arms))  # (R, B, K)
        if self.centre_arm_first:  # the same draws, relabelled: the centre arm 0, the quadrants 1 to 4
            rows, means, optimal = rows.roll(1, dims=2), means.roll(1, dims=2), (optimal + 1) % self.n_arms
        best = _optimal_reward(rows, means, optimal, self.regret)  # (R, B)
        return one_hot_blocks(x, self.n_arms), means, rows, best, optimal


class LinearShowdownSimulator(ShowdownSimulator):
    """Linear arms (``sample_linear_data``): arm ``j`` pays ``x . beta_j + N(0, sigma_j^2)``.

    Each episode draws ``beta_j`` uniform in ``[-1, 1]^d`` and scales it to unit norm; each round draws
    ``x ~ N(0, I_d)``. ``sigma_j = 0.01 (j + 1)`` by default (``example_main.py``).

    Args:
        n_arms: Number of arms ``K`` (8, the code's).
        dim: Context dimension ``d`` (10); the arm rows have ``K d`` features.
        horizon: Rounds per episode (2,000).
        noise_stds: One standard deviation per arm (a sequence of ``K`` numbers >= 0), one for all arms (a
            number), or None for the code's ``0.01 (j + 1)``.
        regret: ``"sampled"`` (the code's) or ``"expected"`` (against the optimal arm's mean, as RLlib's
            ``LinearDiscreteEnv``).
    """

    default_arms = 8
    feature_low, feature_high = -NORMAL_BOUND, NORMAL_BOUND

    def __init__(self, num_replicas: int, device: torch.device | str = "cpu", *, n_arms: int | None = None,
                 dim: int = 10, horizon: int = SHOWDOWN_HORIZON, noise_stds: float | Sequence[float] | None = None,
                 regret: str = "sampled") -> None:
        super().__init__(num_replicas, device)
        self.n_arms = check_int("n_arms", self.default_arms if n_arms is None else n_arms, minimum=2)
        self.context_dim = check_int("dim", dim)
        self.dim = self.n_arms * self.context_dim
        self.horizon = check_int("horizon", horizon)
        self.noise_stds = _check_noise_stds(noise_stds, self.n_arms)
        self.regret = _check_regret(regret)
        self.chunk_rounds = CHUNK_ROUNDS
        self.betas: torch.Tensor | None = None  # (R, d, K) unit-norm columns

    def _mask(self) -> torch.Tensor | None:
        """Which entries of ``beta`` may be non-zero ``(R, d, K)``; None: all of them."""
        return None

    def _new_episode(self) -> None:
        d, K = self.context_dim, self.n_arms
        betas = 2 * rng.uniform(self.keys, Stream.INSTANCE, 0, (d, K)) - 1  # (R, d, K)
        mask = self._mask()
        if mask is not None:
            betas = betas * mask
        self.betas = betas / torch.linalg.vector_norm(betas, dim=1, keepdim=True)

    def _draw_rows(self, chunk: int) -> tuple[torch.Tensor, ...]:
        B, K = self.chunk_rounds, self.n_arms
        x = rng.normal(self.keys, Stream.CONTEXT, chunk, (B, self.context_dim))  # (R, B, d)
        means = x @ self.betas  # (R, B, K)
        stds = torch.tensor(self.noise_stds, dtype=torch.float32, device=self.device)  # (K,)
        rows = means + stds * rng.normal(self.keys, Stream.REWARD, chunk, (B, K))  # (R, B, K)
        optimal = means.argmax(dim=2)  # (R, B) the arm of the highest mean (the code's opt_actions)
        return one_hot_blocks(x, K), means, rows, _optimal_reward(rows, means, optimal, self.regret), optimal


class SparseLinearShowdownSimulator(LinearShowdownSimulator):
    """Sparse linear arms (``sample_sparse_linear_data``): each ``beta_j`` has ``sparse_dim`` non-zero entries,
    at coordinates drawn per arm without replacement, before the scaling to unit norm.

    Args:
        n_arms: Number of arms ``K`` (7, the code's).
        sparse_dim: Non-zero entries per arm, from 1 to ``dim``; default ``int(dim / 3)`` (at least 1), the
            code's ``num_nnz_dims`` (3 for ``dim=10``).
        dim, horizon, noise_stds, regret: As for :class:`LinearShowdownSimulator`.
    """

    default_arms = 7

    def __init__(self, num_replicas: int, device: torch.device | str = "cpu", *, n_arms: int | None = None,
                 dim: int = 10, sparse_dim: int | None = None, horizon: int = SHOWDOWN_HORIZON,
                 noise_stds: float | Sequence[float] | None = None, regret: str = "sampled") -> None:
        super().__init__(num_replicas, device, n_arms=n_arms, dim=dim, horizon=horizon, noise_stds=noise_stds,
                         regret=regret)
        default = max(1, int(self.context_dim / 3))
        self.sparse_dim = check_int("sparse_dim", default if sparse_dim is None else sparse_dim,
                                    maximum=self.context_dim)

    def _mask(self) -> torch.Tensor:
        d, K = self.context_dim, self.n_arms
        words = rng.random_words(self.keys, Stream.INSTANCE, 1, K * d).view(-1, K, d)  # (R, K, d)
        chosen = words.argsort(dim=2)[..., : self.sparse_dim]  # (R, K, s) a random subset per arm
        mask = torch.zeros(len(self.keys), K, d, device=self.device).scatter_(2, chosen, 1.0)  # (R, K, d)
        return mask.transpose(1, 2)  # (R, d, K)


def _check_noise_stds(noise_stds: float | Sequence[float] | None, n_arms: int) -> tuple[float, ...]:
    """``K`` standard deviations >= 0: the code's ``0.01 (j + 1)`` (None), one number for all, or ``K`` numbers."""
    if noise_stds is None:
        return tuple(0.01 * (j + 1) for j in range(n_arms))
    if isinstance(noise_stds, (int, float, np.floating, np.integer)) and not isinstance(noise_stds, bool):
        return (check_float("noise_stds", noise_stds, minimum=0.0),) * n_arms
    if isinstance(noise_stds, (list, tuple)) and len(noise_stds) == n_arms:
        return tuple(check_float(f"noise_stds[{j}]", s, minimum=0.0) for j, s in enumerate(noise_stds))
    raise ValueError(f"noise_stds must be None, a number >= 0 or a list of {n_arms} numbers >= 0 (one per arm), "
                     f"got {short_repr(noise_stds)}")


# -- the Gymnasium faces ------------------------------------------------------------------------------------
class ShowdownEnv(BanditEnv):
    """The single env of a Showdown bandit: ``info`` also carries ``reward_row`` ``(K,)`` float32, what every arm
    pays in the observation's round, and ``optimal_reward`` (a float), the value that round's ``regret`` is scored
    against (the module docstring)."""

    def _observation(self) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = super()._observation()
        _, _, best, _, rows = self.sim._round_arrays()  # (R,), (R, K)
        info["reward_row"], info["optimal_reward"] = rows[0].copy(), float(best[0])
        return obs, info


class ShowdownVectorEnv(BanditVectorEnv):
    """The batched env of a Showdown bandit: ``info`` also carries ``reward_row`` ``(R, K)`` float32 and
    ``optimal_reward`` ``(R,)`` float64, as a ``SyncVectorEnv`` of :class:`ShowdownEnv` gives them."""

    def _info(self, **extra: torch.Tensor) -> dict[str, Any]:
        return super()._info(reward_row=self.sim.scored, optimal_reward=self.sim.best.double(), **extra)


class WheelBanditEnv(ShowdownEnv):
    """The Showdown's Wheel bandit; see :class:`WheelBanditSimulator` and ``docs/envs.md`` ("The Showdown suite").

    ## Description
    A context uniform in the unit disc; outside radius ``delta`` the arm of its quadrant pays 50, inside the
    centre arm pays 1.2 and the others 1. Linear methods cannot represent the circle.

    ## Observation Space
    ``Box(-1, 1, (5, 10), float32)``: the 2-d context in one-hot-block form (arm ``j``'s row holds it in
    columns ``2 j, 2 j + 1``).

    ## Action Space
    ``Discrete(5)``: the quadrant arms 0 to 3 and the centre arm 4 (0 and 1 to 4 with ``centre_arm_first``).

    ## Rewards
    The round's draw of the chosen arm: ``N(mean, std^2)`` as above.

    ## Info
    ``expected_rewards``: the arms' means given the context (``base_mean``, ``centre_mean`` or ``large_mean``);
    ``optimal_action``: the Showdown's optimal arm (of the highest mean); ``reward_row``: what every arm pays
    this round; ``optimal_reward``: the optimal arm's drawn reward (``regret="sampled"``, the default and the
    code's) or mean (``"expected"``); ``step`` adds ``regret``: the previous ``optimal_reward`` minus the
    reward paid.

    ## Arguments
    ``delta`` (0.95), ``horizon`` (2,000), ``base_mean`` (1), ``centre_mean`` (1.2), ``large_mean`` (50),
    ``base_std`` (0.05), ``large_std`` (0.01), ``centre_arm_first`` (False), ``strict_boundary`` (False),
    ``regret`` (``"sampled"``); ``render_mode`` (None or ``"ansi"``).

    ## Version History
    * v0: initial version.
    """

    simulator_class = WheelBanditSimulator


class WheelBanditVectorEnv(ShowdownVectorEnv):
    """Batched :class:`WheelBanditEnv`: replica ``i`` of ``reset(seed=s)`` is the single env with ``seed=s + i``."""

    simulator_class = WheelBanditSimulator


class LinearShowdownEnv(ShowdownEnv):
    """The Showdown's linear bandit (``LinearShowdown-v0``); see :class:`LinearShowdownSimulator`.

    Observations ``(K, K d)`` float32 (the context in one-hot-block form, within ``+-NORMAL_BOUND``),
    ``Discrete(K)`` actions; rewards, ``info`` and ``regret`` as the module docstring says (``expected_rewards``
    the means ``x . beta_j``, ``reward_row`` the draws, regret against the optimal arm's draw by default).
    Arguments: ``n_arms`` (8), ``dim`` (10), ``horizon`` (2,000), ``noise_stds`` (``0.01 (j + 1)``), ``regret``
    (``"sampled"``).
    """

    simulator_class = LinearShowdownSimulator


class LinearShowdownVectorEnv(ShowdownVectorEnv):
    """Batched :class:`LinearShowdownEnv`."""

    simulator_class = LinearShowdownSimulator


class SparseLinearShowdownEnv(ShowdownEnv):
    """The Showdown's sparse linear bandit (``SparseLinearShowdown-v0``); see :class:`SparseLinearShowdownSimulator`.

    As :class:`LinearShowdownEnv`, with ``n_arms`` 7 and ``sparse_dim`` (``int(dim / 3)``) non-zero entries per
    arm's ``beta``.
    """

    simulator_class = SparseLinearShowdownSimulator


class SparseLinearShowdownVectorEnv(ShowdownVectorEnv):
    """Batched :class:`SparseLinearShowdownEnv`."""

    simulator_class = SparseLinearShowdownSimulator
