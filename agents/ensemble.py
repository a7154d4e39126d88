"""Ensemble sampling (Lu and Van Roy 2017): ``M`` perturbed models per replica, one drawn each round.

All ``R M`` members are one batch of the model; the linear model's members are solved exactly, the others take
gradient steps at the shared step-size schedule (:mod:`agents.chains.schedules`).
"""

from __future__ import annotations

from typing import Any

import torch

from agents.base import BanditAgent, chosen_rows
from agents.chains.scaled_features import NoScaling, ScaledFeatures, arm_features
from agents.chains.schedules import step_size
from agents.models.mlp import build_model, is_neural
from agents.models.reward import MODELS, LinearModel, agent_state, load_agent_state
from agents.models.settings import with_defaults
from agents.validation import check_choice, check_int
from bandit_gym import rng
from bandit_gym.rng import Stream


class EnsembleSampling(BanditAgent):
    """Ensemble sampling (Lu and Van Roy 2017): ``M`` perturbed models per replica, one drawn each round.

    Member ``m`` of replica ``r`` minimises ``sum_s loss(f(z_s; theta), r_s + z_{s,m}) + (theta - theta_{0,m})^T P
    (theta - theta_{0,m})``: every reward it learns from carries its own noise ``z ~ N(0, 1 / (2 beta))`` and it is
    pulled towards its own prior draw ``theta_{0,m} ~ N(0, (2 beta P)^-1)`` (neural models: towards its own
    initial weights, a randomised prior). The linear model sees LMC-TS's features ``z`` (per-arm constants on
    one-hot-block arms) with LMC-TS's penalty ``P = lambda D`` (``scale_features``; else ``P = lambda``; the glm
    model's default). For the
    linear model each member is then an exact sample of ``N(V^-1 b, (2 beta)^-1 V^-1)``, ``V = P + sum z z^T``,
    LMC-TS's target, and is solved exactly; other models take ``n_inner_steps`` gradient steps of size ``eta_t`` per
    round from the last fit. Round ``t`` plays the greedy arm of a member drawn uniformly (stream ``EXPLORE``). The
    ``R M`` members are one batch of the model (``R M`` model replicas).

    When to use it:
        The linear model, where each member is an exact sample. Measured at the defaults: docs/samplers.md,
        "Ensemble sampling at its defaults"; with an MLP under a grid, "Verdict".

    Args:
        model: As :class:`agents.lmcts.LMCTS` (the same default).
        model_kwargs: As :class:`agents.lmcts.LMCTS` (the same default).
        lambda_reg: As :class:`agents.lmcts.LMCTS` (the same default).
        inverse_temperature: ``beta``: the members' reward noise is ``N(0, 1 / (2 beta))`` and their prior
            ``N(0, (2 beta lambda D)^-1)``. None: :attr:`defaults` (linear 5, glm 30, neural 0.5); a number only,
            since the members are perturbed once, before any reward is seen.
        n_inner_steps: As :class:`agents.lmcts.LMCTS` (the same default).
        step_size: ``eta_0``; None: :attr:`defaults` (linear 0.3, glm 0.9, neural 0.05). Unused by the linear
            model (solved exactly).
        step_schedule: ``"inverse_t"`` (default: ``eta_t = eta_0 / t``, a fixed step on the mean loss) or
            ``"constant"`` (:mod:`agents.chains.schedules`). Unused by the linear model.
        intercept: As :class:`agents.lmcts.LMCTS` (linear and glm models; None: :attr:`defaults`, linear None:
            per-arm constants where the arms are one-hot blocks; glm False).
        scale_features: Penalise ``lambda D`` (``D``: each feature's mean square over the rows shown, renewed at
            rounds 2, 4, 8, ...) and draw the prior in the same scale, as LMC-TS does (linear and glm models;
            None: :attr:`defaults`, linear True, glm False). False: the penalty ``lambda``.
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

    #: Every default, per model. Linear: LMC-TS's features (per-arm constants on one-hot-block arms, the penalty
    #: ``lambda D``) and ``lambda_reg``, ``beta = 5``, chosen among 2, 3, 5 and 10 on LinearBanditFixed-v0,
    #: LinearBandit-v0 and the three UCI sets (``docs/samplers.md``, "Ensemble sampling at its defaults": colder
    #: ensembles left more seeds on a wrong fixed arm, warmer ones lost on Shuttle-v0 and changing arms). Glm: the
    #: plain features (LMC-TS's are not measured with it), ``beta = 30``. Neural: ``eta_0 = 0.05`` on ``eta_0 / t``
    #: (a constant 0.01 on the summed loss diverged by round 24 on QuadraticBandit-v0: the curvature grows with the
    #: rows) and a fixed ``beta = 0.5``.
    defaults: dict[str, dict[str, Any]] = {
        "linear": {"inverse_temperature": 5.0, "lambda_reg": 1.0, "step_size": 0.3, "step_schedule": "inverse_t",
                   "n_inner_steps": 100, "intercept": None, "scale_features": True},
        "glm": {"inverse_temperature": 30.0, "lambda_reg": 1.0, "step_size": 0.9, "step_schedule": "inverse_t",
                "n_inner_steps": 100, "intercept": False, "scale_features": False},
        "neural": {"inverse_temperature": 0.5, "lambda_reg": 2.0, "step_size": 0.05, "step_schedule": "inverse_t",
                   "n_inner_steps": 10, "intercept": None, "scale_features": None},
    }

    def __init__(self, env: Any = None, *, model: Any = "linear", n_members: int = 10, inverse_temperature: Any = None,
                 lambda_reg: Any = None, step_size: Any = None, step_schedule: str | None = None,
                 n_inner_steps: int | None = None, model_kwargs: dict | None = None, intercept: bool | None = None,
                 scale_features: bool | None = None,
                 seed: int | list[int] | None = None, device: str | torch.device = "cpu",
                 n_arms: int | None = None, dim: int | None = None, num_replicas: int | None = None) -> None:
        super().__init__(env, seed=seed, device=device, n_arms=n_arms, dim=dim, num_replicas=num_replicas)
        neural = is_neural(model)
        table = self.defaults["neural" if neural else check_choice("model", model, sorted(MODELS))]
        value = with_defaults(table, inverse_temperature=inverse_temperature, lambda_reg=lambda_reg,
                              step_size=step_size, step_schedule=step_schedule, n_inner_steps=n_inner_steps,
                              intercept=intercept, scale_features=scale_features)
        self.n_members = M = check_int("n_members", n_members)
        self.lambda_reg = self._hyperparameter("lambda_reg", value["lambda_reg"], minimum=0, strict=True)
        self.step_schedule = check_choice("step_schedule", value["step_schedule"], ("inverse_t", "constant"))
        #: The linear and glm models' features ``z`` (LMC-TS's: :class:`agents.linear.ArmFeatures`); None: the contexts.
        self.arm_features, self.scale_features = arm_features(self, model, neural, value["intercept"],
                                                              value["scale_features"])
        members = rng.random_words(self.keys, Stream.INIT, 1 << 32, M).reshape(-1)  # (R M,) one key per member
        self.model = build_model(model, model_kwargs, self.num_replicas * M,
                                 self.dim if neural else self.arm_features.model_dim,
                                 self.lambda_reg.repeat_interleave(M), self.device, members)
        self.inverse_temperature = self._hyperparameter("inverse_temperature", value["inverse_temperature"],
                                                        minimum=0, strict=True)
        self.step_size = self._hyperparameter("step_size", value["step_size"], minimum=0, strict=True)
        self.n_inner_steps = check_int("n_inner_steps", value["n_inner_steps"])
        self._hyperparameters.update(model=model, n_members=M, step_schedule=self.step_schedule,
                                     n_inner_steps=self.n_inner_steps)
        if model_kwargs is not None:
            self._hyperparameters["model_kwargs"] = dict(model_kwargs)
        self._exact = isinstance(self.model, LinearModel)
        #: ``D`` and the penalty ``lambda D`` of the linear and glm models (LMC-TS's), none for neural models.
        self.scaling = NoScaling() if neural else ScaledFeatures(self.model, self.arm_features, self.lambda_reg,
                                                                 self.step_schedule, self.scale_features, M)
        if neural:
            self.prior = self.model.initial_params()  # (R M, p)
        else:  # theta_0 = S u, u ~ N(0, I / (2 beta lambda)): N(0, (2 beta lambda D)^-1), the penalty's prior
            prior_sd = 1.0 / torch.sqrt(2 * self.inverse_temperature * self.lambda_reg)  # (R,)
            z = rng.normal(members.cpu(), Stream.INIT, 0, (self.model.n_params,)).to(self.device)  # (R M, p)
            self.prior = z * prior_sd.repeat_interleave(M)[:, None]
        self.theta = self.anchor.clone()  # (R M, p): round 1 plays a prior draw

    def _per_member(self, values: torch.Tensor) -> torch.Tensor:
        """``(R, ...) -> (R M, ...)``: a replica's values for each of its members."""
        return values.repeat_interleave(self.n_members, dim=0)

    @property
    def anchor(self) -> torch.Tensor:
        """Each member's ``theta_0`` ``(R M, p)``: its prior draw, times ``S = D^(-1/2)`` with ``scale_features``."""
        scale = self.scaling.scale()  # (R, p) or None
        return self.prior if scale is None else self.prior * self._per_member(scale)

    def features(self, contexts: torch.Tensor) -> torch.Tensor:
        """The model's features of every arm (LMC-TS's :meth:`~agents.lmcts.LMCTS.features`), ``(R, K, p)``."""
        return contexts if self.arm_features is None else self.arm_features(contexts)

    def _members(self) -> torch.Tensor:
        """This round's member per replica ``(R,)``, uniform over ``M`` (stream ``EXPLORE``)."""
        u = self._draws("uniform", Stream.EXPLORE, ()).to(self.device).double()
        return (u * self.n_members).long()  # u < 1 on a 2**-24 grid: exact, never M

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        theta = self.theta.reshape(self.num_replicas, self.n_members, -1)  # (R, M, p)
        members = self._members()
        chosen = theta.gather(1, members[:, None, None].expand(-1, 1, theta.shape[2]))[:, 0]  # (R, p)
        return self._argmax(self.model.scores(chosen, self.features(contexts)))  # R vectors of the R M-replica model

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        M = self.n_members
        z = self.features(contexts)  # (R, K, p)
        x = chosen_rows(z, actions)  # (R, p)
        self.scaling.add(z, x, self.t + 1)  # D from the rows shown, renewed at rounds 2, 4, 8, ...
        x = x.repeat_interleave(M, dim=0)  # (R M, p)
        sd = 1.0 / torch.sqrt(2 * self.inverse_temperature)  # (R,)
        z = self._draws("normal", Stream.SAMPLE, (M,)).to(self.device) * sd[:, None]  # (R, M)
        self.model.add(x, self._per_member(rewards) + z.reshape(-1))
        self.theta = self._fit(self.theta)
        self._check_finite(self.theta, "the members' parameters", self.step_size.tolist())

    def _fit(self, theta: torch.Tensor) -> torch.Tensor:
        """Each member's minimiser of its loss (linear: exact), from ``theta`` (other models: gradient steps). The
        penalty ``P`` is ``lambda D`` with ``scale_features``, else ``lambda``."""
        penalty = getattr(self.model, "penalty", None)
        penalty = self._per_member(self.lambda_reg)[:, None] if penalty is None else penalty  # (R M, 1 or p)
        anchor = self.anchor
        if self._exact:  # V theta = b_m + P theta_0
            return torch.linalg.solve(self.model.gram, self.model.moment + penalty * anchor)
        eta = self._per_member(step_size(self.step_schedule, self.step_size, self.t + 1))[:, None]  # (R M, 1)
        for _ in range(self.n_inner_steps):
            theta = theta - eta * (self.model.gradient(theta) - 2 * penalty * anchor)
        return theta

    def _state(self) -> dict[str, torch.Tensor]:
        return agent_state(self.theta, self.model, {"features": self.scaling})

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.theta = load_agent_state(self.model, state, {"features": self.scaling})
