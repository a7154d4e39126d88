"""Posterior samplers after LMC-TS: :class:`agents.lmcts.LMCTS` with another chain or potential (issue 22).

Each agent plays ``argmax_x f(x; theta_t)`` for a sample ``theta_t`` of (an approximation of) the tempered posterior
``exp(-beta L_t)``, and is LMC-TS (its models, loop and random draws) with one part passed in:

* :class:`FGLMCTS`: the potential plus the feel-good term (:class:`agents.models.feelgood.FeelGood`; Zhang 2022).
* :class:`MALATS`: the chain :class:`agents.chains.metropolis.MALA` (Metropolis-adjusted Langevin).
* :class:`HMCTS`: the chain :class:`agents.chains.metropolis.HMC` (Hamiltonian Monte Carlo).
* :class:`ULMCTS`: the chain :class:`agents.chains.underdamped.Underdamped` (Zheng et al. 2024).
* :class:`VITS`: the diagonal Gaussian :class:`agents.chains.variational.DiagonalGaussian` (Clavier et al. 2024).
* :class:`EnsembleSampling` (:mod:`agents.ensemble`): ``M`` perturbed models per replica (Lu and Van Roy 2017).

Each class's defaults are its :attr:`defaults` table. With the linear and glm models :class:`FGLMCTS` has LMC-TS's
(features scaled by their root mean square, per-arm constants on one-hot-block arms, ``eta_t = eta_0 / lambda_max``);
the others have the paper's plain chain (``eta_t = eta_0 / t`` on the raw features, no constants:
``step_schedule="inverse_t"``, ``intercept=False``), the setting of their measurements in ``docs/samplers.md``; pass
``step_schedule="inverse_lambda_max"`` (and ``intercept=True``) for LMC-TS's.
"""

from __future__ import annotations

from typing import Any

import torch

from agents.chains.metropolis import HMC, MALA
from agents.chains.underdamped import Underdamped
from agents.chains.variational import DiagonalGaussian
from agents.ensemble import EnsembleSampling
from agents.lmcts import LMCTS
from agents.models.feelgood import FeelGood

__all__ = ["FGLMCTS", "MALATS", "HMCTS", "ULMCTS", "EnsembleSampling", "VITS"]

#: LMC-TS's defaults with the paper's plain chain for the linear and glm models (module docstring).
PAPER_DEFAULTS = {kind: table if kind == "neural" else {**table, "step_schedule": "inverse_t", "intercept": False}
                  for kind, table in LMCTS.defaults.items()}


def _full_batch(name: str, batch_size: Any) -> None:
    """None, or a ValueError: a Metropolis test needs the full-batch loss."""
    if batch_size is not None:
        raise ValueError(f"batch_size must be None for {name}, got {batch_size!r}: the Metropolis test needs the "
                         "full-batch loss (mini-batch estimates would bias it)")


