"""Metropolis-adjusted chains: :class:`MALA` and :class:`HMC`, exact for ``exp(-beta L_t)`` whatever the step size.

Both need the full-batch loss (a mini-batch estimate would bias the test) and count their accepted proposals per
replica (``accepted``, ``proposed``: the chain's state). Both take the diagonal preconditioner ``M = 1 / U_t`` of
neural models where the agent has one (:class:`agents.chains.preconditioner.DiagonalPreconditioner`), else ``M = I``.
"""

from __future__ import annotations

from typing import Any

import torch

from agents.chains.langevin import langevin_update
from agents.chains.target import Chain, ChainRound
from agents.validation import check_int


def _diagonal(chain_round: ChainRound, theta: torch.Tensor) -> torch.Tensor | None:
    """``M = 1 / U_t`` at ``theta``, or None (``M = I``; the Metropolis chains run on the features as given)."""
    return None if chain_round.curvature is None else 1.0 / chain_round.curvature(theta)


class _Metropolis(Chain):
    """Acceptance counts per replica, ``(R,)`` each."""

    def bind(self, agent: Any) -> None:
        self.accepted = torch.zeros(agent.num_replicas, device=agent.device)  # (R,) accepted proposals so far
        self.proposed = torch.zeros(agent.num_replicas, device=agent.device)  # (R,) proposals so far

    @property
    def acceptance_rate(self) -> torch.Tensor:
        """Accepted proposals over proposals so far, per replica ``(R,)`` (NaN before the first chain)."""
        return self.accepted / self.proposed

    def _count(self, accept: torch.Tensor) -> None:
        self.accepted = self.accepted + accept
        self.proposed = self.proposed + 1

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"accepted": self.accepted, "proposed": self.proposed}


class MALA(_Metropolis):
    """Metropolis-adjusted Langevin: each of the round's ``K`` Langevin steps is a proposal, accepted per replica.

    The proposal is LMC-TS's step ``theta' = theta - eta M grad L + sqrt(2 eta M / beta) eps``
    (:func:`agents.chains.langevin.langevin_update`, the same ``eps``), accepted with probability
    ``min(1, exp(-beta L(theta') - |theta - theta' + eta M grad L(theta')|^2_{M^-1} beta / (4 eta))
    / exp(-beta L(theta) - |eps|^2 / 2))``; on rejection the chain stays. The chain then leaves ``exp(-beta L_t)``
    invariant exactly, whatever the step size: the step size trades acceptance against move length. Costs one
    gradient and one loss per step (LMC-TS: one gradient).

    References:
        Roberts and Tweedie (1996), "Exponential convergence of Langevin distributions and their discrete
        approximations", Bernoulli.
    """

    def sample(self, chain_round: ChainRound, theta: torch.Tensor) -> torch.Tensor:
        c, model = chain_round, chain_round.model
        eta, beta = c.step_size, c.inverse_temperature  # (R,)
        M = _diagonal(c, theta)
        eta_m = eta[:, None] if M is None else eta[:, None] * M  # (R, 1) or (R, p)
        noise, coins = c.normal((model.n_params,)), c.uniforms((2,))  # (R, K, 2): the coin of each step
        loss, grad = model.loss(theta), model.gradient(theta)  # (R,), (R, p)
        for k in range(c.n_steps):
            eps = noise(k)  # (R, p)
            proposal = langevin_update(theta, grad, eta_m, beta[:, None], eps)
            new_loss, new_grad = model.loss(proposal), model.gradient(proposal)
            back = theta - proposal + eta_m * new_grad  # the reverse step's drift residual (R, p)
            log_ratio = (beta * (loss - new_loss) - beta * (back**2 / eta_m).sum(dim=1) / 4
                         + (eps**2).sum(dim=1) / 2)  # (R,); NaN (a diverged proposal) is rejected
            accept = torch.log(coins[:, k, 0]) < log_ratio  # (R,)
            theta = torch.where(accept[:, None], proposal, theta)
            loss, grad = torch.where(accept, new_loss, loss), torch.where(accept[:, None], new_grad, grad)
            self._count(accept)
        return theta


