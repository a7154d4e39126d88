"""LMC-TS: Thompson sampling with posterior samples from Langevin Monte Carlo.

Every round the agent runs ``K`` steps of Langevin dynamics on its loss,
warm-started from the previous round's last iterate, and plays the arm that is
best for the last iterate. One agent object runs ``R`` independent replicas as
one batch (see :class:`agents.base.BanditAgent`).
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import torch

from agents import _math, _rng_streams
from agents._lmc_models import MODELS
from agents.base import BanditAgent, DivergenceError, check_int, check_positive
from bandit_gym import _rng

STEP_SCHEDULES = ("inverse_t", "constant")


def paper_inverse_temperature(beta_inv: float, dim: int, horizon: int) -> float:
    """The inverse temperature of the paper's reference configs: ``1 / (beta_inv * d * log T)``.

    Those configs grid over ``beta_inv`` (about 1e-7 to 1e-2) and scale the temperature
    ``1 / beta`` with ``d log T``; ``LMCTS`` takes the raw ``beta`` that this returns.
    """
    scale = check_int("dim", dim) * math.log(check_int("horizon", horizon, minimum=2))
    return 1.0 / (check_positive("beta_inv", beta_inv) * scale)


class LMCTS(BanditAgent):
    """Langevin Monte Carlo Thompson sampling (Xu et al. 2022, Algorithm 1), batched over replicas.

    Round ``t`` plays ``argmax_x f(x, theta_t)``, where ``theta_t`` is the last of
    ``K`` Langevin steps on the loss ``L_t`` of the rounds before ``t``:

        theta <- theta - eta_t grad L_t(theta) + sqrt(2 eta_t / beta) eps,   eps ~ N(0, I),

    started from ``theta_(t-1)`` (warm start). ``eta_t = eta_0 / t`` (default) or
    ``eta_0``; the noise scale always uses the current ``eta_t``. With the linear model
    and a fixed step ``eta`` the chain is stationary at
    ``N(V^-1 b, (2 beta)^-1 V^-1 (I - eta V)^-1)`` (Proposition 3.1, corrected).

    Args:
        env: The env (single or batched) the agent is sized for; None with ``n_arms``,
            ``dim`` (and ``num_replicas``).
        model: Reward model: ``"linear"`` (squared loss, sufficient statistics ``V_t``,
            ``b_t``; an inner step is ``O(d^2)`` whatever the history) or ``"glm"``
            (logistic negative log-likelihood).
        step_size: Initial step size ``eta_0`` (> 0). None: the model's default, chosen by the
            grid search in ``docs/agents.md`` (linear 0.3, glm 0.9).
        inverse_temperature: Inverse temperature ``beta`` (> 0); the chain targets
            ``exp(-beta L_t)``. None: the model's default (linear 10, glm 30). See
            :func:`paper_inverse_temperature` for the paper's scaling.
        n_inner_steps: Langevin steps per round ``K_t`` (>= 1).
        lambda_reg: Ridge weight ``lambda`` (> 0) of the loss.
        step_schedule: ``"inverse_t"`` (``eta_t = eta_0 / t``) or ``"constant"`` (``eta_t = eta_0``).
        batch_size: Mini-batch size ``B`` of the gradients (stochastic gradient Langevin
            dynamics; indices drawn uniformly with replacement), or None for full-batch
            gradients. Only models with a data history (``"glm"``) accept it.
        seed: Seed of replica 0; replica ``r`` uses ``seed + r``.
        device: ``"auto"``, ``"cpu"`` or ``"cuda"``.

    Raises:
        DivergenceError: From ``learn``/``update`` when the parameters become NaN or Inf
            (step size too large), naming the round and the step size.

    References:
        Xu, Zheng, Zheng, Zou, Zhang and Gu (2022), "Langevin Monte Carlo for Contextual
        Bandits", ICML. Welling and Teh (2011), "Bayesian learning via stochastic
        gradient Langevin dynamics", ICML.
    """

    def __init__(
        self,
        env: gym.Env | gym.vector.VectorEnv | None = None,
        *,
        model: str = "linear",
        step_size: float | None = None,
        inverse_temperature: float | None = None,
        n_inner_steps: int = 100,
        lambda_reg: float = 1.0,
        step_schedule: str = "inverse_t",
        batch_size: int | None = None,
        seed: int | None = None,
        device: str | torch.device = "auto",
        n_arms: int | None = None,
        dim: int | None = None,
        num_replicas: int | None = None,
    ) -> None:
        if model not in MODELS:
            raise ValueError(f"model must be one of {sorted(MODELS)}, got {model!r}")
        if step_schedule not in STEP_SCHEDULES:
            raise ValueError(f"step_schedule must be one of {list(STEP_SCHEDULES)}, got {step_schedule!r}")
        self.model_name, self.step_schedule = model, step_schedule
        model_class = MODELS[model]
        self.step_size = check_positive("step_size", model_class.default_step_size if step_size is None else step_size)
        self.inverse_temperature = check_positive(
            "inverse_temperature",
            model_class.default_inverse_temperature if inverse_temperature is None else inverse_temperature,
        )
        self.n_inner_steps = check_int("n_inner_steps", n_inner_steps)
        self.lambda_reg = check_positive("lambda_reg", lambda_reg)
        if batch_size is not None:
            batch_size = check_int("batch_size", batch_size)
            if not MODELS[model].supports_minibatch:
                raise ValueError(
                    f"batch_size must be None (full batch) for model={model!r}, got {batch_size!r}; "
                    "mini-batches need a model with a data history, e.g. model='glm'"
                )
        self.batch_size = batch_size
        super().__init__(env, seed=seed, device=device, n_arms=n_arms, dim=dim, num_replicas=num_replicas)
        self.model = MODELS[model](self.num_replicas, self.dim, self.lambda_reg, self.device)
        self.theta = self.model.initial_params()  # (R, p)
        # Each _rng call has a ~0.2 ms fixed cost: fetch the draws of several rounds at once
        # (at most ~2^20 numbers), still a pure function of (seed, stream, round).
        per_round = self.num_replicas * self.n_inner_steps * self.model.n_params
        block = int(min(32, max(1, 2**20 // per_round)))
        steps = self.n_inner_steps
        self._noise = _rng.BlockDraws("normal", _rng_streams.SAMPLE, (steps, self.model.n_params), block)
        if batch_size is not None:
            self._batch_draws = _rng.BlockDraws("uniform", _rng_streams.MINIBATCH, (steps, batch_size), block)
        self._sample(1)  # the parameters of round 1 (a chain on the prior alone)

    def hyperparameters(self) -> dict[str, Any]:
        return {
            "model": self.model_name, "step_size": self.step_size,
            "inverse_temperature": self.inverse_temperature, "n_inner_steps": self.n_inner_steps,
            "lambda_reg": self.lambda_reg, "step_schedule": self.step_schedule, "batch_size": self.batch_size,
        }

    def current_step_size(self, t: int) -> float:
        """``eta_t``: ``eta_0 / t`` or ``eta_0``."""
        return self.step_size / t if self.step_schedule == "inverse_t" else self.step_size

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._argmax(self.model.scores(self.theta, contexts))  # (R,)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        rows = torch.arange(self.num_replicas, device=self.device)
        self.model.add(contexts[rows, actions], rewards)  # (R, d), (R,)
        self._sample(self.t + 1)

    def _sample(self, t: int) -> None:
        """Run round ``t``'s chain from the current ``theta`` (its draws are keyed on ``t``)."""
        eta = self.current_step_size(t)
        noise_scale = math.sqrt(2.0 * eta / self.inverse_temperature)
        noise = self._noise(self.keys, t)  # (R, K, p)
        batches = None
        if self.batch_size is not None and self.model.count > 0:
            u = self._batch_draws(self.keys, t)  # (R, K, B) uniform [0, 1)
            batches = (u * self.model.count).long().clamp_(max=self.model.count - 1)  # (R, K, B) indices
        theta = self.model.chain(self.theta, eta, noise_scale, noise, batches)  # (R, p)
        if not _math.all_finite(theta):
            raise DivergenceError(
                f"LMCTS: the parameters sampled for round {t} became NaN or Inf with step size "
                f"eta_t = {eta:g} (step_size={self.step_size:g}, {self.step_schedule}); try a smaller step_size"
            )
        self.theta = theta

    def _get_state(self) -> dict[str, torch.Tensor]:
        return {"theta": self.theta, **{f"model.{k}": v for k, v in self.model.state().items()}}

    def _set_state(self, state: dict[str, torch.Tensor]) -> None:
        self.theta = state["theta"]
        self.model.load_state({k.removeprefix("model."): v for k, v in state.items() if k.startswith("model.")})