class FGLMCTS(LMCTS):
    """Feel-Good Thompson sampling with Langevin steps (FG-LMC-TS), batched over replicas.

    LMC-TS (:class:`agents.lmcts.LMCTS`, the same chain, draws and defaults) on the potential
    ``L_t(theta) - lambda_fg sum_{s < t} min(b, max_x f(x_s; theta))`` (:class:`agents.models.feelgood.FeelGood`):
    the feel-good term favours parameters that predict a high best reward on the arm sets seen so far, an optimism
    that Zhang (2022) shows removes Thompson sampling's extra sqrt(d) in the frequentist regret. The term runs over
    ``feel_good_batch_size`` of the stored rounds per step (or the model's mini-batches when ``batch_size`` is set; all
    rounds for the linear model and when both are None). ``lambda_fg = 0`` is LMC-TS, draw for draw (bit for bit).

    When to use it:
        Linear or logistic rewards with a fixed arm set, where its feel-good term moved the regret below LMC-TS's,
        within noise. Avoid it on neural models at the grids measured; with a new arm set every round it is the most
        expensive agent. Measured: docs/samplers.md, "Verdict".

    Args:
        lambda_fg: ``lambda_fg >= 0``, a number or one per replica (default 0.01, chosen on LinearBanditFixed-v0
            at 10 seeds: ``benchmarks/results/samplers.md``, "Verdict").
        feel_good_cap: ``b``, the cap of the best predicted reward (an upper bound of the rewards; default 1).
            For ``model="glm"`` ``f`` is the logit.
        feel_good_batch_size: Rounds of the term per step when the model has no mini-batches (default 32), or None.

    Keyword Args:
        Others: as :class:`agents.lmcts.LMCTS`.

    References:
        Zhang (2022), "Feel-Good Thompson Sampling for Contextual Bandits and Reinforcement Learning", SIAM
        Journal on Mathematics of Data Science. Anand and Liaw (2025), arXiv 2507.15290.
    """

    def __init__(self, env: Any = None, *, lambda_fg: Any = 0.01, feel_good_cap: float = 1.0,
                 feel_good_batch_size: int | None = 32, **kwargs: Any) -> None:
        super().__init__(env, **kwargs)  # round 1's sample is the model's: the term is zero before any round
        self.potential = FeelGood.for_agent(self, lambda_fg, feel_good_cap, feel_good_batch_size)

    @property
    def lambda_fg(self) -> torch.Tensor:
        """``lambda_fg`` per replica ``(R,)``."""
        return self.potential.lambda_fg

    @property
    def feel_good_cap(self) -> float:
        """``b``, the cap of the best predicted reward."""
        return self.potential.cap


class MALATS(LMCTS):
    """Thompson sampling with Metropolis-adjusted Langevin steps (MALA), batched over replicas.

    LMC-TS (:class:`agents.lmcts.LMCTS`: its models, defaults with the paper's plain chain, and draws) with the chain
    :class:`agents.chains.metropolis.MALA`: each Langevin step is a proposal, accepted or rejected per replica, so the
    chain leaves ``exp(-beta L_t)`` invariant exactly, whatever the step size. Costs one gradient and one loss per
    step (LMC-TS: one gradient).

    When to use it:
        Where the chain's limit must be the posterior itself (the Metropolis test removes the step size's bias). It
        needs the full-batch loss, so with a data history a round costs ``O(t)``. It leads on Shuttle-v0 with HMC-TS and
        ties or trails LMC-TS elsewhere. Measured: docs/samplers.md, "Verdict".

    Keyword Args:
        batch_size: Must be None: the Metropolis test needs the full-batch loss.
        Others: as :class:`agents.lmcts.LMCTS` (``model``, ``step_size``, ``inverse_temperature``,
            ``n_inner_steps``, ``lambda_reg``, ``step_schedule``, ``preconditioner``, ...).

    Attributes:
        acceptance_rate: Accepted over proposed steps so far, per replica ``(R,)``.

    References:
        Roberts and Tweedie (1996), "Exponential convergence of Langevin distributions and their discrete
        approximations", Bernoulli. Xu et al. (2022), "Langevin Monte Carlo for Contextual Bandits", ICML.
    """

    defaults = PAPER_DEFAULTS

    def __init__(self, env: Any = None, *, batch_size: int | None = None, **kwargs: Any) -> None:
        _full_batch("MALATS", batch_size)
        super().__init__(env, batch_size=None, chain=MALA(), **kwargs)

    @property
    def acceptance_rate(self) -> torch.Tensor:
        """Accepted over proposed steps so far, per replica ``(R,)``."""
        return self.chain.acceptance_rate


