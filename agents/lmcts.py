"""LMC-TS: Thompson sampling with posterior samples from Langevin Monte Carlo (Xu et al. 2022): a model plus a chain.

A round, in the order it runs: ``_select`` plays ``argmax_x f(x; theta_t)`` (ties at random); ``_observe`` adds
``(x_t, r_t)`` to the model's data, then :meth:`LMCTS._sample` runs round ``t + 1``'s chain (Algorithm 1, lines 5-8)
from ``theta_t``. Round 1's chain, on the prior alone, runs in ``__init__``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch

from agents.base import BanditAgent, DivergenceError, chosen_rows
from agents.chains.langevin import Langevin
from agents.chains.preconditioner import DiagonalPreconditioner, NoPreconditioner
from agents.chains.scaled_features import NoScaling, ScaledFeatures, arm_features
from agents.chains.schedules import STEP_SCHEDULES, step_size
from agents.chains.target import Chain, ChainRound, ModelPotential
from agents.chains.temperature import temperature_from
from agents.models.mlp import MLP, build_model, is_neural
from agents.models.reward import MODELS, LinearModel, agent_state, load_agent_state
from agents.models.settings import check_for_model, with_defaults
from agents.validation import check_choice, check_float, check_int
from bandit_gym.rng import Stream


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
    on mini-batches (:class:`agents.chains.langevin.Langevin`), and the temperature from the data, ``"auto"``:
    ``beta_t = 1 / (2 sigma_t^2)`` from the prequential errors, with the ridge at ``lambda beta_0 / beta_t`` so that
    the prior stays put (:mod:`agents.chains.temperature`, which says why; measured: ``docs/agents.md``).

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
            :attr:`defaults` (linear 10, glm 30, neural ``"auto"``). See :mod:`agents.chains.temperature`.
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
        "linear": {"step_size": {"inverse_lambda_max": 0.25, "inverse_t": 0.3, "constant": 0.3}, "intercept": None,
                   "inverse_temperature": 10.0, "lambda_reg": 1.0, "n_inner_steps": 100, "batch_size": None,
                   "step_schedule": "inverse_lambda_max", "preconditioner": "none", "step_bound": None},
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
        value = with_defaults(table, lambda_reg=lambda_reg, step_schedule=step_schedule, preconditioner=preconditioner,
                              n_inner_steps=n_inner_steps, inverse_temperature=inverse_temperature,
                              step_bound=step_bound, batch_size=batch_size, intercept=intercept)
        self.lambda_reg = self._hyperparameter("lambda_reg", value["lambda_reg"], minimum=0, strict=True)
        self.step_schedule = check_choice("step_schedule", value["step_schedule"], STEP_SCHEDULES)
        preconditioner = check_choice("preconditioner", value["preconditioner"], ("none", "diagonal"))
        bound, size = value["step_bound"], value["batch_size"]
        self.step_bound = None if bound is None else check_float("step_bound", bound, 0, strict=True)  # None: none
        self.batch_size = None if size is None else check_int("batch_size", size)  # None: full batch
        #: ``beta``: fixed, or ``beta_t`` from the reward noise (:mod:`agents.chains.temperature`).
        self.temperature = temperature_from(value["inverse_temperature"])
        #: The linear and glm models' features ``z`` (:class:`agents.linear.ArmFeatures`); None: the contexts.
        self.arm_features, self.scale_features = arm_features(self, model, neural, value["intercept"], scale_features)
        #: Features per arm the model sees (``d``, plus ``K`` per-arm constants with the linear model's ``intercept``).
        self.model_dim = self.dim if neural else self.arm_features.model_dim
        self.model = build_model(model, model_kwargs, self.num_replicas, self.model_dim, self.lambda_reg, self.device,
                                 self.keys)
        check_for_model(model, neural, type(self.model), self.step_schedule, preconditioner, self.step_bound,
                        self.batch_size, isinstance(value["inverse_temperature"], str))
        if isinstance(model, MLP):
            model, model_kwargs = "mlp", model.kwargs()  # saved as a description (block_arms included)
        self.train_every = check_int("train_every", train_every)
        self.n_inner_steps = check_int("n_inner_steps", value["n_inner_steps"])
        self._hyperparameters.update(model=model, step_schedule=self.step_schedule, n_inner_steps=self.n_inner_steps,
                                     batch_size=self.batch_size, preconditioner=preconditioner,
                                     step_bound=self.step_bound, train_every=self.train_every)
        if model_kwargs is not None:
            self._hyperparameters["model_kwargs"] = dict(model_kwargs)
        step_size = table["step_size"][self.step_schedule] if step_size is None else step_size
        self.step_size = self._hyperparameter("step_size", step_size, minimum=0, strict=True)
        self.temperature.bind(self)  # "auto": beta_0, one pseudo-error of 1 (sigma_0 = 1)
        self.per_step_noise = getattr(self.model, "per_step_noise", False)
        self.theta = self.model.initial_params()  # (R, p)
        #: ``M = diag(1 / U_t)`` for neural models (:mod:`agents.chains.preconditioner`), or none.
        self.preconditioner = (DiagonalPreconditioner(self.lambda_reg, self.model.n_params)
                               if preconditioner == "diagonal" else NoPreconditioner())
        #: The linear and glm models' scales ``S`` and bound on ``lambda_max(S V S)`` (none for neural models).
        self.scaling = NoScaling() if neural else ScaledFeatures(self.model, self.arm_features, self.lambda_reg,
                                                                 self.step_schedule, self.scale_features)
        #: What the chain samples from: the model's loss (:class:`agents.samplers.FGLMCTS`: plus its feel-good term).
        self.potential = ModelPotential(self.model)
        self.chain = Langevin() if chain is None else chain
        self.chain.bind(self)
        if not self.per_step_noise and not self.scale_features:
            self.theta = self._sample(1, self.theta)  # round 1's sample, from the prior
        # scaled features: round 1 plays theta = 0 (every score 0: an arm drawn uniformly at random), since the
        # features' scales, and with them the prior N(0, (2 beta lambda D)^-1), are unknown before a row is shown

    @property
    def inverse_temperature(self) -> torch.Tensor:
        """``beta`` per replica ``(R,)`` (``beta_t`` of the round under ``"auto"``)."""
        return self.temperature.value()

    @property
    def parts(self) -> dict[str, Any]:
        """The parts saved beside the model and ``theta``, by prefix; the potential's state is its term's arm sets."""
        return {"chain": self.chain, "preconditioner": self.preconditioner, "features": self.scaling,
                "contexts": self.potential}

    def current_step_size(self, t: int) -> torch.Tensor:
        """``eta_t`` per replica ``(R,)`` of round ``t`` (:func:`agents.chains.schedules.step_size`)."""
        return step_size(self.step_schedule, self.step_size, t, self.scaling.top)

    def features(self, contexts: torch.Tensor) -> torch.Tensor:
        """The model's features of every arm: the linear model's ``z`` (:class:`agents.linear.ArmFeatures`),
        the contexts themselves for the others. ``(R, K, d) -> (R, K, p)``."""
        return contexts if self.arm_features is None else self.arm_features(contexts)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._argmax(self.model.scores(self.theta, self.features(contexts)))  # (R,)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        z = self.features(contexts)  # (R, K, p)
        x = chosen_rows(z, actions)  # (R, p)
        self.potential.observe(z)  # a term's arm sets
        predicted = self.preconditioner.record(self.model, self.theta, x)  # U += 2 g(x_t; theta_t)^2; f(x_t) or None
        self.temperature.observe(self.t, self.theta, x, rewards, predicted)  # "auto": the error before learning r_t
        self.model.add(x, rewards)  # (R, p), (R,)
        self.scaling.add(z, x, self.t + 1)
        if self.t % self.train_every == 0:
            self.theta = self._sample(self.t + 1, self.theta)

    def _sample(self, t: int, theta: torch.Tensor) -> torch.Tensor:
        """Round ``t``'s sample: the chain from ``theta`` on round ``t``'s target and draws (Algorithm 1, lines 5-8)."""
        potential = self.potential.current()
        eta = self.current_step_size(t)  # (R,)
        batches = self._minibatches(t, potential)  # (R, K (+ 1 with the preconditioner), B) or None
        curvature, batches = self.preconditioner.for_round(potential, batches)  # U_t at the start, on the first batch
        # the bound caps steps on mini-batches of the model's loss (their n / B factor); a full-batch loss needs none
        bound = self.step_bound if batches is not None and self.batch_size is not None else None
        target = ChainRound(potential, t, self.n_inner_steps, eta, self.inverse_temperature, batches, curvature,
                            self.scaling.scale(), bound, isinstance(self.model, LinearModel), self.per_step_noise,
                            lambda *draw: self._draws(*draw).to(self.device))
        return self.chain.sample(target, theta)

    def _check_learned(self, last_round: int) -> None:
        """A :class:`DivergenceError` naming the round and the step size if the sample has a NaN or Inf (a NaN stays in
        every later chain's sample): after each ``update``, every :data:`agents.base.CHECK_ROUNDS` rounds of a loop."""
        diverged = ~torch.isfinite(self.theta).all(dim=1)  # (R,)
        if bool(diverged.any()):
            t, r = last_round + 1, int(diverged.nonzero()[0, 0])
            raise DivergenceError(
                f"LMCTS: the parameters sampled by round {t} became NaN or Inf with step size eta_t = "
                f"{self.current_step_size(t)[r].item():.6g} (replica {r}: step_size={self.step_size[r].item():.6g}, "
                f"{self.step_schedule}); try a smaller step_size")

    def _minibatches(self, t: int, potential: Any) -> torch.Tensor | None:
        """Round ``t``'s rows ``(R, K (+ 1: the curvature's), B)``, uniform with replacement, or None (full batch);
        ``B`` is ``batch_size``, else the potential's term's (:class:`agents.models.feelgood.FeelGood`)."""
        size = self.batch_size if self.batch_size is not None else getattr(potential, "batch_size", None)
        if size is None or self.model.n_observations == 0:
            return None
        u = self._draws("uniform", Stream.MINIBATCH, (self.n_inner_steps + self.preconditioner.n_batches, size), t)
        return potential.sample_rows(u.to(self.device))

    def _state(self) -> dict[str, torch.Tensor]:
        return {**agent_state(self.theta, self.model, self.parts), **self.temperature.state_dict()}  # unprefixed

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.theta = load_agent_state(self.model, state, self.parts)
        self.temperature.load_state_dict(state)  # last: "auto" sets the model's ridge from the noise estimate
