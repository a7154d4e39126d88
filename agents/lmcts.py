"""LMC-TS: Thompson sampling with posterior samples from Langevin Monte Carlo (Xu et al. 2022): a model plus a chain.

A round, in the order it runs: ``_select`` plays ``argmax_x f(x; theta_t)`` (ties at random); ``_observe`` adds
``(x_t, r_t)`` to the model's data, then :meth:`LMCTS._sample` runs round ``t + 1``'s chain (Algorithm 1, lines 5-8)
from ``theta_t``. Round 1's chain, on the prior alone, runs in ``__init__``.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import torch

from agents.base import BanditAgent, DivergenceError, chosen_rows
from agents.chains.langevin import Langevin
from agents.chains.preconditioner import DiagonalPreconditioner
from agents.chains.scaled_features import ScaledFeatures
from agents.chains.schedules import STEP_SCHEDULES, step_size
from agents.chains.target import Chain, ChainRound
from agents.linear import ArmFeatures
from agents.models.mlp import MLP, build_model, is_neural
from agents.models.noise import NoiseEstimate
from agents.models.reward import (
    MODELS,
    LinearModel,
    RewardModel,
    agent_state,
    load_agent_state,
    load_prefixed_state,
    prefixed_state,
)
from agents.validation import check_choice, check_float, check_int
from bandit_gym.rng import Stream

#: ``beta_0 = 1 / (2 sigma_0^2)``, ``sigma_0 = 1``: ``inverse_temperature="auto"``'s value before any reward, and the
#: temperature at which ``lambda_reg`` sets its prior, ``N(0, 1 / (2 beta_0 lambda))`` (``LMCTS``).
PRIOR_INVERSE_TEMPERATURE = 0.5


def _check_for_model(model: Any, neural: bool, model_class: type, schedule: str, preconditioner: str,
                     step_bound: float | None, batch_size: int | None, adaptive: bool) -> None:
    """One ValueError for a setting the model cannot take."""
    wrong = [(schedule == "inverse_lambda_max" and neural, "step_schedule must be 'inverse_t' or 'constant'",
              "'inverse_lambda_max' (the largest eigenvalue of the linear and glm models' Gram matrix)"),
             (preconditioner == "diagonal" and not neural, "preconditioner must be 'none'",
              "'diagonal'; the diagonal preconditioner needs a neural model ('mlp', an MLP or an nn.Module)"),
             (step_bound is not None and not neural, "step_bound must be None",
              f"{step_bound!r}; the bound is on the Gauss-Newton matrix of a neural model's squared loss"),
             (batch_size is not None and not model_class.supports_minibatch, "batch_size must be None (full batch)",
              f"{batch_size!r}; mini-batches need a model with a data history, e.g. model='glm'"),
             (adaptive and not neural, "inverse_temperature must be a number",
              "'auto'; the temperature from the data is for neural models (the squared loss's noise; the linear "
              "model's Gram matrix holds its ridge, and the logistic loss has no noise scale)")]
    for bad, rule, got in wrong:
        if bad:
            raise ValueError(f"{rule} for model={model!r}, got {got}")


class LMCTS(BanditAgent):
    """Langevin Monte Carlo Thompson sampling (Xu et al. 2022, Algorithm 1), batched over replicas.

    Round ``t`` plays ``argmax_x f(x, theta_t)``, where ``theta_t`` is drawn from ``exp(-beta L_t)``, ``L_t`` the
    model's loss on the rounds before ``t``, by a chain warm-started from ``theta_(t-1)``: by default ``K`` Langevin
    steps ``theta = theta - eta_t * grad L_t(theta) + sqrt(2 * eta_t / beta) * eps`` (:class:`agents.chains.langevin.
    Langevin`; the samplers of :mod:`agents.samplers` pass other chains). Every default is in :attr:`defaults`.

    **The linear model and the GLM**: features ``z = (x, e_k)`` with a constant per arm where the arms are one-hot
    blocks (``intercept``: :class:`agents.linear.ArmFeatures`), the penalty ``lambda D`` and the preconditioner
    ``S^2`` of the features' mean squares ``D = S^-2``, at ``eta_t = eta_0 / lambda_max(S V_t S)``, the step of the
    paper's Theorem 4.2 (:mod:`agents.chains.scaled_features`, :mod:`agents.chains.schedules`): nothing depends on
    the features' units (tested). Round 1 then plays ``theta = 0``. The paper's chain is
    ``step_schedule="inverse_t"``, ``intercept=False``. Measured: ``benchmarks/results/linear_grid.md``.

    **Neural models**: the Gauss-Newton diagonal preconditioner (:mod:`agents.chains.preconditioner`), a step bound
    on mini-batches (:class:`agents.chains.langevin.Langevin`), and the temperature from the data: for Gaussian noise
    of variance ``sigma^2`` the posterior is ``exp(-L_t / (2 sigma^2))``, so ``"auto"`` is ``beta_t = 1 / (2
    sigma_t^2)`` from the prequential errors (:class:`agents.models.noise.NoiseEstimate`), with the ridge at ``lambda
    beta_0 / beta_t`` so that the prior stays ``N(0, 1 / (2 beta_0 lambda))`` (:data:`PRIOR_INVERSE_TEMPERATURE`).
    Measured: ``docs/agents.md``, "Temperature from the data".

    When to use it:
        The first choice where the reward model is not known to be linear: the linear model on linear rewards (lowest
        with a fixed arm set), ``model="mlp"`` on nonlinear rewards and on classification data (lowest on Shuttle-v0 and
        Mushroom-v0 at its defaults). A round runs ``n_inner_steps`` gradient steps: where seconds matter more than
        regret, LinUCB or LinTS. Measured: docs/agents.md, "Choosing an agent".

    Args:
        env: The env (single or vector) the agent is sized for; None with ``n_arms``, ``dim`` (and ``num_replicas``).
        model: ``"linear"`` (squared loss; Gram matrix and moment vector, ``O(d^2)`` per step), ``"glm"`` (logistic
            negative log-likelihood), ``"mlp"`` (an MLP, squared loss; see :mod:`agents.models.mlp`), an
            :class:`agents.models.mlp.MLP`, or your own ``nn.Module`` mapping ``(..., d) -> (...)`` (R independent
            copies). Neural models: round 1 plays the initial network, and each step's noise is drawn when it runs.
        model_kwargs: Keywords of the model, e.g. ``{"hidden": (20, 20, 20), "activation": "relu"}``.
        step_size: ``eta_0 > 0``, a number or one per replica. None: :attr:`defaults` (by model and schedule).
        inverse_temperature: ``beta > 0``, a number or one per replica; the chain targets ``exp(-beta L_t)``.
            ``"auto"``: ``beta_t = 1 / (2 sigma_t^2)`` from the observed reward noise (neural models only). None:
            :attr:`defaults` (linear 10, glm 30, neural ``"auto"``). See :func:`paper_inverse_temperature`.
        n_inner_steps: Chain steps per round ``K`` (>= 1; one value for all replicas). None: :attr:`defaults`
            (linear 100, each ``O(d^2)``; glm 20 and neural 10, each ``O(B)``: a flat cost per round).
        lambda_reg: Ridge weight ``lambda > 0`` of the loss, a number or one per replica. None: 1, or 2 for neural
            models (the prior is ``N(0, 1 / (2 beta lambda))``; with ``"auto"``, ``N(0, 1 / (2 beta_0 lambda))``).
        step_schedule: ``"inverse_t"`` (``eta_t = eta_0 / t``), ``"constant"``, or ``"inverse_lambda_max"`` (the
            linear and glm models only): :mod:`agents.chains.schedules`. None: :attr:`defaults`.
        intercept: The linear and glm models' per-arm constants: None where the arms are one-hot blocks, True always,
            False never (as :class:`agents.LinUCB`'s). Neural models: must be None.
        scale_features: The linear and glm models' penalty ``lambda D`` and preconditioner ``S^2`` (above). None:
            True with ``"inverse_lambda_max"``, else False. Neural models: must be None.
        batch_size: Mini-batch size ``B`` (rows drawn uniformly with replacement), or None for full batch (a round then
            costs ``O(t)``). Only models with a data history (``"glm"``, neural) accept one. ``"auto"``: 64 for
            ``"glm"``, 32 for neural models, None for the linear model.
        preconditioner: ``"diagonal"`` (``M = diag(1 / U_t)``; neural models only) or ``"none"``. None:
            ``"diagonal"`` for neural models, ``"none"`` otherwise.
        step_bound: Cap on ``eta_k lambda_max(M H_k)`` of each mini-batch step (a number ``> 0``), or None. ``"auto"``:
            1 for neural models, None otherwise (only neural models accept one).
        train_every: Run the chain every ``n`` rounds only (``n >= 1``); between, keep the sample.
        chain: How the sample is drawn (:class:`agents.chains.target.Chain`); None: ``Langevin()``.
        seed: See :class:`agents.base.BanditAgent`.
        device: See :class:`agents.base.BanditAgent`.
        n_arms: See :class:`agents.base.BanditAgent`.
        dim: See :class:`agents.base.BanditAgent`.
        num_replicas: See :class:`agents.base.BanditAgent`.

    Raises:
        DivergenceError: From ``learn``/``update`` when the parameters become NaN or Inf (step size too large),
            naming the round and the step size.

    References:
        Xu, Zheng, Zheng, Zou, Zhang and Gu (2022), "Langevin Monte Carlo for Contextual Bandits", ICML. Welling and
        Teh (2011), "Bayesian learning via stochastic gradient Langevin dynamics", ICML.
    """

    #: Every default, per model: ``step_size`` per ``step_schedule``. Linear: the paper's K = 100 steps at the step of
    #: its Theorem 4.2 (``benchmarks/results/linear_grid.md``); glm: K = 20 on mini-batches of 64, ``eta_0 = 0.05``
    #: chosen on LogisticBandit-v0 (``benchmarks/results/grid_glm.md``); the paper's ``eta_0 / t`` steps 0.3 and 0.9.
    #: Neural (``benchmarks/results/quadratic_paper.md``): ``eta = 0.01`` of each coordinate's inverse curvature,
    #: ``lambda = 2`` (with ``beta_0 = 0.5`` the prior ``N(0, 0.5)``, wider than the He initialisation: the He-scale
    #: prior left 8 of 10 seeds exploiting one sign of the quadratic), K = 10 steps on batches of B = 32.
    defaults: dict[str, dict[str, Any]] = {
        "linear": {"step_size": {"inverse_lambda_max": 0.25, "inverse_t": 0.3, "constant": 0.3},
                   "inverse_temperature": 10.0, "lambda_reg": 1.0, "n_inner_steps": 100, "batch_size": None,
                   "step_schedule": "inverse_lambda_max", "preconditioner": "none", "step_bound": None,
                   "intercept": None},
        "glm": {"step_size": {"inverse_lambda_max": 0.05, "inverse_t": 0.9, "constant": 0.9},
                "inverse_temperature": 30.0, "lambda_reg": 1.0, "n_inner_steps": 20, "batch_size": 64,
                "step_schedule": "inverse_lambda_max", "preconditioner": "none", "step_bound": None, "intercept": None},
        "neural": {"step_size": {"inverse_t": 0.01, "constant": 0.01}, "inverse_temperature": "auto",
                   "lambda_reg": 2.0, "n_inner_steps": 10, "batch_size": 32, "step_schedule": "constant",
                   "preconditioner": "diagonal", "step_bound": 1.0},
    }

    def __init__(self, env: gym.Env | gym.vector.VectorEnv | None = None, *, model: Any = "linear",
                 step_size: Any = None, inverse_temperature: Any = None, n_inner_steps: int | None = None,
                 lambda_reg: Any = None, step_schedule: str | None = None, batch_size: int | str | None = "auto",
                 preconditioner: str | None = None, step_bound: float | str | None = "auto",
                 model_kwargs: dict | None = None, train_every: int = 1, intercept: bool | None = None,
                 scale_features: bool | None = None, chain: Chain | None = None,
                 seed: int | list[int] | None = None, device: str | torch.device = "cpu",
                 n_arms: int | None = None, dim: int | None = None, num_replicas: int | None = None) -> None:
        super().__init__(env, seed=seed, device=device, n_arms=n_arms, dim=dim, num_replicas=num_replicas)
        neural = is_neural(model)
        table = self.defaults["neural" if neural else check_choice("model", model, sorted(MODELS))]
        given = {"lambda_reg": lambda_reg, "step_schedule": step_schedule, "preconditioner": preconditioner,
                 "n_inner_steps": n_inner_steps, "inverse_temperature": inverse_temperature}
        value = {name: table[name] if v is None else v for name, v in given.items()}  # None: the table's
        self.lambda_reg = self._hyperparameter("lambda_reg", value["lambda_reg"], minimum=0, strict=True)
        self.step_schedule = check_choice("step_schedule", value["step_schedule"], STEP_SCHEDULES)
        self.preconditioner = check_choice("preconditioner", value["preconditioner"], ("none", "diagonal"))
        step_bound = table["step_bound"] if step_bound == "auto" else step_bound
        step_bound = None if step_bound is None else check_float("step_bound", step_bound, 0, strict=True)
        batch_size = table["batch_size"] if batch_size == "auto" else batch_size
        batch_size = None if batch_size is None else check_int("batch_size", batch_size)
        temperature = value["inverse_temperature"]
        if isinstance(temperature, str) and temperature != "auto":
            raise ValueError(f"inverse_temperature must be a number > 0, one per replica, or 'auto' (from the observed "
                             f"reward noise), got {temperature!r}")
        #: The linear and glm models' features ``z`` and their scales, and the bound on ``lambda_max(S V S)``.
        self.arm_features, self.scaling = None, None
        if not neural:
            scale_features = self.step_schedule == "inverse_lambda_max" if scale_features is None else scale_features
            if not isinstance(scale_features, bool):
                raise ValueError(f"scale_features must be True or False, got {scale_features!r}")
            intercept = table["intercept"] if intercept is None else intercept
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
        _check_for_model(model, neural, type(self.model), self.step_schedule, self.preconditioner, step_bound,
                         batch_size, isinstance(temperature, str))
        if isinstance(model, MLP):
            model, model_kwargs = "mlp", model.kwargs()  # saved as a description (block_arms included)
        self.train_every = check_int("train_every", train_every)
        self.n_inner_steps = check_int("n_inner_steps", value["n_inner_steps"])
        self.step_bound, self.batch_size = step_bound, batch_size
        self._hyperparameters.update(model=model, step_schedule=self.step_schedule, n_inner_steps=self.n_inner_steps,
                                     batch_size=batch_size, preconditioner=self.preconditioner,
                                     step_bound=step_bound, train_every=self.train_every)
        if model_kwargs is not None:
            self._hyperparameters["model_kwargs"] = dict(model_kwargs)
        step_size = table["step_size"][self.step_schedule] if step_size is None else step_size
        self.step_size = self._hyperparameter("step_size", step_size, minimum=0, strict=True)
        self.adaptive_temperature = isinstance(temperature, str)
        if self.adaptive_temperature:  # beta_t = 1 / (2 sigma_t^2), one pseudo-error of 1 (sigma_0 = 1)
            self._hyperparameters["inverse_temperature"] = "auto"
            self.noise = NoiseEstimate(self.num_replicas, self.device)  # sigma_t^2, 1 before any reward
            self._set_inverse_temperature(0.5 * self.noise.precision())  # (R,) beta_0 at first
        else:
            self.inverse_temperature = self._hyperparameter("inverse_temperature", temperature, minimum=0, strict=True)
        self.per_step_noise = getattr(self.model, "per_step_noise", False)
        self.theta = self.model.initial_params()  # (R, p)
        self.diagonal = (DiagonalPreconditioner(self.lambda_reg, self.model.n_params)
                         if self.preconditioner == "diagonal" else None)
        if self.arm_features is not None:
            self.scaling = ScaledFeatures(self.model, self.arm_features, self.lambda_reg, self.step_schedule,
                                       self.scale_features)
        self.chain = Langevin() if chain is None else chain
        self.chain.bind(self)
        #: The state saved beside the model's and ``theta``, by prefix (:meth:`_state`).
        self.parts = {prefix: part for prefix, part in (("chain", self.chain), ("preconditioner", self.diagonal),
                                                        ("features", self.scaling)) if part is not None}
        if not self.per_step_noise and not self.scale_features:
            self.theta = self._sample(1, self.theta)  # round 1's sample, from the prior
        # scaled features: round 1 plays theta = 0 (every score 0: an arm drawn uniformly at random), since the
        # features' scales, and with them the prior N(0, (2 beta lambda D)^-1), are unknown before a row is shown

    def _set_inverse_temperature(self, beta: torch.Tensor) -> None:
        """``beta_t`` of ``"auto"``, and the loss's ridge ``lambda beta_0 / beta_t`` that keeps the prior of
        ``exp(-beta_t L_t)`` at ``N(0, 1 / (2 beta_0 lambda))`` whatever ``beta_t`` (``beta_0 = 1 / (2 sigma_0^2)``)."""
        self.inverse_temperature = beta  # (R,)
        self.model.lambda_reg = self.lambda_reg * (PRIOR_INVERSE_TEMPERATURE / beta)  # (R,)

    def current_step_size(self, t: int) -> torch.Tensor:
        """``eta_t`` per replica ``(R,)`` of round ``t`` (:func:`agents.chains.schedules.step_size`)."""
        return step_size(self.step_schedule, self.step_size, t, None if self.scaling is None else self.scaling.top)

    def features(self, contexts: torch.Tensor) -> torch.Tensor:
        """The model's features of every arm: the linear model's ``z`` (:class:`agents.linear.ArmFeatures`),
        the contexts themselves for the others. ``(R, K, d) -> (R, K, p)``."""
        return contexts if self.arm_features is None else self.arm_features(contexts)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._argmax(self.model.scores(self.theta, self.features(contexts)))  # (R,)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        z = self.features(contexts)  # (R, K, p)
        x = chosen_rows(z, actions)  # (R, p)
        predicted = None  # the played arm's f(x_t; theta_t), from the sample that played it
        if self.diagonal is not None:  # U += 2 g(x_t; theta_t)^2
            predicted = self.diagonal.record(self.model, self.theta, x)  # (R, 1)
        if self.adaptive_temperature:  # the played sample's error on this round's reward, before learning it
            if predicted is None:
                predicted = self.model.scores(self.theta, x[:, None, :])  # (R, 1)
            self.noise.update(self.t, predicted[:, 0], rewards)
            self._set_inverse_temperature(0.5 * self.noise.precision())  # 1 / (2 sigma_t^2)
        self.model.add(x, rewards)  # (R, p), (R,)
        if self.scaling is not None:
            self.scaling.add(z, x, self.t + 1)
        if self.t % self.train_every == 0:
            self.theta = self._sample(self.t + 1, self.theta)

    def _potential(self) -> RewardModel:
        """What the chain samples from: the model (:class:`agents.samplers.FGLMCTS`: plus its feel-good term)."""
        return self.model

    def _sample(self, t: int, theta: torch.Tensor) -> torch.Tensor:
        """Round ``t``'s sample: the chain from ``theta`` on round ``t``'s target and draws (Algorithm 1, lines 5-8)."""
        potential = self._potential()
        eta = self.current_step_size(t)  # (R,)
        batches = self._minibatches(t, potential)  # (R, K (+ 1 with the preconditioner), B) or None
        curvature = None
        if self.diagonal is not None:  # U_t at the chain's start, on the first batch
            first = None if batches is None else batches[:, 0]
            curvature = lambda start: self.diagonal.round_curvature(potential, start, first)  # noqa: E731
            batches = None if batches is None else batches[:, 1:]
        # the bound caps steps on mini-batches of the model's loss (their n / B factor); a full-batch loss needs none
        bound = self.step_bound if batches is not None and self.batch_size is not None else None
        target = ChainRound(potential, t, self.n_inner_steps, eta, self.inverse_temperature, batches, curvature,
                            None if self.scaling is None else self.scaling.scale(), bound,
                            isinstance(self.model, LinearModel), self.per_step_noise,
                            lambda *draw: self._draws(*draw).to(self.device))
        return self._check_sample(t, eta, self.chain.sample(target, theta))

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

    def _minibatches(self, t: int, potential: Any) -> torch.Tensor | None:
        """Round ``t``'s rows ``(R, K (+ 1: the curvature's), B)``, uniform with replacement, or None (full batch);
        ``B`` is ``batch_size``, else the potential's term's (:class:`agents.models.feelgood.FeelGood`)."""
        size = self.batch_size if self.batch_size is not None else getattr(potential, "batch_size", None)
        if size is None or self.model.n_observations == 0:
            return None
        u = self._draws("uniform", Stream.MINIBATCH, (self.n_inner_steps + (self.diagonal is not None), size), t)
        return potential.sample_rows(u.to(self.device))

    def _state(self) -> dict[str, torch.Tensor]:
        state = agent_state(self.theta, self.model)
        for prefix, part in self.parts.items():
            state.update(prefixed_state(prefix, part))
        return {**state, **(self.noise.state_dict() if self.adaptive_temperature else {})}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.theta = load_agent_state(self.model, state)
        for prefix, part in self.parts.items():
            load_prefixed_state(prefix, part, state)
        if self.adaptive_temperature:
            self.noise.load_state_dict(state)
            self._set_inverse_temperature(0.5 * self.noise.precision())


def paper_inverse_temperature(beta_inv: float, dim: int, horizon: int) -> float:
    """The inverse temperature of the paper's reference configs: ``1 / (beta_inv * d * log T)``.

    Those configs grid over ``beta_inv`` (about 1e-7 to 1e-2) and scale the temperature ``1 / beta`` with ``d log T``;
    ``LMCTS`` takes the raw ``beta`` that this returns.
    """
    scale = check_int("dim", dim) * math.log(check_int("horizon", horizon, minimum=2))
    return 1.0 / (check_float("beta_inv", beta_inv, 0, strict=True) * scale)