class HMCTS(LMCTS):
    """Thompson sampling with Hamiltonian Monte Carlo, batched over replicas.

    LMC-TS (:class:`agents.lmcts.LMCTS`: its models, defaults with the paper's plain chain, and draws) with the chain
    :class:`agents.chains.metropolis.HMC`: each of the round's ``K`` proposals runs ``n_leapfrog`` leapfrog steps from
    a momentum drawn as LMC-TS's noise of that step, then a Metropolis test; ``step_size`` means what it means for
    LMC-TS, and ``n_leapfrog=1, step_jitter=0`` is :class:`MALATS`. The chain leaves ``exp(-beta L_t)`` invariant
    exactly. Costs ``n_leapfrog`` gradients and one loss per proposal.

    When to use it:
        Neural models where full-batch gradients are affordable: the one sampler never behind LMC-TS on the MLPs
        measured, at a time comparable to LMC-TS's. Measured: docs/samplers.md, "Verdict".

    Args:
        n_leapfrog: Leapfrog steps per proposal ``L`` (>= 1; one value for all replicas).
        step_jitter: ``j`` in ``[0, 1)``, a number or one per replica (default 0.2).

    Keyword Args:
        batch_size: Must be None: the Metropolis test needs the full-batch loss.
        Others: as :class:`agents.lmcts.LMCTS`; ``n_inner_steps`` counts proposals.

    Attributes:
        acceptance_rate: Accepted over proposed trajectories so far, per replica ``(R,)``.

    References:
        Neal (2011), "MCMC using Hamiltonian dynamics", Handbook of Markov Chain Monte Carlo.
        Duane, Kennedy, Pendleton and Roweth (1987), "Hybrid Monte Carlo", Physics Letters B.
    """

    defaults = PAPER_DEFAULTS

    def __init__(self, env: Any = None, *, n_leapfrog: int = 5, step_jitter: Any = 0.2, batch_size: int | None = None,
                 **kwargs: Any) -> None:
        _full_batch("HMCTS", batch_size)
        super().__init__(env, batch_size=None, chain=HMC(n_leapfrog, step_jitter), **kwargs)

    @property
    def acceptance_rate(self) -> torch.Tensor:
        """Accepted over proposed trajectories so far, per replica ``(R,)``."""
        return self.chain.acceptance_rate


class ULMCTS(LMCTS):
    """Thompson sampling with underdamped (kinetic) Langevin Monte Carlo, batched over replicas.

    LMC-TS (:class:`agents.lmcts.LMCTS`: its models, defaults with the paper's plain chain, and draws) with the chain
    :class:`agents.chains.underdamped.Underdamped`: a velocity ``v`` kept from round to round, and ``K`` steps per
    round of the kinetic Langevin dynamics, integrated exactly over ``h = sqrt(eta_t)`` with the gradient held at the
    step's start. Step-size bias remains (it shrinks with ``h``); mini-batch gradients are allowed.

    When to use it:
        Linear and logistic models: the lowest fixed-arm result at both horizons measured, and among the lowest on the
        logistic problem. Avoid it on the MLPs at the grids measured. Measured: docs/samplers.md, "Verdict".

    Args:
        friction: ``gamma h > 0``, the friction per step, a number or one per replica (default 1): a step damps
            the velocity by ``exp(-friction)`` whatever the schedule (``gamma = friction / h``, so that the
            friction follows the curvature, which ``eta_t`` tracks).
        preconditioner: ``"none"`` only.
        step_schedule: ``"inverse_t"`` (default, for every model: without LMC-TS's neural preconditioner the
            loss's curvature grows with the rounds, and a constant step diverged within 5 rounds on
            QuadraticBandit-v0) or ``"constant"``.

    Keyword Args:
        Others: as :class:`agents.lmcts.LMCTS`.

    References:
        Zheng, Xu, Zou, Gu and Zhang (2024), "Accelerating approximate Thompson sampling with underdamped
        Langevin Monte Carlo", AISTATS. Cheng, Chatterji, Bartlett and Jordan (2018), "Underdamped Langevin
        MCMC: a non-asymptotic analysis", COLT.
    """

    defaults = PAPER_DEFAULTS

    def __init__(self, env: Any = None, *, friction: Any = 1.0, preconditioner: str | None = "none",
                 step_schedule: str | None = "inverse_t", **kwargs: Any) -> None:
        if preconditioner != "none":
            raise ValueError(f"preconditioner must be 'none' for ULMCTS, got {preconditioner!r}")
        super().__init__(env, preconditioner=preconditioner, step_schedule=step_schedule,
                         chain=Underdamped(friction), **kwargs)


