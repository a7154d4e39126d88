"""Neural baselines of the LMC-TS paper (Section 5): NeuralUCB, NeuralTS, Neural-LinUCB, Neural epsilon-greedy.

Each keeps a neural reward model ``f(x; theta)`` (:mod:`agents.models.mlp`: ``model="mlp"``, an
:class:`agents.models.mlp.MLP`, or your own ``nn.Module``) trained on the same loss as neural LMC-TS,
``L_t(theta) = sum_i (f(x_i; theta) - r_i)^2 + lambda ||theta||^2``, by ``n_inner_steps`` gradient
steps every ``train_every`` rounds, warm-started, with step ``eta_t = eta_0 / t`` (the sum over
``t - 1`` rows makes this a constant step on the mean loss), full-batch or on mini-batches
(``batch_size``, rows uniform with replacement, stream ``MINIBATCH``). They differ in how they explore.

One round, in the order it runs: ``_select`` (scores, then ``_argmax``: ties at random) and
``_observe`` (add the played row; update the exploration statistics; train).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from agents.base import BanditAgent, chosen_rows
from agents.linear import EpsilonGreedyRule, sherman_morrison
from agents.models.mlp import NEURAL_LAMBDA_REG, MLPModel, build_model
from agents.models.noise import NoiseEstimate
from agents.models.reward import RewardModel, agent_state, load_agent_state
from agents.validation import check_int
from bandit_gym.rng import Stream


def gradient_steps(model: RewardModel, theta: torch.Tensor, step_size: torch.Tensor, n_steps: int,
                   batches: torch.Tensor | None = None) -> torch.Tensor:
    """``n_steps`` of gradient descent ``theta <- theta - eta grad L_t(theta)``: ``(R, p), (R,) -> (R, p)``.

    ``batches``: mini-batch row indices per step ``(R, n_steps, B)``, or None for full batch.
    """
    for k in range(n_steps):
        theta = theta - step_size[:, None] * model.gradient(theta, None if batches is None else batches[:, k])
    return theta


class _NeuralAgent(BanditAgent):
    """A neural reward model trained by gradient descent; subclasses add the exploration.

    Args:
        env: The env, or None with ``n_arms``, ``dim`` (and ``num_replicas``).
        model: ``"mlp"``, an :class:`agents.models.mlp.MLP`, or an ``nn.Module`` mapping ``(..., d) -> (...)``.
        model_kwargs: Keywords of the model, e.g. ``{"hidden": (20, 20, 20), "activation": "relu"}``.
        exploration_scale: ``nu`` (UCB / TS), ``alpha`` (Neural-LinUCB) or ``c`` (epsilon-greedy),
            ``>= 0``; a number or one per replica. None: the agent's default (NeuralTS 9, NeuralUCB 31.6,
            Neural-LinUCB 3, epsilon-greedy 1). NeuralUCB's, NeuralTS's and Neural-LinUCB's widths are also
            scaled by the reward noise ``sigma_t`` (``noise_scale``, :class:`_WidthAgent`).
        lambda_reg: ``lambda > 0``: the loss's ridge weight and the design matrix's prior (default 1e-3,
            see ``agents.models.mlp.NEURAL_LAMBDA_REG``).
        step_size: ``eta_0 > 0`` of ``eta_t = eta_0 / t``; a number or one per replica. None: the agent's
            default (NeuralTS and NeuralUCB 0.003, Neural-LinUCB and epsilon-greedy 0.01).
        n_inner_steps: Gradient steps per training round (default 10; the paper: 100).
        batch_size: Mini-batch size ``B`` (default 32), or None for full-batch gradients. With the defaults a
            round costs the same at round 10,000 as at round 10 (``K`` steps on ``B`` rows, exploration
            statistics of size ``p``); full batches make a round ``O(t)`` and a run ``O(T^2)``.

    The defaults of ``exploration_scale`` and ``step_size`` are the best of a grid on ``QuadraticBandit-v0``
    with ``n_inner_steps=10``, ``batch_size=32``, ``lambda = 1e-3`` (T = 3,000, 4 seeds;
    ``benchmarks/results/quadratic_paper.md``; NeuralTS's ``nu`` since chosen by its stuck seeds over 50, see
    :class:`NeuralTS`): tuned on one problem and this budget, a starting point elsewhere. ``eta_0 K``
    (``K = n_inner_steps``) sets how hard the network fits its history: the step on the mean loss is ``2 eta_0``
    every round, so early rows are revisited about ``K B ln(t / i)`` times; with ``eta_0 = 0.1`` the networks
    fitted the noise (training error 0.13-0.6 against a noise variance of 1).
        train_every: Train every ``n`` rounds (``n >= 1``).
        seed, device, n_arms, dim, num_replicas: See :class:`agents.base.BanditAgent`.
    """

    default_exploration_scale = 1.0
    default_step_size = 0.01

    def __init__(self, env=None, *, model: Any = "mlp", model_kwargs: dict | None = None,
                 exploration_scale: Any = None, lambda_reg: Any = NEURAL_LAMBDA_REG, step_size: Any = None,
                 n_inner_steps: int = 10, batch_size: int | None = 32, train_every: int = 1, **kwargs) -> None:
        if "n_grad_steps" in kwargs:
            raise TypeError(f"{type(self).__name__} got an unexpected keyword argument 'n_grad_steps'; the gradient "
                            f"steps per training round are n_inner_steps")
        super().__init__(env, **kwargs)
        self.lambda_reg = self._hyperparameter("lambda_reg", lambda_reg, minimum=0, strict=True)
        self.model = build_model(model, model_kwargs, self.num_replicas, self.dim, self.lambda_reg, self.device,
                                 self.keys)
        if not getattr(self.model, "per_step_noise", False):
            raise ValueError(f"model must be a neural model ('mlp', an MLP or an nn.Module), got {model!r}")
        self.exploration_scale = self._hyperparameter(
            "exploration_scale", self.default_exploration_scale if exploration_scale is None else exploration_scale,
            minimum=0)
        self.step_size = self._hyperparameter(
            "step_size", self.default_step_size if step_size is None else step_size, minimum=0, strict=True)
        self.n_inner_steps = check_int("n_inner_steps", n_inner_steps)
        self.batch_size = None if batch_size is None else check_int("batch_size", batch_size)
        self.train_every = check_int("train_every", train_every)
        self._hyperparameters.update(model=model, n_inner_steps=self.n_inner_steps, batch_size=self.batch_size,
                                     train_every=self.train_every)
        if model_kwargs is not None:
            self._hyperparameters["model_kwargs"] = dict(model_kwargs)
        self.theta = self.model.initial_params()  # (R, p)

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        x = chosen_rows(contexts, actions)  # (R, d)
        self._explore_update(x)
        self.model.add(x, rewards)
        if self.t % self.train_every == 0:
            eta = self.step_size / self.t  # eta_t (R,): L_t sums t rows
            self.theta = gradient_steps(self.model, self.theta, eta, self.n_inner_steps, self._minibatches())
            self._check_finite(self.theta, "the network's parameters",
                               f"eta_t = eta_0 / t = {self.step_size[0].item():.6g} / {self.t}")

    def _explore_update(self, x: torch.Tensor) -> None:
        """Update the exploration statistics with the played arms ``(R, d)`` (before training)."""

    def _minibatches(self) -> torch.Tensor | None:
        """This round's row indices ``(R, n_inner_steps, B)``, uniform with replacement; None for full batch."""
        if self.batch_size is None:
            return None
        u = self._draws("uniform", Stream.MINIBATCH, (self.n_inner_steps, self.batch_size))  # (R, K, B)
        return self.model.sample_rows(u.to(self.device))

    def _state(self) -> dict[str, torch.Tensor]:
        return agent_state(self.theta, self.model)

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.theta = load_agent_state(self.model, state)


