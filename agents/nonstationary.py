"""LinUCB for a drifting world: discounted (D-LinUCB) and sliding-window (SW-LinUCB), batched over replicas.

Both forget the past so that the estimate follows a ``theta*`` that moves (:class:`bandit_gym.Drift`).
Over the model features ``z`` of :mod:`agents.linear` (the arm's features, with a constant per arm where
the arms are one-hot blocks), round ``t`` plays ``argmax_z z^T theta_hat + nu_t width(z)`` with LinUCB's
``nu_t = c sqrt(log t)`` (ties at random), and

* D-LinUCB (discount ``gamma``): ``V_t = gamma V_{t-1} + z z^T + (1 - gamma) lambda I`` (so
  ``V_t = lambda I + sum_s gamma^(t-s) z_s z_s^T``), ``b_t = gamma b_{t-1} + r z``, and
  ``W_t = gamma^2 W_{t-1} + z z^T + (1 - gamma^2) lambda I``; ``theta_hat = V^-1 b`` and
  ``width(z) = sqrt(z^T V^-1 W V^-1 z)``, the paper's confidence ellipsoid for weighted least squares.
* SW-LinUCB (``window`` rounds): ``V = lambda I + sum z z^T`` and ``b = sum r z`` over the last ``window``
  rounds learned from; ``theta_hat = V^-1 b`` and ``width(z) = sqrt(z^T V^-1 z)``.

``V``, ``W`` and ``b`` are kept in float64 (the window adds its new row and subtracts the leaving one;
in float64 the sums stay exact to about 1e-12 over 10^4 rounds) and ``V`` is factorised (Cholesky) once
per round, in ``_observe``: the per-round diagonal term and the window's removals leave no rank-one
update as simple as LinUCB's, and ``p`` is small. ``discount`` and ``window`` may differ per replica
(a grid as one batch).

The bonus ``nu_t = c sqrt(log t)`` is LinUCB's (same units, same default ``c = 0.5``), not the paper's
``beta_t`` (which needs a bound on ``|theta*|`` and the noise): the comparison with LinUCB then changes
only what is forgotten. Defaults: ``discount = 0.99`` and ``window = 200`` (an effective memory of about
100 to 200 rounds); Russac et al. tune them to the number of changes ``Gamma_T`` over ``T`` rounds,
``1 - gamma ~ (Gamma_T / T)^(2/3)``, which for a change every 1,000 rounds gives about 0.99.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from agents.base import BanditAgent, chosen_rows
from agents.linear import ArmFeatures, ucb_scores
from agents.loop.history import History
from agents.loop.propensity import uniform_over_maximisers
from agents.models.reward import load_prefixed_state, prefixed_state


class _ForgettingLinUCB(BanditAgent):
    """Shared part: model features, the bonus schedule and the estimate from ``V`` and ``b``."""

    def _init_linear(self, exploration_scale: Any, lambda_reg: Any, intercept: bool | None) -> None:
        self.exploration_scale = self._hyperparameter("exploration_scale", exploration_scale, minimum=0)
        self.lambda_reg = self._hyperparameter("lambda_reg", lambda_reg, minimum=0, strict=True)
        self.arm_features = ArmFeatures(self.num_replicas, self.n_arms, self.dim, intercept, self.device)
        self.intercept = self._hyperparameters["intercept"] = intercept
        self.model_dim = self.arm_features.model_dim
        R, p = self.num_replicas, self.model_dim
        self.eye = torch.eye(p, dtype=torch.float64, device=self.device)
        self.prior = self.lambda_reg.double()[:, None, None] * self.eye  # lambda I (R, p, p)
        self.gram = self.prior.clone()  # V (R, p, p) float64
        self.moment = torch.zeros(R, p, dtype=torch.float64, device=self.device)  # b (R, p)
        self.theta_hat = torch.zeros(R, p, device=self.device)  # V^-1 b (R, p)
        self.width_matrix = torch.diag_embed(1.0 / self.lambda_reg[:, None].expand(R, p))  # (R, p, p)

    def features(self, contexts: torch.Tensor) -> torch.Tensor:
        """Model features ``z``: ``(R, K, d) -> (R, K, p)`` (as :class:`agents.LinUCB`'s)."""
        return self.arm_features(contexts)

    def bonus_scale(self) -> torch.Tensor:
        """``nu_t = c sqrt(log t)`` per replica, ``(R,)``."""
        return self.exploration_scale * math.sqrt(math.log(self.t))

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        z = self.features(contexts)  # (R, K, p)
        return self._argmax(ucb_scores(z, self.theta_hat, self.width_matrix, self.bonus_scale()))  # (R,)

    def exact_probabilities(self, contexts: torch.Tensor) -> torch.Tensor:
        """``1 / #maximisers`` of the upper confidence bound, else 0, ``(R, K)`` float64."""
        z = self.features(contexts)  # (R, K, p)
        return uniform_over_maximisers(ucb_scores(z, self.theta_hat, self.width_matrix, self.bonus_scale()))

    def _solve(self) -> torch.Tensor:
        """``V^-1`` (R, p, p) float64 and ``theta_hat = V^-1 b``."""
        inverse = torch.cholesky_inverse(torch.linalg.cholesky(self.gram))  # (R, p, p)
        self.theta_hat = (inverse @ self.moment[:, :, None])[:, :, 0].float()  # (R, p)
        self._check_finite(self.theta_hat, "the estimate theta_hat")
        return inverse


class DiscountedLinUCB(_ForgettingLinUCB):
    """D-LinUCB: LinUCB on exponentially discounted statistics, for a drifting world.

    When to use it:
        A world that drifts (``bandit_gym.feedback.Drift``): it forgets the past geometrically; with a new ``theta*``
        every 250 rounds its regret was well under half LinUCB's. Measured: docs/envs.md, "Feedback settings".

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        discount: ``gamma`` in ``(0, 1]``: the weight of a round ``k`` rounds old is ``gamma^k`` (1 is LinUCB
            without its feature scaling). A number or one per replica.
        exploration_scale: ``c >= 0`` in ``nu_t = c sqrt(log t)``. A number or one per replica.
        lambda_reg: Ridge weight ``lambda > 0``. A number or one per replica.
        intercept: A constant per arm in its features: None (default) where the arms are one-hot blocks.

    Keyword Args:
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Russac, Vernade and Cappe (2019), "Weighted linear bandits for non-stationary environments",
        NeurIPS, Algorithm 1 (D-LinUCB).
    """

    def __init__(self, env=None, *, discount: Any = 0.99, exploration_scale: Any = 0.5, lambda_reg: Any = 1.0,
                 intercept: bool | None = None, **kwargs) -> None:
        super().__init__(env, **kwargs)
        self.discount = self._hyperparameter("discount", discount, minimum=0, strict=True)
        if bool((self.discount > 1).any()):
            raise ValueError(f"discount must be in (0, 1] (the weight of a one-round-old reward), got {discount!r}")
        self._init_linear(exploration_scale, lambda_reg, intercept)
        self.gram_tilde = self.prior.clone()  # W (R, p, p) float64

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        x = chosen_rows(self.features(contexts), actions).double()  # (R, p)
        gamma = self.discount.double()[:, None, None]  # (R, 1, 1)
        outer = x[:, :, None] * x[:, None, :]  # (R, p, p)
        self.gram = gamma * self.gram + outer + (1 - gamma) * self.prior
        self.gram_tilde = gamma**2 * self.gram_tilde + outer + (1 - gamma**2) * self.prior
        self.moment = gamma[:, :, 0] * self.moment + rewards.double()[:, None] * x
        inverse = self._solve()
        self.width_matrix = (inverse @ self.gram_tilde @ inverse).float()  # V^-1 W V^-1 (R, p, p)

    def _state(self) -> dict[str, torch.Tensor]:
        return {"gram": self.gram, "gram_tilde": self.gram_tilde, "moment": self.moment,
                "theta_hat": self.theta_hat, "width_matrix": self.width_matrix}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        for name, value in state.items():
            setattr(self, name, value)


class SlidingWindowLinUCB(_ForgettingLinUCB):
    """SW-LinUCB: LinUCB on the last ``window`` rounds only, for a drifting world.

    When to use it:
        A world that drifts (``bandit_gym.feedback.Drift``): it learns from the last ``window`` rounds only; with a new
        ``theta*`` every 250 rounds its regret was well under half LinUCB's. Measured: docs/envs.md, "Feedback
        settings".

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        window: Rounds ``w >= 1`` kept (the ``w`` most recent rounds learned from). A number or one per replica.
        exploration_scale: ``c >= 0`` in ``nu_t = c sqrt(log t)``. A number or one per replica.
        lambda_reg: Ridge weight ``lambda > 0``. A number or one per replica.
        intercept: A constant per arm in its features: None (default) where the arms are one-hot blocks.

    Keyword Args:
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Cheung, Simchi-Levi and Zhu (2019), "Learning to optimize under non-stationarity", AISTATS
        (SW-UCB for linear bandits); Russac, Vernade and Cappe (2019), "Weighted linear bandits for
        non-stationary environments", NeurIPS (compared as SW-LinUCB).
    """

    def __init__(self, env=None, *, window: Any = 200, exploration_scale: Any = 0.5, lambda_reg: Any = 1.0,
                 intercept: bool | None = None, **kwargs) -> None:
        super().__init__(env, **kwargs)
        self.window = self._hyperparameter("window", window, integer=True, minimum=1)
        self._init_linear(exploration_scale, lambda_reg, intercept)
        # the last w_max rounds learned from, float64 (R, w_max, p), (R, w_max): replica r reads its last w_r
        self.kept = History(self.num_replicas, {"features": (self.model_dim,), "rewards": ()}, self.device,
                            int(self.window.max()), dtype=torch.float64, window=True)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        x = chosen_rows(self.features(contexts), actions).double()  # (R, p)
        r = rewards.double()  # (R,)
        # the round leaving each replica's window: the one learned w rounds ago (w <= w_max), once there is one
        drop = (self.kept.appended >= self.window).double()  # (R,) 1 once the window is full
        old_x = self.kept.row_before("features", self.window) * drop[:, None]  # (R, p)
        old_r = self.kept.row_before("rewards", self.window) * drop  # (R,)
        self.gram = self.gram + x[:, :, None] * x[:, None, :] - old_x[:, :, None] * old_x[:, None, :]
        self.moment = self.moment + r[:, None] * x - old_r[:, None] * old_x
        self.kept.append(features=x, rewards=r)
        self.width_matrix = self._solve().float()  # V^-1

    _state_names = ("gram", "moment", "theta_hat", "width_matrix")

    def _state(self) -> dict[str, torch.Tensor]:
        return {**{name: getattr(self, name) for name in self._state_names}, **prefixed_state("kept", self.kept)}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        for name in self._state_names:
            setattr(self, name, state[name])
        load_prefixed_state("kept", self.kept, state)