class HMC(_Metropolis):
    """Hamiltonian Monte Carlo: ``n_leapfrog`` leapfrog steps per proposal, then a Metropolis test.

    Each of the round's ``K`` proposals draws a momentum ``p ~ N(0, I)`` (LMC-TS's noise of that step), runs
    ``n_leapfrog`` leapfrog steps of the Hamiltonian ``H = beta L(theta) + |p|^2 / 2`` with the step
    ``eps = sqrt(2 eta M / beta)`` per coordinate, and accepts the end point with probability
    ``min(1, exp(H(theta, p) - H(theta', p')))``. In these units a leapfrog step moves ``theta`` exactly as a Langevin
    step of size ``eta`` whose noise is the momentum (:func:`agents.chains.langevin.langevin_update`), then updates
    ``p <- p - sqrt(beta eta M / 2) (grad L(theta) + grad L(theta'))``; so ``step_size`` means what it means for
    LMC-TS, and ``n_leapfrog=1, step_jitter=0`` is :class:`MALA`. Each proposal's ``eps`` is multiplied by a uniform
    factor in ``[1 - step_jitter, 1 + step_jitter]`` (Neal 2011, section 5.4.2.2): with a fixed ``eps`` a trajectory
    can be a half turn of some direction of a Gaussian posterior, which HMC then never mixes (measured: with
    ``L = 3`` and ``eta = 0.1`` on the tests' posterior, a variance 2x too large). Costs ``n_leapfrog`` gradients and
    one loss per proposal.

    Args:
        n_leapfrog: Leapfrog steps per proposal ``L`` (>= 1; one value for all replicas).
        step_jitter: ``j`` in ``[0, 1)``, a number or one per replica.

    References:
        Neal (2011), "MCMC using Hamiltonian dynamics", Handbook of Markov Chain Monte Carlo.
        Duane, Kennedy, Pendleton and Roweth (1987), "Hybrid Monte Carlo", Physics Letters B.
    """

    def __init__(self, n_leapfrog: int, step_jitter: Any) -> None:
        self.n_leapfrog = check_int("n_leapfrog", n_leapfrog)
        self.step_jitter = step_jitter

    def bind(self, agent: Any) -> None:
        super().bind(agent)
        agent._hyperparameters["n_leapfrog"] = self.n_leapfrog
        self.step_jitter = agent._hyperparameter("step_jitter", self.step_jitter, minimum=0)  # (R,)
        if bool((self.step_jitter >= 1).any()):
            raise ValueError(f"step_jitter must be in [0, 1), got {agent.hyperparameters()['step_jitter']!r}")

    def sample(self, chain_round: ChainRound, theta: torch.Tensor) -> torch.Tensor:
        c, model = chain_round, chain_round.model
        beta = c.inverse_temperature  # (R,)
        M = _diagonal(c, theta)
        noise, coins = c.normal((model.n_params,)), c.uniforms((2,))  # coins (R, K, 2): accept, jitter
        jitter = (1 + self.step_jitter[:, None] * (2 * coins[:, :, 1] - 1)) ** 2  # (R, K): eps times 1 +- jitter
        loss, grad = model.loss(theta), model.gradient(theta)  # (R,), (R, p)
        for k in range(c.n_steps):
            eta = c.step_size * jitter[:, k]  # (R,)
            eta_m = eta[:, None] if M is None else eta[:, None] * M  # (R, 1) or (R, p)
            kick = torch.sqrt(beta[:, None] * eta_m / 2)  # eps beta / 2, the half-step's momentum factor
            momentum = noise(k)  # (R, p)
            x, g, p = theta, grad, momentum
            for _ in range(self.n_leapfrog):
                x_new = langevin_update(x, g, eta_m, beta[:, None], p)
                g_new = model.gradient(x_new)
                p = p - kick * (g + g_new)
                x, g = x_new, g_new
            new_loss = model.loss(x)
            log_ratio = beta * (loss - new_loss) + ((momentum**2).sum(dim=1) - (p**2).sum(dim=1)) / 2  # (R,)
            accept = torch.log(coins[:, k, 0]) < log_ratio  # NaN (a diverged trajectory) is rejected
            theta = torch.where(accept[:, None], x, theta)
            loss, grad = torch.where(accept, new_loss, loss), torch.where(accept[:, None], g, grad)
            self._count(accept)
        return theta
