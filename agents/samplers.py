"""Posterior samplers after LMC-TS, on the same model seam and with the same verbs (issue 22).

Each agent plays ``argmax_x f(x; theta_t)`` for a sample ``theta_t`` of (an approximation of) the tempered
posterior ``exp(-beta L_t)`` of :class:`agents.lmcts.LMCTS`; they differ in how the sample is drawn:

* :class:`FGLMCTS`: LMC-TS on the loss plus the feel-good term ``-lambda_fg sum_s min(b, max_x f(x_s; theta))``
  (Zhang 2022; with Langevin steps as in Anand and Liaw 2025).
* :class:`MALATS`: each Langevin step is a proposal, accepted or rejected by a Metropolis test per replica, so
  the chain targets ``exp(-beta L_t)`` exactly (no step-size bias).
* :class:`HMCTS`: Hamiltonian Monte Carlo: ``n_leapfrog`` leapfrog steps per proposal and a Metropolis test.
* :class:`ULMCTS`: underdamped (kinetic) Langevin Monte Carlo with a velocity (Zheng et al. 2024).
* :class:`EnsembleSampling`: ``M`` perturbed models per replica, one drawn uniformly each round (Lu and Van Roy
  2017); all ``R M`` members are one batch of the model.

The first four subclass :class:`agents.lmcts.LMCTS`: its models (``"linear"``, ``"glm"``, ``"mlp"``, an
:class:`agents.models.mlp.MLP` or your own ``nn.Module``), its hyperparameters and defaults (``step_size``,
``inverse_temperature``, ``lambda_reg``, ``n_inner_steps``, ``step_schedule``, ...), its round structure and its
random draws: step ``k`` of round ``t`` uses the Langevin noise LMC-TS would use. The one Langevin step is
:func:`agents.lmcts.langevin_steps`: MALA's proposal is one such step, and so is HMC's leapfrog step (a leapfrog
step from ``(theta, p)`` moves ``theta`` exactly as a Langevin step whose noise is the momentum ``p``, with
``eta = eps^2 beta / 2``: see :class:`HMCTS`). Only the underdamped chain, a different dynamics, has its own step.

With the linear and glm models, :class:`FGLMCTS` runs LMC-TS's default chain (features scaled by their root mean
square, per-arm constants on one-hot-block arms, ``eta_t = eta_0 / lambda_max``); :class:`MALATS`, :class:`HMCTS`,
:class:`ULMCTS` and :class:`VITS` default to the paper's plain chain (``eta_t = eta_0 / t`` on the raw features, no
constants: ``step_schedule="inverse_t"``, ``intercept=False``), the setting of their measurements in
``docs/samplers.md``; pass ``step_schedule="inverse_lambda_max"`` (and ``intercept=None``) for LMC-TS's.
"""

from __future__ import annotations

from typing import Any

import torch

from agents.base import BanditAgent, chosen_rows
from agents.lmcts import LINEAR_DEFAULTS, LMCTS, NEURAL_DEFAULTS, langevin_steps
from agents.models.mlp import build_model, is_neural
from agents.models.reward import LinearModel, LogisticModel, RewardModel
from agents.validation import check_float, check_int
from bandit_gym import rng
from bandit_gym.rng import Stream

__all__ = ["FGLMCTS", "MALATS", "HMCTS", "ULMCTS", "EnsembleSampling", "VITS"]


class _KnownGradient:
    """The model as :func:`langevin_steps` sees it for one step from ``params``, whose gradient is already known
    (the Metropolis samplers computed it at the previous proposal: no second evaluation)."""

    def __init__(self, params: torch.Tensor, gradient: torch.Tensor) -> None:
        self.params, self.value = params, gradient

    def gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        if params is not self.params or batch is not None:
            raise RuntimeError("_KnownGradient answers only for the full-batch gradient at the point it was given")
        return self.value


