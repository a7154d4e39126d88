"""Underdamped (kinetic) Langevin Monte Carlo: :class:`Underdamped`, a chain with a velocity.

The chain carries a velocity ``v`` (kept, like ``theta``, from round to round) and follows ``d theta = v dt``,
``dv = -gamma v dt - grad L(theta) dt + sqrt(2 gamma / beta) dB``, whose stationary law is
``exp(-beta L(theta)) N(v; 0, I / beta)``. Each of the round's ``K`` steps integrates it exactly over a time ``h`` with
the gradient held at the step's start (Cheng et al. 2018, the scheme of Zheng et al. 2024): with
``a = 1 - exp(-gamma h)``::

    theta <- theta + (a / gamma) v - ((h - a / gamma) / gamma) g + xi_theta
    v     <- (1 - a) v - (a / gamma) g + xi_v

where ``(xi_theta, xi_v)`` is Gaussian per coordinate with the variances and covariance of that integral (two normals
per coordinate and step, from LMC-TS's ``SAMPLE`` stream). The step is ``h = sqrt(eta_t)``, so that ``step_size``
has LMC-TS's scale (``eta`` times the curvature is the stability number of both chains) and its schedules. Step-size
bias remains (it shrinks with ``h``); mini-batch gradients are allowed.

References:
    Zheng, Xu, Zou, Gu and Zhang (2024), "Accelerating approximate Thompson sampling with underdamped Langevin Monte
    Carlo", AISTATS. Cheng, Chatterji, Bartlett and Jordan (2018), "Underdamped Langevin MCMC: a non-asymptotic
    analysis", COLT.
"""

from __future__ import annotations

from typing import Any

import torch

from agents.chains.target import Chain, ChainRound


class Underdamped(Chain):
    """The underdamped chain (module docstring); state: the velocity ``v`` ``(R, p)``.

    Args:
        friction: ``gamma h > 0``, the friction per step, a number or one per replica: a step damps the velocity by
            ``exp(-friction)`` whatever the schedule (``gamma = friction / h``, so that the friction follows the
            curvature, which ``eta_t`` tracks).
    """

    def __init__(self, friction: Any) -> None:
        self.friction = friction

    def bind(self, agent: Any) -> None:
        self.friction = agent._hyperparameter("friction", self.friction, minimum=0, strict=True)  # (R,)
        self.velocity = torch.zeros_like(agent.theta)  # (R, p)

    def coefficients(self, step_size: torch.Tensor, inverse_temperature: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``a / gamma``, ``(h - a / gamma) / gamma``, ``1 - a`` and the noise factors, ``(R, 1)`` each, computed in
        float64 (the position's variance is a difference of terms of order ``h`` that cancel to order ``h^3``)."""
        h = torch.sqrt(step_size.double())
        gamma, u = self.friction.double() / h, 1.0 / inverse_temperature.double()
        a, a2 = -torch.expm1(-gamma * h), -torch.expm1(-2 * gamma * h)  # 1 - e^{-gamma h}, 1 - e^{-2 gamma h}
        var_x = u / gamma * (2 * h - 4 * a / gamma + a2 / gamma)
        var_v, cov = u * a2, u / gamma * a**2
        sd_x = torch.sqrt(var_x)
        cross = cov / sd_x  # xi_v = cross z_0 + sd_v z_1
        sd_v = torch.sqrt((var_v - cross**2).clamp(min=0))
        return tuple(c.float()[:, None] for c in (a / gamma, (h - a / gamma) / gamma, 1 - a, sd_x, cross, sd_v))

    def sample(self, chain_round: ChainRound, theta: torch.Tensor) -> torch.Tensor:
        c, model = chain_round, chain_round.model
        to_theta, drift, keep, sd_x, cross, sd_v = self.coefficients(c.step_size, c.inverse_temperature)
        noise, batches = c.normal((2, model.n_params)), c.batches
        v = self.velocity
        for k in range(c.n_steps):
            z = noise(k)  # (R, 2, p)
            g = model.gradient(theta, None if batches is None else batches[:, k])  # (R, p)
            theta = theta + to_theta * v - drift * g + sd_x * z[:, 0]
            v = keep * v - to_theta * g + cross * z[:, 0] + sd_v * z[:, 1]
        self.velocity = v
        return theta

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"velocity": self.velocity}
