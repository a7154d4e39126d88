"""The linear and glm models' feature scaling and the bound behind ``"inverse_lambda_max"``: :class:`ScaledFeatures`.

The features are ``z = (x, e_k)`` (:class:`agents.linear.ArmFeatures`); with ``scale_features`` the loss's penalty is
``lambda D``, ``D`` each feature's mean square over the arm rows shown, renewed at rounds 2, 4, 8, ..., and the chain
is preconditioned by ``M = S^2``, ``S = D^(-1/2)``: the plain chain on the features ``S z``. The step
``eta_t = eta_0 / lambda_max(S V_t S)`` (:mod:`agents.chains.schedules`) needs an upper bound on that eigenvalue
(:attr:`ScaledFeatures.top`): exact (an eigenvalue problem) when the next round is a power of 2, and between, the last
value plus ``w |S x|^2`` per row added (``w`` = 1, or 1/8 for the GLM; Weyl's inequality:
``lambda_max(A + u u^T) <= lambda_max(A) + |u|^2``), so the step never outgrows the bound. The GLM's ``V`` is
``lambda D + sum z z^T / 8`` (its loss's Hessian is at most ``2 V``: ``mu' <= 1/4``); the linear model's is its own
Gram matrix. Neural models see the contexts themselves (:class:`NoScaling`) and must leave ``intercept`` and
``scale_features`` None (:func:`arm_features`).
"""

from __future__ import annotations

from typing import Any

import torch

from agents.linear import ArmFeatures, is_power_of_two
from agents.models.reward import LinearModel, RewardModel


class ScaledFeatures:
    """``D``, the penalty ``lambda D`` and the bound :attr:`top` ``>= lambda_max(S V S)``, kept after every round.

    Args:
        model: The linear or logistic model (its Gram matrix or rows, and its penalty).
        arm_features: The features ``z`` and their mean squares.
        lambda_reg: ``lambda`` per replica ``(R,)``.
        schedule: The step schedule (the bound is kept for ``"inverse_lambda_max"``).
        scale_features: Whether the penalty and the preconditioner follow ``D``.
        members: Model replicas per replica (:class:`agents.ensemble.EnsembleSampling`'s ``M``): the model's
            penalty is each replica's, repeated for its members.
    """

    def __init__(self, model: RewardModel, arm_features: ArmFeatures, lambda_reg: torch.Tensor, schedule: str,
                 scale_features: bool, members: int = 1) -> None:
        self.model, self.arm_features, self.lambda_reg, self.members = model, arm_features, lambda_reg, members
        self.track, self.scale_features = schedule == "inverse_lambda_max", scale_features
        self.linear = isinstance(model, LinearModel)
        self.weight = 1.0 if self.linear else 0.125  # the GLM: V = lambda D + sum z z^T / 8
        self.top = lambda_reg.clone()  # (R,) lambda_max(S V S) before any data: V = lambda I, S = I
        #: The GLM's ``V`` ``(R, p, p)`` with ``"inverse_lambda_max"``, else None.
        self.bound_gram = None
        if not self.linear and self.track:
            self.bound_gram = lambda_reg[:, None, None] * torch.eye(arm_features.model_dim, device=lambda_reg.device)
        if scale_features:
            self.scales = torch.ones(lambda_reg.shape[0], arm_features.model_dim, device=lambda_reg.device)  # D (R, p)
            # no penalty before round 1's rows are seen: lambda I would swamp the data of features whose scale is far
            # below 1 in the float32 Gram matrix (the first renewal takes it out again), and round 1 runs no chain
            self._set_penalty(torch.zeros_like(self.scales))

    @property
    def scales(self) -> torch.Tensor:
        """``D`` ``(R, p)``; setting it also makes :meth:`scale`'s ``D^(-1/2)``."""
        return self._scales

    @scales.setter
    def scales(self, value: torch.Tensor) -> None:
        self._scales, self._scale = value, value.rsqrt()

    def scale(self) -> torch.Tensor | None:
        """``S = D^(-1/2)`` ``(R, p)`` with ``scale_features``, else None."""
        return self._scale if self.scale_features else None

    def add(self, z: torch.Tensor, x: torch.Tensor, next_round: int) -> None:
        """After a round's row ``x`` ``(R, p)`` of the shown rows ``z`` ``(R, K, p)``; renew at powers of 2."""
        if self.scale_features:
            self.arm_features.record(z)
        if self.bound_gram is not None:
            w = self.weight * x
            self.bound_gram = self.bound_gram + w[:, :, None] * x[:, None, :]
        if self.track:
            scale = self.scale()
            u = x if scale is None else x * scale  # (R, p)
            self.top = self.top + self.weight * (u * u).sum(dim=1)
        if not is_power_of_two(next_round):
            return
        if self.scale_features:
            self.scales = self.arm_features.scales()
            self._set_penalty(self.lambda_reg[:, None] * self.scales)
        if self.track:
            gram = self.model.gram if self.linear else self.bound_gram
            gram, scale = gram.double(), self.scale()
            if scale is not None:
                scale = scale.double()
                gram = scale[:, :, None] * gram * scale[:, None, :]
            self.top = torch.linalg.eigvalsh(gram)[:, -1].float()

    def _set_penalty(self, penalty: torch.Tensor) -> None:
        """The penalty ``P`` ``(R, p)`` of the model's loss (and of the GLM's curvature bound ``V``)."""
        if self.bound_gram is not None:
            old = self.model.penalty if self.model.penalty is not None else self.lambda_reg[:, None].expand_as(penalty)
            self.bound_gram = self.bound_gram - torch.diag_embed(old) + torch.diag_embed(penalty)
        self.model.set_penalty(penalty.repeat_interleave(self.members, dim=0))

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The features' mean squares, ``top``, and ``scales`` / ``bound_gram`` where kept."""
        state = {**self.arm_features.state_dict(), "top": self.top}
        if self.bound_gram is not None:
            state["bound_gram"] = self.bound_gram
        return {**state, **({"scales": self.scales} if self.scale_features else {})}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`state_dict`'s entries."""
        self.top, self.bound_gram = state.pop("top"), state.pop("bound_gram", None)
        if self.scale_features:
            self.scales = state.pop("scales")
        self.arm_features.load_state_dict(state)


