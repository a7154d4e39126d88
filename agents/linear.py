"""Linear baselines of the LMC-TS paper (Section 5): LinUCB, LinTS and epsilon-greedy.

All three keep ridge-regression statistics of ``R`` replicas::

    V_t = lambda I + sum_{s<t} x_s x_s^T        Gram matrix, kept as its inverse (R, d, d)
    b_t = sum_{s<t} r_s x_s                     moment vector (R, d)
    theta_hat_t = V_t^-1 b_t                    ridge estimate (R, d)

``theta_hat`` minimises ``sum_s (x_s^T theta - r_s)^2 + lambda ||theta||^2``. ``V^-1`` follows
each round by a Sherman-Morrison rank-one update (O(d^2), no inverse in the loop); LinTS keeps a
square root ``S`` of ``V^-1`` instead (Potter's update), which gives its posterior draws.

One round, in the order it runs: ``_select`` (the scores below, then ``_argmax``: ties at random)
and ``_observe`` (:func:`ridge_update` or :func:`potter_update` with the played arm).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from agents import _kernels
from agents.base import BanditAgent, chosen_rows, env_horizon
from agents.models import linear_scores, matvec
from bandit_gym.rng import Stream


def ucb_scores(contexts: torch.Tensor, theta_hat: torch.Tensor, gram_inverse: torch.Tensor,
               nu: torch.Tensor) -> torch.Tensor:
    """Upper confidence bounds ``x^T theta_hat + nu sqrt(x^T V^-1 x)``.

    ``(R, K, d), (R, d), (R, d, d), (R,) -> (R, K)``.
    """
    if _kernels.enabled(contexts, theta_hat, gram_inverse, nu):
        return _kernels.ucb_scores(contexts, theta_hat, gram_inverse, nu)
    mean = (contexts * theta_hat[:, None, :]).sum(dim=-1)  # (R, K)
    width = ((contexts @ gram_inverse) * contexts).sum(dim=-1).clamp(min=0).sqrt()  # (R, K); clamp: rounding
    return mean + nu[:, None] * width


def sherman_morrison(gram_inverse: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``V^-1`` after ``V <- V + x x^T``: ``(R, d, d), (R, d) -> (R, d, d)`` (Sherman-Morrison)."""
    vx = matvec(gram_inverse, x)  # V^-1 x (R, d); V^-1 is symmetric
    # (vx_i vx_j) / denom keeps the update exactly symmetric (vx_i (vx_j / denom) would not).
    return gram_inverse - vx[:, :, None] * vx[:, None, :] / (1.0 + (vx * x).sum(dim=-1))[:, None, None]


