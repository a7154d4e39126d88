"""Reward models whose parameters LMC-TS samples, batched over R replicas (public API).

A model keeps the data of ``R`` independent runs and defines the loss

    L_t(theta) = sum_i loss(f(x_i; theta), r_i) + lambda ||theta||^2

(the ridge convention of every agent in this package). :class:`agents.lmcts.LMCTS` runs the
Langevin chain on it. Parameters are a flat ``(R, p)`` tensor. A new model implements
:meth:`RewardModel.scores`, :meth:`RewardModel.add` and :meth:`RewardModel.loss`; its gradient
comes from autograd unless it overrides :meth:`RewardModel.gradient` with a closed form (both
models here do, and the tests compare them with autograd).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch
import torch.nn.functional as F

from agents import _kernels
from agents.loop.history import History


class RewardModel(ABC):
    """Data and loss of R replicas.

    Args:
        num_replicas: ``R``.
        dim: Feature dimension ``d``.
        lambda_reg: Ridge weight ``lambda`` per replica, ``(R,)``.
        device: Where every tensor lives.
    """

    #: Whether :meth:`gradient` accepts mini-batch indices (otherwise full batch only).
    supports_minibatch = False

    def __init__(self, num_replicas: int, dim: int, lambda_reg: torch.Tensor, device: torch.device) -> None:
        self.num_replicas, self.dim, self.device = num_replicas, dim, device
        self.lambda_reg = lambda_reg  # (R,)

    @property
    def n_params(self) -> int:
        """``p``, the length of one replica's parameter vector."""
        return self.dim

    @property
    @abstractmethod
    def n_observations(self) -> int:
        """Rounds learned from so far (one observation per replica each)."""

    def initial_params(self) -> torch.Tensor:
        """Starting point of the first chain, ``(R, p)``."""
        return torch.zeros(self.num_replicas, self.n_params, device=self.device)

    def sample_rows(self, u: torch.Tensor) -> torch.Tensor:
        """Mini-batch row indices, uniform with replacement over the stored rows, from uniforms ``u`` in
        ``[0, 1)`` of any shape (same shape, int64)."""
        n = self.n_observations
        return (u * n).long().clamp_(max=n - 1)

    @abstractmethod
    def scores(self, params: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
        """Predicted reward (or a monotone transform of it) per arm: ``(R, p), (R, K, d) -> (R, K)``."""

    @abstractmethod
    def add(self, features: torch.Tensor, rewards: torch.Tensor) -> None:
        """Learn one observation per replica: ``(R, d), (R,)``."""

    @abstractmethod
    def loss(self, params: torch.Tensor) -> torch.Tensor:
        """``L_t(params)`` per replica: ``(R, p) -> (R,)``."""

    def gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        """``grad L_t(params)``, ``(R, p) -> (R, p)``, by autograd of :meth:`loss` (full batch only)."""
        if batch is not None:
            raise ValueError(f"{type(self).__name__} computes full-batch gradients only")
        with torch.enable_grad():
            params = params.detach().requires_grad_()
            (grad,) = torch.autograd.grad(self.loss(params).sum(), params)
        return grad

    @abstractmethod
    def state_dict(self) -> dict[str, torch.Tensor]:
        """The tensors that make up the model's data (for ``save``)."""

    @abstractmethod
    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Inverse of :meth:`state_dict`."""


def matvec(matrix: torch.Tensor, vector: torch.Tensor) -> torch.Tensor:
    """``(R, d, d) @ (R, d) -> (R, d)`` as multiply-and-sum (tiny products stay off the BLAS threads)."""
    return (matrix * vector.unsqueeze(1)).sum(dim=-1)


def linear_scores(contexts: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """``x . theta`` for every arm: ``(R, K, d), (R, d) -> (R, K)``."""
    if _kernels.enabled(contexts, theta):
        return _kernels.linear_scores(contexts, theta)
    return (contexts * theta[:, None, :]).sum(dim=-1)


def add_observation(gram: torch.Tensor, moment: torch.Tensor, x: torch.Tensor,
                    rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``V + x x^T`` and ``b + r x`` per replica: ``(R, d, d), (R, d), (R, d), (R,)``."""
    if _kernels.enabled(gram, moment, x, rewards):
        return _kernels.add_observation(gram, moment, x, rewards)
    return gram + x[:, :, None] * x[:, None, :], moment + rewards[:, None] * x


class LinearModel(RewardModel):
    """Linear rewards ``x . theta``; ``L_t = sum_i (x_i . theta - r_i)^2 + sum_j P_j theta_j^2``.

    Keeps the Gram matrix ``V = diag(P) + sum x x^T`` ``(R, d, d)``, the moment vector
    ``b = sum r x`` ``(R, d)`` and ``sum r^2``, so ``L_t = theta^T V theta - 2 b^T theta + sum r^2``
    and ``grad L_t = 2 (V theta - b)`` cost ``O(d^2)`` whatever the history length. The penalty ``P`` is
    ``lambda`` for every coordinate until :meth:`set_penalty` changes it (LMC-TS's ``scale_features``:
    ``P = lambda D``, ``D`` the features' mean squares).
    """

    def __init__(self, num_replicas: int, dim: int, lambda_reg: torch.Tensor, device: torch.device) -> None:
        super().__init__(num_replicas, dim, lambda_reg, device)
        eye = torch.eye(dim, device=device)
        self.penalty = lambda_reg[:, None].expand(num_replicas, dim).contiguous()  # P (R, d)
        self.gram = lambda_reg[:, None, None] * eye  # V (R, d, d)
        self.moment = torch.zeros(num_replicas, dim, device=device)  # b (R, d)
        self.reward_square_sum = torch.zeros(num_replicas, device=device)  # sum r^2 (R,)
        self._count = 0

    @property
    def n_observations(self) -> int:
        return self._count

    def scores(self, params: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
        return linear_scores(contexts, params)  # (R, K)

    def add(self, features: torch.Tensor, rewards: torch.Tensor) -> None:
        self.gram, self.moment = add_observation(self.gram, self.moment, features, rewards)  # V += x x^T, b += r x
        self.reward_square_sum = self.reward_square_sum + rewards**2
        self._count += 1

    def set_penalty(self, penalty: torch.Tensor) -> None:
        """Replace the penalty ``P`` ``(R, d)`` in ``V``. The old one is taken out before the new one goes in, so
        a coordinate with no data gets exactly the new ``P_j`` (``(P_old + P_new) - P_old`` in float32 can be 0)."""
        self.gram = self.gram - torch.diag_embed(self.penalty) + torch.diag_embed(penalty)
        self.penalty = penalty

    def loss(self, params: torch.Tensor) -> torch.Tensor:
        quadratic = (params * matvec(self.gram, params)).sum(dim=-1)  # theta^T V theta (R,)
        return quadratic - 2.0 * (self.moment * params).sum(dim=-1) + self.reward_square_sum

    def gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        return 2.0 * (matvec(self.gram, params) - self.moment)  # (R, d)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"gram": self.gram, "moment": self.moment, "reward_square_sum": self.reward_square_sum,
                "penalty": self.penalty, "count": torch.tensor(self._count)}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.gram, self.moment, self.reward_square_sum = state["gram"], state["moment"], state["reward_square_sum"]
        self.penalty = state["penalty"]
        self._count = int(state["count"])


class HistoryModel(RewardModel):
    """A model that learns from its whole history: the rows live in a :class:`agents.loop.history.History`, and
    losses and gradients are full-batch or over mini-batches of rows (rescaled by ``n / B`` so that they
    estimate the full-batch values). Subclasses define :meth:`scores` and :meth:`loss` (and may
    override :meth:`gradient`)."""

    supports_minibatch = True

    def __init__(self, num_replicas: int, dim: int, lambda_reg: torch.Tensor, device: torch.device) -> None:
        super().__init__(num_replicas, dim, lambda_reg, device)
        self.data = History(num_replicas, self.history_fields(), device)

    def history_fields(self) -> dict[str, tuple[int, ...]]:
        """The fields of one stored row and their shapes (a model that stores rows compactly overrides it)."""
        return {"features": (self.dim,), "rewards": ()}

    @property
    def n_observations(self) -> int:
        return len(self.data)

    def add(self, features: torch.Tensor, rewards: torch.Tensor) -> None:
        self.data.append(features=features, rewards=rewards)

    def rows(self, batch: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, float]:
        """Features ``(R, n, d)``, rewards ``(R, n)`` of all rows or of a mini-batch ``(R, B)``, and ``n / B``."""
        x, r = self.data["features"], self.data["rewards"]
        if batch is None:
            return x, r, 1.0
        batch_d = batch[:, :, None].expand(-1, -1, self.dim)  # (R, B, d)
        return x.gather(1, batch_d), r.gather(1, batch), len(self.data) / batch.shape[1]

    def state_dict(self) -> dict[str, torch.Tensor]:
        return self.data.state_dict()

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.data.load_state_dict(state)


def logistic_loss(features: torch.Tensor, rewards: torch.Tensor, theta: torch.Tensor, lambda_reg: torch.Tensor,
                  scale: float = 1.0) -> torch.Tensor:
    """The penalised logistic negative log-likelihood per replica, ``(R, n, d), (R, n), (R, d), (R,) -> (R,)``:
    ``scale * sum_i (softplus(x_i . theta) - r_i x_i . theta) + lambda ||theta||^2`` (``lambda`` ``(R,)``, or one
    per coordinate ``(R, d)``: ``sum_j lambda_j theta_j^2``; softplus: no overflow;
    ``scale = n / B`` makes a mini-batch's sum estimate the full one). The GLM agents and :class:`LogisticModel`
    share it."""
    z = (features @ theta[:, :, None])[:, :, 0]  # (R, n)
    penalty = lambda_reg[:, None] if lambda_reg.dim() == 1 else lambda_reg  # (R, 1) or per coordinate (R, d)
    return scale * (F.softplus(z) - rewards * z).sum(dim=1) + (penalty * theta * theta).sum(dim=-1)


def logistic_gradient(features: torch.Tensor, rewards: torch.Tensor, theta: torch.Tensor, lambda_reg: torch.Tensor,
                      scale: float = 1.0) -> torch.Tensor:
    """``grad`` of :func:`logistic_loss`: ``scale * sum_i (mu(x_i . theta) - r_i) x_i + 2 lambda theta``, ``(R, d)``."""
    residual = torch.sigmoid((features @ theta[:, :, None])[:, :, 0]) - rewards  # (R, n)
    penalty = lambda_reg[:, None] if lambda_reg.dim() == 1 else lambda_reg  # (R, 1) or per coordinate (R, d)
    return scale * (residual[:, None, :] @ features)[:, 0] + 2.0 * penalty * theta


class LogisticModel(HistoryModel):
    """Logistic rewards ``sigmoid(x . theta)`` (a GLM); penalised negative log-likelihood.

    ``L_t = sum_i (softplus(x_i . theta) - r_i x_i . theta) + lambda ||theta||^2`` and
    ``grad L_t = sum_i (sigmoid(x_i . theta) - r_i) x_i + 2 lambda theta``, full-batch or over
    mini-batches of rows (:class:`HistoryModel`).
    """

    def scores(self, params: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
        return linear_scores(contexts, params)  # (R, K): logits, monotone in the mean reward

    #: A penalty per coordinate ``(R, d)`` replacing ``lambda`` (:meth:`set_penalty`), or None.
    penalty: torch.Tensor | None = None

    def set_penalty(self, penalty: torch.Tensor) -> None:
        """Penalise ``sum_j P_j theta_j^2`` instead of ``lambda ||theta||^2`` (LMC-TS's ``scale_features``)."""
        self.penalty = penalty

    def _penalty(self) -> torch.Tensor:
        return self.lambda_reg if self.penalty is None else self.penalty

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {**super().state_dict(), **({} if self.penalty is None else {"penalty": self.penalty})}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        super().load_state_dict({k: v for k, v in state.items() if k != "penalty"})
        self.penalty = state.get("penalty")

    def loss(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        x, r, scale = self.rows(batch)
        return logistic_loss(x, r, params, self._penalty(), scale)

    def gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        x, r, scale = self.rows(batch)
        return logistic_gradient(x, r, params, self._penalty(), scale)  # (R, d)


#: The models ``LMCTS(model=...)`` accepts by name; the neural model joins here.
MODELS: dict[str, type[RewardModel]] = {"linear": LinearModel, "glm": LogisticModel}


def prefixed_state(prefix: str, component: Any) -> dict[str, torch.Tensor]:
    """A component's ``state_dict()`` under ``"<prefix>.<key>"``: how an agent's ``_state`` holds the state of its
    model, history or arm features (``model.*``, ``data.*``, ``features.*``)."""
    return {f"{prefix}.{key}": value for key, value in component.state_dict().items()}


def load_prefixed_state(prefix: str, component: Any, state: dict[str, torch.Tensor]) -> None:
    """Inverse of :func:`prefixed_state`: load the ``"<prefix>.*"`` entries of an agent's ``state`` into
    ``component`` with its ``load_state_dict``."""
    start = f"{prefix}."
    component.load_state_dict({key.removeprefix(start): value for key, value in state.items()
                               if key.startswith(start)})


def agent_state(theta: torch.Tensor, model: RewardModel,
                parts: dict[str, Any] | None = None) -> dict[str, torch.Tensor]:
    """What an agent with parameters ``theta`` and a reward model saves: ``theta``, ``model.*``, and each of its other
    ``parts``' state under the part's prefix (``{"chain": chain, ...}``; :func:`prefixed_state`)."""
    state = {"theta": theta, **prefixed_state("model", model)}
    for prefix, part in (parts or {}).items():
        state.update(prefixed_state(prefix, part))
    return state


def load_agent_state(model: RewardModel, state: dict[str, torch.Tensor],
                     parts: dict[str, Any] | None = None) -> torch.Tensor:
    """Load :func:`agent_state`'s ``model.*`` entries into ``model`` and each part's into that part; return the saved
    ``theta``."""
    for prefix, component in {"model": model, **(parts or {})}.items():
        load_prefixed_state(prefix, component, state)
    return state["theta"]