class _WidthAgent(_NeuralAgent):
    """NeuralUCB, NeuralTS, Neural-LinUCB: an exploration width in reward units, times the reward noise ``sigma_t``.

    Their widths are posterior standard deviations for a reward noise of 1 (``sigma(x)`` below); the noise of the
    problem scales them. Args (besides :class:`_NeuralAgent`'s):
        noise_scale: ``sigma``, the reward noise's standard deviation the widths assume: ``"auto"`` (default) for
            the estimate from the data, ``sigma_t`` of :class:`agents.models.noise.NoiseEstimate` (the prequential
            error of the network that played, the estimate that sets neural LMC-TS's temperature); a number ``> 0``
            (or one per replica) to fix it.
    With ``"auto"`` the agent explores on the scale of its own errors: a reward rescaled by ``c`` rescales the
    widths by ``c`` as it rescales the network's outputs, so ``exploration_scale`` is scale-free.
    """

    def __init__(self, env=None, *, noise_scale: Any = "auto", **kwargs) -> None:
        super().__init__(env, **kwargs)
        if isinstance(noise_scale, str) and noise_scale != "auto":
            raise ValueError(f"noise_scale must be a number > 0, one per replica, or 'auto' (estimated from the "
                             f"data), got {noise_scale!r}")
        self.adaptive_noise = isinstance(noise_scale, str)
        if self.adaptive_noise:
            self.noise = NoiseEstimate(self.num_replicas, self.device)
            self._hyperparameters["noise_scale"] = "auto"
        else:
            self.fixed_noise_scale = self._hyperparameter("noise_scale", noise_scale, minimum=0, strict=True)

    def noise_scale(self) -> torch.Tensor:
        """``sigma_t`` per replica ``(R,)``: the estimate (``"auto"``) or the fixed number."""
        return self.noise.variance().sqrt() if self.adaptive_noise else self.fixed_noise_scale

    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        if self.adaptive_noise:  # the playing network's error on this round's reward, before learning it
            x = chosen_rows(contexts, actions)  # (R, d)
            self.noise.update(self.t, self.model.scores(self.theta, x[:, None, :])[:, 0], rewards)
        super()._observe(contexts, actions, rewards)

    def _state(self) -> dict[str, torch.Tensor]:
        return {**super()._state(), **(self.noise.state_dict() if self.adaptive_noise else {})}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        super()._load_state(state)
        if self.adaptive_noise:
            self.noise.load_state_dict(state)


