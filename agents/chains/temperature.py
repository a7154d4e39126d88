"""The inverse temperature ``beta`` of LMC-TS's target ``exp(-beta L_t)``: :class:`FixedTemperature` or, for
``inverse_temperature="auto"``, :class:`AdaptiveTemperature`, made by :func:`temperature_from`.

Both answer :meth:`~FixedTemperature.value` (``beta`` per replica ``(R,)``), :meth:`~FixedTemperature.observe` (after
each round, before the model learns its reward) and ``state_dict`` / ``load_state_dict``, so the agent calls them
whichever it holds. Like a chain (:class:`agents.chains.target.Chain`), each is made from the constructor's argument
and bound to the agent (:meth:`~FixedTemperature.bind`) once the model exists.

``"auto"``: for Gaussian reward noise of variance ``sigma^2`` the posterior of a squared loss ``L_t`` is
``exp(-L_t / (2 sigma^2))``, so ``beta_t = 1 / (2 sigma_t^2)`` with ``sigma_t^2`` the prequential estimate of
:class:`agents.models.noise.NoiseEstimate`; the loss's ridge becomes ``lambda beta_0 / beta_t`` so that the prior of
``exp(-beta_t L_t)`` stays ``N(0, 1 / (2 beta_0 lambda))`` whatever ``beta_t`` (:data:`PRIOR_INVERSE_TEMPERATURE`).
Measured: ``docs/agents.md``, "Temperature from the data".
"""

from __future__ import annotations

import math
from typing import Any

import torch

from agents.models.noise import NoiseEstimate
from agents.validation import check_float, check_int

#: ``beta_0 = 1 / (2 sigma_0^2)``, ``sigma_0 = 1``: ``inverse_temperature="auto"``'s value before any reward, and the
#: temperature at which ``lambda_reg`` sets its prior, ``N(0, 1 / (2 beta_0 lambda))`` (``LMCTS``).
PRIOR_INVERSE_TEMPERATURE = 0.5


class FixedTemperature:
    """``beta`` per replica, the same every round: a number ``> 0`` or one per replica.

    Args:
        given: The constructor's ``inverse_temperature``, checked and recorded by :meth:`bind`.
    """

    def __init__(self, given: Any) -> None:
        self.given = given

    def bind(self, agent: Any) -> None:
        """Check and record ``inverse_temperature`` (``agent._hyperparameter``): ``beta`` ``(R,)``."""
        self.beta = agent._hyperparameter("inverse_temperature", self.given, minimum=0, strict=True)  # (R,)

    def value(self) -> torch.Tensor:
        """``beta`` ``(R,)``."""
        return self.beta

    def observe(self, t: int, theta: torch.Tensor, x: torch.Tensor, rewards: torch.Tensor,
                predicted: torch.Tensor | None) -> None:
        """Nothing: a fixed ``beta`` learns nothing from the rounds (the arguments of
        :meth:`AdaptiveTemperature.observe`)."""

    def state_dict(self) -> dict[str, torch.Tensor]:
        """No state: ``{}``."""
        return {}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Nothing to restore."""


class AdaptiveTemperature:
    """``beta_t = 1 / (2 sigma_t^2)`` from the observed reward noise, and the model's ridge ``lambda beta_0 / beta_t``
    (module docstring); ``beta_0`` before any reward. Bound to an agent with a neural model (squared loss).

    The state is the noise estimate's, saved unprefixed (``squared_error``, ``error_count``).
    """

    def bind(self, agent: Any) -> None:
        """Record ``inverse_temperature="auto"``; start from ``sigma_0^2 = 1``: ``beta_0``, and the ridge ``lambda``."""
        agent._hyperparameters["inverse_temperature"] = "auto"
        self.model, self.lambda_reg = agent.model, agent.lambda_reg  # lambda (R,): the ridge at beta_0
        self.noise = NoiseEstimate(agent.num_replicas, agent.device)  # sigma_t^2, 1 before any reward
        self._follow_noise()

    def _follow_noise(self) -> None:
        """``beta_t = 1 / (2 sigma_t^2)``, and the loss's ridge ``lambda beta_0 / beta_t`` that keeps the prior."""
        self.beta = 0.5 * self.noise.precision()  # (R,)
        self.model.lambda_reg = self.lambda_reg * (PRIOR_INVERSE_TEMPERATURE / self.beta)  # (R,)

    def value(self) -> torch.Tensor:
        """``beta_t`` ``(R,)``."""
        return self.beta

    def observe(self, t: int, theta: torch.Tensor, x: torch.Tensor, rewards: torch.Tensor,
                predicted: torch.Tensor | None) -> None:
        """Round ``t``'s error: the sample ``theta`` ``(R, p)`` that played the rows ``x`` ``(R, p)``, on their
        rewards ``(R,)`` before the model learns them. ``predicted``: its ``f(x; theta)`` ``(R, 1)`` where the agent
        has it already (the diagonal preconditioner computes it), else None (computed here)."""
        if predicted is None:
            predicted = self.model.scores(theta, x[:, None, :])  # (R, 1)
        self.noise.update(t, predicted[:, 0], rewards)
        self._follow_noise()

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The noise estimate's sums (:meth:`agents.models.noise.NoiseEstimate.state_dict`)."""
        return self.noise.state_dict()

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore the noise estimate from an agent's whole ``state``, and with it ``beta_t`` and the ridge."""
        self.noise.load_state_dict(state)
        self._follow_noise()


def temperature_from(given: Any) -> FixedTemperature | AdaptiveTemperature:
    """The temperature of the constructor's ``inverse_temperature``: ``"auto"``, or a number ``> 0`` (or one per
    replica; checked when bound); any other string is a ValueError naming what is accepted."""
    if not isinstance(given, str):
        return FixedTemperature(given)
    if given != "auto":
        raise ValueError(f"inverse_temperature must be a number > 0, one per replica, or 'auto' (from the observed "
                         f"reward noise), got {given!r}")
    return AdaptiveTemperature()


def paper_inverse_temperature(beta_inv: float, dim: int, horizon: int) -> float:
    """The inverse temperature of the paper's reference configs: ``1 / (beta_inv * d * log T)``.

    Those configs grid over ``beta_inv`` (about 1e-7 to 1e-2) and scale the temperature ``1 / beta`` with ``d log T``;
    ``LMCTS`` takes the raw ``beta`` that this returns.
    """
    scale = check_int("dim", dim) * math.log(check_int("horizon", horizon, minimum=2))
    return 1.0 / (check_float("beta_inv", beta_inv, 0, strict=True) * scale)
