"""Generalized linear (logistic) baselines of the LMC-TS paper: UCB-GLM, GLM-TSL and SGD-TS.

Reward model ``E[r | x] = mu(x^T theta)`` with ``mu`` the sigmoid. The penalised
negative log-likelihood of the history ``(x_i, r_i)_{i<t}`` is::

    L_t(theta) = sum_i [softplus(x_i^T theta) - r_i x_i^T theta] + (lambda / 2) ||theta||^2

(``softplus(z) = log(1 + e^z)``, computed stably). Its Hessian is
``H_t(theta) = lambda I + sum_i mu'(x_i^T theta) x_i x_i^T``, and because ``mu' <= 1/4``
it is bounded by ``B_t = lambda I + (1/4) sum_i x_i x_i^T`` whatever theta. The MLE
is tracked by a few warm-started bound-optimisation steps per round,
``theta <- theta - B_t^-1 grad L_t(theta)`` (Boehning and Lindsay 1988): each step
decreases ``L_t`` and is a Newton step with the Hessian replaced by its bound, so it
costs ``O(t d)`` (one pass over the history for the gradient) plus ``O(d^2)``, with
``B_t^-1`` kept by Sherman-Morrison. With unit-norm features and ``|x^T theta| <= 1``,
``mu' >= 0.197``, so each step shrinks the error at least by a factor ~0.21.

The history lives in a preallocated ``(R, capacity, d)`` buffer that doubles when full.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from agents import _math, _rng_streams
from agents.base import BanditAgent, check_int, check_positive
from bandit_gym import _rng


def logistic_nll(contexts: torch.Tensor, rewards: torch.Tensor, theta: torch.Tensor, lambda_reg: float) -> torch.Tensor:
    """Penalised logistic NLL ``L(theta)`` per replica: ``(R, n, d), (R, n), (R, d) -> (R,)`` (softplus form)."""
    z = (contexts * theta[:, None, :]).sum(dim=-1)  # (R, n)
    return (F.softplus(z) - rewards * z).sum(dim=1) + 0.5 * lambda_reg * (theta * theta).sum(dim=-1)


class _LogisticAgent(BanditAgent):
    """History buffer, bound-optimisation MLE and random initial rounds shared by the GLM agents.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        lambda_reg: Penalty lambda > 0 of ``(lambda / 2) ||theta||^2``.
        n_explore_rounds: tau >= 0 rounds of uniformly random arms before the algorithm proper.
        n_mle_steps: Warm-started MLE steps per round (each O(t d)).
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.
    """

    state_names = ("history_contexts", "history_rewards", "theta_hat", "bound_inverse")
    _initial_capacity = _math.ROW_MULTIPLE  # doubles when full, so always a multiple of it

    def __init__(self, env=None, *, lambda_reg: float = 1.0, n_explore_rounds: int = 0, n_mle_steps: int = 2,
                 seed=None, device="auto", n_arms=None, dim=None, num_replicas=None) -> None:
        super().__init__(env, seed=seed, device=device, n_arms=n_arms, dim=dim, num_replicas=num_replicas)
        self.lambda_reg = check_positive("lambda_reg", lambda_reg)
        self.n_explore_rounds = check_int("n_explore_rounds", n_explore_rounds, minimum=0)
        self.n_mle_steps = check_int("n_mle_steps", n_mle_steps)
        R, d = self.num_replicas, self.dim
        self.history_contexts = torch.zeros(R, self._initial_capacity, d, device=self.device)  # (R, cap, d)
        self.history_rewards = torch.zeros(R, self._initial_capacity, device=self.device)  # (R, cap)
        self.theta_hat = torch.zeros(R, d, device=self.device)  # MLE estimate (R, d)
        self.bound_inverse = _math.scaled_identity(R, d, 1.0 / self.lambda_reg, self.device)  # B^-1 (R, d, d)
        self._explore_draws = _rng.BlockDraws("uniform", _rng_streams.EXPLORE, ())

    def hyperparameters(self) -> dict[str, Any]:
        return {"lambda_reg": self.lambda_reg, "n_explore_rounds": self.n_explore_rounds,
                "n_mle_steps": self.n_mle_steps}

    # -- history and MLE ---------------------------------------------------------
    @property
    def n_observations(self) -> int:
        """Rounds learned from so far (each round adds one observation per replica)."""
        return self.t - 1

    def _append(self, x: torch.Tensor, rewards: torch.Tensor) -> None:
        """Store round ``self.t``'s played features ``(R, d)`` and rewards ``(R,)``; double the buffer if full."""
        n = self.n_observations
        if n >= self.history_contexts.shape[1]:
            extra_x = torch.zeros_like(self.history_contexts)  # double the capacity
            self.history_contexts = torch.cat([self.history_contexts, extra_x], dim=1)
            self.history_rewards = torch.cat([self.history_rewards, torch.zeros_like(self.history_rewards)], dim=1)
        self.history_contexts[:, n] = x
        self.history_rewards[:, n] = rewards
        # B <- B + (1/4) x x^T = B + (x/2)(x/2)^T
        self.bound_inverse = _math.sherman_morrison(self.bound_inverse, 0.5 * x)

    def _mle_steps(self, n_steps: int, n: int) -> None:
        """``n_steps`` bound-optimisation steps on the first ``n`` stored observations, from ``theta_hat``."""
        n = self._padded(n)  # rows past n are zeros and add exact zeros below
        X, y = self.history_contexts[:, :n], self.history_rewards[:, :n]  # (R, n, d), (R, n)
        theta = self.theta_hat
        for _ in range(n_steps):
            residual = _math.sigmoid((X * theta[:, None, :]).sum(dim=-1)) - y  # mu(x^T theta) - r (R, n)
            grad = (residual[:, :, None] * X).sum(dim=1) + self.lambda_reg * theta  # (R, d)
            theta = theta - _math.matvec(self.bound_inverse, grad)  # (R, d)
        self._check_finite(theta, "the MLE theta_hat")
        self.theta_hat = theta

    def fit_mle(self, n_steps: int = 200) -> torch.Tensor:
        """Run ``n_steps`` more MLE steps on the whole history (e.g. to converge); returns ``theta_hat``."""
        self._mle_steps(check_int("n_steps", n_steps), self.n_observations)
        return self.theta_hat

    def hessian(self, theta: torch.Tensor, n: int | None = None) -> torch.Tensor:
        """``H(theta) = lambda I + sum_i mu'(x_i^T theta) x_i x_i^T`` over the first ``n`` observations.

        ``n`` defaults to all observations; the result is ``(R, d, d)``.

        The Gram sum is one batched matmul in float64, rounded to float32: fast, and the
        rounding hides the matmul's batch-size-dependent summation order, so a replica of a
        batch equals a single run (barring a float64 sum landing within ~1e-16 of a float32
        rounding boundary).
        """
        X = self.history_contexts[:, : self._padded(self.n_observations if n is None else n)]  # (R, n, d)
        p = _math.sigmoid((X * theta[:, None, :]).sum(dim=-1))  # (R, n)
        weighted = (X * (p * (1.0 - p))[:, :, None]).double()  # mu'(x^T theta) x (R, n, d)
        gram = torch.bmm(weighted.mT, X.double()).to(X.dtype)  # (R, d, d)
        return gram + self.lambda_reg * torch.eye(self.dim, device=self.device)

    def _padded(self, n: int) -> int:
        """``n`` rounded up to a multiple of ``_math.ROW_MULTIPLE`` (the capacity always is one)."""
        return min(-(-n // _math.ROW_MULTIPLE) * _math.ROW_MULTIPLE, self.history_contexts.shape[1])

    def _random_arms(self) -> torch.Tensor:
        u = self._explore_draws(self.keys, self.t)  # (R,)
        return (u * self.n_arms).long().clamp_(max=self.n_arms - 1)

    # -- Thompson sampling around a centre (GLMTSL, SGDTS set _normals and sampling_factor) --
    def _sample_around(self, center: torch.Tensor) -> torch.Tensor:
        """``center + scale * S z`` with ``z ~ N(0, I)`` from round t's draws: ``(R, d) -> (R, d)``."""
        z = self._normals(self.keys, self.t)  # (R, d)
        return center + self.exploration_scale * _math.matvec(self.sampling_factor, z)

    def _thompson_select(self, contexts: torch.Tensor, center: torch.Tensor) -> torch.Tensor:
        if self.t <= self.n_explore_rounds:
            return self._random_arms()
        if self.exploration_scale == 0:
            return self._argmax(_math.scores(contexts, center))
        z = self._normals(self.keys, self.t)  # (R, d): the same draw as _sample_around's
        return _math.sampled_argmax(contexts, center, self.sampling_factor, z, self.exploration_scale, self._ties())

    def _inverse_factor(self, matrix: torch.Tensor, what: str) -> torch.Tensor:
        """``S`` with ``S S^T = matrix^-1`` (see ``_math.inverse_cholesky_factor``), ``(R, d, d)``."""
        factor, info = _math.inverse_cholesky_factor(matrix)  # (R, d, d), (R,)
        if bool((info != 0).any()):
            self._check_finite(matrix, what)
            raise RuntimeError(f"{type(self).__name__}: {what} is not positive definite in round {self.t}")
        return factor


class UCBGLM(_LogisticAgent):
    """UCB-GLM: optimism on the logistic MLE with the design-matrix confidence width.

    After ``tau`` rounds of uniformly random arms, round ``t`` plays
    ``argmax_x x^T theta_hat + alpha sqrt(x^T V^-1 x)`` (ties at random), where
    ``theta_hat`` tracks the penalised MLE (``n_mle_steps`` warm-started steps per
    round) and ``V = lambda I + sum_i x_i x_i^T`` (Sherman-Morrison). Li et al. use
    ``lambda = 0`` after enough random rounds to make ``V`` invertible; the ridge
    term here makes ``tau = 0`` safe.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``alpha >= 0``, the width multiplier; 0 plays greedily.
        lambda_reg: Penalty lambda > 0 (MLE penalty ``lambda/2 ||theta||^2`` and ``V_1 = lambda I``).
        n_explore_rounds: ``tau >= 0`` initial uniformly random rounds.
        n_mle_steps: MLE steps per round (each O(t d)).
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Li, Lu and Zhou (2017), "Provably optimal algorithms for generalized linear contextual
        bandits", Algorithm 1 (UCB-GLM).
    """

    state_names = (*_LogisticAgent.state_names, "design_inverse")

    def __init__(self, env=None, *, exploration_scale: float = 0.5, lambda_reg: float = 1.0,
                 n_explore_rounds: int = 0, n_mle_steps: int = 2, seed=None, device="auto", n_arms=None,
                 dim=None, num_replicas=None) -> None:
        super().__init__(env, lambda_reg=lambda_reg, n_explore_rounds=n_explore_rounds, n_mle_steps=n_mle_steps,
                         seed=seed, device=device, n_arms=n_arms, dim=dim, num_replicas=num_replicas)
        self.exploration_scale = check_positive("exploration_scale", exploration_scale, allow_zero=True)
        self.design_inverse = _math.scaled_identity(self.num_replicas, self.dim, 1.0 / self.lambda_reg,
                                                    self.device)  # V^-1 (R, d, d)

    def hyperparameters(self) -> dict[str, Any]:
        return {**super().hyperparameters(), "exploration_scale": self.exploration_scale}

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        if self.t <= self.n_explore_rounds:
            return self._random_arms()
        if self.exploration_scale == 0:
            return self._argmax(_math.scores(contexts, self.theta_hat))
        return _math.optimistic_argmax(contexts, self.theta_hat, self.design_inverse, self.exploration_scale,
                                       self._ties())  # (R,)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        x = _math.chosen_rows(contexts, actions)  # (R, d)
        self._append(x, rewards)
        self.design_inverse = _math.sherman_morrison(self.design_inverse, x)
        self._mle_steps(self.n_mle_steps, self.t)  # the history now holds t observations


class GLMTSL(_LogisticAgent):
    """GLM-TSL: Thompson sampling from the Laplace approximation of the logistic posterior.

    After ``tau`` uniformly random rounds, round ``t`` draws
    ``theta_t ~ N(theta_hat, a^2 H^-1)`` with ``theta_hat`` the penalised MLE and
    ``H = lambda I + sum_i mu'(x_i^T theta_hat) x_i x_i^T`` the Hessian of the penalised NLL
    at it, and plays ``argmax_x x^T theta_t``. The draw is ``theta_hat + a L^-T z`` with
    ``L L^T = H`` (``L^-T`` formed after each update by ``_math.inverse_cholesky_factor``).
    The Hessian is rebuilt from the whole history every round, as the algorithm requires:
    ``O(t d^2)`` per round.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``a >= 0``, the posterior inflation; 0 plays greedily.
        lambda_reg: Penalty lambda > 0 of the NLL (``lambda / 2 ||theta||^2``).
        n_explore_rounds: ``tau >= 0`` initial uniformly random rounds.
        n_mle_steps: MLE steps per round (each O(t d)).
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Kveton, Zaheer, Szepesvari, Li, Ghavamzadeh and Boutilier (2020), "Randomized
        exploration in generalized linear bandits", Algorithm GLM-TSL.
    """

    state_names = (*_LogisticAgent.state_names, "sampling_factor")

    def __init__(self, env=None, *, exploration_scale: float = 0.1, lambda_reg: float = 1.0,
                 n_explore_rounds: int = 0, n_mle_steps: int = 2, seed=None, device="auto", n_arms=None,
                 dim=None, num_replicas=None) -> None:
        super().__init__(env, lambda_reg=lambda_reg, n_explore_rounds=n_explore_rounds, n_mle_steps=n_mle_steps,
                         seed=seed, device=device, n_arms=n_arms, dim=dim, num_replicas=num_replicas)
        self.exploration_scale = check_positive("exploration_scale", exploration_scale, allow_zero=True)
        # S = L^-T with L L^T = H, so S S^T = H^-1 (R, d, d)
        self.sampling_factor = _math.scaled_identity(self.num_replicas, self.dim, 1.0 / math.sqrt(self.lambda_reg),
                                                     self.device)
        self._normals = _rng.BlockDraws("normal", _rng_streams.SAMPLE, (self.dim,))

    def hyperparameters(self) -> dict[str, Any]:
        return {**super().hyperparameters(), "exploration_scale": self.exploration_scale}

    def sample_theta(self) -> torch.Tensor:
        """This round's draw ``theta_t ~ N(theta_hat, a^2 H^-1)``, ``(R, d)``; no state change."""
        return self._sample_around(self.theta_hat)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._thompson_select(contexts, self.theta_hat)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        self._append(_math.chosen_rows(contexts, actions), rewards)
        self._mle_steps(self.n_mle_steps, self.t)  # the history now holds t observations
        if self.t >= self.n_explore_rounds and self.exploration_scale > 0:  # next round samples
            self.sampling_factor = self._inverse_factor(self.hessian(self.theta_hat, self.t), "the Hessian H")


class SGDTS(_LogisticAgent):
    """SGD-TS: online SGD with iterate averaging, and Thompson sampling around the average.

    Rounds ``1..tau`` play uniformly random arms; at round ``tau`` the penalised MLE of those
    ``tau`` observations gives ``theta_hat_tau``, the start ``theta_tilde`` and the average
    ``theta_bar``. Then the rounds come in epochs of ``tau``: at the end of epoch ``j`` one SGD
    step ``theta_tilde <- theta_tilde - (eta_0 / j) g`` with ``g`` the NLL gradient of the
    epoch's ``tau`` observations at ``theta_tilde``, projected onto the ball of radius
    ``projection_radius`` around ``theta_hat_tau``; ``theta_bar`` is the running mean of the
    iterates. Each round draws ``theta_t ~ N(theta_bar, g^2 V^-1)``, ``V = lambda I + sum x x^T``
    (``theta_bar + g S z`` with ``S S^T = V^-1`` kept by Potter's square-root update, as in
    :class:`LinTS`), and plays ``argmax_x x^T theta_t``. Per round: O(d^2), nothing that grows with ``t``.

    Ding et al.'s code samples from an isotropic ``N(theta_bar, (2 g_1^2 + 2 g_2^2) I / j)``;
    this class uses the ``g^2 V^-1`` form (the design-matrix shape of their analysis).

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: ``g >= 0`` in ``N(theta_bar, g^2 V^-1)``; 0 plays greedily on ``theta_bar``.
        step_size: ``eta_0 > 0``; epoch ``j``'s step is ``eta_0 / j``.
        n_explore_rounds: ``tau >= 1`` random rounds, also the epoch length; default ``dim``.
        projection_radius: Radius > 0 of the ball around ``theta_hat_tau`` that SGD stays in.
        lambda_reg: Penalty lambda > 0 of the initial MLE and ``V_1 = lambda I``.
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Ding, Hsieh and Sharpnack (2021), "An efficient algorithm for generalized linear bandit:
        online stochastic gradient descent and Thompson sampling", Algorithm 1 (SGD-TS).
    """

    state_names = (*_LogisticAgent.state_names, "anchor", "theta_tilde", "theta_bar", "epoch_gradient",
                   "sampling_factor")
    _initial_mle_steps = 50  # bound-optimisation steps at round tau (error factor ~0.21 per step)

    def __init__(self, env=None, *, exploration_scale: float = 0.1, step_size: float = 3.0,
                 n_explore_rounds: int | None = None, projection_radius: float = 2.0, lambda_reg: float = 1.0,
                 seed=None, device="auto", n_arms=None, dim=None, num_replicas=None) -> None:
        super().__init__(env, lambda_reg=lambda_reg, n_explore_rounds=0, n_mle_steps=1, seed=seed,
                         device=device, n_arms=n_arms, dim=dim, num_replicas=num_replicas)
        tau = self.dim if n_explore_rounds is None else n_explore_rounds
        self.n_explore_rounds = check_int("n_explore_rounds", tau, minimum=1)
        self.exploration_scale = check_positive("exploration_scale", exploration_scale, allow_zero=True)
        self.step_size = check_positive("step_size", step_size)
        self.projection_radius = check_positive("projection_radius", projection_radius)
        R, d = self.num_replicas, self.dim
        zeros = torch.zeros(R, d, device=self.device)
        self.anchor, self.theta_tilde, self.theta_bar, self.epoch_gradient = (zeros.clone() for _ in range(4))
        # S S^T = V^-1 with V = lambda I + sum x x^T, kept by Potter's O(d^2) square-root update
        self.sampling_factor = _math.scaled_identity(R, d, 1.0 / math.sqrt(self.lambda_reg), self.device)
        self._normals = _rng.BlockDraws("normal", _rng_streams.SAMPLE, (d,))

    def hyperparameters(self) -> dict[str, Any]:
        return {"exploration_scale": self.exploration_scale, "step_size": self.step_size,
                "n_explore_rounds": self.n_explore_rounds, "projection_radius": self.projection_radius,
                "lambda_reg": self.lambda_reg}

    def sample_theta(self) -> torch.Tensor:
        """This round's draw ``theta_t ~ N(theta_bar, g^2 V^-1)``, ``(R, d)``; no state change."""
        return self._sample_around(self.theta_bar)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._thompson_select(contexts, self.theta_bar)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        x = _math.chosen_rows(contexts, actions)  # (R, d)
        tau, t = self.n_explore_rounds, self.t
        self.sampling_factor = _math.potter_update(self.sampling_factor, x)  # (R, d, d)
        self._check_finite(self.sampling_factor, "the square root S of V^-1")
        if t <= tau:
            self._append(x, rewards)
            if t == tau:  # theta_hat_tau: the penalised MLE of the random rounds
                self._mle_steps(self._initial_mle_steps, t)
                self.anchor, self.theta_tilde, self.theta_bar = (self.theta_hat.clone() for _ in range(3))
            return
        residual = _math.sigmoid((x * self.theta_tilde).sum(dim=-1, keepdim=True))[:, 0] - rewards  # (R,)
        self.epoch_gradient = self.epoch_gradient + residual[:, None] * x  # (R, d)
        if (t - tau) % tau == 0:  # end of epoch j
            j = (t - tau) // tau
            step = self.theta_tilde - (self.step_size / j) * self.epoch_gradient  # (R, d)
            offset = step - self.anchor  # (R, d)
            norm = offset.square().sum(dim=-1, keepdim=True).sqrt()  # (R, 1)
            shrink = (self.projection_radius / norm.clamp(min=self.projection_radius)).clamp(max=1.0)  # (R, 1)
            self.theta_tilde = self.anchor + shrink * offset
            self.theta_bar = self.theta_bar + (self.theta_tilde - self.theta_bar) / (j + 1)  # mean of j + 1 iterates
            self.epoch_gradient = torch.zeros_like(self.epoch_gradient)
            self._check_finite(self.theta_tilde, "the SGD iterate theta_tilde", self.step_size / j)
