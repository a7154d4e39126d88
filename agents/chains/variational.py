"""VITS's posterior approximation: a diagonal Gaussian moved by a Wasserstein gradient flow, :class:`DiagonalGaussian`.

Each replica keeps ``q = N(mu, diag(s^2))`` from round to round and moves it by ``K`` steps of the Bures-Wasserstein
gradient flow of ``KL(q || exp(-beta L_t))`` (the paper's update, restricted to diagonal covariances)::

    mu  <- mu - eta E_q[grad L]
    s^2 <- (1 - eta h)^2 s^2 + 2 eta / beta,      h an estimate of diag E_q[Hess L]

with both expectations from one antithetic pair ``theta_+- = mu +- s z`` (``z`` LMC-TS's noise of the step):
``E_q[grad L] ~ (g(theta_+) + g(theta_-)) / 2`` and, by Stein's identity ``E_q[Hess L] s = E_q[z grad L]``,
``h = z (g(theta_+) - g(theta_-)) / (2 s)``: two gradients per step and no Hessian, so every model of the seam works
(the paper uses the Hessian or a full-covariance approximation of it).

Neural models (with LMC-TS's diagonal preconditioner): both updates are preconditioned by the round curvature
``M = diag(1 / U_t)`` (:class:`agents.chains.preconditioner.DiagonalPreconditioner`, at ``mu``) with LMC-TS's constant
step, ``h = U_t`` (the Gauss-Newton diagonal) replaces Stein's estimate, and the prior is centred at the initial
network ``theta_0`` (the ridge term ``lambda |theta - theta_0|^2``, as ensemble sampling's members)::

    mu  <- mu - eta M E_q[grad L],      s^2 <- (1 - eta)^2 s^2 + 2 eta M / beta     (-> 1 / (beta U_t))

Why each (QuadraticBandit-v0, 20-20-20 MLP, 10 seeds; the figures: ``benchmarks/results/samplers.md``, "VITS on the
MLP: the measurements behind its neural update"): the plain chain (``eta_0 / t``, Stein's ``h``, prior at 0) stayed at
uniform random's regret, and so did the preconditioned one with Stein's ``h``: at the wide ``s`` of the early rounds
Stein's ``h`` is the Hessian of random networks, near ``2 lambda``, and ``s^2`` stayed near the prior's 0.5; with
``h = U_t`` it still stayed near 0.35 (most weights' curvature is near ``2 lambda``) and the smoothed loss ``E_q[L]``
shrank the mean towards zero. At a cold ``beta`` (200, 1,000) the noise is small, but the ridge term then decays every
weight the data do not support to zero and half the seeds end as a dead network at uniform random's level. Centred at
``theta_0``, such weights relax to the initial network instead, and every seed learns at ``beta = 2`` (VITS's neural
default). The round's sample is ``theta = mu + s z'``. For a Gaussian target the mean update is exact gradient descent
and ``E[s^2]`` converges to ``(2 / beta) (2 diag(H) - eta (2 diag(H)^2 + H o H))^-1 1`` (``H`` the Hessian, ``o`` the
entrywise product): the mean-field variance ``1 / (beta H_ii)`` up to ``O(eta)``; like every mean-field approximation
it underestimates the posterior's spread along correlated directions.

References:
    Clavier, Huix and Durmus (2024), "VITS: Variational Inference Thompson Sampling for contextual bandits", ICML.
    Lambert, Chewi, Bach, Bonnabel and Rigollet (2022), "Variational inference via Wasserstein gradient flows",
    NeurIPS.
"""

from __future__ import annotations

from typing import Any

import torch

from agents.chains.target import Chain, ChainRound


class DiagonalGaussian(Chain):
    """``q = N(mu, diag(s^2))`` per replica (module docstring); state: ``mean``, ``variance`` (and ``anchor``).

    Args:
        initial_variance: ``s^2`` of round 1, a number or one per replica; None: ``1 / (2 beta lambda)``, the
            prior's variance.
    """

    def __init__(self, initial_variance: Any) -> None:
        self.initial_variance = initial_variance

    def bind(self, agent: Any) -> None:
        if self.initial_variance is None:
            variance = 1.0 / (2.0 * agent.inverse_temperature * agent.lambda_reg)  # (R,)
            agent._hyperparameters["initial_variance"] = None
        else:
            variance = agent._hyperparameter("initial_variance", self.initial_variance, minimum=0, strict=True)
        self.lambda_reg = agent.lambda_reg  # (R,) the prior's ridge
        self.mean = agent.theta.clone()  # (R, p)
        self.variance = variance[:, None].expand_as(agent.theta).clone()  # (R, p)
        # neural models: the prior is centred at the initial network (its ridge term's gradient shifted by
        # -2 lambda theta_0, as ensemble sampling's members); linear and glm models: at zero, as LMC-TS's
        self.anchor = agent.theta.clone() if agent.per_step_noise else None  # (R, p) or None

    def sample(self, chain_round: ChainRound, theta: torch.Tensor) -> torch.Tensor:
        c, model = chain_round, chain_round.model
        eta, beta = c.step_size[:, None], c.inverse_temperature[:, None]  # (R, 1)
        noise, batches = c.normal((2, model.n_params)), c.batches
        mu, var = self.mean, self.variance
        curvature = None
        if c.curvature is not None:  # eta M, M = 1 / U_t at the round's mean (fixed during the round)
            curvature = c.curvature(mu)  # (R, p)
            eta = eta / curvature
        for k in range(c.n_steps):
            z, s = noise(k)[:, 0], torch.sqrt(var)  # (R, p)
            batch = None if batches is None else batches[:, k]
            g_plus, g_minus = model.gradient(mu + s * z, batch), model.gradient(mu - s * z, batch)
            if self.anchor is not None:  # the prior N(theta_0, ...): ridge gradient 2 lambda (theta - theta_0)
                shift = 2 * self.lambda_reg[:, None] * self.anchor
                g_plus, g_minus = g_plus - shift, g_minus - shift
            # diag E_q[Hess L]: the Gauss-Newton U_t with the preconditioner, else Stein's estimate
            h = curvature if curvature is not None else z * (g_plus - g_minus) / (2 * s)
            mu = mu - eta * (g_plus + g_minus) / 2
            var = (1 - eta * h) ** 2 * var + 2 * eta / beta
        self.mean, self.variance = mu, var
        return mu + torch.sqrt(var) * noise(c.n_steps - 1)[:, 1]

    def state_dict(self) -> dict[str, torch.Tensor]:
        anchor = {} if self.anchor is None else {"anchor": self.anchor}
        return {"mean": self.mean, "variance": self.variance, **anchor}