class NoScaling:
    """Neural models: the features as given (``S = I``) and no bound on ``lambda_max`` (:attr:`top` None)."""

    top = None

    def scale(self) -> None:
        """No scale: None."""

    def add(self, z: torch.Tensor, x: torch.Tensor, next_round: int) -> None:
        """Nothing to keep."""

    def state_dict(self) -> dict[str, torch.Tensor]:
        """No state: ``{}``."""
        return {}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Nothing to restore."""


def arm_features(agent: Any, model: Any, neural: bool, intercept: bool | None,
                 scale_features: bool | None) -> tuple[ArmFeatures | None, bool]:
    """The linear and glm models' features ``z`` and ``scale_features`` (None: True with ``"inverse_lambda_max"``),
    checked and recorded as ``agent``'s hyperparameters; ``(None, False)`` for a neural model, which sees the contexts
    themselves and must leave ``intercept`` and ``scale_features`` None (a ValueError naming ``model`` otherwise)."""
    if neural:
        if intercept is not None or scale_features is not None:
            raise ValueError(f"intercept and scale_features must be None for model={model!r}, got {intercept!r} "
                             f"and {scale_features!r}; the per-arm constants and the feature scaling are the linear "
                             "and glm models'")
        return None, False
    scale_features = agent.step_schedule == "inverse_lambda_max" if scale_features is None else scale_features
    if not isinstance(scale_features, bool):
        raise ValueError(f"scale_features must be True or False, got {scale_features!r}")
    agent._hyperparameters.update(intercept=intercept, scale_features=scale_features)
    return ArmFeatures(agent.num_replicas, agent.n_arms, agent.dim, intercept, agent.device), scale_features