class VITS(LMCTS):
    """Variational Thompson sampling with a diagonal Gaussian (after Clavier, Huix and Durmus 2024), batched.

    LMC-TS (:class:`agents.lmcts.LMCTS`: its models, defaults with the paper's plain chain, and draws) with a
    posterior approximation in place of the chain: a diagonal Gaussian ``q = N(mu, diag(s^2))`` per replica, moved by
    ``K`` steps of the Bures-Wasserstein gradient flow of ``KL(q || exp(-beta L_t))`` per round, two gradients a step
    (:class:`agents.chains.variational.DiagonalGaussian`, which says why its neural update is what it is); the
    round's sample is ``mu + s z``.

    When to use it:
        Logistic rewards (nominally among the lowest there). Avoid it with a fixed linear arm set, where it is the
        highest at every grid point measured. Measured: docs/samplers.md, "Verdict".

    Args:
        initial_variance: ``s^2`` of round 1, a number or one per replica (default ``1 / (2 beta lambda)``: the
            prior's variance).
        preconditioner: As :class:`agents.lmcts.LMCTS` (None: ``"diagonal"`` for neural models, ``"none"``
            otherwise).
        step_schedule: As :class:`agents.lmcts.LMCTS` (None: ``"constant"`` for neural models, ``"inverse_t"``
            otherwise).

    Keyword Args:
        inverse_temperature: as :class:`agents.lmcts.LMCTS`, but None for a neural model is
            2 (:attr:`defaults`), not ``"auto"``.
        Others: as :class:`agents.lmcts.LMCTS` (``step_size``, ``lambda_reg``,
            ``n_inner_steps`` counts steps of two gradients each, ``batch_size`` (mini-batch gradients are
            allowed), ``step_schedule``, ``model``).

    Attributes:
        mean, variance: ``mu`` and ``s^2``, ``(R, p)`` each.

    References:
        Clavier, Huix and Durmus (2024), "VITS: Variational Inference Thompson Sampling for contextual bandits",
        ICML. Lambert, Chewi, Bach, Bonnabel and Rigollet (2022), "Variational inference via Wasserstein gradient
        flows", NeurIPS.
    """

    #: The paper's plain chain, and for neural models ``beta = 2``: VITS's diagonal Gaussian puts independent noise
    #: of variance ``1 / (beta U_ii)`` on every weight, about the prior's ``1 / (2 beta lambda)`` on the many weights
    #: whose curvature stays near ``2 lambda``. Chosen on QuadraticBandit-v0 (20-20-20 MLP, T = 1,000, seeds 0-9): the
    #: lowest regret of the betas tried, every seed learning (``benchmarks/results/samplers.md``, "VITS on the MLP").
    defaults = {**PAPER_DEFAULTS, "neural": {**PAPER_DEFAULTS["neural"], "inverse_temperature": 2.0}}

    def __init__(self, env: Any = None, *, initial_variance: Any = None, preconditioner: str | None = None,
                 step_schedule: str | None = None, **kwargs: Any) -> None:
        super().__init__(env, preconditioner=preconditioner, step_schedule=step_schedule,
                         chain=DiagonalGaussian(initial_variance), **kwargs)

    @property
    def mean(self) -> torch.Tensor:
        """``mu`` ``(R, p)``."""
        return self.chain.mean

    @property
    def variance(self) -> torch.Tensor:
        """``s^2`` ``(R, p)``."""
        return self.chain.variance