class _ChainAgent(LMCTS):
    """LMC-TS with another chain: a subclass overrides :meth:`_chain` (round ``t``'s sample from ``theta``).

    ``LMCTS.__init__`` draws round 1's sample before a subclass has read its own keywords, so that draw is
    deferred here until :meth:`_ready` has run.
    """

    #: Whether the linear model's defaults are LMC-TS's (else the paper's plain chain: module docstring).
    lmcts_linear_defaults = False

    def __init__(self, env: Any = None, **kwargs: Any) -> None:
        self._configured = False
        if not self.lmcts_linear_defaults and kwargs.get("model", "linear") in ("linear", "glm"):
            if kwargs.get("step_schedule") is None:
                kwargs["step_schedule"] = "inverse_t"
            kwargs.setdefault("intercept", False)
        super().__init__(env, **kwargs)

    def _ready(self) -> None:
        """Call at the end of a subclass's ``__init__``: draws round 1's sample (non-neural models)."""
        self._configured = True
        if not self._neural and not self.scale_features:  # as LMCTS.__init__
            self.theta = self._sample(1, self.theta)

    def _sample(self, t: int, theta: torch.Tensor) -> torch.Tensor:
        if not self._configured:
            return theta
        return self._check_sample(t, self.current_step_size(t), self._chain(t, theta))

    def _chain(self, t: int, theta: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _noise(self, t: int, shape: tuple[int, ...]) -> Any:
        """Round ``t``'s standard normals as a function ``k -> (R, *shape)``: LMC-TS's draws (stream ``SAMPLE``,
        counter ``t`` for the whole round, or ``(t - 1) K + k`` per step for neural models)."""
        K = self.n_inner_steps
        if self._neural:
            def noise(k: int) -> torch.Tensor:
                return self._draws("normal", Stream.SAMPLE, shape, (t - 1) * K + k).to(self.device)
            return noise
        draws = self._draws("normal", Stream.SAMPLE, (K, *shape), t).to(self.device)  # (R, K, *shape)
        return lambda k: draws[:, k]

    def _preconditioner(self, theta: torch.Tensor) -> torch.Tensor | None:
        """The diagonal preconditioner ``M`` ``(R, p)`` of the round (fixed during it), or None."""
        if getattr(self, "preconditioner", "none") != "diagonal":
            return None
        return 1.0 / self._round_curvature(theta, None)


class _MetropolisAgent(_ChainAgent):
    """A chain with a Metropolis test: full-batch loss, acceptance counted per replica."""

    def __init__(self, env: Any = None, *, batch_size: int | None = None, **kwargs: Any) -> None:
        if batch_size is not None:
            raise ValueError(f"batch_size must be None for {type(self).__name__}, got {batch_size!r}: the Metropolis "
                             "test needs the full-batch loss (mini-batch estimates would bias it)")
        super().__init__(env, batch_size=None, **kwargs)
        self.accepted = torch.zeros(self.num_replicas, device=self.device)  # (R,) accepted proposals so far
        self.proposed = torch.zeros(self.num_replicas, device=self.device)  # (R,) proposals so far

    @property
    def acceptance_rate(self) -> torch.Tensor:
        """Accepted proposals over proposals so far, per replica ``(R,)`` (NaN before the first chain)."""
        return self.accepted / self.proposed

    def _coins(self, t: int) -> torch.Tensor:
        """Round ``t``'s uniforms in ``[0, 1)`` of stream ``ACCEPT``, ``(R, K, 2)``: per step, the accept/reject coin
        and (HMC) the step-size jitter."""
        return self._draws("uniform", Stream.ACCEPT, (self.n_inner_steps, 2), t).to(self.device)

    def _count(self, accept: torch.Tensor) -> None:
        self.accepted = self.accepted + accept
        self.proposed = self.proposed + 1

    def _state(self) -> dict[str, torch.Tensor]:
        return {**super()._state(), "accepted": self.accepted, "proposed": self.proposed}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        super()._load_state(state)
        self.accepted, self.proposed = state["accepted"], state["proposed"]


class MALATS(_MetropolisAgent):
    """Thompson sampling with Metropolis-adjusted Langevin steps (MALA), batched over replicas.

    Each of the round's ``K`` steps proposes LMC-TS's step ``theta' = theta - eta M grad L + sqrt(2 eta M / beta)
    eps`` (:func:`agents.lmcts.langevin_steps`, the same ``eps``) and accepts it, per replica, with probability
    ``min(1, exp(-beta L(theta') - |theta - theta' + eta M grad L(theta')|^2_{M^-1} beta / (4 eta))
    / exp(-beta L(theta) - |eps|^2 / 2))``; on rejection the chain stays. The chain then leaves
    ``exp(-beta L_t)`` invariant exactly, whatever the step size: the step size trades acceptance against move
    length. Costs one gradient and one loss per step (LMC-TS: one gradient).

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

    def __init__(self, env: Any = None, **kwargs: Any) -> None:
        super().__init__(env, **kwargs)
        self._ready()

    def _chain(self, t: int, theta: torch.Tensor) -> torch.Tensor:
        eta, beta = self.current_step_size(t), self.inverse_temperature  # (R,)
        M = self._preconditioner(theta)
        eta_m = eta[:, None] if M is None else eta[:, None] * M  # (R, 1) or (R, p)
        noise, coins = self._noise(t, (self.model.n_params,)), self._coins(t)
        loss, grad = self.model.loss(theta), self.model.gradient(theta)  # (R,), (R, p)
        for k in range(self.n_inner_steps):
            eps = noise(k)  # (R, p)
            proposal = langevin_steps(_KnownGradient(theta, grad), theta, eta, beta, eps[:, None], preconditioner=M)
            new_loss, new_grad = self.model.loss(proposal), self.model.gradient(proposal)
            back = theta - proposal + eta_m * new_grad  # the reverse step's drift residual (R, p)
            log_ratio = (beta * (loss - new_loss) - beta * (back**2 / eta_m).sum(dim=1) / 4
                         + (eps**2).sum(dim=1) / 2)  # (R,); NaN (a diverged proposal) is rejected
            accept = torch.log(coins[:, k, 0]) < log_ratio  # (R,)
            theta = torch.where(accept[:, None], proposal, theta)
            loss, grad = torch.where(accept, new_loss, loss), torch.where(accept[:, None], new_grad, grad)
            self._count(accept)
        return theta


class HMCTS(_MetropolisAgent):
    """Thompson sampling with Hamiltonian Monte Carlo, batched over replicas.

    Each of the round's ``K`` proposals draws a momentum ``p ~ N(0, I)`` (LMC-TS's noise of that step), runs
    ``n_leapfrog`` leapfrog steps of the Hamiltonian ``H = beta L(theta) + |p|^2 / 2`` with the step
    ``eps = sqrt(2 eta M / beta)`` per coordinate, and accepts the end point with probability
    ``min(1, exp(H(theta, p) - H(theta', p')))``. In these units a leapfrog step moves ``theta`` exactly as a
    Langevin step of size ``eta`` whose noise is the momentum (:func:`agents.lmcts.langevin_steps`), then
    updates ``p <- p - sqrt(beta eta M / 2) (grad L(theta) + grad L(theta'))``; so ``step_size`` means what it
    means for LMC-TS, and ``n_leapfrog=1, step_jitter=0`` is :class:`MALATS`. Each proposal's ``eps`` is
    multiplied by a uniform factor in ``[1 - step_jitter, 1 + step_jitter]`` (Neal 2011, section 5.4.2.2): with a
    fixed ``eps`` a trajectory can be a half turn of some direction of a Gaussian posterior, which HMC then never
    mixes (measured: with ``L = 3`` and ``eta = 0.1`` on the tests' posterior, a variance 2x too large). The
    chain leaves ``exp(-beta L_t)`` invariant exactly. Costs ``n_leapfrog`` gradients and one loss per proposal.

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

    def __init__(self, env: Any = None, *, n_leapfrog: int = 5, step_jitter: Any = 0.2, **kwargs: Any) -> None:
        super().__init__(env, **kwargs)
        self.n_leapfrog = check_int("n_leapfrog", n_leapfrog)
        self._hyperparameters["n_leapfrog"] = self.n_leapfrog
        self.step_jitter = self._hyperparameter("step_jitter", step_jitter, minimum=0)
        if bool((self.step_jitter >= 1).any()):
            raise ValueError(f"step_jitter must be in [0, 1), got {self._hyperparameters['step_jitter']!r}")
        self._ready()

    def _chain(self, t: int, theta: torch.Tensor) -> torch.Tensor:
        beta = self.inverse_temperature  # (R,)
        M = self._preconditioner(theta)
        noise, coins = self._noise(t, (self.model.n_params,)), self._coins(t)
        jitter = (1 + self.step_jitter[:, None] * (2 * coins[:, :, 1] - 1)) ** 2  # (R, K): eps times 1 +- jitter
        loss, grad = self.model.loss(theta), self.model.gradient(theta)  # (R,), (R, p)
        for k in range(self.n_inner_steps):
            eta = self.current_step_size(t) * jitter[:, k]  # (R,)
            eta_m = eta[:, None] if M is None else eta[:, None] * M  # (R, 1) or (R, p)
            kick = torch.sqrt(beta[:, None] * eta_m / 2)  # eps beta / 2, the half-step's momentum factor
            momentum = noise(k)  # (R, p)
            x, g, p = theta, grad, momentum
            for _ in range(self.n_leapfrog):
                x_new = langevin_steps(_KnownGradient(x, g), x, eta, beta, p[:, None], preconditioner=M)
                g_new = self.model.gradient(x_new)
                p = p - kick * (g + g_new)
                x, g = x_new, g_new
            new_loss = self.model.loss(x)
            log_ratio = beta * (loss - new_loss) + ((momentum**2).sum(dim=1) - (p**2).sum(dim=1)) / 2  # (R,)
            accept = torch.log(coins[:, k, 0]) < log_ratio  # NaN (a diverged trajectory) is rejected
            theta = torch.where(accept[:, None], x, theta)
            loss, grad = torch.where(accept, new_loss, loss), torch.where(accept[:, None], g, grad)
            self._count(accept)
        return theta


class ULMCTS(_ChainAgent):
    """Thompson sampling with underdamped (kinetic) Langevin Monte Carlo, batched over replicas.

    The chain carries a velocity ``v`` (kept, like ``theta``, from round to round) and follows
    ``d theta = v dt``, ``dv = -gamma v dt - grad L(theta) dt + sqrt(2 gamma / beta) dB``, whose stationary law
    is ``exp(-beta L(theta)) N(v; 0, I / beta)``. Each of the round's ``K`` steps integrates it exactly over a
    time ``h`` with the gradient held at the step's start (Cheng et al. 2018, the scheme of Zheng et al. 2024):
    with ``a = 1 - exp(-gamma h)``::

        theta <- theta + (a / gamma) v - ((h - a / gamma) / gamma) g + xi_theta
        v     <- (1 - a) v - (a / gamma) g + xi_v

    where ``(xi_theta, xi_v)`` is Gaussian per coordinate with the variances and covariance of that integral
    (two normals per coordinate and step, from LMC-TS's ``SAMPLE`` stream). The step is ``h = sqrt(eta_t)``, so
    that ``step_size`` has LMC-TS's scale (``eta`` times the curvature is the stability number of both
    chains) and its schedules. Step-size bias remains (it shrinks with ``h``); mini-batch gradients are allowed.

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

    def __init__(self, env: Any = None, *, friction: Any = 1.0, preconditioner: str | None = "none",
                 step_schedule: str | None = "inverse_t", **kwargs: Any) -> None:
        if preconditioner != "none":
            raise ValueError(f"preconditioner must be 'none' for ULMCTS, got {preconditioner!r}")
        super().__init__(env, preconditioner=preconditioner, step_schedule=step_schedule, **kwargs)
        self.friction = self._hyperparameter("friction", friction, minimum=0, strict=True)
        self.velocity = torch.zeros_like(self.theta)  # (R, p)
        self._ready()

    def _coefficients(self, t: int) -> tuple[torch.Tensor, ...]:
        """``a / gamma``, ``(h - a / gamma) / gamma``, ``1 - a`` and the noise factors, ``(R, 1)`` each, computed in
        float64 (the position's variance is a difference of terms of order ``h`` that cancel to order ``h^3``)."""
        h = torch.sqrt(self.current_step_size(t).double())
        gamma, u = self.friction.double() / h, 1.0 / self.inverse_temperature.double()
        a, a2 = -torch.expm1(-gamma * h), -torch.expm1(-2 * gamma * h)  # 1 - e^{-gamma h}, 1 - e^{-2 gamma h}
        var_x = u / gamma * (2 * h - 4 * a / gamma + a2 / gamma)
        var_v, cov = u * a2, u / gamma * a**2
        sd_x = torch.sqrt(var_x)
        cross = cov / sd_x  # xi_v = cross z_0 + sd_v z_1
        sd_v = torch.sqrt((var_v - cross**2).clamp(min=0))
        return tuple(c.float()[:, None] for c in (a / gamma, (h - a / gamma) / gamma, 1 - a, sd_x, cross, sd_v))

    def _chain(self, t: int, theta: torch.Tensor) -> torch.Tensor:
        to_theta, drift, keep, sd_x, cross, sd_v = self._coefficients(t)
        noise, batches = self._noise(t, (2, self.model.n_params)), self._minibatches(t)
        v = self.velocity
        for k in range(self.n_inner_steps):
            z = noise(k)  # (R, 2, p)
            g = self.model.gradient(theta, None if batches is None else batches[:, k])  # (R, p)
            theta = theta + to_theta * v - drift * g + sd_x * z[:, 0]
            v = keep * v - to_theta * g + cross * z[:, 0] + sd_v * z[:, 1]
        self.velocity = v
        return theta

    def _state(self) -> dict[str, torch.Tensor]:
        return {**super()._state(), "velocity": self.velocity}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        super()._load_state(state)
        self.velocity = state["velocity"]


class _ArmSets:
    """The arm sets of the rounds played, each replica's run of equal sets stored once.

    A round whose arm set equals the replica's previous one (fixed-arm bandits: ``LinearBanditFixed-v0``,
    ``LogisticBandit-v0``) stores only its id; a new set is appended to that replica's distinct sets. So a fixed
    arm set costs ``O(K d)`` memory, not ``O(n K d)``, and the feel-good term can score it once per step
    (:meth:`_FeelGoodModel.feel_good_gradient`). The buffers double in capacity when full (as
    :class:`agents.loop.history.History`'s).

    Attributes:
        sets: ``(R, capacity, K, d)``, replica ``r``'s distinct sets in slots ``0 .. n_sets[r] - 1``.
        n_sets: Distinct sets per replica ``(R,)``, int64.
        ids: ``(R, capacity)`` int64, round ``s``'s set in its replica's slots (the first ``len(self)`` columns).
        counts: ``(R, capacity)``, the rounds stored with each slot's set.
    """

    def __init__(self, num_replicas: int, n_arms: int, dim: int, device: torch.device, capacity: int = 16) -> None:
        self.sets = torch.zeros(num_replicas, capacity, n_arms, dim, device=device)
        self.n_sets = torch.zeros(num_replicas, dtype=torch.int64, device=device)
        self.ids = torch.zeros(num_replicas, capacity, dtype=torch.int64, device=device)
        self.counts = torch.zeros(num_replicas, capacity, device=device)
        self._length, self._max_sets = 0, 0

    def __len__(self) -> int:
        """Rounds stored per replica."""
        return self._length

    @property
    def max_sets(self) -> int:
        """The most distinct sets of any replica: the slots in use."""
        return self._max_sets

    def append(self, contexts: torch.Tensor) -> None:
        """Add one round's arm sets ``(R, K, d)``."""
        R = contexts.shape[0]
        rows = torch.arange(R, device=contexts.device)
        last = self.sets[rows, (self.n_sets - 1).clamp(min=0)]  # (R, K, d)
        new = (self.n_sets == 0) | (last != contexts).flatten(1).any(dim=1)  # (R,)
        if self._max_sets == self.sets.shape[1]:
            self.sets = torch.cat([self.sets, torch.zeros_like(self.sets)], dim=1)
            self.counts = torch.cat([self.counts, torch.zeros_like(self.counts)], dim=1)
        slot = self.n_sets  # (R,): the next free slot, written only where the set is new
        self.sets[rows, slot] = torch.where(new[:, None, None], contexts, self.sets[rows, slot])
        self.n_sets = self.n_sets + new
        self._max_sets = int(self.n_sets.max())
        if self._length == self.ids.shape[1]:
            self.ids = torch.cat([self.ids, torch.zeros_like(self.ids)], dim=1)
        self.ids[:, self._length] = self.n_sets - 1
        self.counts[rows, self.n_sets - 1] += 1
        self._length += 1

    def set_ids(self, batch: torch.Tensor | None) -> torch.Tensor:
        """The set of each round of ``batch`` ``(R, B)`` (row indices), or of every round (None): ``(R, B or n)``."""
        ids = self.ids[:, : self._length]
        return ids if batch is None else ids.gather(1, batch)

    def gather(self, ids: torch.Tensor) -> torch.Tensor:
        """The sets of ``ids`` ``(R, S)``: ``(R, S, K, d)`` (whole sets copied by ``index_select``)."""
        R, capacity, K, d = self.sets.shape
        flat = ids + capacity * torch.arange(R, device=ids.device)[:, None]  # (R, S) rows of the flattened buffer
        return self.sets.reshape(R * capacity, K, d).index_select(0, flat.reshape(-1)).reshape(R, -1, K, d)

    def rows(self, batch: torch.Tensor | None = None) -> torch.Tensor:
        """The arm sets of the rounds of ``batch`` ``(R, B)``, or of every round: ``(R, B or n, K, d)``."""
        return self.gather(self.set_ids(batch))

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Every round's arm set, ``{"contexts": (R, n, K, d)}`` (the saved format of every history: one row per
        round; the runs of equal sets are found again on load)."""
        return {"contexts": self.rows()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Replace the contents by ``state`` (as :meth:`state_dict` writes it), appending its rounds in order."""
        R, _, K, d = self.sets.shape
        self.__init__(R, K, d, self.sets.device)
        for contexts in state["contexts"].to(self.sets.device).unbind(dim=1):
            self.append(contexts)


def _best_arms(x: torch.Tensor, params: torch.Tensor, cap: float) -> torch.Tensor:
    """``[max_a x_a . theta < b] x_*`` per arm set, ``x_*`` its best arm for ``theta``: ``(R, S, K, d) -> (R, S, d)``.
    The gradient of ``min(b, max_a x_a . theta)`` in ``theta`` (zero above the cap)."""
    scores = (x * params[:, None, None, :]).sum(dim=3)  # (R, S, K): x . theta
    best, arm = scores.max(dim=2)  # (R, S)
    rows = torch.take_along_dim(x, arm[:, :, None, None], dim=2)[:, :, 0]  # (R, S, d)
    return (best < cap).to(params.dtype)[:, :, None] * rows


class _FeelGoodModel:
    """The reward model with FG-TS's loss: ``L_t(theta) - lambda_fg sum_s min(b, max_x f(x_s; theta))`` over the
    arm sets ``x_s`` of the rounds played (or a mini-batch of them, times ``n / B``). Everything else is the
    model's (attributes pass through)."""

    def __init__(self, model: RewardModel, contexts: _ArmSets, lambda_fg: torch.Tensor, cap: float,
                 own_batches: bool) -> None:
        self.model, self.contexts, self.lambda_fg, self.cap = model, contexts, lambda_fg, cap
        self.own_batches = own_batches  # False: the batches are the feel-good term's alone; the model's loss is full

    def _model_batch(self, batch: torch.Tensor | None) -> torch.Tensor | None:
        return batch if self.own_batches else None

    def gradient_squares(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        return self.model.gradient_squares(params, self._model_batch(batch))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def _scale(self, batch: torch.Tensor | None) -> float:
        """``n / B``: makes a mini-batch's sum estimate the sum over all ``n`` rounds (1 for all rounds)."""
        return 1.0 if batch is None else len(self.contexts) / batch.shape[1]

    def feel_good(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        """``lambda_fg sum_s min(b, max_x f(x_s; params))`` per replica ``(R,)``: the definition."""
        x = self.contexts.rows(batch)  # (R, n, K, d)
        R, n, K, d = x.shape
        f = self.model.scores(params, x.reshape(R, n * K, d)).reshape(R, n, K)
        return self.lambda_fg * self._scale(batch) * f.amax(dim=2).clamp(max=self.cap).sum(dim=1)

    def feel_good_gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        """``grad`` of :meth:`feel_good`, ``(R, p)``: autograd; for scores ``x . theta`` (linear and logistic
        models) the closed form ``lambda_fg sum_s [max_x x_s . theta < b] x_s*``, ``x_s*`` the best arm of round
        ``s`` (tested equal to autograd). Each distinct arm set is scored once per step when there are fewer
        distinct sets than rounds in the sum (a fixed arm set: ``K d`` per step, not ``B K d``); otherwise the
        rounds' sets are gathered and scored."""
        if not isinstance(self.model, LinearModel | LogisticModel):
            with torch.enable_grad():
                p = params.detach().requires_grad_()
                (gradient,) = torch.autograd.grad(self.feel_good(p, batch).sum(), p)
            return gradient
        sets, m = self.contexts, self.contexts.max_sets
        ids = sets.set_ids(batch)  # (R, S): the set of each round in the sum
        if m <= ids.shape[1]:  # score every distinct set once, times the rounds of the sum that have it
            if batch is None:
                counts = sets.counts[:, :m]  # (R, m)
            else:
                counts = torch.zeros(ids.shape[0], m, dtype=params.dtype, device=ids.device)
                counts.scatter_add_(1, ids, torch.ones(ids.shape, dtype=params.dtype, device=ids.device))
            total = (counts[:, :, None] * _best_arms(sets.sets[:, :m], params, self.cap)).sum(dim=1)  # (R, d)
        else:  # more distinct sets than rounds in the sum: score the rounds' sets
            total = _best_arms(sets.gather(ids), params, self.cap).sum(dim=1)  # (R, d)
        return (self.lambda_fg * self._scale(batch))[:, None] * total

    def loss(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        model_batch = self._model_batch(batch)
        model_loss = self.model.loss(params) if model_batch is None else self.model.loss(params, model_batch)
        return model_loss - self.feel_good(params, batch)

    def gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        return self.model.gradient(params, self._model_batch(batch)) - self.feel_good_gradient(params, batch)


class FGLMCTS(_ChainAgent):
    """Feel-Good Thompson sampling with Langevin steps (FG-LMC-TS), batched over replicas.

    LMC-TS (:class:`agents.lmcts.LMCTS`, the same chain, draws and defaults) on the loss
    ``L_t(theta) - lambda_fg sum_{s < t} min(b, max_x f(x_s; theta))``: the feel-good term favours parameters that
    predict a high best reward on the arm sets seen so far, an optimism that Zhang (2022) shows removes Thompson
    sampling's extra sqrt(d) in the frequentist regret. The term's gradient is the closed form
    ``lambda_fg sum_s [max_x x_s . theta < b] x_s*`` for the linear and logistic models, autograd of
    ``model.scores`` otherwise, over ``feel_good_batch_size`` of the stored rounds per step (or the model's
    mini-batches when ``batch_size`` is set; all rounds when both are None). The arm sets are stored once per
    run of equal sets, and each distinct set is scored once per step: with a fixed arm set the term costs
    ``O(K d)`` per step, with a new set every round ``O(B K d)`` (``docs/samplers.md``).
    ``lambda_fg = 0`` is LMC-TS, draw for draw (bit for bit).

    When to use it:
        Linear or logistic rewards with a fixed arm set, where its feel-good term moved the regret below LMC-TS's,
        within noise. Avoid it on neural models at the grids measured; with a new arm set every round it is the most
        expensive agent. Measured: docs/samplers.md, "Verdict".

    Args:
        lambda_fg: ``lambda_fg >= 0``, a number or one per replica (default 0.01, chosen on LinearBanditFixed-v0
            at 10 seeds: ``benchmarks/results/samplers.md``, the table "Re-measured after a warm-up" and its
            "Verdict (at this size: one problem each, 10 seeds, defaults, no grid)").
        feel_good_cap: ``b``, the cap of the best predicted reward (an upper bound of the rewards; default 1).
            For ``model="glm"`` ``f`` is the logit.

    Keyword Args:
        Others: as :class:`agents.lmcts.LMCTS`.

    References:
        Zhang (2022), "Feel-Good Thompson Sampling for Contextual Bandits and Reinforcement Learning", SIAM
        Journal on Mathematics of Data Science. Anand and Liaw (2025), arXiv 2507.15290.
    """

    lmcts_linear_defaults = True

    def __init__(self, env: Any = None, *, lambda_fg: Any = 0.01, feel_good_cap: float = 1.0,
                 feel_good_batch_size: int | None = 32, **kwargs: Any) -> None:
        super().__init__(env, **kwargs)
        self.lambda_fg = self._hyperparameter("lambda_fg", lambda_fg, minimum=0)
        self.feel_good_cap = check_float("feel_good_cap", feel_good_cap)
        if feel_good_batch_size is not None:
            feel_good_batch_size = check_int("feel_good_batch_size", feel_good_batch_size)
        self.feel_good_batch_size = feel_good_batch_size
        self._hyperparameters.update(feel_good_cap=self.feel_good_cap, feel_good_batch_size=feel_good_batch_size)
        self.contexts = _ArmSets(self.num_replicas, self.n_arms, self.model_dim, self.device)
        self._ready()

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        self.contexts.append(self.features(contexts))  # the model's features (the linear model's constants)
        super()._observe(contexts, actions, rewards)

    def _chain(self, t: int, theta: torch.Tensor) -> torch.Tensor:
        if len(self.contexts) == 0 or not bool((self.lambda_fg > 0).any()):
            return LMCTS._sample(self, t, theta)  # LMC-TS's round, kernels included
        model = self.model
        self.model = _FeelGoodModel(model, self.contexts, self.lambda_fg, self.feel_good_cap,
                                    own_batches=self.batch_size is not None)
        try:  # LMC-TS's round (draws, mini-batches, preconditioner) on the feel-good loss
            return LMCTS._sample(self, t, theta)
        finally:
            self.model = model

    def _minibatches(self, t: int) -> torch.Tensor | None:
        """The model's mini-batches (then the feel-good term's too); with a full-batch model and some ``lambda_fg >
        0``, the feel-good term's own: ``feel_good_batch_size`` past rounds per step, uniform with replacement (stream
        ``MINIBATCH``). (LMC-TS's round reads them as the feel-good term's only: the model's loss, its
        preconditioner and its step bound stay full-batch.)"""
        if self.batch_size is not None or self.feel_good_batch_size is None or len(self.contexts) == 0 \
                or not bool((self.lambda_fg > 0).any()):
            return super()._minibatches(t)
        n_batches = self.n_inner_steps + (getattr(self, "preconditioner", "none") == "diagonal")
        u = self._draws("uniform", Stream.MINIBATCH, (n_batches, self.feel_good_batch_size), t)  # (R, K (+ 1), B)
        return self.model.sample_rows(u.to(self.device))

    def _state(self) -> dict[str, torch.Tensor]:
        return {**super()._state(), **{f"contexts.{k}": v for k, v in self.contexts.state_dict().items()}}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        super()._load_state(state)
        self.contexts.load_state_dict({k.removeprefix("contexts."): v for k, v in state.items()
                                       if k.startswith("contexts.")})


#: Ensemble sampling's neural step ``eta_0`` (schedule ``eta_0 / t``: a step of 0.05 on the mean squared error); a
#: constant 0.01 on the summed loss diverged by round 24 on QuadraticBandit-v0 (the curvature grows with the rows).
NEURAL_STEP_SIZE = 0.05
#: The neural members' inverse temperature (the scale of their perturbations, ``1 / (2 beta)``): fixed, since the
#: members are perturbed once, before any reward is seen (LMC-TS's ``"auto"`` needs the observed errors).
ENSEMBLE_NEURAL_INVERSE_TEMPERATURE = 0.5

#: VITS's neural ``beta``. Its diagonal Gaussian puts independent noise of variance ``1 / (beta U_ii)`` on every
#: weight, about the prior's ``1 / (2 beta lambda)`` on the many weights whose Gauss-Newton curvature stays near
#: ``2 lambda``; LMC-TS's joint noise at ``beta = 0.5`` keeps its networks consistent, VITS's independent noise
#: does not. Chosen on QuadraticBandit-v0 (20-20-20 MLP, defaults otherwise, T = 1,000, seeds 0-9): the lowest
#: regret of the betas tried, with every seed learning (``benchmarks/results/samplers.md``, "VITS on the MLP: the
#: measurements behind its neural update", item 3).
VITS_NEURAL_INVERSE_TEMPERATURE = 2.0


class EnsembleSampling(BanditAgent):
    """Ensemble sampling (Lu and Van Roy 2017): ``M`` perturbed models per replica, one drawn each round.

    Member ``m`` of replica ``r`` minimises ``sum_s loss(f(x_s; theta), r_s + z_{s,m}) + lambda |theta -
    theta_{0,m}|^2``: every reward it learns from carries its own noise ``z ~ N(0, 1 / (2 beta))`` and it is
    pulled towards its own prior draw ``theta_{0,m} ~ N(0, I / (2 beta lambda))`` (neural models: towards its own
    initial weights, a randomised prior). For the linear model each member is then an exact sample of
    ``N(V^-1 b, (2 beta)^-1 V^-1)``, LMC-TS's target, and is solved exactly; other models take ``n_inner_steps``
    gradient steps of size ``eta_t`` per round from the last fit. Round ``t`` plays the greedy arm of a member drawn
    uniformly (stream ``EXPLORE``). The ``R M`` members are one batch of the model (``R M`` model replicas).

    When to use it:
        The linear model, where each member is an exact sample and the round is the cheapest of the samplers; with an
        MLP it leads on Mushroom-v0 but falls behind on Shuttle-v0. Measured: docs/samplers.md, "Verdict".

    Args:
        model: As :class:`agents.lmcts.LMCTS` (the same default).
        model_kwargs: As :class:`agents.lmcts.LMCTS` (the same default).
        lambda_reg: As :class:`agents.lmcts.LMCTS` (the same default).
        inverse_temperature: As :class:`agents.lmcts.LMCTS` (the same default, except 0.5 for neural models:
            a number only).
        n_inner_steps: As :class:`agents.lmcts.LMCTS` (the same default).
        step_size: ``eta_0``; defaults to LMC-TS's (linear 0.3, glm 0.9) and to 0.05 for neural models. Unused
            by the linear model (solved exactly).
        step_schedule: ``"inverse_t"`` (default: ``eta_t = eta_0 / t``, a fixed step on the mean loss) or
            ``"constant"``. Unused by the linear model.
        n_members: ``M >= 1`` (default 10).
        seed: See :class:`agents.base.BanditAgent`.
        device: See :class:`agents.base.BanditAgent`.
        n_arms: See :class:`agents.base.BanditAgent`.
        dim: See :class:`agents.base.BanditAgent`.
        num_replicas: See :class:`agents.base.BanditAgent`.

    References:
        Lu and Van Roy (2017), "Ensemble Sampling", NeurIPS. Osband, Aslanides and Cassirer (2018),
        "Randomized prior functions for deep reinforcement learning", NeurIPS.
    """

    def __init__(self, env: Any = None, *, model: Any = "linear", n_members: int = 10, inverse_temperature: Any = None,
                 lambda_reg: Any = None, step_size: Any = None, step_schedule: str | None = None,
                 n_inner_steps: int | None = None, model_kwargs: dict | None = None,
                 seed: int | list[int] | None = None, device: str | torch.device = "cpu",
                 n_arms: int | None = None, dim: int | None = None, num_replicas: int | None = None) -> None:
        super().__init__(env, seed=seed, device=device, n_arms=n_arms, dim=dim, num_replicas=num_replicas)
        neural = is_neural(model)
        self.n_members = M = check_int("n_members", n_members)
        self.lambda_reg = self._hyperparameter(
            "lambda_reg", (NEURAL_DEFAULTS["lambda_reg"] if neural else 1.0) if lambda_reg is None else lambda_reg,
            minimum=0, strict=True)
        members = rng.random_words(self.keys, Stream.INIT, 1 << 32, M).reshape(-1)  # (R M,) one key per member
        self.model = build_model(model, model_kwargs, self.num_replicas * M, self.dim,
                                 self.lambda_reg.repeat_interleave(M), self.device, members)
        defaults = {**(NEURAL_DEFAULTS if neural else LINEAR_DEFAULTS), "step_schedule": "inverse_t"}
        if inverse_temperature is None:
            inverse_temperature = (ENSEMBLE_NEURAL_INVERSE_TEMPERATURE if neural
                                   else type(self.model).default_inverse_temperature)
        if step_size is None:
            step_size = NEURAL_STEP_SIZE if neural else type(self.model).default_step_size
        self.inverse_temperature = self._hyperparameter("inverse_temperature", inverse_temperature, minimum=0,
                                                        strict=True)
        self.step_size = self._hyperparameter("step_size", step_size, minimum=0, strict=True)
        self.step_schedule = step_schedule or defaults["step_schedule"]
        if self.step_schedule not in ("inverse_t", "constant"):
            raise ValueError(f"step_schedule must be 'inverse_t' or 'constant', got {self.step_schedule!r}")
        self.n_inner_steps = check_int("n_inner_steps", n_inner_steps or defaults["n_inner_steps"])
        self._hyperparameters.update(model=model, n_members=M, step_schedule=self.step_schedule,
                                     n_inner_steps=self.n_inner_steps)
        if model_kwargs is not None:
            self._hyperparameters["model_kwargs"] = dict(model_kwargs)
        self._exact = isinstance(self.model, LinearModel)
        if neural:
            self.anchor = self.model.initial_params()  # (R M, p)
        else:
            prior_sd = 1.0 / torch.sqrt(2 * self.inverse_temperature * self.lambda_reg)  # (R,)
            z = rng.normal(members.cpu(), Stream.INIT, 0, (self.model.n_params,)).to(self.device)  # (R M, p)
            self.anchor = z * prior_sd.repeat_interleave(M)[:, None]
        self.theta = self.anchor.clone()  # (R M, p): round 1 plays a prior draw

    def _per_member(self, values: torch.Tensor) -> torch.Tensor:
        """``(R,) -> (R M,)``: a replica's value for each of its members."""
        return values.repeat_interleave(self.n_members)

    def _members(self) -> torch.Tensor:
        """This round's member per replica ``(R,)``, uniform over ``M`` (stream ``EXPLORE``)."""
        u = self._draws("uniform", Stream.EXPLORE, ()).to(self.device).double()
        return (u * self.n_members).long()  # u < 1 on a 2**-24 grid: exact, never M

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        theta = self.theta.reshape(self.num_replicas, self.n_members, -1)  # (R, M, p)
        members = self._members()
        chosen = theta.gather(1, members[:, None, None].expand(-1, 1, theta.shape[2]))[:, 0]  # (R, p)
        return self._argmax(self.model.scores(chosen, contexts))  # (R parameter vectors of the R M-replica model)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        M = self.n_members
        x = chosen_rows(contexts, actions).repeat_interleave(M, dim=0)  # (R M, d)
        sd = 1.0 / torch.sqrt(2 * self.inverse_temperature)  # (R,)
        z = self._draws("normal", Stream.SAMPLE, (M,)).to(self.device) * sd[:, None]  # (R, M)
        self.model.add(x, self._per_member(rewards) + z.reshape(-1))
        self.theta = self._fit(self.theta)
        self._check_finite(self.theta, "the members' parameters", self.step_size.tolist())

    def _fit(self, theta: torch.Tensor) -> torch.Tensor:
        """Each member's minimiser of its loss (linear: exact), from ``theta`` (other models: gradient steps)."""
        lam = self._per_member(self.lambda_reg)[:, None]  # (R M, 1)
        if self._exact:  # V theta = b_m + lambda theta_0
            return torch.linalg.solve(self.model.gram, self.model.moment + lam * self.anchor)
        eta = self.step_size / (self.t + 1) if self.step_schedule == "inverse_t" else self.step_size
        eta = self._per_member(eta)[:, None]
        for _ in range(self.n_inner_steps):
            theta = theta - eta * (self.model.gradient(theta) - 2 * lam * self.anchor)
        return theta

    def _state(self) -> dict[str, torch.Tensor]:
        return {"theta": self.theta, **{f"model.{k}": v for k, v in self.model.state_dict().items()}}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.model.load_state_dict({k.removeprefix("model."): v for k, v in state.items() if k.startswith("model.")})
        self.theta = state["theta"]


class VITS(_ChainAgent):
    """Variational Thompson sampling with a diagonal Gaussian (after Clavier, Huix and Durmus 2024), batched.

    Each replica keeps ``q = N(mu, diag(s^2))`` from round to round and moves it by ``K`` steps of the
    Bures-Wasserstein gradient flow of ``KL(q || exp(-beta L_t))`` (the paper's update, restricted to diagonal
    covariances)::

        mu  <- mu - eta E_q[grad L]
        s^2 <- (1 - eta h)^2 s^2 + 2 eta / beta,      h an estimate of diag E_q[Hess L]

    with both expectations from one antithetic pair ``theta_+- = mu +- s z`` (``z`` LMC-TS's noise of the step):
    ``E_q[grad L] ~ (g(theta_+) + g(theta_-)) / 2`` and, by Stein's identity ``E_q[Hess L] s = E_q[z grad L]``,
    ``h = z (g(theta_+) - g(theta_-)) / (2 s)``: two gradients per step and no Hessian, so every model of the seam
    works (the paper uses the Hessian or a full-covariance approximation of it).

    Neural models (``preconditioner="diagonal"``, the default as for LMC-TS): both updates are preconditioned by
    LMC-TS's round curvature ``M = diag(1 / U_t)`` (:meth:`agents.lmcts.LMCTS._round_curvature`, at ``mu``) with
    LMC-TS's constant step, ``h = U_t`` (the Gauss-Newton diagonal) replaces Stein's estimate, and the prior is
    centred at the initial network ``theta_0`` (the ridge term ``lambda |theta - theta_0|^2``, as ensemble
    sampling's members)::

        mu  <- mu - eta M E_q[grad L],      s^2 <- (1 - eta)^2 s^2 + 2 eta M / beta     (-> 1 / (beta U_t))

    Why each (QuadraticBandit-v0, 20-20-20 MLP, 10 seeds; the figures: ``benchmarks/results/samplers.md``, "VITS on
    the MLP: the measurements behind its neural update"): the plain chain (``eta_0 / t``, Stein's ``h``, prior at
    0) stayed at uniform random's regret, and so did the preconditioned one with Stein's ``h``:
    at the wide ``s`` of the early rounds Stein's ``h`` is the Hessian of random networks, near ``2 lambda``, and
    ``s^2`` stayed near the prior's 0.5; with ``h = U_t`` it still stayed near 0.35 (most weights' curvature is
    near ``2 lambda``) and the smoothed loss ``E_q[L]`` shrank the mean towards zero. At a cold ``beta`` (200,
    1,000) the noise is small, but the ridge term then decays every weight the data do not support to zero and
    half the seeds end as a dead network at uniform random's level.
    Centred at ``theta_0``, such weights relax to the initial network instead, and every seed learns at
    ``beta = 2`` (``VITS_NEURAL_INVERSE_TEMPERATURE``). The round's sample is
    ``theta = mu + s z'``. For a Gaussian target the mean update is exact gradient descent and ``E[s^2]``
    converges to ``(2 / beta) (2 diag(H) - eta (2 diag(H)^2 + H o H))^-1 1`` (``H`` the Hessian, ``o`` the
    entrywise product): the mean-field variance ``1 / (beta H_ii)`` up to ``O(eta)``; like every mean-field
    approximation it underestimates the posterior's spread along correlated directions.

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
            ``VITS_NEURAL_INVERSE_TEMPERATURE`` (2), not 0.5.
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

    def __init__(self, env: Any = None, *, initial_variance: Any = None, preconditioner: str | None = None,
                 step_schedule: str | None = None, **kwargs: Any) -> None:
        if kwargs.get("inverse_temperature") is None and is_neural(kwargs.get("model", "linear")):
            kwargs["inverse_temperature"] = VITS_NEURAL_INVERSE_TEMPERATURE
        super().__init__(env, preconditioner=preconditioner, step_schedule=step_schedule, **kwargs)
        if initial_variance is None:
            variance = 1.0 / (2.0 * self.inverse_temperature * self.lambda_reg)  # (R,)
            self._hyperparameters["initial_variance"] = None
        else:
            variance = self._hyperparameter("initial_variance", initial_variance, minimum=0, strict=True)
        self.mean = self.theta.clone()  # (R, p)
        self.variance = variance[:, None].expand_as(self.theta).clone()  # (R, p)
        # neural models: the prior is centred at the initial network (its ridge term's gradient shifted by
        # -2 lambda theta_0, as ensemble sampling's members); linear and glm models: at zero, as LMC-TS's
        self.anchor = self.theta.clone() if self._neural else None  # (R, p) or None
        self._ready()

    def _chain(self, t: int, theta: torch.Tensor) -> torch.Tensor:
        eta, beta = self.current_step_size(t)[:, None], self.inverse_temperature[:, None]  # (R, 1)
        noise, batches = self._noise(t, (2, self.model.n_params)), self._minibatches(t)
        mu, var = self.mean, self.variance
        curvature = None
        if self.preconditioner == "diagonal":  # eta M, M = 1 / U_t at the round's mean (fixed during the round)
            curvature = self._round_curvature(mu, None if batches is None else batches[:, 0])  # (R, p)
            eta = eta / curvature
            batches = None if batches is None else batches[:, 1:]
        for k in range(self.n_inner_steps):
            z, s = noise(k)[:, 0], torch.sqrt(var)  # (R, p)
            batch = None if batches is None else batches[:, k]
            g_plus, g_minus = self.model.gradient(mu + s * z, batch), self.model.gradient(mu - s * z, batch)
            if self.anchor is not None:  # the prior N(theta_0, ...): ridge gradient 2 lambda (theta - theta_0)
                shift = 2 * self.lambda_reg[:, None] * self.anchor
                g_plus, g_minus = g_plus - shift, g_minus - shift
            # diag E_q[Hess L]: the Gauss-Newton U_t with the preconditioner, else Stein's estimate
            h = curvature if curvature is not None else z * (g_plus - g_minus) / (2 * s)
            mu = mu - eta * (g_plus + g_minus) / 2
            var = (1 - eta * h) ** 2 * var + 2 * eta / beta
        self.mean, self.variance = mu, var
        return mu + torch.sqrt(var) * noise(self.n_inner_steps - 1)[:, 1]

    def _state(self) -> dict[str, torch.Tensor]:
        anchor = {} if self.anchor is None else {"anchor": self.anchor}
        return {**super()._state(), "mean": self.mean, "variance": self.variance, **anchor}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        super()._load_state(state)
        self.mean, self.variance = state["mean"].to(self.device), state["variance"].to(self.device)
        if "anchor" in state:
            self.anchor = state["anchor"].to(self.device)
