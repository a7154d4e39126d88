"""Generalized linear (logistic) baselines of the LMC-TS paper: UCB-GLM, GLM-TSL and SGD-TS.

Reward model ``E[r | x] = mu(x^T theta)``, ``mu`` the sigmoid, over the model features ``x = z = (context, e_k)``
of :class:`agents.linear.ArmFeatures` (a constant per arm where the arms are one-hot blocks: ``intercept``). The
penalised negative log-likelihood of the history ``(x_i, r_i)_{i<t}``, with the ridge convention of every agent
here::

    L_t(theta) = sum_i [softplus(x_i^T theta) - r_i x_i^T theta] + lambda sum_j D_jj theta_j^2

``D = I`` with ``scale_features=False`` (SGD-TS's default, with ``intercept=False``: its SGD step and projection
radius are in the raw features' units, and on the UCI sets either part made it worse); with
``scale_features=True`` (UCB-GLM's and GLM-TSL's default since 2026-11-27) ``D_jj`` is feature ``j``'s mean
square over every arm row shown, renewed at rounds 2, 4, 8, ... as the linear agents' (:mod:`agents.linear`): the
fit does not change when a feature is multiplied by a constant, and every kept inverse is then computed afresh in
float64 from ``sum x x^T``. Its Hessian
``H_t(theta) = 2 lambda D + sum_i mu'(x_i^T theta) x_i x_i^T`` is bounded by
``B_t = 2 lambda D + (1/4) sum_i x_i x_i^T`` (``mu' <= 1/4``). The MLE is tracked by a few
warm-started bound-optimisation steps per round, ``theta <- theta - B_t^-1 grad L_t(theta)``
(Boehning and Lindsay 1988): each decreases ``L_t``, costs one pass over the history plus
O(d^2), with ``B_t^-1`` kept by Sherman-Morrison. The history is an :class:`agents.loop.history.History`.

A pass over the history costs ``O(t d)``; done every round it makes a run ``O(T^2)`` (UCB-GLM: 66 s for
5 seeds x 5,000 rounds, growing). UCB-GLM and GLM-TSL therefore refit on a geometric schedule
(``refit_growth`` ``g``, :func:`refit_rounds`): every round while the history is short, then whenever it has
grown by a fraction ``g`` since the last refit, so the passes cost ``O(d (1 + g) / g)`` per round on
average, whatever ``t`` (``g = 0``: every round, the algorithms as published). Between refits ``theta_hat``
stays; everything else (``V^-1``, GLM-TSL's Hessian at ``theta_hat``) is updated every round.

One round, in the order it runs: ``_select`` (random arms for the first ``tau`` rounds, then the
agent's scores and ``_argmax``) and ``_observe`` (append the played arm, update the statistics,
``_mle_steps``).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from agents.base import BanditAgent, chosen_rows
from agents.linear import ArmFeatures, is_power_of_two, potter, sherman_morrison, ucb_scores
from agents.loop.history import History
from agents.models.reward import (  # noqa: F401 (agents.glm.logistic_loss: docs/agents.md)
    linear_scores,
    load_prefixed_state,
    logistic_gradient,
    logistic_loss,
    matvec,
    prefixed_state,
)
from agents.uniform import uniform_arms
from agents.validation import check_float
from bandit_gym.rng import Stream

#: Default ``refit_growth`` of UCB-GLM and GLM-TSL (measured in docs/agents.md, "Generalized linear").
REFIT_GROWTH = 0.02


def refit_due(n_rows: int, growth: float) -> bool:
    """Whether the geometric schedule refits after row ``n_rows`` (1-based): rows ``1..n_0`` with
    ``n_0 = ceil(1 / g)``, then ``n_(k+1) = n_k + ceil(g n_k)``; every row for ``g = 0``. Integer arithmetic
    from ``n_0``: the same rounds on every machine, and nothing to save."""
    if growth == 0 or n_rows <= math.ceil(1.0 / growth):
        return True
    point = math.ceil(1.0 / growth)
    while point < n_rows:
        point += math.ceil(growth * point)
    return point == n_rows


class _LogisticAgent(BanditAgent):
    """History, bound-optimisation MLE and random initial rounds shared by the GLM agents.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        exploration_scale: The agent's exploration scale ``>= 0``, a number or one per replica.
        lambda_reg: Ridge weight ``lambda > 0`` of ``lambda ||theta||^2``, a number or one per replica.
        n_explore_rounds: ``tau >= 0`` rounds of uniformly random arms first; a number or one per replica.
        n_inner_steps: Warm-started MLE steps per round (each a pass over the history); one per replica or one.
        intercept: Add a constant per arm to its features (as :class:`agents.LinUCB`'s): None (default) where the
            arms are one-hot blocks, True always, False never.
        scale_features: Penalise each feature by its mean square over the rows shown (``lambda D``, renewed at
            rounds 2, 4, 8, ...; default True), as the linear agents do, instead of ``lambda``.

    Keyword Args:
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.
    """

    def __init__(self, env=None, *, exploration_scale: Any, lambda_reg: Any = 1.0, n_explore_rounds: Any = 0,
                 n_inner_steps: Any = 2, intercept: bool | None = None, scale_features: bool = True,
                 **kwargs) -> None:
        if "n_mle_steps" in kwargs:
            raise TypeError(f"{type(self).__name__} got an unexpected keyword argument 'n_mle_steps'; the MLE steps "
                            f"per round are n_inner_steps")
        super().__init__(env, **kwargs)
        self.exploration_scale = self._hyperparameter("exploration_scale", exploration_scale, minimum=0)
        self.lambda_reg = self._hyperparameter("lambda_reg", lambda_reg, minimum=0, strict=True)
        self.n_explore_rounds = self._hyperparameter("n_explore_rounds", n_explore_rounds, integer=True, minimum=0)
        self.n_inner_steps = self._hyperparameter("n_inner_steps", n_inner_steps, integer=True, minimum=1)
        if not isinstance(scale_features, bool):
            raise ValueError(f"scale_features must be True or False, got {scale_features!r}")
        self.arm_features = ArmFeatures(self.num_replicas, self.n_arms, self.dim, intercept, self.device)
        self._hyperparameters.update(intercept=intercept, scale_features=scale_features)
        self.scale_features = scale_features
        #: Model features per arm ``p``: ``d``, plus ``K`` per-arm constants (``intercept``).
        self.model_dim = p = self.arm_features.model_dim
        R = self.num_replicas
        self.data = History(R, {"features": (p,), "rewards": ()}, self.device)
        self.theta_hat = torch.zeros(R, p, device=self.device)  # MLE estimate (R, p)
        #: The penalty ``lambda D`` per coordinate ``(R, p)`` (``lambda`` until the scales are renewed).
        self.penalty = self.lambda_reg[:, None].expand(R, p).contiguous()
        # sum of the played rows' z z^T (R, p, p), float64: the inverses are computed afresh from it when D changes
        self.data_gram = torch.zeros(R, p, p, dtype=torch.float64, device=self.device) if scale_features else None
        eye = torch.eye(p, device=self.device)
        self.bound_inverse = eye / (2.0 * self.lambda_reg[:, None, None])  # B^-1 (R, p, p)

    def features(self, contexts: torch.Tensor) -> torch.Tensor:
        """The model features ``z`` of every arm: ``(R, K, d) -> (R, K, p)``."""
        return self.arm_features(contexts)

    def _played(self, contexts: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The played arms' features ``z`` ``(R, p)``, added to ``sum z z^T``; records every shown row's squares
        (``scale_features``)."""
        z = self.features(contexts)  # (R, K, p)
        x = chosen_rows(z, actions)
        if self.scale_features:
            self.arm_features.record(z)
            x64 = x.double()
            self.data_gram = self.data_gram + x64[:, :, None] * x64[:, None, :]
        return x

    def _penalty_matrix(self, weight: float) -> torch.Tensor:
        """``weight * diag(lambda D)`` ``(R, p, p)`` in float64."""
        return torch.diag_embed(weight * self.penalty.double())

    def _renew(self) -> None:
        """After the round whose next round is a power of 2 (``scale_features``): ``D`` from the rows shown so far,
        and every kept inverse afresh with it (float64), ``B^-1 = (2 lambda D + sum z z^T / 4)^-1`` here; each agent
        adds its own in :meth:`_renew_agent`."""
        self.penalty = self.lambda_reg[:, None] * self.arm_features.scales()
        self.bound_inverse = torch.linalg.inv(self._penalty_matrix(2.0) + 0.25 * self.data_gram).float()
        self._renew_agent()

    def _renew_agent(self) -> None:
        """The agent's own statistics after :meth:`_renew` (none here)."""

    def _random_arms(self) -> torch.Tensor:
        return uniform_arms(self._draws("uniform", Stream.EXPLORE, ()).to(self.device), self.n_arms)  # (R,)

    def _explore_or(self, actions: torch.Tensor) -> torch.Tensor:
        """Uniformly random arms for the replicas still in their first ``tau`` rounds, else ``actions``."""
        return torch.where(self.t <= self.n_explore_rounds, self._random_arms(), actions)

    def _append(self, x: torch.Tensor, rewards: torch.Tensor) -> None:
        """Store the played ``x`` ``(R, p)`` and rewards ``(R,)``; ``B <- B + (x/2)(x/2)^T``."""
        self.data.append(features=x, rewards=rewards)
        self.bound_inverse = sherman_morrison(self.bound_inverse, 0.5 * x)

    def _renew_due(self) -> bool:
        """Whether ``D`` is renewed after this round (the next round a power of 2, ``scale_features``)."""
        return self.scale_features and is_power_of_two(self.t + 1)

    def _mle_steps(self, n_steps: torch.Tensor) -> None:
        """``n_steps[r]`` bound-optimisation steps per replica on the whole history, from ``theta_hat``."""
        x, r = self.data["features"], self.data["rewards"]  # (R, n, d), (R, n)
        theta = self.theta_hat
        for step in range(int(n_steps.max())):
            grad = logistic_gradient(x, r, theta, self.penalty)  # (R, p)
            theta = torch.where((step < n_steps)[:, None], theta - matvec(self.bound_inverse, grad), theta)
        self._check_finite(theta, "the MLE theta_hat")
        self.theta_hat = theta

    def fit_mle(self, n_steps: int = 200) -> torch.Tensor:
        """Run ``n_steps`` more MLE steps on the whole history (e.g. to converge); returns ``theta_hat``."""
        self._mle_steps(torch.full((self.num_replicas,), n_steps, device=self.device))
        return self.theta_hat

    def hessian(self, theta: torch.Tensor) -> torch.Tensor:
        """``H(theta) = 2 lambda D + sum_i mu'(x_i^T theta) x_i x_i^T`` over the history, ``(R, p, p)``."""
        x = self.data["features"]  # (R, n, p)
        p = torch.sigmoid((x @ theta[:, :, None])[:, :, 0])  # (R, n)
        return x.mT @ ((p * (1.0 - p))[:, :, None] * x) + torch.diag_embed(2.0 * self.penalty)

    def _standard_normal(self) -> torch.Tensor:
        """This round's ``z ~ N(0, I)`` of the posterior draw, ``(R, d)``."""
        return self._draws("normal", Stream.SAMPLE, (self.model_dim,)).to(self.device)

    def _state(self) -> dict[str, torch.Tensor]:
        return {**prefixed_state("data", self.data), **prefixed_state("features", self.arm_features),
                **({} if self.data_gram is None else {"data_gram": self.data_gram}),
                **{name: getattr(self, name) for name in self._state_names}}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        load_prefixed_state("data", self.data, state)
        load_prefixed_state("features", self.arm_features, state)
        self.data_gram = state.get("data_gram")
        for name in self._state_names:
            setattr(self, name, state[name])

    _state_names: tuple[str, ...] = ("theta_hat", "bound_inverse", "penalty")


class UCBGLM(_LogisticAgent):
    """UCB-GLM: optimism on the logistic MLE with the Gram-matrix confidence width.

    After ``tau`` rounds of uniformly random arms, round ``t`` plays
    ``argmax_x x^T theta_hat + alpha sqrt(x^T V^-1 x)`` (:func:`agents.linear.ucb_scores`), with
    ``theta_hat`` the penalised MLE and ``V = lambda D + sum_i x_i x_i^T`` (Sherman-Morrison; renewed with ``D``).
    Li et al. use ``lambda = 0`` after enough random rounds; the ridge term makes ``tau = 0`` safe.

    When to use it:
        Binary (logistic) rewards, such as LogisticBandit-v0, a first choice with GLMTSL; on classification data it is
        as low as the linear agents at the defaults. Measured: docs/agents.md, "Choosing an agent", and
        benchmarks/results/grid_glm.md.

    Args:
        exploration_scale: ``alpha >= 0``, the width multiplier; 0 plays greedily.
        refit_growth: ``g >= 0`` of the geometric refit schedule (module docstring): the MLE steps run when
            the history has grown by a fraction ``g`` since the last refit (every round for ``g = 0``).

    Keyword Args:
        lambda_reg, n_explore_rounds, n_inner_steps, ...: See :class:`_LogisticAgent`.

    References:
        Li, Lu and Zhou (2017), "Provably optimal algorithms for generalized linear contextual
        bandits", Algorithm 1 (UCB-GLM).
    """

    _state_names = (*_LogisticAgent._state_names, "gram_inverse")

    def __init__(self, env=None, *, exploration_scale: Any = 0.5, refit_growth: float = REFIT_GROWTH,
                 **kwargs) -> None:
        super().__init__(env, exploration_scale=exploration_scale, **kwargs)
        self.refit_growth = check_float("refit_growth", refit_growth, 0)
        self._hyperparameters["refit_growth"] = self.refit_growth
        self.gram_inverse = torch.eye(self.model_dim, device=self.device) / self.lambda_reg[:, None, None]  # V^-1

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        z = self.features(contexts)  # (R, K, p)
        scores = ucb_scores(z, self.theta_hat, self.gram_inverse, self.exploration_scale)  # (R, K)
        return self._explore_or(self._argmax(scores))

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        x = self._played(contexts, actions)  # (R, p)
        self._append(x, rewards)
        self.gram_inverse = sherman_morrison(self.gram_inverse, x)
        if self._renew_due():
            self._renew()
        if refit_due(len(self.data), self.refit_growth):
            self._mle_steps(self.n_inner_steps)

    def _renew_agent(self) -> None:
        self.gram_inverse = torch.linalg.inv(self._penalty_matrix(1.0) + self.data_gram).float()  # (lambda D + G)^-1


class GLMTSL(_LogisticAgent):
    """GLM-TSL: Thompson sampling from the Laplace approximation of the logistic posterior.

    After ``tau`` uniformly random rounds, round ``t`` draws ``theta_t ~ N(theta_hat, a^2 H^-1)``,
    ``H`` the Hessian of ``L_t`` at the MLE ``theta_hat``, and plays ``argmax_x x^T theta_t``. The
    draw is ``theta_hat + a L^-T z`` with ``L L^T = H`` (Cholesky, after each update).

    When to use it:
        Binary (logistic) rewards, such as LogisticBandit-v0, a first choice with UCBGLM; on classification data it ties
        the linear agents (lowest on MagicTelescope-v0 at the defaults). Measured: docs/agents.md, "Choosing an agent",
        and benchmarks/results/grid_glm.md.

    Args:
        exploration_scale: ``a >= 0``, the posterior inflation; 0 plays greedily.
        refit_growth: ``g >= 0`` of the geometric refit schedule (module docstring). At a refit ``H`` is
            rebuilt from the whole history at the new ``theta_hat``; between refits ``theta_hat`` is fixed and
            each new row's ``mu'(x^T theta_hat) x x^T`` is added: ``H`` is exactly the Hessian at ``theta_hat``.

    Keyword Args:
        lambda_reg, n_explore_rounds, n_inner_steps, ...: See :class:`_LogisticAgent`.

    References:
        Kveton, Zaheer, Szepesvari, Li, Ghavamzadeh and Boutilier (2020), "Randomized
        exploration in generalized linear bandits", Algorithm GLM-TSL.
    """

    _state_names = (*_LogisticAgent._state_names, "hessian_cholesky")

    def __init__(self, env=None, *, exploration_scale: Any = 0.1, refit_growth: float = REFIT_GROWTH,
                 **kwargs) -> None:
        super().__init__(env, exploration_scale=exploration_scale, **kwargs)
        self.refit_growth = check_float("refit_growth", refit_growth, 0)
        self._hyperparameters["refit_growth"] = self.refit_growth
        eye = torch.eye(self.model_dim, device=self.device)
        self.hessian_cholesky = (2.0 * self.lambda_reg).sqrt()[:, None, None] * eye  # L, L L^T = H (R, p, p)

    def sample_theta(self) -> torch.Tensor:
        """This round's draw ``theta_hat + a L^-T z`` (``L^-T z ~ N(0, H^-1)``), ``(R, d)``; no state change."""
        z = self._standard_normal()  # (R, d)
        u = torch.linalg.solve_triangular(self.hessian_cholesky.mT, z[:, :, None], upper=True)[:, :, 0]  # L^-T z
        return self.theta_hat + self.exploration_scale[:, None] * u

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._explore_or(self._argmax(linear_scores(self.features(contexts), self.sample_theta())))

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        x = self._played(contexts, actions)  # (R, p)
        self._append(x, rewards)
        renew = self._renew_due()
        if renew:
            self._renew()
        if renew or refit_due(len(self.data), self.refit_growth):  # H at theta_hat with the penalty in force
            self._mle_steps(self.n_inner_steps)
            hessian = self.hessian(self.theta_hat)  # over the whole history, O(t d^2)
        else:  # theta_hat unchanged: H(theta_hat) gains the new row's term, O(d^3)
            p = torch.sigmoid((x * self.theta_hat).sum(dim=-1))  # (R,)
            weight = (p * (1.0 - p))[:, None, None]
            hessian = self.hessian_cholesky @ self.hessian_cholesky.mT + weight * x[:, :, None] * x[:, None, :]
        cholesky, info = torch.linalg.cholesky_ex(hessian)  # (R, d, d), (R,)
        if bool((info != 0).any()):
            raise RuntimeError(f"GLMTSL: the Hessian H is not positive definite in round {self.t}")
        self.hessian_cholesky = cholesky


class SGDTS(_LogisticAgent):
    """SGD-TS: online SGD with iterate averaging, and Thompson sampling around the average.

    Rounds ``1..tau`` play uniformly random arms; at round ``tau`` the penalised MLE of those
    observations gives ``theta_hat_tau`` (the ``anchor``), the start ``theta_tilde`` and the average
    ``theta_bar``. Then the rounds come in epochs of ``tau``: at the end of epoch ``j`` one SGD step
    ``theta_tilde <- theta_tilde - (eta_0 / j) g`` (``g`` the NLL gradient of the epoch's
    observations), projected onto the ball of radius ``projection_radius`` around the anchor;
    ``theta_bar`` is the mean of the iterates. Each round draws ``theta_t ~ N(theta_bar, g^2 V^-1)``
    (``V = lambda D + sum x x^T``, ``S S^T = V^-1`` kept by :func:`agents.linear.potter_update`)
    and plays ``argmax_x x^T theta_t``. Per round O(d^2), nothing that grows with ``t``.
    Ding et al.'s code samples from an isotropic ``N(theta_bar, (2 g_1^2 + 2 g_2^2) I / j)``; this
    uses the ``g^2 V^-1`` form of their analysis.

    When to use it:
        Logistic rewards where a round must not refit over the history (online SGD steps instead). At its defaults its
        regret on the UCI data is well above UCBGLM's and GLMTSL's: prefer those where time allows. Measured:
        docs/agents.md, "Choosing an agent".

    Args:
        exploration_scale: ``g >= 0``; 0 plays greedily on ``theta_bar``.
        step_size: ``eta_0 > 0``; epoch ``j``'s step is ``eta_0 / j``.
        n_explore_rounds: ``tau >= 1`` random rounds, also the epoch length; default ``dim``. One
            value for all replicas (it sets the shared epoch schedule).
        projection_radius: Radius > 0 of the ball around the anchor that SGD stays in.
        n_inner_steps: Bound-optimisation steps of the anchor's MLE at round ``tau`` (the error shrinks
            by a factor ~0.2 per step).

    Keyword Args:
        lambda_reg, ...: See :class:`_LogisticAgent`.

    References:
        Ding, Hsieh and Sharpnack (2021), "An efficient algorithm for generalized linear bandit:
        online stochastic gradient descent and Thompson sampling", Algorithm 1 (SGD-TS).
    """

    _state_names = (*_LogisticAgent._state_names, "anchor", "theta_tilde", "theta_bar", "epoch_gradient",
                    "gram_inverse_root")
    def __init__(self, env=None, *, exploration_scale: Any = 0.1, step_size: Any = 3.0,
                 n_explore_rounds: int | None = None, projection_radius: Any = 2.0, lambda_reg: Any = 1.0,
                 n_inner_steps: Any = 50, intercept: bool | None = False, scale_features: bool = False,
                 **kwargs) -> None:
        super().__init__(env, exploration_scale=exploration_scale, lambda_reg=lambda_reg,
                         n_inner_steps=n_inner_steps, intercept=intercept, scale_features=scale_features, **kwargs)
        tau = self.model_dim if n_explore_rounds is None else n_explore_rounds
        self.n_explore_rounds = self._hyperparameter("n_explore_rounds", tau, integer=True, minimum=1)
        if len(set(self.n_explore_rounds.tolist())) > 1:
            raise ValueError(f"n_explore_rounds must be one integer for all replicas in SGDTS, got {tau!r}")
        self.step_size = self._hyperparameter("step_size", step_size, minimum=0, strict=True)
        self.projection_radius = self._hyperparameter("projection_radius", projection_radius, minimum=0, strict=True)
        R, p = self.num_replicas, self.model_dim
        self.anchor, self.theta_tilde, self.theta_bar, self.epoch_gradient = (
            torch.zeros(R, p, device=self.device) for _ in range(4))
        self.gram_inverse_root = torch.eye(p, device=self.device) / self.lambda_reg.sqrt()[:, None, None]  # S

    def _renew_agent(self) -> None:
        inverse = torch.linalg.inv(self._penalty_matrix(1.0) + self.data_gram)  # (lambda D + G)^-1, float64
        self.gram_inverse_root = torch.linalg.cholesky(inverse).float()  # S S^T = V^-1

    def sample_theta(self) -> torch.Tensor:
        """This round's draw ``theta_bar + g S z``, ``(R, p)``; no state change."""
        z = self._standard_normal()  # (R, p)
        return self.theta_bar + self.exploration_scale[:, None] * matvec(self.gram_inverse_root, z)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._explore_or(self._argmax(linear_scores(self.features(contexts), self.sample_theta())))

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        x = self._played(contexts, actions)  # (R, p)
        tau, t = int(self.n_explore_rounds[0]), self.t
        self.gram_inverse_root = potter(self.gram_inverse_root, x)  # (R, p, p)
        if self._renew_due():
            self._renew()
        self._check_finite(self.gram_inverse_root, "the square root S of V^-1")
        if t <= tau:
            self._append(x, rewards)
            if t == tau:  # the anchor: the penalised MLE of the random rounds
                self._mle_steps(self.n_inner_steps)
                self.anchor, self.theta_tilde, self.theta_bar = (self.theta_hat.clone() for _ in range(3))
            return
        residual = torch.sigmoid((x * self.theta_tilde).sum(dim=-1)) - rewards  # (R,)
        self.epoch_gradient = self.epoch_gradient + residual[:, None] * x  # (R, d)
        if (t - tau) % tau == 0:  # end of epoch j
            j = (t - tau) // tau
            step = self.theta_tilde - (self.step_size / j)[:, None] * self.epoch_gradient  # (R, d)
            offset = step - self.anchor  # (R, d)
            norm = offset.norm(dim=-1)  # (R,)
            shrink = torch.where(norm > self.projection_radius, self.projection_radius / norm, 1.0)  # (R,)
            self.theta_tilde = self.anchor + shrink[:, None] * offset
            self.theta_bar = self.theta_bar + (self.theta_tilde - self.theta_bar) / (j + 1)  # mean of j + 1 iterates
            self.epoch_gradient = torch.zeros_like(self.epoch_gradient)
            self._check_finite(self.theta_tilde, "the SGD iterate theta_tilde", (self.step_size / j).tolist())
