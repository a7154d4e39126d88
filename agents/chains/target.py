"""What a chain gets for round ``t``: :class:`ChainRound`, and the small contract every chain follows (:class:`Chain`).

An agent of the LMC-TS family (:class:`agents.lmcts.LMCTS`) owns the model, the data and the random streams; a chain
(:class:`agents.chains.langevin.Langevin`, :class:`agents.chains.metropolis.MALA`, ...) owns only the way the sample
is drawn. Once per round the agent builds a :class:`ChainRound` and calls ``chain.sample(round, theta)``; the chain
returns round ``t``'s sample and keeps its own state (acceptance counts, a velocity, a variational mean and variance),
which the agent saves under ``chain.<key>`` (:meth:`Chain.state_dict`). What the chain samples from, the potential, is
the agent's model alone (:class:`ModelPotential`) or the model plus a term (:class:`agents.models.feelgood.FeelGood`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from bandit_gym.rng import Stream


@dataclasses.dataclass
class ChainRound:
    """Round ``t``'s target ``exp(-beta L_t)`` and its random draws, as a chain sees them.

    Attributes:
        model: The potential: the reward model (its ``loss``, ``gradient``, ``gradient_squares``, ``lambda_reg``,
            ``n_params``), or the model plus a term (:class:`agents.models.feelgood.FeelGood`).
        t: The round the sample is for (``>= 1``).
        n_steps: ``K``, the chain's steps this round.
        step_size: ``eta_t`` per replica ``(R,)`` (:func:`agents.chains.schedules.step_size`).
        inverse_temperature: ``beta`` per replica ``(R,)``.
        batches: Mini-batch row indices per step ``(R, K, B)``, or None for full-batch gradients.
        curvature: ``theta -> U_t`` ``(R, p)``, the diagonal preconditioner's curvature at the chain's start
            (:class:`agents.chains.preconditioner.DiagonalPreconditioner`), or None without one.
        scale: The linear and glm models' feature scale ``S`` ``(R, p)`` (the chain is preconditioned by ``S^2``),
            or None.
        step_bound: The cap on ``eta_k lambda_max(M H_k)`` of a mini-batch step, or None.
        linear: Whether the agent's model is the linear one (its chain has an affine form: ``_kernels``).
        per_step: Whether each step's normals are drawn when it runs (neural models: memory ``O(p)``).
        draw: The agent's counter-based draws, ``(kind, stream, shape, counter) -> (R, *shape)`` on its device.
    """

    model: Any
    t: int
    n_steps: int
    step_size: torch.Tensor
    inverse_temperature: torch.Tensor
    batches: torch.Tensor | None
    curvature: Callable[[torch.Tensor], torch.Tensor] | None
    scale: torch.Tensor | None
    step_bound: float | None
    linear: bool
    per_step: bool
    draw: Callable[[str, Stream, tuple[int, ...], int], torch.Tensor]

    def normals(self, shape: tuple[int, ...]) -> torch.Tensor | Callable[[int], torch.Tensor]:
        """The round's standard normals of stream ``SAMPLE``: ``(R, K, *shape)`` at counter ``t``, or (``per_step``)
        a function ``k -> (R, *shape)`` drawing step ``k``'s at counter ``(t - 1) K + k``."""
        if self.per_step:
            return lambda k: self.draw("normal", Stream.SAMPLE, shape, (self.t - 1) * self.n_steps + k)
        return self.draw("normal", Stream.SAMPLE, (self.n_steps, *shape), self.t)

    def normal(self, shape: tuple[int, ...]) -> Callable[[int], torch.Tensor]:
        """:meth:`normals` as a function ``k -> (R, *shape)`` in both cases."""
        draws = self.normals(shape)
        return draws if callable(draws) else lambda k: draws[:, k]

    def uniforms(self, shape: tuple[int, ...]) -> torch.Tensor:
        """The round's uniforms in ``[0, 1)`` of stream ``ACCEPT``, ``(R, K, *shape)`` (Metropolis coins, jitter)."""
        return self.draw("uniform", Stream.ACCEPT, (self.n_steps, *shape), self.t)

    def preconditioner(self, theta: torch.Tensor) -> torch.Tensor | None:
        """``M`` ``(R, p)`` for a chain started at ``theta``: ``1 / U_t``, ``S^2`` or None (``M = I``)."""
        if self.curvature is not None:
            return 1.0 / self.curvature(theta)
        return None if self.scale is None else self.scale**2


class Chain:
    """A way of drawing round ``t``'s sample; subclasses define :meth:`sample`, and keep state in tensors.

    :meth:`bind` runs once, in the agent's constructor before round 1's sample: a chain reads its per-replica
    hyperparameters (``agent._hyperparameter``) and sizes its state there.
    """

    def bind(self, agent: Any) -> None:
        """Size the chain for ``agent``'s replicas and parameters (nothing by default)."""

    def sample(self, chain_round: ChainRound, theta: torch.Tensor) -> torch.Tensor:
        """Round ``t``'s sample ``(R, p)`` from the last one ``theta``."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The chain's state (saved by the agent as ``chain.<key>``)."""
        return {}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`state_dict`'s entries."""
        for key, value in state.items():
            setattr(self, key, value)


class ModelPotential:
    """The potential of plain LMC-TS: the model's loss ``L_t`` alone. A potential with a term
    (:class:`agents.models.feelgood.FeelGood`) answers the same calls.

    Args:
        model: The reward model.
    """

    def __init__(self, model: Any) -> None:
        self.model = model

    def observe(self, features: torch.Tensor) -> None:
        """Nothing: the model learns the round itself (a term keeps the round's arm set ``(R, K, p)``)."""

    def current(self) -> Any:
        """What round ``t``'s chain samples from: the model."""
        return self.model

    def state_dict(self) -> dict[str, torch.Tensor]:
        """No state beyond the model's: ``{}``."""
        return {}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Nothing to restore."""