class _DiagonalAgent(_WidthAgent):
    """NeuralUCB / NeuralTS: the width ``sigma(x) = sqrt(lambda g(x)^T Z^-1 g(x))``, ``g(x) = df(x; theta)/dtheta``.

    ``Z = lambda I + sum_i g(x_i) g(x_i)^T`` over the played arms is approximated by its diagonal
    ``U`` ``(R, p)``, as the original implementations do (``Z`` is ``p x p``). ``g`` of every arm
    and every replica comes from one batched backward pass (``model.arm_gradients``).
    """

    default_step_size = 0.003

    def __init__(self, env=None, **kwargs) -> None:
        super().__init__(env, **kwargs)
        self.diagonal = self.lambda_reg[:, None].expand(-1, self.model.n_params).clone()  # U (R, p)

    def widths(self, contexts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``f(x_k)`` and ``sigma(x_k)`` for every arm, ``(R, K, d) -> (R, K), (R, K)``."""
        # sum_j g_j(x_k)^2 / U_j, from the model without forming the (R, K, p) gradients where it can
        mean, squares = self.model.gradient_norms(self.theta, contexts, 1.0 / self.diagonal)  # (R, K), (R, K)
        return mean, (self.lambda_reg[:, None] * squares).sqrt()

    def _explore_update(self, x: torch.Tensor) -> None:
        _, g = self.model.arm_gradients(self.theta, x[:, None, :])  # (R, 1, p)
        self.diagonal = self.diagonal + g[:, 0] ** 2

    def _state(self) -> dict[str, torch.Tensor]:
        return {**super()._state(), "diagonal": self.diagonal}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        super()._load_state(state)
        self.diagonal = state["diagonal"]


class NeuralUCB(_DiagonalAgent):
    """NeuralUCB: play ``argmax_x f(x; theta) + nu sigma_t sigma(x)`` (Zhou et al. 2020), diagonal ``Z``.

    See :class:`_NeuralAgent` for the arguments (``exploration_scale`` is ``nu``; the paper's
    ``1/sqrt(m)`` factor of the width is absorbed into it).

    When to use it:
        Nonlinear rewards, as the neural UCB baseline; on the UCI data at the defaults it is behind
        ``LMCTS(model="mlp")`` and NeuralLinUCB. Measured: docs/agents.md, "Choosing an agent".

    References:
        Zhou, Li and Gu (2020), "Neural contextual bandits with UCB-based exploration", ICML.
    """

    #: ``nu = 1 / sqrt(lambda)`` at the default ``lambda = 1e-3``: ``sqrt(lambda) sigma_t sigma(x) = sigma_t sqrt(g^T
    #: U^-1 g)`` is the linearised network's posterior standard deviation for a reward noise of ``sigma_t``, so the
    #: bonus is one posterior standard deviation. Chosen on QuadraticBandit-v0 (seeds 0-49, T = 3,000) by its stuck
    #: seeds (late regret 0.4-0.7 a round, the one-sign level), as NeuralTS's ``nu``: nu = 1 (the default before
    #: 2026-11-27, the best cumulative regret of a 4-seed grid) left about two thirds stuck (6 of seeds 0-9), nu = 12,
    #: 15, 20, 25 9-13 of seeds 10-49, nu = 40 6 of 50, nu = 60 9 of 40; 1 / sqrt(lambda) 3 of 50
    #: (benchmarks/results/quadratic_paper.md section 8).
    default_exploration_scale = 1.0 / math.sqrt(NEURAL_LAMBDA_REG)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        mean, width = self.widths(contexts)
        return self._argmax(mean + (self.exploration_scale * self.noise_scale())[:, None] * width)


class NeuralTS(_DiagonalAgent):
    """NeuralTS: play ``argmax_x`` of ``N(f(x; theta), nu^2 sigma_t^2 sigma(x)^2)``, drawn per arm (Zhang et al. 2021).

    One independent normal per arm and round (stream ``SAMPLE``); diagonal ``Z``. See
    :class:`_NeuralAgent` for the arguments (``exploration_scale`` is ``nu``).

    When to use it:
        Nonlinear rewards (QuadraticBandit-v0), a first choice there with ``LMCTS(model="mlp")``; on the UCI data at the
        defaults it is behind both LMC-TS and NeuralLinUCB. Measured: docs/agents.md, "Choosing an agent".

    References:
        Zhang, Zhou, Li and Gu (2021), "Neural Thompson sampling", ICLR.
    """

    #: ``nu``. ``nu^2 sigma_t^2 sigma(x)^2 = nu^2 sigma_t^2 lambda g^T U^-1 g`` is the linearised network's posterior
    #: variance for a reward noise of standard deviation ``nu sigma_t sqrt(lambda)`` (``sigma_t``: ``noise_scale``).
    #: Chosen on QuadraticBandit-v0 (seeds 0-49, T = 3,000) by its stuck seeds (a network that never samples its way
    #: out of a bad ranking: late regret 0.4-0.7 a round). With ``sigma_t`` fixed at 1: nu = 3 left 7 of 50 stuck,
    #: nu = 6 1 of 50. With ``noise_scale="auto"`` (``sigma_t`` 1.0-1.2 there): nu = 4 5 of 50, nu = 6 4 of 50
    #: (kernels on and off alike), nu = 9 1 of 50; the calibrated nu = 1 / sqrt(lambda) over-explores with the
    #: diagonal U, whose widths count all p weights (benchmarks/results/quadratic_paper.md sections 6 and 7).
    default_exploration_scale = 9.0

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        mean, width = self.widths(contexts)
        z = self._draws("normal", Stream.SAMPLE, (self.n_arms,)).to(self.device)  # (R, K)
        return self._argmax(mean + (self.exploration_scale * self.noise_scale())[:, None] * width * z)


class NeuralLinUCB(_WidthAgent):
    """Neural-LinUCB (Xu et al. 2022): UCB on the last layer,
    ``argmax_x f(x; theta) + alpha sigma_t sqrt(phi(x)^T A^-1 phi(x))``.

    ``phi(x)`` is the last hidden layer's output and ``A = lambda I + sum_i phi(x_i) phi(x_i)^T``
    over the played arms (with the features of the round they were played), kept as ``A^-1``
    by Sherman-Morrison. The whole network is trained by gradient descent. Needs the MLP model.
    See :class:`_NeuralAgent` for the arguments (``exploration_scale`` is ``alpha``).

    When to use it:
        Nonlinear rewards and classification data: the lowest of the neural baselines on the UCI data at the defaults,
        next to ``LMCTS(model="mlp")``. Measured: docs/agents.md, "Choosing an agent".

    References:
        Xu, Wen, Zhao and Gu (2022), "Neural contextual bandits with deep representation and
        shallow exploration", ICLR.
    """

    default_exploration_scale = 3.0

    def __init__(self, env=None, **kwargs) -> None:
        super().__init__(env, **kwargs)
        if not isinstance(self.model, MLPModel):
            raise ValueError(f"NeuralLinUCB needs model='mlp' or an MLP (last-layer features), got {type(self.model)}")
        width = self.model.hidden[-1]
        self.feature_gram_inverse = torch.eye(width, device=self.device) / self.lambda_reg[:, None, None]  # (R, m, m)

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        mean, inputs = self.model.forward(self.theta, contexts)  # (R, K), layer inputs
        phi = inputs[-1]  # (R, K, m)
        width = ((phi @ self.feature_gram_inverse) * phi).sum(dim=-1).clamp(min=0).sqrt()  # (R, K)
        return self._argmax(mean + (self.exploration_scale * self.noise_scale())[:, None] * width)

    def _explore_update(self, x: torch.Tensor) -> None:
        phi = self.model.features(self.theta, x[:, None, :])[:, 0]  # (R, m)
        self.feature_gram_inverse = sherman_morrison(self.feature_gram_inverse, phi)

    def _state(self) -> dict[str, torch.Tensor]:
        return {**super()._state(), "feature_gram_inverse": self.feature_gram_inverse}

    def _load_state(self, state: dict[str, torch.Tensor]) -> None:
        super()._load_state(state)
        self.feature_gram_inverse = state["feature_gram_inverse"]


class NeuralEpsGreedy(EpsilonGreedyRule, _NeuralAgent):
    """Neural epsilon-greedy: a uniform random arm with probability ``min(1, c / sqrt(t))``,
    else ``argmax f(x; theta)``.

    Coins and random arms from stream ``EXPLORE``. See :class:`_NeuralAgent` for the arguments
    (``exploration_scale`` is ``c``).

    When to use it:
        A simple neural baseline (a greedy network and random rounds); on the UCI data at the defaults it is behind
        NeuralLinUCB and ``LMCTS(model="mlp")``. Measured: docs/agents.md, "Choosing an agent".

    References:
        Riquelme, Tucker and Snoek (2018), "Deep Bayesian bandits showdown", ICLR.
    """

    default_exploration_scale = 1.0

    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        return self._epsilon_greedy(self._argmax(self.model.scores(self.theta, contexts)))  # (R,)
