"""Linear baselines of the LMC-TS paper (Section 5): LinUCB, LinTS and epsilon-greedy.

All three keep the ridge statistics of ``R`` replicas as tensors::

    V_t = lambda I + sum_{s<t} x_s x_s^T        (R, d, d), kept as its inverse V_t^-1
    b_t = sum_{s<t} r_s x_s                     (R, d)
    theta_hat_t = V_t^-1 b_t                    (R, d)

``V^-1`` is updated by Sherman-Morrison rank-one updates (O(d^2) per round, no
matrix inverse in the loop). The products go through ``agents._math`` (compiled
per-replica kernels on CPU, elementwise multiply + sum in torch elsewhere), so
replica ``r`` of a batch equals a single run bit for bit.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import torch

from agents import _math, _rng_streams
from agents.base import BanditAgent, check_int, check_positive
from bandit_gym import _rng


def env_horizon(env: gym.Env | gym.vector.VectorEnv | None) -> int | None:
    """The env's horizon ``T`` (rounds per episode), or None if it does not say."""
    if env is None:
        return None
    horizon = getattr(env.unwrapped, "horizon", None)
    return int(horizon) if horizon is not None else None


class _RidgeAgent(BanditAgent):
    """Ridge regression statistics ``V^-1, b, theta_hat`` shared by the linear baselines.

    ``V^-1`` is kept by Sherman-Morrison updates; a subclass that keeps ``V^-1`` in another
    form overrides :meth:`_initial_inverse` and :meth:`_ridge_update` (see :class:`LinTS`).

    Args:
        env: The env (sizes and replica count come from its spaces), or None with the sizes.
        lambda_reg: Ridge penalty lambda > 0; ``V_1 = lambda I``.
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.
    """

    state_names = ("design_inverse", "reward_sum", "theta_hat")

    def __init__(self, env=None, *, lambda_reg: float = 1.0, seed=None, device="auto",
                 n_arms=None, dim=None, num_replicas=None) -> None:
        super().__init__(env, seed=seed, device=device, n_arms=n_arms, dim=dim, num_replicas=num_replicas)
        self.lambda_reg = check_positive("lambda_reg", lambda_reg)
        R, d = self.num_replicas, self.dim
        self._initial_inverse()
        self.reward_sum = torch.zeros(R, d, device=self.device)  # b (R, d)
        self.theta_hat = torch.zeros(R, d, device=self.device)  # V^-1 b (R, d)
        self._views = _math.NumpyViews()  # the state's numpy views, for the CPU kernels

    def _initial_inverse(self) -> None:
        """``V_1^-1 = I / lambda``, ``(R, d, d)``."""
        self.design_inverse = _math.scaled_identity(self.num_replicas, self.dim, 1.0 / self.lambda_reg, self.device)

    def hyperparameters(self) -> dict[str, Any]:
        return {"lambda_reg": self.lambda_reg}

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        if not self._ridge_update(contexts, actions, rewards):
            self._diverged("the ridge estimate theta_hat")

    def _ridge_update(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> bool:
        """Add the played arms ``contexts[r, actions[r]]`` and their rewards to the statistics, in place.

        Returns whether the new ``theta_hat`` is finite.
        """
        return _math.played_ridge_update_(self.design_inverse, self.reward_sum, self.theta_hat, contexts, actions,
                                          rewards, self._views)


class LinUCB(_RidgeAgent):
    """LinUCB: play the arm with the largest upper confidence bound on its mean reward.

    Round ``t`` plays ``argmax_x x^T theta_hat + nu_t sqrt(x^T V^-1 x)`` with
    ``nu_t = c sqrt(d log t)`` (ties broken at random). The paper's public code
    omits the square root in ``nu_t``; this one follows the paper's text. In round
    1, ``log 1 = 0`` and ``theta_hat = 0``, so the first arm is uniformly random.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``c >= 0`` in ``nu_t = c sqrt(d log t)``; 0 plays greedily.
        lambda_reg: Ridge penalty lambda > 0 (``V_1 = lambda I``).
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Li, Chu, Langford and Schapire (2010), "A contextual-bandit approach to personalized
        news article recommendation". Abbasi-Yadkori, Pal and Szepesvari (2011), "Improved
        algorithms for linear stochastic bandits". Xu et al. (2022), "Langevin Monte Carlo
        for contextual bandits", Section 5.
    """

    def __init__(self, env=None, *, exploration_scale: float = 0.1, lambda_reg: float = 1.0, seed=None,
                 device="auto", n_arms=None, dim=None, num_replicas=None) -> None:
        super().__init__(env, lambda_reg=lambda_reg, seed=seed, device=device, n_arms=n_arms, dim=dim,
                         num_replicas=num_replicas)
        self.exploration_scale = check_positive("exploration_scale", exploration_scale, allow_zero=True)

    def hyperparameters(self) -> dict[str, Any]:
        return {**super().hyperparameters(), "exploration_scale": self.exploration_scale}

    def bonus_scale(self, t: int | None = None) -> float:
        """``nu_t = c sqrt(d log t)`` for round ``t`` (default: the current round)."""
        return self.exploration_scale * math.sqrt(self.dim * math.log(self.t if t is None else t))

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        nu = self.bonus_scale()
        if nu == 0:
            return self._argmax(_math.scores(contexts, self.theta_hat))
        return _math.optimistic_argmax(contexts, self.theta_hat, self.design_inverse, nu, self._ties())  # (R,)


class LinTS(_RidgeAgent):
    """Linear Thompson sampling: play the best arm for a draw from ``N(theta_hat, v^2 V^-1)``.

    Round ``t`` draws ``theta_t = theta_hat + v S z`` with ``z ~ N(0, I)`` and ``S`` a
    square root of ``V^-1`` (``S S^T = V^-1``), so the draw's covariance is ``v^2 V^-1``
    and costs one matrix-vector product. ``S`` starts at ``I / sqrt(lambda)`` and follows
    each observation by Potter's rank-one square-root update (``_math.square_root_update``,
    O(d^2)); it also gives the estimate ``theta_hat = S S^T b``, so LinTS keeps neither ``V``
    nor a Sherman-Morrison ``V^-1``. ``v = c sqrt(d log T)`` with ``T`` the horizon.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``c >= 0`` in ``v = c sqrt(d log T)``; 0 plays greedily.
        lambda_reg: Ridge penalty lambda > 0 (``V_1 = lambda I``).
        horizon: ``T`` in ``v``; default: the env's horizon (required without an env that has one).
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Agrawal and Goyal (2013), "Thompson sampling for contextual bandits with linear payoffs".
        Xu et al. (2022), "Langevin Monte Carlo for contextual bandits", Section 5.
    """

    state_names = ("sampling_factor", "reward_sum", "theta_hat")

    def __init__(self, env=None, *, exploration_scale: float = 0.02, lambda_reg: float = 1.0,
                 horizon: int | None = None, seed=None, device="auto", n_arms=None, dim=None,
                 num_replicas=None) -> None:
        super().__init__(env, lambda_reg=lambda_reg, seed=seed, device=device, n_arms=n_arms, dim=dim,
                         num_replicas=num_replicas)
        self.exploration_scale = check_positive("exploration_scale", exploration_scale, allow_zero=True)
        horizon = horizon if horizon is not None else env_horizon(env)
        if horizon is None:
            raise ValueError("horizon must be given (an integer >= 1) when the env does not define one, got None")
        self.horizon = check_int("horizon", horizon)
        #: ``v = c sqrt(d log T)``, the scale of the posterior draw.
        self.posterior_scale = self.exploration_scale * math.sqrt(self.dim * math.log(self.horizon))
        self._normals = _rng.BlockDraws("normal", _rng_streams.SAMPLE, (self.dim,))  # z for each round

    def _initial_inverse(self) -> None:
        """``S_1 = I / sqrt(lambda)``: LinTS keeps a square root ``S`` of ``V^-1`` (``S S^T = V^-1``)."""
        self.sampling_factor = _math.scaled_identity(self.num_replicas, self.dim, 1.0 / math.sqrt(self.lambda_reg),
                                                     self.device)

    def hyperparameters(self) -> dict[str, Any]:
        return {**super().hyperparameters(), "exploration_scale": self.exploration_scale, "horizon": self.horizon}

    def sample_theta(self) -> torch.Tensor:
        """This round's posterior draw ``theta_t ~ N(theta_hat, v^2 V^-1)``, ``(R, d)``; no state change."""
        z = self._normals(self.keys, self.t)  # (R, d)
        u = _math.matvec(self.sampling_factor, z)  # S z ~ N(0, S S^T) = N(0, V^-1) (R, d)
        return self.theta_hat + self.posterior_scale * u

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        if self.posterior_scale == 0:
            return self._argmax(_math.scores(contexts, self.theta_hat))
        z = self._normals(self.keys, self.t)  # (R, d): the same draw as sample_theta's
        return _math.sampled_argmax(contexts, self.theta_hat, self.sampling_factor, z, self.posterior_scale,
                                    self._ties())  # (R,)

    def _ridge_update(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> bool:
        return _math.played_square_root_update_(self.sampling_factor, self.reward_sum, self.theta_hat, contexts,
                                                actions, rewards, self._views)


class EpsGreedy(_RidgeAgent):
    """Epsilon-greedy on the ridge estimate: explore with probability ``min(1, c / sqrt(t))``.

    Round ``t`` plays an arm drawn uniformly at random with probability
    ``epsilon_t = min(1, c / sqrt(t))`` and otherwise ``argmax_x x^T theta_hat``
    (ties broken at random). ``c`` itself is validated, never clipped; the ``min``
    is part of the schedule (``c / sqrt(t)`` exceeds 1 in the first ``c^2`` rounds).

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``c >= 0`` in ``epsilon_t = min(1, c / sqrt(t))``; 0 is pure greedy.
        lambda_reg: Ridge penalty lambda > 0 (``V_1 = lambda I``).
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Sutton and Barto (2018), "Reinforcement learning: an introduction", Section 2.2.
        Xu et al. (2022), "Langevin Monte Carlo for contextual bandits", Section 5.
    """

    def __init__(self, env=None, *, exploration_scale: float = 0.3, lambda_reg: float = 1.0, seed=None,
                 device="auto", n_arms=None, dim=None, num_replicas=None) -> None:
        super().__init__(env, lambda_reg=lambda_reg, seed=seed, device=device, n_arms=n_arms, dim=dim,
                         num_replicas=num_replicas)
        self.exploration_scale = check_positive("exploration_scale", exploration_scale, allow_zero=True)
        self._uniforms = _rng.BlockDraws("uniform", _rng_streams.EXPLORE, (2,))  # coin, arm for each round

    def hyperparameters(self) -> dict[str, Any]:
        return {**super().hyperparameters(), "exploration_scale": self.exploration_scale}

    def exploration_rate(self, t: int | None = None) -> float:
        """``epsilon_t = min(1, c / sqrt(t))`` for round ``t`` (default: the current round)."""
        return min(1.0, self.exploration_scale / math.sqrt(self.t if t is None else t))

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        epsilon = self.exploration_rate()
        if epsilon == 0:
            return self._argmax(_math.scores(contexts, self.theta_hat))
        u = self._uniforms(self.keys, self.t)  # (R, 2): coin, arm
        return _math.epsilon_greedy_argmax(contexts, self.theta_hat, u, epsilon, self._ties())  # (R,)
