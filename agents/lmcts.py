"""LMC-TS: Thompson sampling with posterior samples from Langevin Monte Carlo (Xu et al. 2022).

One round, in the order it runs (``BanditAgent.learn`` calls ``_select`` then ``_observe``):

1. ``_select``: play ``argmax_x f(x; theta_t)`` for the current sample ``theta_t`` (ties at random).
2. ``_observe``: add the played ``(x_t, r_t)`` to the model's data (with the diagonal preconditioner, first
   add ``2 g(x_t)^2`` at ``theta_t`` to the curvature ``U``), then :meth:`LMCTS._sample` runs
   round ``t + 1``'s chain, :func:`langevin_steps` (Algorithm 1, lines 5-8), warm-started from
   ``theta_t``. (Round 1's chain, on the prior alone, runs in ``__init__``.)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import torch

from agents import _kernels
from agents.base import BanditAgent, DivergenceError, chosen_rows
from agents.chains.langevin import langevin_update
from agents.linear import ArmFeatures, is_power_of_two
from agents.models.blocks import BlockRows
from agents.models.mlp import MLP, build_model, is_neural
from agents.models.noise import NoiseEstimate
from agents.models.reward import LinearModel, RewardModel, agent_state, load_agent_state
from agents.validation import check_choice, check_float, check_int
from bandit_gym.rng import Stream

#: The largest ``(chunk, B, p)`` block of row gradients :func:`minibatch_stiffness` forms at once, in floats
#: (4 MB). All replicas at once, the paper's 2 x 100 network on Shuttle-v0 (p = 6,501) at a 60-replica grid formed
#: 50 MB blocks, several per step, and spent 26 of 30 seconds allocating and freeing them (page faults); in
#: chunks the arithmetic per replica is the same and no large buffer is allocated and freed at every step.
STIFFNESS_CHUNK_FLOATS = 2**20
STEP_SCHEDULES = ("inverse_t", "constant", "inverse_lambda_max")
PRECONDITIONERS = ("none", "diagonal")
#: Neural LMC-TS defaults (grid and the diagnosis in benchmarks/results/quadratic_paper.md). The chain is
#: preconditioned by the diagonal of the loss's Gauss-Newton matrix (``LMCTS``'s docstring says why), so
#: ``eta = 0.01`` is a fraction of each coordinate's inverse curvature, constant over the rounds.
#: ``beta = 1 / (2 sigma^2) = 0.5`` makes ``exp(-beta L_t)`` the posterior of a sum of squared errors with
#: Gaussian noise ``sigma = 1``, under the prior ``N(0, 1 / (2 beta lambda)) = N(0, 0.5)`` for ``lambda = 2``:
#: wider than the He initialisation, which is what lets a sample rank the arms it has never played high (the
#: He-scale prior, lambda = 10, left 8 of 10 seeds exploiting one sign of the quadratic even with this chain).
#: ``K = 10`` steps on mini-batches of ``B = 32`` rows: a round costs the same at round 10,000 as at round 10.
#: ``step_bound = 1``: each mini-batch step's size is capped so that ``eta_k`` times the stiffest direction of
#: that step's preconditioned Gauss-Newton matrix is at most 1 (:func:`minibatch_stiffness`; why in ``LMCTS``).
NEURAL_DEFAULTS = {"step_size": 0.01, "inverse_temperature": "auto", "lambda_reg": 2.0, "n_inner_steps": 10,
                   "batch_size": 32, "step_schedule": "constant", "preconditioner": "diagonal", "step_bound": 1.0}
#: ``beta_0 = 1 / (2 sigma_0^2)``, ``sigma_0 = 1``: ``inverse_temperature="auto"``'s value before any reward, and the
#: temperature at which ``lambda_reg`` sets its prior, ``N(0, 1 / (2 beta_0 lambda))`` (``LMCTS``).
PRIOR_INVERSE_TEMPERATURE = 0.5
#: The logistic model's budget: ``K`` Langevin steps on mini-batches of ``B`` rows (flat cost per round;
#: the full-batch chain is ``batch_size=None``), measured in ``benchmarks/results/grid_glm.md`` ("LMC-TS's GLM
#: budget and round cost"); on the linear model's scaled features at ``eta_t = eta_0 / lambda_max(S V_t S)``,
#: ``V_t = lambda D + sum z z^T / 8``.
GLM_DEFAULTS = {"n_inner_steps": 20, "batch_size": 64, "step_schedule": "inverse_lambda_max", "step_size": 0.05}
#: The linear model: the paper's K = 100 steps, each O(d^2) whatever the history (no batch_size), at the step of
#: the paper's Theorem 4.2, ``eta_t = 1 / (4 lambda_max(V_t))``, on features scaled by their root mean square
#: (``scale_features``; ``V_t`` is then ``S V_t S``). ``LMCTS``'s docstring and docs/agents.md say why;
#: ``benchmarks/results/linear_grid.md`` ("LMC-TS's linear defaults: the grids behind them") what it measured.
LINEAR_DEFAULTS = {"n_inner_steps": 100, "batch_size": None, "step_schedule": "inverse_lambda_max",
                   "preconditioner": "none", "step_size": 0.25}


def langevin_steps(model: RewardModel, theta: torch.Tensor, step_size: torch.Tensor,
                   inverse_temperature: torch.Tensor, noise: torch.Tensor | Callable[[int], torch.Tensor],
                   batches: torch.Tensor | None = None, n_steps: int | None = None,
                   preconditioner: torch.Tensor | None = None, step_bound: float | None = None,
                   lambda_reg: torch.Tensor | None = None) -> torch.Tensor:
    """``K`` Langevin steps on the model's loss from ``theta``: Algorithm 1's inner loop.

    With a diagonal preconditioner ``M`` (``(R, p)``, positive) each step is
    ``theta - eta_t M grad L_t + sqrt(2 eta_t M / beta) eps``: for a fixed ``M`` the chain targets the same
    ``exp(-beta L_t)`` (preconditioned Langevin dynamics), with coordinate ``j`` moving at ``eta_t M_j``.
    With ``step_bound`` (mini-batches of a neural model) step ``k`` runs at
    ``min(eta_t, step_bound / lambda_max(M H_k))``, ``H_k`` the Gauss-Newton matrix of its mini-batch at the
    chain's current ``theta`` (:func:`minibatch_stiffness`; why in :class:`LMCTS`).

    Args:
        model: The reward model (its loss ``L_t`` and gradient).
        theta: Start of the chain (the last sample: warm start), ``(R, p)``.
        step_size: ``eta_t`` per replica, ``(R,)``.
        inverse_temperature: ``beta`` per replica, ``(R,)``.
        noise: Standard normal draws ``eps_k``, ``(R, K, p)``; or a function ``k -> (R, p)`` that draws
            step ``k``'s when it is needed (memory ``O(p)``, not ``O(K p)``: for large networks).
        batches: Mini-batch row indices per step ``(R, K, B)``, or None for full-batch gradients.
        n_steps: ``K``, when ``noise`` is a function.
        preconditioner: ``M`` per replica and coordinate ``(R, p)``, or None (``M = I``).
        step_bound: The cap on ``eta_k lambda_max(M H_k)``, or None (no cap). Needs ``batches`` and ``lambda_reg``.
        lambda_reg: The ridge weight per replica ``(R,)`` (the bound's ``H_k`` includes ``2 lambda I``).

    Returns:
        The last iterate ``theta_{t,K}``, ``(R, p)``.
    """
    eta, beta = step_size[:, None], inverse_temperature[:, None]  # (R, 1)
    if step_bound is not None:
        unit = torch.ones_like(theta) if preconditioner is None else preconditioner
    if preconditioner is not None:
        eta = eta * preconditioner  # (R, p)
    per_step = callable(noise)
    for k in range(n_steps if per_step else noise.shape[1]):
        batch = None if batches is None else batches[:, k]
        eta_k = eta
        if step_bound is not None:  # min(eta_t, step_bound / lambda_max(M H_k)) M
            stiffness = minibatch_stiffness(model, theta, batch, unit, lambda_reg)  # (R,)
            eta_k = eta * torch.clamp(step_bound / (step_size * stiffness), max=1.0)[:, None]
        grad = model.gradient(theta, batch)  # (R, p)
        theta = langevin_update(theta, grad, eta_k, beta, noise(k) if per_step else noise[:, k])
    return theta


def _replica_rows(x: torch.Tensor | BlockRows, part: slice) -> torch.Tensor | BlockRows:
    """Replicas ``part`` of the rows ``model.rows`` gave (dense, or in one-hot-block form)."""
    if isinstance(x, BlockRows):
        return dataclasses.replace(x, values=x.values[part], block=x.block[part])
    return x[part]


def minibatch_stiffness(model: RewardModel, theta: torch.Tensor, batch: torch.Tensor,
                        preconditioner: torch.Tensor, lambda_reg: torch.Tensor) -> torch.Tensor:
    """The largest eigenvalue of ``M H_B`` per replica, ``(R,)``: the stiffest direction of one mini-batch step.

    ``H_B = 2 lambda I + 2 (n / B) sum_{i in B} g(x_i) g(x_i)^T`` is the Gauss-Newton matrix of the mini-batch
    estimate of the squared loss ``L_t`` at ``theta`` (``g = df/dtheta``), ``M`` the diagonal preconditioner
    ``(R, p)``. A step of size ``eta`` is stable in a direction of (preconditioned) curvature ``h`` only if
    ``eta h < 2``. The ``p x p`` matrix ``M^(1/2) G^T G M^(1/2)`` (``G``: the rows' gradients, ``(B, p)``) has the
    nonzero eigenvalues of the ``B x B`` Gram matrix ``G M G^T``, so that is what is decomposed; the ridge adds at
    most ``max_j 2 lambda M_j`` (an upper bound on ``lambda_max(M H_B)``). ``G`` is formed a few replicas at a
    time (:data:`STIFFNESS_CHUNK_FLOATS`), the same numbers as all at once.
    """
    x, _, scale = model.rows(batch)  # (R, B, d)
    R, B = batch.shape
    chunk = max(1, STIFFNESS_CHUNK_FLOATS // (B * theta.shape[1]))  # replicas at a time: G is (chunk, B, p)
    grams = []
    for start in range(0, R, chunk):
        part = slice(start, start + chunk)
        _, g = model.arm_gradients(theta[part], _replica_rows(x, part))  # (chunk, B, p)
        scaled = g * preconditioner[part].sqrt()[:, None, :]  # G M^(1/2)
        grams.append(2.0 * scale * (scaled @ scaled.transpose(1, 2)))  # (chunk, B, B)
    gram = torch.cat(grams) if len(grams) > 1 else grams[0]  # (R, B, B)
    finite = torch.isfinite(gram).all(dim=2).all(dim=1)  # (R,): a replica already diverging gets +inf
    top = torch.linalg.eigvalsh(torch.where(finite[:, None, None], gram, 0.0))[:, -1]
    ridge = (2.0 * lambda_reg[:, None] * preconditioner).amax(dim=1)
    return torch.where(finite, top + ridge, torch.inf)


def paper_inverse_temperature(beta_inv: float, dim: int, horizon: int) -> float:
    """The inverse temperature of the paper's reference configs: ``1 / (beta_inv * d * log T)``.

    Those configs grid over ``beta_inv`` (about 1e-7 to 1e-2) and scale the temperature
    ``1 / beta`` with ``d log T``; ``LMCTS`` takes the raw ``beta`` that this returns.
    """
    scale = check_int("dim", dim) * math.log(check_int("horizon", horizon, minimum=2))
    return 1.0 / (check_float("beta_inv", beta_inv, 0, strict=True) * scale)


class LMCTS(BanditAgent):
    """Langevin Monte Carlo Thompson sampling (Xu et al. 2022, Algorithm 1), batched over replicas.

    Round ``t`` plays ``argmax_x f(x, theta_t)``, where ``theta_t`` is the last of ``K``
    Langevin steps on the loss ``L_t`` of the rounds before ``t``::

        theta = theta - eta_t * grad L_t(theta) + sqrt(2 * eta_t / beta) * eps,   eps ~ N(0, I)

    started from ``theta_(t-1)`` (warm start). ``eta_t = eta_0 / t`` (default) or ``eta_0``; the
    noise scale always uses the current ``eta_t``. With the linear model and a fixed step ``eta``
    the chain is stationary at ``N(V^-1 b, (2 beta)^-1 V^-1 (I - eta V)^-1)`` (Proposition 3.1,
    corrected; ``docs/agents.md``).

    **The linear model: scaled features and the step of Theorem 4.2** (the defaults since 2026-11-27). The features
    are ``z = (x, e_k)``, with a constant per arm where the arms are one-hot blocks (``intercept``, as
    :class:`agents.LinUCB`'s: :class:`agents.linear.ArmFeatures`), and the loss's penalty is ``lambda D``, ``D`` each
    feature's mean square over the arm rows shown (renewed at rounds 2, 4, 8, ...; ``scale_features``). The chain
    is preconditioned by ``M = S^2``, ``S = D^(-1/2)``: it is the plain chain on the features ``S z``, whose Gram
    matrix is ``S V_t S``, and runs at ``eta_t = eta_0 / lambda_max(S V_t S)`` with ``eta_0 = 1/4``, the step of the
    paper's Theorem 4.2 (``step_schedule="inverse_lambda_max"``; ``lambda_max`` is bounded from above by Weyl's
    inequality between exact renewals: :meth:`_track_gram`). Nothing then depends on the features' units: a feature
    multiplied by ``c`` gives the same arms (tested), and the chain is stable whatever their scale, where the
    paper's ``eta_0 / t`` assumes features of norm at most 1 (on the UCI sets' features divided by their root mean
    square it diverged in round 2; on their raw features it lost to LinUCB by 25-95%). Round 1 plays ``theta = 0``
    (an arm at random): the scales, and with them the prior, are unknown before a row is shown. The paper's chain
    is ``step_schedule="inverse_t"`` (then ``scale_features`` defaults to False, ``eta_0 = 0.3``) with
    ``intercept=False``. Measured (``benchmarks/results/linear_grid.md``, "LMC-TS's linear defaults: the grids
    behind them"): on the UCI sets level with LinUCB, on the paper's synthetic settings as low as the paper's chain or
    lower. **The GLM** (``model="glm"``) has the same features,
    penalty and preconditioner, and steps by ``eta_0 / lambda_max(S V_t S)`` with ``V_t = lambda D + (1/8) sum z
    z^T`` (its loss's Hessian is at most ``2 V_t``: ``mu' <= 1/4``), ``eta_0 = 0.05`` (chosen on
    ``LogisticBandit-v0``), on its mini-batches; the paper's chain is ``step_schedule="inverse_t"``
    (``eta_0 = 0.9``) with ``intercept=False``.

    **Neural models: a preconditioned chain** (the default, ``preconditioner="diagonal"``)::

        theta = theta - eta M grad L_t(theta) + sqrt(2 eta M / beta) eps,   M = diag(1 / U_t)

    ``U_t`` estimates the diagonal of the Gauss-Newton matrix ``2 lambda I + 2 sum_i g(x_i) g(x_i)^T`` of
    ``L_t`` (``g = df/dtheta``; :meth:`_round_curvature`), fixed within a round, so each round's chain
    still targets ``exp(-beta L_t)``; ``eta`` is constant. Why: the plain chain's ``eta_t = eta_0 / t`` is
    what keeps it stable where the data constrain ``theta`` (curvature ``~ t``), but it freezes the
    directions they do not (curvature ``2 lambda``): those contract by ``(1 - 2 lambda eta_0 / t)^K`` per
    round, so a state formed at round ``s`` is forgotten only around round ``s exp(1 / (2 lambda eta_0 K))``,
    12 s with ``lambda = 2, eta_0 = 0.01, K = 10``. Thompson sampling explores through exactly those
    directions (what the network predicts for arms it has not played). On the quadratic bandit a seed whose
    early network ranked one sign of ``x . theta*`` low kept that ranking for 1,000-2,500 rounds, playing
    like a linear model (0.45-0.5 regret per round); which seeds did so depended on float rounding (the same
    code, seeds 0-9: kernels on, 3 seeds stuck past round 2,000, two of them to round 3,000; off, 1 seed,
    to about round 2,200). With ``M`` every coordinate moves at about ``eta`` of its
    own curvature per step whatever ``t``: every seed of the 10, kernels on and off, learnt by round 1,500,
    and the cumulative regret at T = 3,000 fell by about a third (``benchmarks/results/quadratic_paper.md``).
    ``preconditioner="none"`` (with ``step_schedule="inverse_t"``) is the paper's plain chain.

    **Neural models: a step bound for mini-batches** (``step_bound=1``, the default). ``M`` holds the curvature
    of single coordinates at the round's start; a step can still be far too long in a direction that couples
    many coordinates: (a) a mini-batch gradient counts each drawn row ``n / B`` times, so a rarely seen row (a
    rare one-hot category) whose gradient spreads over the hundreds of weights of its hidden units puts a
    stiff direction into that step; (b) within a round, a step that grows the weights of one layer grows the
    curvature of the layer below, which ``M`` does not follow. So step ``k`` runs at
    ``eta_k = min(eta, step_bound / lambda_max(M H_k))``, ``H_k`` the Gauss-Newton matrix of step ``k``'s
    mini-batch at the chain's current ``theta`` (:func:`minibatch_stiffness`). The discrete chain's variance along
    a direction of preconditioned curvature ``h`` is ``1 / (1 - eta h / 2)`` times the target's: ``eta h <= 1``
    keeps it within twice the target's in the stiffest direction, where ``eta h >= 2`` diverges. Measured on
    Shuttle-v0 without the bound (seeds 0-9, 10,000 rounds): at round 3,005 one mini-batch put
    ``eta lambda_max = 18.8`` into replica 5's first step (the full data's was 1.07) and the chain was NaN three
    steps later (``docs/agents.md``, "Step bound"). Where the cap binds, the step depends on the chain's state,
    so the chain targets ``exp(-beta L_t)`` only approximately there; full-batch chains (no ``n / B``) have no
    cap. Cost: one more per-row gradient of the ``B`` rows and a ``B x B`` eigenvalue problem per step.

    **The temperature from the data** (``inverse_temperature="auto"``, the default for neural models). For
    the squared loss ``L_t`` and Gaussian reward noise of variance ``sigma^2``, the posterior is
    ``exp(-L_t / (2 sigma^2))``: ``beta = 1 / (2 sigma^2)``. A fixed ``beta`` therefore fits one reward scale
    only: ``0.5`` was chosen on the quadratic bandit (``sigma = 1``), and on 0/1 rewards, whose noise given the
    features is far smaller, it explores for ever (``beta = 32`` did best there, ``docs/agents.md``). So
    ``sigma_t^2`` is estimated from the data: the squared error of the sample that played each round on that
    round's reward, before learning from it (a prequential, out-of-sample error), averaged with round ``s``
    weighing ``s^2`` (so the errors of the first rounds, before the network has learnt anything, fade), with one
    pseudo-observation of ``sigma_0^2 = 1``::

        sigma_t^2 = (1 + sum_{s<t} s^2 (r_s - f(x_s; theta_s))^2) / (1 + sum_{s<t} s^2),   beta_t = 1 / (2 sigma_t^2)

    The prior does not move with ``beta_t``: the loss's ridge becomes ``lambda beta_0 / beta_t`` (``beta_0 = 0.5``,
    :data:`PRIOR_INVERSE_TEMPERATURE`), so ``exp(-beta_t L_t)`` keeps the prior ``N(0, 1 / (2 beta_0 lambda))``
    (``N(0, 0.5)`` at the default ``lambda = 2``); with the ridge scaled by ``beta_t`` instead, a hot early chain
    (errors of 10 on the quadratic bandit: ``beta`` about 0.01) drew weights wide enough to diverge by round 12.
    Rescaling the rewards by ``c`` rescales ``sigma_t^2`` by ``c^2``: the likelihood's temperature is scale-free.
    While the network's errors are large the chain is hot and explores; as they fall to the noise level it cools
    to the posterior's temperature. ``self.inverse_temperature`` holds the current ``beta_t`` per replica, and
    ``self.model.lambda_reg`` the current ridge. Measured at the defaults (``docs/agents.md``, "Temperature from
    the data"): on 0/1 rewards ``beta_t`` ends far colder than 0.5 and the regret falls by about two thirds; on the
    quadratic bandit (``sigma = 1``) it ends near 0.4 and every seed of 0-9 still learns, at a higher cumulative
    regret (more exploration in the first rounds).

    When to use it:
        The first choice where the reward model is not known to be linear: the linear model on linear rewards (lowest
        with a fixed arm set), ``model="mlp"`` on nonlinear rewards and on classification data (lowest on Shuttle-v0 and
        Mushroom-v0 at its defaults). A round runs ``n_inner_steps`` gradient steps: where seconds matter more than
        regret, LinUCB or LinTS. Measured: docs/agents.md, "Choosing an agent".

    Args:
        env: The env (single or vector) the agent is sized for; None with ``n_arms``,
            ``dim`` (and ``num_replicas``).
        model: ``"linear"`` (squared loss; Gram matrix and moment vector, ``O(d^2)`` per step),
            ``"glm"`` (logistic negative log-likelihood), ``"mlp"`` (an MLP, squared loss; see
            :mod:`agents.models.mlp`), an :class:`agents.models.mlp.MLP`, or your own ``nn.Module`` mapping
            ``(..., d) -> (...)`` (R independent copies). Neural models: round 1 plays the initial
            network, and each step's Langevin noise is drawn when the step runs.
        model_kwargs: Keywords of the model, e.g. ``{"hidden": (20, 20, 20), "activation": "relu"}``.
        step_size: ``eta_0 > 0``, a number or one per replica. None: the model's default
            (linear 0.25 with ``"inverse_lambda_max"``, 0.3 with ``"inverse_t"``; glm 0.05 and 0.9; neural 0.01,
            a fraction of each coordinate's inverse curvature with the preconditioner: ``NEURAL_DEFAULTS``; the grid
            searches in ``docs/agents.md``).
        inverse_temperature: ``beta > 0``, a number or one per replica; the chain targets
            ``exp(-beta L_t)``. ``"auto"``: ``beta_t = 1 / (2 sigma_t^2)`` from the observed reward noise (below;
            neural models only).
            None: the model's default (linear 10, glm 30, neural ``"auto"``). See
            :func:`paper_inverse_temperature` for the paper's scaling.
        n_inner_steps: Langevin steps per round ``K`` (>= 1; one value for all replicas: it sets
            the shape of each round's noise draw). None: 100 for the linear model (each step ``O(d^2)``),
            20 for ``"glm"`` and 10 for neural models (each step ``O(B)``): a flat cost per round.
        lambda_reg: Ridge weight ``lambda > 0`` of the loss, a number or one per replica. None: 1, or
            2 for neural models (``NEURAL_DEFAULTS``; the prior is ``N(0, 1 / (2 beta lambda))``, and with
            ``inverse_temperature="auto"`` ``N(0, 1 / (2 beta_0 lambda))``, ``N(0, 0.5)`` at the default).
        step_schedule: ``"inverse_t"`` (``eta_t = eta_0 / t``), ``"constant"``, or ``"inverse_lambda_max"``
            (``eta_t = eta_0 / lambda_max(S V_t S)``, the linear and glm models only). None: ``"inverse_lambda_max"``
            for the linear and glm models, ``"constant"`` with the diagonal preconditioner (``M`` carries the
            ``1 / t``), else ``"inverse_t"``.
        intercept: The linear and glm models' per-arm constants: None (default) where the arms are one-hot blocks,
            True always, False never (as :class:`agents.LinUCB`'s). Neural models: must be None.
        scale_features: The linear and glm models' penalty ``lambda D`` and preconditioner ``S^2`` (above). None:
            True with ``"inverse_lambda_max"``, else False. Neural models: must be None.
        batch_size: Mini-batch size ``B`` of the gradients (stochastic gradient Langevin
            dynamics; rows drawn uniformly with replacement), or None for full batch (a round then costs
            ``O(t)``: ``O(T^2)`` in all). Only models with a data history (``"glm"``, neural) accept it; one
            value for all replicas. ``"auto"`` (default): 64 for ``"glm"``, 32 for neural models, None for
            the linear model.
        preconditioner: ``"diagonal"`` (``M = diag(1 / U_t)`` above; neural models only) or ``"none"``.
            None: ``"diagonal"`` for neural models, ``"none"`` otherwise.
        step_bound: Cap on ``eta_k lambda_max(M H_k)`` for each mini-batch step (above; a number ``> 0``), or
            None for no cap. ``"auto"``: 1 for neural models, None otherwise (only neural models accept one).
        train_every: Run the chain every ``n`` rounds only (``n >= 1``); between, keep the sample.
        seed: See :class:`agents.base.BanditAgent`.
        device: See :class:`agents.base.BanditAgent`.
        n_arms: See :class:`agents.base.BanditAgent`.
        dim: See :class:`agents.base.BanditAgent`.
        num_replicas: See :class:`agents.base.BanditAgent`.

    Raises:
        DivergenceError: From ``learn``/``update`` when the parameters become NaN or Inf
            (step size too large), naming the round and the step size.

    References:
        Xu, Zheng, Zheng, Zou, Zhang and Gu (2022), "Langevin Monte Carlo for Contextual
        Bandits", ICML. Welling and Teh (2011), "Bayesian learning via stochastic gradient
        Langevin dynamics", ICML.
    """

    def __init__(self, env: gym.Env | gym.vector.VectorEnv | None = None, *, model: Any = "linear",
                 step_size: Any = None, inverse_temperature: Any = None, n_inner_steps: int | None = None,
                 lambda_reg: Any = None, step_schedule: str | None = None, batch_size: int | str | None = "auto",
                 preconditioner: str | None = None, step_bound: float | str | None = "auto",
                 model_kwargs: dict | None = None, train_every: int = 1, intercept: bool | None = None,
                 scale_features: bool | None = None,
                 seed: int | list[int] | None = None, device: str | torch.device = "cpu",
                 n_arms: int | None = None, dim: int | None = None, num_replicas: int | None = None) -> None:
        super().__init__(env, seed=seed, device=device, n_arms=n_arms, dim=dim, num_replicas=num_replicas)
        neural = is_neural(model)
        if lambda_reg is None:
            lambda_reg = NEURAL_DEFAULTS["lambda_reg"] if neural else 1.0
        self.lambda_reg = self._hyperparameter("lambda_reg", lambda_reg, minimum=0, strict=True)
        #: The linear model's features ``z`` (per-arm constants) and their mean squares; None for other models.
        self.arm_features = None
        if isinstance(model, str) and model in ("linear", "glm"):
            if scale_features is None:  # the scaled chain needs the step that follows its curvature
                schedule = LINEAR_DEFAULTS["step_schedule"] if model == "linear" else GLM_DEFAULTS["step_schedule"]
                scale_features = (step_schedule or schedule) == "inverse_lambda_max"
            if not isinstance(scale_features, bool):
                raise ValueError(f"scale_features must be True or False, got {scale_features!r}")
            self.arm_features = ArmFeatures(self.num_replicas, self.n_arms, self.dim, intercept, self.device)
            self._hyperparameters.update(intercept=intercept, scale_features=scale_features)
        elif intercept is not None or scale_features is not None:
            raise ValueError(f"intercept and scale_features must be None for model={model!r}, got {intercept!r} "
                             f"and {scale_features!r}; the per-arm constants and the feature scaling are the linear "
                             "and glm models'")
        self.scale_features = bool(scale_features)
        #: Features per arm the model sees (``d``, plus ``K`` per-arm constants with the linear model's ``intercept``).
        self.model_dim = self.dim if self.arm_features is None else self.arm_features.model_dim
        self.model = build_model(model, model_kwargs, self.num_replicas, self.model_dim, self.lambda_reg, self.device,
                                 self.keys)
        model_class = type(self.model)
        defaults = NEURAL_DEFAULTS if neural else {**LINEAR_DEFAULTS, **(
            GLM_DEFAULTS if model_class.supports_minibatch else {})}
        if isinstance(model, MLP):
            model, model_kwargs = "mlp", model.kwargs()  # saved as a description (block_arms included)
        self.train_every = check_int("train_every", train_every)
        self.step_schedule = check_choice(
            "step_schedule", defaults["step_schedule"] if step_schedule is None else step_schedule, STEP_SCHEDULES)
        if self.step_schedule == "inverse_lambda_max" and self.arm_features is None:
            raise ValueError(f"step_schedule must be 'inverse_t' or 'constant' for model={model!r}, got "
                             "'inverse_lambda_max' (the largest eigenvalue of the linear and glm models' Gram matrix)")
        self.preconditioner = check_choice(
            "preconditioner", defaults["preconditioner"] if preconditioner is None else preconditioner, PRECONDITIONERS)
        if self.preconditioner == "diagonal" and not neural:
            raise ValueError(f"preconditioner must be 'none' for model={model!r}, got 'diagonal'; the diagonal "
                             "preconditioner needs a neural model ('mlp', an MLP or an nn.Module)")
        if isinstance(step_bound, str) and step_bound == "auto":
            step_bound = NEURAL_DEFAULTS["step_bound"] if neural else None
        if step_bound is not None:
            step_bound = check_float("step_bound", step_bound, 0, strict=True)
            if not neural:
                raise ValueError(f"step_bound must be None for model={model!r}, got {step_bound!r}; the bound is "
                                 "on the Gauss-Newton matrix of a neural model's squared loss")
        self.step_bound = step_bound
        self.n_inner_steps = check_int(
            "n_inner_steps", defaults["n_inner_steps"] if n_inner_steps is None else n_inner_steps)
        if isinstance(batch_size, str) and batch_size == "auto":
            batch_size = defaults["batch_size"]
        if batch_size is not None:
            batch_size = check_int("batch_size", batch_size)
            if not model_class.supports_minibatch:
                raise ValueError(f"batch_size must be None (full batch) for model={model!r}, got {batch_size!r}; "
                                 "mini-batches need a model with a data history, e.g. model='glm'")
        self.batch_size = batch_size
        self._hyperparameters.update(model=model, step_schedule=self.step_schedule, n_inner_steps=self.n_inner_steps,
                                     batch_size=batch_size, preconditioner=self.preconditioner,
                                     step_bound=step_bound, train_every=self.train_every)
        if model_kwargs is not None:
            self._hyperparameters["model_kwargs"] = dict(model_kwargs)
        if step_size is None:
            step_size = (NEURAL_DEFAULTS["step_size"] if neural else defaults["step_size"]
                         if self.step_schedule == "inverse_lambda_max" else model_class.default_step_size)
        if inverse_temperature is None:
            inverse_temperature = (NEURAL_DEFAULTS["inverse_temperature"] if neural
                                   else model_class.default_inverse_temperature)
        self.step_size = self._hyperparameter("step_size", step_size, minimum=0, strict=True)
        if isinstance(inverse_temperature, str) and inverse_temperature != "auto":
            raise ValueError(f"inverse_temperature must be a number > 0, one per replica, or 'auto' (from the observed "
                             f"reward noise), got {inverse_temperature!r}")
        self.adaptive_temperature = isinstance(inverse_temperature, str)
        if self.adaptive_temperature and not neural:
            raise ValueError(f"inverse_temperature must be a number for model={model!r}, got 'auto'; the temperature "
                             "from the data is for neural models (the squared loss's noise; the linear model's Gram "
                             "matrix holds its ridge, and the logistic loss has no noise scale)")
        if self.adaptive_temperature:  # beta_t = 1 / (2 sigma_t^2), one pseudo-error of 1 (sigma_0 = 1)
            self._hyperparameters["inverse_temperature"] = "auto"
            self.noise = NoiseEstimate(self.num_replicas, self.device)  # sigma_t^2, 1 before any reward
            self._set_inverse_temperature(0.5 * self.noise.precision())  # (R,) beta_0 at first
        else:
            self.inverse_temperature = self._hyperparameter("inverse_temperature", inverse_temperature, minimum=0,
                                                            strict=True)
        self._neural = getattr(self.model, "per_step_noise", False)
        self.theta = self.model.initial_params()  # (R, p)
        if self.preconditioner == "diagonal":  # U = 2 lambda + 2 sum_i g(x_i; theta_i)^2 over the played rows
            self.curvature = 2.0 * self.lambda_reg[:, None].expand(-1, self.model.n_params).clone()  # (R, p)
        self._linear = isinstance(self.model, LinearModel)
        if self.arm_features is not None:  # lambda_max(S V S) before any data: V = lambda I, S = I
            self.gram_top = self.lambda_reg.clone()  # (R,)
        #: The logistic loss's curvature bound over 2: ``V = lambda D + (1/8) sum z z^T`` (its Hessian is at most
        #: ``2 V``, ``mu' <= 1/4``), ``(R, p, p)``: what ``"inverse_lambda_max"`` steps by for the GLM; None otherwise.
        self.bound_gram = None
        if self.arm_features is not None and not self._linear and self.step_schedule == "inverse_lambda_max":
            self.bound_gram = self.lambda_reg[:, None, None] * torch.eye(self.model_dim, device=self.device)
        if self.scale_features:
            #: ``D`` ``(R, p)``: each feature's mean square over the arm rows shown (1 before any), renewed at
            #: rounds 2, 4, 8, ...; the penalty is ``lambda D`` from round 2 (:meth:`_track_gram`).
            self.scales = torch.ones_like(self.theta)
            # no penalty before round 1's rows are seen: lambda I would swamp the data of features whose scale is far
            # below 1 in the float32 Gram matrix (the first renewal takes it out again), and round 1 runs no chain
            self._set_penalty(torch.zeros_like(self.theta))
        if not self._neural and not self.scale_features:
            self.theta = self._sample(1, self.theta)  # round 1's sample, from the prior
        # scaled features: round 1 plays theta = 0 (every score 0: an arm drawn uniformly at random), since the
        # features' scales, and with them the prior N(0, (2 beta lambda D)^-1), are unknown before a row is shown

    def _set_inverse_temperature(self, beta: torch.Tensor) -> None:
        """``beta_t`` of ``"auto"``, and the loss's ridge ``lambda beta_0 / beta_t`` that keeps the prior of
        ``exp(-beta_t L_t)`` at ``N(0, 1 / (2 beta_0 lambda))`` whatever ``beta_t`` (``beta_0 = 1 / (2 sigma_0^2)``)."""
        self.inverse_temperature = beta  # (R,)
        self.model.lambda_reg = self.lambda_reg * (PRIOR_INVERSE_TEMPERATURE / beta)  # (R,)

    def current_step_size(self, t: int) -> torch.Tensor:
        """``eta_t`` per replica, ``(R,)``: ``eta_0 / t``, ``eta_0``, or ``eta_0 / lambda_max(S V_t S)`` (the
        bound :attr:`gram_top` on it)."""
        if self.step_schedule == "inverse_lambda_max":
            return self.step_size / self.gram_top
        return self.step_size / t if self.step_schedule == "inverse_t" else self.step_size

    def features(self, contexts: torch.Tensor) -> torch.Tensor:
        """The model's features of every arm: the linear model's ``z`` (:class:`agents.linear.ArmFeatures`),
        the contexts themselves for the others. ``(R, K, d) -> (R, K, p)``."""
        return contexts if self.arm_features is None else self.arm_features(contexts)

    def feature_scale(self) -> torch.Tensor | None:
        """``S = D^(-1/2)`` ``(R, p)`` of the ``D`` in force (renewed at rounds 2, 4, 8, ...: :attr:`scales`) with
        ``scale_features``, else None. The chain is preconditioned by ``M = S^2``: it runs on the features ``S z``."""
        return self._feature_scale if self.scale_features else None

    @property
    def scales(self) -> torch.Tensor:
        """``D`` ``(R, p)`` with ``scale_features``; setting it also makes :meth:`feature_scale`'s ``D^(-1/2)``."""
        return self._scales

    @scales.setter
    def scales(self, value: torch.Tensor) -> None:
        self._scales, self._feature_scale = value, value.rsqrt()

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._argmax(self.model.scores(self.theta, self.features(contexts)))  # (R,)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        z = self.features(contexts)  # (R, K, p)
        x = chosen_rows(z, actions)  # (R, p)
        predicted = None
        if self.preconditioner == "diagonal":  # the played arm's g(x_t) at the sample theta_t that played it
            predicted, g = self.model.arm_gradients(self.theta, x[:, None, :])  # (R, 1), (R, 1, p)
            self.curvature = self.curvature + 2.0 * g[:, 0] ** 2
        if self.adaptive_temperature:  # the played sample's error on this round's reward, before learning it
            if predicted is None:
                predicted = self.model.scores(self.theta, x[:, None, :])  # (R, 1)
            self.noise.update(self.t, predicted[:, 0], rewards)
            self._set_inverse_temperature(0.5 * self.noise.precision())  # 1 / (2 sigma_t^2)
        self.model.add(x, rewards)  # (R, p), (R,)
        if self.arm_features is not None:
            self._track_gram(z, x)
        if self.t % self.train_every == 0:
            self.theta = self._sample(self.t + 1, self.theta)

    def _track_gram(self, z: torch.Tensor, x: torch.Tensor) -> None:
        """The linear or glm model's statistics after round ``t``'s row ``x`` ``(R, p)`` (of the shown rows ``z``
        ``(R, K, p)``). The GLM's ``V = lambda D + sum z z^T / 8`` gains ``x x^T / 8`` (the linear model's ``V`` is its
        own Gram matrix). With ``scale_features``: record ``z``'s squares and, when the next round is a power of 2,
        renew ``D`` and the penalty ``lambda D``. With ``step_schedule="inverse_lambda_max"``: keep :attr:`gram_top`
        ``>= lambda_max(S V S)``, exact (an eigenvalue problem) when the next round is a power of 2, and between, the
        last value plus ``w |S x|^2`` per row added (``w`` = 1, or 1/8 for the GLM; Weyl's inequality:
        ``lambda_max(A + u u^T) <= lambda_max(A) + |u|^2``), so the step never outgrows the bound."""
        track = self.step_schedule == "inverse_lambda_max"
        weight = 1.0 if self._linear else 0.125  # the GLM: V = lambda D + sum z z^T / 8
        if self.scale_features:
            self.arm_features.record(z)
        if self.bound_gram is not None:
            w = weight * x
            self.bound_gram = self.bound_gram + w[:, :, None] * x[:, None, :]
        if track:
            scale = self.feature_scale()
            u = x if scale is None else x * scale  # (R, p)
            self.gram_top = self.gram_top + weight * (u * u).sum(dim=1)
        if not is_power_of_two(self.t + 1):
            return
        if self.scale_features:
            self.scales = self.arm_features.scales()
            self._set_penalty(self.lambda_reg[:, None] * self.scales)
        if track:
            gram = self.model.gram if self._linear else self.bound_gram
            gram, scale = gram.double(), self.feature_scale()
            if scale is not None:
                scale = scale.double()
                gram = scale[:, :, None] * gram * scale[:, None, :]
            self.gram_top = torch.linalg.eigvalsh(gram)[:, -1].float()

    def _set_penalty(self, penalty: torch.Tensor) -> None:
        """The penalty ``P`` ``(R, p)`` of the model's loss (and of the GLM's curvature bound ``V``)."""
        if self.bound_gram is not None:
            old = self.model.penalty if self.model.penalty is not None else self.lambda_reg[:, None].expand_as(penalty)
            self.bound_gram = self.bound_gram - torch.diag_embed(old) + torch.diag_embed(penalty)
        self.model.set_penalty(penalty)

    def _sample(self, t: int, theta: torch.Tensor) -> torch.Tensor:
        """Round ``t``'s sample: :func:`langevin_steps` from ``theta`` with round ``t``'s draws."""
        eta = self.current_step_size(t)  # (R,)
        if self._neural:  # step k of round t: counter (t - 1) K + k of the SAMPLE stream
            def noise(k: int) -> torch.Tensor:
                counter = (t - 1) * self.n_inner_steps + k
                return self._draws("normal", Stream.SAMPLE, (self.model.n_params,), counter).to(self.device)
            batches = self._minibatches(t)  # (R, K (+ 1 with the preconditioner), B) or None
            preconditioner = None
            if self.preconditioner == "diagonal":
                preconditioner = 1.0 / self._round_curvature(theta, None if batches is None else batches[:, 0])
                batches = None if batches is None else batches[:, 1:]
            # the bound caps steps on mini-batches of the model's loss (their n / B factor); a full-batch loss needs
            # none, also beside FG-LMC-TS's own batches of its feel-good term (agents/samplers.py)
            step_bound = self.step_bound if batches is not None and self.batch_size is not None else None
            theta = langevin_steps(self.model, theta, eta, self.inverse_temperature, noise, batches,
                                   self.n_inner_steps, preconditioner, step_bound, self.model.lambda_reg)
            return self._check_sample(t, eta, theta)
        noise = self._draws("normal", Stream.SAMPLE, (self.n_inner_steps, self.model.n_params), t)  # (R, K, p)
        if self._linear:  # the linear model (FGLMCTS: a loss built on it)
            return self._check_sample(t, eta, self._linear_chain(theta, eta, noise))
        scale = self.feature_scale()
        theta = langevin_steps(self.model, theta, eta, self.inverse_temperature, noise.to(self.device),
                               self._minibatches(t), preconditioner=None if scale is None else scale**2)
        return self._check_sample(t, eta, theta)

    def _linear_chain(self, theta: torch.Tensor, eta: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """The linear model's ``K`` steps: :func:`langevin_steps` preconditioned by ``M = S^2`` (``scale_features``).
        The kernels run the same chain in the scaled coordinates ``theta / S``, on ``S V S`` and ``S b``."""
        scale, gram, moment = self.feature_scale(), self.model.gram, self.model.moment
        kernel = (None if type(self.model) is not LinearModel else _kernels.linear_langevin
                  if _kernels.enabled(theta, gram, eta) else _kernels.linear_langevin_affine
                  if _kernels.enabled_off_cpu(theta, gram, eta) else None)
        if kernel is None:
            preconditioner = None if scale is None else scale**2
            return langevin_steps(self.model, theta, eta, self.inverse_temperature, noise.to(self.device),
                                  preconditioner=preconditioner)
        if scale is not None:
            gram, moment, theta = scale[:, :, None] * gram * scale[:, None, :], scale * moment, theta / scale
        theta = kernel(gram, moment, theta, eta, self.inverse_temperature, noise.to(self.device))
        return theta if scale is None else theta * scale

    def _check_sample(self, t: int, eta: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        """``theta``, or a :class:`DivergenceError` naming the round and the step size if it has a NaN or Inf."""
        diverged = ~torch.isfinite(theta).all(dim=1)  # (R,)
        if bool(diverged.any()):
            r = int(diverged.nonzero()[0, 0])
            raise DivergenceError(
                f"LMCTS: the parameters sampled for round {t} became NaN or Inf with step size eta_t = "
                f"{eta[r].item():.6g} (replica {r}: step_size={self.step_size[r].item():.6g}, {self.step_schedule}); "
                "try a smaller step_size")
        return theta

    def _round_curvature(self, theta: torch.Tensor, batch: torch.Tensor | None) -> torch.Tensor:
        """``U`` of this round's chain ``(R, p)``: the larger of two estimates of the diagonal of the Gauss-Newton
        matrix ``2 lambda I + 2 sum_i g(x_i) g(x_i)^T`` of ``L_t``: the sum over the played rows at the samples
        that played them (``self.curvature``), and the sum over a mini-batch (times ``n / B``; all rows for
        full batches) at the chain's start ``theta``. The second follows the weights when they grow faster than
        the played rows record (early rounds, on a wide prior); taking the larger is the smaller, safer step.
        Fixed during the round's ``K`` steps, so each round's chain targets ``exp(-beta L_t)``.

        Both take the loss's ridge as it is now: ``self.curvature`` was summed from ``2 lambda_reg``, and under
        ``inverse_temperature="auto"`` the ridge is ``lambda beta_0 / beta_t`` (:meth:`_set_inverse_temperature`),
        so the difference is added (zero at a fixed temperature). With ``2 lambda`` kept instead, a direction the
        data do not reach (the weights of an arm never played) moved ``beta_t / beta_0`` times slower than its
        own curvature allows, 200-600 times on 0/1 rewards, and a seed could keep an early bad draw of an arm's
        weights for thousands of rounds (``docs/agents.md``, "The preconditioner")."""
        ridge_change = 2.0 * (self.model.lambda_reg - self.lambda_reg)[:, None]  # (R, 1)
        played = self.curvature + ridge_change
        current = 2.0 * self.model.lambda_reg[:, None] + 2.0 * self.model.gradient_squares(theta, batch)  # (R, p)
        return torch.maximum(played, current)

    def _minibatches(self, t: int) -> torch.Tensor | None:
        """Round ``t``'s mini-batch row indices ``(R, K, B)`` (``(R, K + 1, B)`` with the diagonal preconditioner:
        the first batch estimates the curvature), uniform with replacement; None for full batch."""
        if self.batch_size is None or self.model.n_observations == 0:
            return None
        n_batches = self.n_inner_steps + (self.preconditioner == "diagonal")
        u = self._draws("uniform", Stream.MINIBATCH, (n_batches, self.batch_size), t)  # (R, K (+ 1), B)
        return self.model.sample_rows(u.to(self.device))

    def _state(self) -> dict[str, torch.Tensor]:
        state = agent_state(self.theta, self.model)
        if self.arm_features is not None:
            state.update({f"features.{k}": v for k, v in self.arm_features.state_dict().items()})
            state["gram_top"] = self.gram_top
            if self.bound_gram is not None:
                state["bound_gram"] = self.bound_gram
        if self.scale_features:
            state["scales"] = self.scales
        if self.preconditioner == "diagonal":
            state["curvature"] = self.curvature
        if self.adaptive_temperature:
            state.update(self.noise.state())
        return state

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.theta = load_agent_state(self.model, state)
        if self.arm_features is not None:
            self.arm_features.load_state_dict({k.removeprefix("features."): v for k, v in state.items()
                                               if k.startswith("features.")})
            self.gram_top = state["gram_top"].to(self.device)
            if self.bound_gram is not None:
                self.bound_gram = state["bound_gram"].to(self.device)
        if self.scale_features:
            self.scales = state["scales"].to(self.device)
        if self.preconditioner == "diagonal":
            self.curvature = state["curvature"].to(self.device)
        if self.adaptive_temperature:
            self.noise.load_state(state)
            self._set_inverse_temperature(0.5 * self.noise.precision())
