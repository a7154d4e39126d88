"""LMC-TS's diagonal preconditioner for neural models: ``M = diag(1 / U_t)``, :class:`DiagonalPreconditioner`
(:class:`NoPreconditioner` where there is none: ``preconditioner="none"``).

The chain is ``theta = theta - eta M grad L_t(theta) + sqrt(2 eta M / beta) eps``. ``U_t`` estimates the diagonal of
the Gauss-Newton matrix ``2 lambda I + 2 sum_i g(x_i) g(x_i)^T`` of ``L_t`` (``g = df/dtheta``), fixed within a round,
so each round's chain still targets ``exp(-beta L_t)``; ``eta`` is constant. Why: the plain chain's
``eta_t = eta_0 / t`` is what keeps it stable where the data constrain ``theta`` (curvature ``~ t``), but it freezes
the directions they do not (curvature ``2 lambda``): those contract by ``(1 - 2 lambda eta_0 / t)^K`` per round, so a
state formed at round ``s`` is forgotten only around round ``s exp(1 / (2 lambda eta_0 K))``, 12 s with
``lambda = 2, eta_0 = 0.01, K = 10``. Thompson sampling explores through exactly those directions (what the network
predicts for arms it has not played). On the quadratic bandit a seed whose early network ranked one sign of
``x . theta*`` low kept that ranking for 1,000-2,500 rounds, playing like a linear model (0.45-0.5 regret per round);
which seeds did so depended on float rounding. With ``M`` every coordinate moves at about ``eta`` of its own
curvature per step whatever ``t``: every seed of 0-9, kernels on and off, learnt by round 1,500, and the cumulative
regret at T = 3,000 fell by about a third (``benchmarks/results/quadratic_paper.md``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from agents.models.reward import RewardModel


class DiagonalPreconditioner:
    """``U``: the played rows' curvature, and the round's ``U_t`` (:meth:`round_curvature`).

    Args:
        lambda_reg: The ridge weight ``lambda`` per replica ``(R,)`` the curvature starts from.
        n_params: ``p``.

    Attributes:
        curvature: ``2 lambda + 2 sum_i g(x_i; theta_i)^2`` over the played rows at the samples that played them,
            ``(R, p)``.
    """

    #: Mini-batches a round draws for the preconditioner beside the chain's: one, for ``U_t`` at the chain's start.
    n_batches = 1

    def __init__(self, lambda_reg: torch.Tensor, n_params: int) -> None:
        self.lambda_reg = lambda_reg  # (R,)
        self.curvature = 2.0 * lambda_reg[:, None].expand(-1, n_params).clone()  # (R, p)

    def record(self, model: RewardModel, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Add the played rows ``x`` ``(R, p)``'s ``2 g(x)^2`` at the sample ``theta`` that played them; returns
        the sample's prediction ``f(x; theta)`` ``(R, 1)``."""
        predicted, g = model.arm_gradients(theta, x[:, None, :])  # (R, 1), (R, 1, p)
        self.curvature = self.curvature + 2.0 * g[:, 0] ** 2
        return predicted

    def round_curvature(self, model: RewardModel, theta: torch.Tensor, batch: torch.Tensor | None) -> torch.Tensor:
        """``U_t`` of this round's chain ``(R, p)``: the larger of two estimates of the diagonal of the Gauss-Newton
        matrix of ``L_t``: the sum over the played rows (:attr:`curvature`), and the sum over a mini-batch (times
        ``n / B``; all rows for full batches) at the chain's start ``theta``. The second follows the weights when they
        grow faster than the played rows record (early rounds, on a wide prior); taking the larger is the smaller,
        safer step.

        Both take the loss's ridge as it is now: :attr:`curvature` was summed from ``2 lambda_reg``, and under
        ``inverse_temperature="auto"`` the model's ridge is ``lambda beta_0 / beta_t``, so the difference is added
        (zero at a fixed temperature). With ``2 lambda`` kept instead, a direction the data do not reach (the weights
        of an arm never played) moved ``beta_t / beta_0`` times slower than its own curvature allows, 200-600 times on
        0/1 rewards, and a seed could keep an early bad draw of an arm's weights for thousands of rounds
        (``docs/agents.md``, "The preconditioner")."""
        ridge_change = 2.0 * (model.lambda_reg - self.lambda_reg)[:, None]  # (R, 1)
        played = self.curvature + ridge_change
        current = 2.0 * model.lambda_reg[:, None] + 2.0 * model.gradient_squares(theta, batch)  # (R, p)
        return torch.maximum(played, current)

    def for_round(self, model: RewardModel, batches: torch.Tensor | None
                  ) -> tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor | None]:
        """The round's ``theta -> U_t`` (:meth:`round_curvature` on the round's first mini-batch) and the chain's
        mini-batches (the others): ``batches`` ``(R, 1 + K, B)`` or None (full batch)."""
        first, rest = (None, None) if batches is None else (batches[:, 0], batches[:, 1:])
        return (lambda start: self.round_curvature(model, start, first)), rest

    def state_dict(self) -> dict[str, torch.Tensor]:
        """``{"curvature": (R, p)}``."""
        return {"curvature": self.curvature}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`state_dict`'s entry."""
        self.curvature = state["curvature"].to(self.curvature.device)


class NoPreconditioner:
    """No diagonal preconditioner (``M = I``, or the linear and glm models' ``S^2``): the same calls as
    :class:`DiagonalPreconditioner`, each doing nothing."""

    n_batches = 0

    def record(self, model: RewardModel, theta: torch.Tensor, x: torch.Tensor) -> None:
        """Nothing recorded, and no prediction: None."""

    def for_round(self, model: RewardModel, batches: torch.Tensor | None) -> tuple[None, torch.Tensor | None]:
        """No curvature, and every mini-batch is the chain's."""
        return None, batches

    def state_dict(self) -> dict[str, torch.Tensor]:
        """No state: ``{}``."""
        return {}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Nothing to restore."""