def ridge_update(gram_inverse: torch.Tensor, moment: torch.Tensor, x: torch.Tensor,
                 rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Add ``(x, r)`` per replica: :func:`sherman_morrison`, ``b <- b + r x`` and ``theta_hat = V^-1 b``.

    ``(R, d, d), (R, d), (R, d), (R,)`` -> the new ``V^-1``, ``b`` and ``theta_hat``.
    """
    gram_inverse = sherman_morrison(gram_inverse, x)
    moment = moment + rewards[:, None] * x
    return gram_inverse, moment, matvec(gram_inverse, moment)


def potter(root: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A square root ``S`` of ``V^-1`` (``S S^T = V^-1``) after ``V <- V + x x^T``: ``(R, d, d), (R, d) -> (R, d, d)``.

    Potter's update: with ``p = S^T x`` and ``q = sqrt(1 + |p|^2)``, ``S <- S - (S p) p^T / (q (1 + q))``
    makes ``S S^T`` Sherman-Morrison's ``(V + x x^T)^-1``: O(d^2), no factorisation.

    References:
        Potter and Stern (1963); Bierman (1977), "Factorization methods for discrete sequential
        estimation", Chapter V.
    """
    p = (root * x[:, :, None]).sum(dim=1)  # S^T x (R, d)
    q = (1.0 + (p * p).sum(dim=-1)).sqrt()  # (R,)
    return root - (matvec(root, p) / (q * (1.0 + q))[:, None])[:, :, None] * p[:, None, :]


def potter_update(root: torch.Tensor, moment: torch.Tensor, x: torch.Tensor,
                  rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`ridge_update` for a square root ``S`` of ``V^-1``: :func:`potter`, ``b <- b + r x`` and
    ``theta_hat = S (S^T b)``; returns the new ``S``, ``b`` and ``theta_hat``."""
    root = potter(root, x)
    moment = moment + rewards[:, None] * x
    return root, moment, matvec(root, (root * moment[:, :, None]).sum(dim=1))


class _RidgeAgent(BanditAgent):
    """Ridge statistics ``V^-1``, ``b`` and ``theta_hat`` (Sherman-Morrison), shared by LinUCB and EpsGreedy.

    Args:
        env: The env (sizes and replica count come from its spaces), or None with the sizes.
        exploration_scale: ``c >= 0`` (its meaning depends on the agent), a number or one per replica.
        lambda_reg: Ridge weight ``lambda > 0``, ``V_1 = lambda I``; a number or one per replica.
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.
    """

    def __init__(self, env=None, *, exploration_scale: Any, lambda_reg: Any = 1.0, **kwargs) -> None:
        super().__init__(env, **kwargs)
        self.exploration_scale = self._hyperparameter("exploration_scale", exploration_scale, minimum=0)
        self.lambda_reg = self._hyperparameter("lambda_reg", lambda_reg, minimum=0, strict=True)
        eye = torch.eye(self.dim, device=self.device)
        self.gram_inverse = eye / self.lambda_reg[:, None, None]  # V^-1 (R, d, d)
        self.moment = torch.zeros(self.num_replicas, self.dim, device=self.device)  # b (R, d)
        self.theta_hat = torch.zeros(self.num_replicas, self.dim, device=self.device)  # V^-1 b (R, d)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        x = chosen_rows(contexts, actions)  # (R, d)
        self.gram_inverse, self.moment, self.theta_hat = ridge_update(self.gram_inverse, self.moment, x, rewards)
        self._check_finite(self.theta_hat, "the ridge estimate theta_hat")

    def _state(self) -> dict[str, torch.Tensor]:
        return {"gram_inverse": self.gram_inverse, "moment": self.moment, "theta_hat": self.theta_hat}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.gram_inverse, self.moment, self.theta_hat = state["gram_inverse"], state["moment"], state["theta_hat"]


class LinUCB(_RidgeAgent):
    """LinUCB: play the arm with the largest upper confidence bound on its mean reward.

    Round ``t`` plays ``argmax_x x^T theta_hat + nu_t sqrt(x^T V^-1 x)`` with ``nu_t = c sqrt(d log t)``
    (ties at random). The paper's public code omits the square root in ``nu_t``; this follows the
    paper's text. In round 1, ``log 1 = 0`` and ``theta_hat = 0``: the first arm is uniformly random.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``c >= 0`` in ``nu_t``; 0 plays greedily. A number or one per replica.
        lambda_reg: Ridge weight ``lambda > 0`` (``V_1 = lambda I``). A number or one per replica.
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Li, Chu, Langford and Schapire (2010), "A contextual-bandit approach to personalized news
        article recommendation". Abbasi-Yadkori, Pal and Szepesvari (2011), "Improved algorithms
        for linear stochastic bandits". Xu et al. (2022), "Langevin Monte Carlo for contextual
        bandits", Section 5.
    """

    def __init__(self, env=None, *, exploration_scale: Any = 0.1, lambda_reg: Any = 1.0, **kwargs) -> None:
        super().__init__(env, exploration_scale=exploration_scale, lambda_reg=lambda_reg, **kwargs)

    def bonus_scale(self, t: int | None = None) -> torch.Tensor:
        """``nu_t = c sqrt(d log t)`` per replica for round ``t`` (default: the current round), ``(R,)``."""
        return self.exploration_scale * math.sqrt(self.dim * math.log(self.t if t is None else t))

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._argmax(ucb_scores(contexts, self.theta_hat, self.gram_inverse, self.bonus_scale()))  # (R,)


class EpsGreedy(_RidgeAgent):
    """Epsilon-greedy on the ridge estimate: explore with probability ``min(1, c / sqrt(t))``.

    Round ``t`` plays an arm drawn uniformly at random with probability ``epsilon_t = min(1, c / sqrt(t))``
    and otherwise ``argmax_x x^T theta_hat`` (ties at random). ``c`` is validated, never clipped; the
    ``min`` is part of the schedule.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``c >= 0`` in ``epsilon_t``; 0 is pure greedy. A number or one per replica.
        lambda_reg: Ridge weight ``lambda > 0`` (``V_1 = lambda I``). A number or one per replica.
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Sutton and Barto (2018), "Reinforcement learning: an introduction", Section 2.2.
    """

    def __init__(self, env=None, *, exploration_scale: Any = 0.3, lambda_reg: Any = 1.0, **kwargs) -> None:
        super().__init__(env, exploration_scale=exploration_scale, lambda_reg=lambda_reg, **kwargs)

    def exploration_rate(self, t: int | None = None) -> torch.Tensor:
        """``epsilon_t = min(1, c / sqrt(t))`` per replica for round ``t`` (default: the current round), ``(R,)``."""
        return (self.exploration_scale / math.sqrt(self.t if t is None else t)).clamp(max=1.0)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        greedy = self._argmax(linear_scores(contexts, self.theta_hat))  # (R,)
        u = self._draws("uniform", Stream.EXPLORE, (2,)).to(self.device)  # (R, 2): coin, arm
        random_arm = (u[:, 1].double() * self.n_arms).long()  # (R,) u < 1 exactly, so < n_arms
        return torch.where(u[:, 0] < self.exploration_rate(), random_arm, greedy)


class LinTS(BanditAgent):
    """Linear Thompson sampling: play the best arm for a draw from ``N(theta_hat, v^2 V^-1)``.

    Round ``t`` draws ``theta_t = theta_hat + v S z``, ``z ~ N(0, I)``, with ``S S^T = V^-1``
    (kept by :func:`potter_update`), and plays ``argmax_x x^T theta_t``. ``v = c sqrt(d log T)``
    with ``T`` the horizon.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``c >= 0`` in ``v``; 0 plays greedily. A number or one per replica.
        lambda_reg: Ridge weight ``lambda > 0`` (``V_1 = lambda I``). A number or one per replica.
        horizon: ``T`` in ``v``; default: the env's horizon. A number or one per replica.
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Agrawal and Goyal (2013), "Thompson sampling for contextual bandits with linear payoffs".
        Xu et al. (2022), "Langevin Monte Carlo for contextual bandits", Section 5.
    """

    def __init__(self, env=None, *, exploration_scale: Any = 0.02, lambda_reg: Any = 1.0, horizon: Any = None,
                 **kwargs) -> None:
        super().__init__(env, **kwargs)
        horizon = env_horizon(env) if horizon is None else horizon
        if horizon is None:
            raise ValueError("horizon must be given (an integer >= 2) when the env does not define one, got None")
        self.exploration_scale = self._hyperparameter("exploration_scale", exploration_scale, minimum=0)
        self.lambda_reg = self._hyperparameter("lambda_reg", lambda_reg, minimum=0, strict=True)
        self.horizon = self._hyperparameter("horizon", horizon, integer=True, minimum=2)
        #: ``v = c sqrt(d log T)`` per replica, the scale of the posterior draw, ``(R,)``.
        self.posterior_scale = self.exploration_scale * (self.dim * self.horizon.double().log()).sqrt().float()
        eye = torch.eye(self.dim, device=self.device)
        self.gram_inverse_root = eye / self.lambda_reg.sqrt()[:, None, None]  # S, S S^T = V^-1 (R, d, d)
        self.moment = torch.zeros(self.num_replicas, self.dim, device=self.device)  # b (R, d)
        self.theta_hat = torch.zeros(self.num_replicas, self.dim, device=self.device)  # V^-1 b (R, d)

    def sample_theta(self) -> torch.Tensor:
        """This round's posterior draw ``theta_t = theta_hat + v S z``, ``(R, d)``; no state change."""
        z = self._draws("normal", Stream.SAMPLE, (self.dim,)).to(self.device)  # (R, d)
        return self.theta_hat + self.posterior_scale[:, None] * matvec(self.gram_inverse_root, z)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        theta = self.sample_theta()  # (R, d)
        return self._argmax(linear_scores(contexts, theta))  # (R,)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        x = chosen_rows(contexts, actions)  # (R, d)
        self.gram_inverse_root, self.moment, self.theta_hat = potter_update(self.gram_inverse_root, self.moment, x,
                                                                            rewards)
        self._check_finite(self.theta_hat, "the ridge estimate theta_hat")

    def _state(self) -> dict[str, torch.Tensor]:
        return {"gram_inverse_root": self.gram_inverse_root, "moment": self.moment, "theta_hat": self.theta_hat}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.gram_inverse_root, self.moment, self.theta_hat = (state["gram_inverse_root"], state["moment"],
                                                               state["theta_hat"])
