"""Reward models that LMC-TS samples the parameters of, batched over R replicas.

A model keeps the data of ``R`` independent runs as tensors and knows its loss
``L_t(theta)``; :class:`agents.lmcts.LMCTS` runs the Langevin chain on it. The
parameters are a flat ``(R, p)`` tensor, so a new model (the neural one of the
next issue) only has to implement :meth:`RewardModel.scores`, :meth:`RewardModel.add`
and :meth:`RewardModel.gradient`; :meth:`RewardModel.chain` may be overridden
by a model that can run the whole chain faster (the linear one does).

Products go through ``agents._math`` or are elementwise multiply + sum, so replica
``r`` of a batch computes bit for bit what a single run computes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
import torch.nn.functional as F

from agents import _math


def _sigmoid_rows(z: torch.Tensor) -> torch.Tensor:
    """``sigmoid`` of ``(R, n)`` logits, each row computed bit for bit as it would be alone.

    CPU kernels evaluate ``exp`` with SIMD code in blocks and with scalar code on the tail, and
    the two may differ in the last ulp; padding the rows to a multiple of 64 starts every row
    on a block boundary whatever ``R`` is (also for the 2-way thread split of large tensors).
    """
    n = z.shape[1]
    width = -(-n // 64) * 64
    return torch.sigmoid(F.pad(z, (0, width - n)) if width != n else z)[:, :n]


class RewardModel(ABC):
    """Data and loss ``L_t(theta) = sum_i loss(x_i, r_i; theta) + lambda ||theta||^2`` of R replicas.

    Args:
        num_replicas: ``R``.
        dim: Feature dimension ``d``.
        lambda_reg: Ridge weight ``lambda`` of the loss.
        device: Where every tensor lives.
    """

    #: Whether :meth:`gradient` accepts mini-batch indices (otherwise full batch only).
    supports_minibatch = False
    #: LMC-TS defaults for this model: ``eta_0`` and ``beta`` (see ``docs/agents.md``).
    default_step_size: float
    default_inverse_temperature: float

    def __init__(self, num_replicas: int, dim: int, lambda_reg: float, device: torch.device) -> None:
        self.num_replicas, self.dim, self.lambda_reg, self.device = num_replicas, dim, lambda_reg, device

    @property
    def n_params(self) -> int:
        """``p``, the length of one replica's parameter vector."""
        return self.dim

    def initial_params(self) -> torch.Tensor:
        """Starting point of the first chain, ``(R, p)``."""
        return torch.zeros(self.num_replicas, self.n_params, device=self.device)

    @abstractmethod
    def scores(self, params: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
        """Predicted reward (or a monotone transform of it) per arm: ``(R, p), (R, K, d) -> (R, K)``."""

    @abstractmethod
    def add(self, features: torch.Tensor, rewards: torch.Tensor) -> None:
        """Append one observation per replica: ``(R, d), (R,)``."""

    @abstractmethod
    def gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        """``grad L_t(params)``, ``(R, p) -> (R, p)``; ``batch`` ``(R, B)`` picks a mini-batch.

        A mini-batch gradient is rescaled by ``n / B`` so that it estimates the full one.
        """

    @abstractmethod
    def state(self) -> dict[str, torch.Tensor]:
        """Tensors that make up the model's data (for ``save``)."""

    @abstractmethod
    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        """Inverse of :meth:`state`."""

    def chain(
        self, params: torch.Tensor, step_size: float, noise_scale: float, noise: torch.Tensor,
        batches: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Run ``K`` Langevin steps ``params <- params - eta grad L + noise_scale eps_k``.

        Args:
            params: Start of the chain (warm start), ``(R, p)``.
            step_size: ``eta_t`` of this round.
            noise_scale: ``sqrt(2 eta_t / beta)``.
            noise: Standard normal draws ``eps_k``, ``(R, K, p)``.
            batches: Mini-batch indices ``(R, K, B)`` per step, or None for full-batch gradients.

        Returns:
            The last iterate, ``(R, p)``.
        """
        for k in range(noise.shape[1]):
            grad = self.gradient(params, None if batches is None else batches[:, k])  # (R, p)
            params = params - step_size * grad + noise_scale * noise[:, k]
        return params


class LinearModel(RewardModel):
    """Linear rewards ``x . theta``; ``L_t = sum_i (x_i . theta - r_i)^2 + lambda ||theta||^2``.

    Keeps the sufficient statistics ``V = lambda I + sum x x^T`` ``(R, d, d)`` and
    ``b = sum r x`` ``(R, d)``, so ``grad L_t = 2 (V theta - b)`` costs ``O(d^2)``
    whatever the history length.
    """

    default_step_size = 0.3
    default_inverse_temperature = 10.0

    def __init__(self, num_replicas: int, dim: int, lambda_reg: float, device: torch.device) -> None:
        super().__init__(num_replicas, dim, lambda_reg, device)
        self.gram = _math.scaled_identity(num_replicas, dim, lambda_reg, device)  # V, (R, d, d)
        self.moment = torch.zeros(num_replicas, dim, device=device)  # b, (R, d)

    def scores(self, params: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
        return _math.scores(contexts, params)  # (R, K)

    def add(self, features: torch.Tensor, rewards: torch.Tensor) -> None:
        self.gram += features[:, :, None] * features[:, None, :]  # (R, d, d)
        self.moment += rewards[:, None] * features  # (R, d)

    def gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        return 2.0 * (_math.matvec(self.gram, params) - self.moment)  # (R, d)

    def state(self) -> dict[str, torch.Tensor]:
        return {"gram": self.gram, "moment": self.moment}

    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.gram, self.moment = state["gram"], state["moment"]

    def chain(self, params, step_size, noise_scale, noise, batches=None):
        """The same K steps, evaluated as a balanced tree instead of one after the other.

        A step is affine, ``theta <- A theta + c_k`` with ``A = I - 2 eta V`` and
        ``c_k = 2 eta b + noise_scale eps_k``, so after ``K`` steps
        ``theta_K = A^K theta_0 + sum_k A^(K-1-k) c_k``. Writing the terms in a row
        ``u_0..u_(n-1)`` (``n`` a power of two, ``theta_0`` then the ``c_k``, zeros in front)
        with ``theta_K = sum_j A^(n-1-j) u_j``, neighbours combine as ``A u_2j + u_2j+1``
        with ``A`` squared at each level: ``log2 n`` levels of a few tensor ops instead of
        ``K`` sequential steps, ``O(K d^2 + d^3 log K)`` per round. The iterate is the one of
        the step-by-step chain up to float rounding (``tests/agents/test_lmcts.py`` checks it).
        """
        n_steps = noise.shape[1]
        eye = torch.eye(self.dim, device=params.device)
        power = eye - (2.0 * step_size) * self.gram  # A, (R, d, d), symmetric
        n = 1 << n_steps.bit_length()  # smallest power of two >= K + 1
        terms = params.new_zeros(params.shape[0], n, self.dim)  # (R, n, d)
        terms[:, n - n_steps - 1] = params
        torch.add(noise_scale * noise, (2.0 * step_size) * self.moment[:, None, :], out=terms[:, n - n_steps:])
        while terms.shape[1] > 1:
            # A symmetric, so the rows of u A are the vectors A u. This matrix-matrix bmm is
            # batch-size invariant on CPU (tests/agents/test_lmcts.py checks it); a matrix-vector
            # bmm (one column) is not, which is why vectors are rows here.
            terms = torch.baddbmm(terms[:, 1::2], terms[:, 0::2], power)  # A u_2j + u_2j+1, (R, n/2, d)
            if terms.shape[1] > 1:
                power = torch.bmm(power, power)  # (R, d, d)
        return terms[:, 0]  # (R, d)


class LogisticModel(RewardModel):
    """Logistic rewards ``sigmoid(x . theta)`` (a GLM); negative log-likelihood loss.

    ``L_t = sum_i (softplus(x_i . theta) - r_i x_i . theta) + lambda ||theta||^2``,
    ``grad L_t = sum_i (sigmoid(x_i . theta) - r_i) x_i + 2 lambda theta``. The history
    lives in preallocated buffers (``(R, capacity, d)`` and its transpose) that double when
    full; full-batch or mini-batch gradients.
    """

    supports_minibatch = True
    default_step_size = 0.9
    default_inverse_temperature = 30.0

    def __init__(self, num_replicas: int, dim: int, lambda_reg: float, device: torch.device,
                 capacity: int = 1024) -> None:
        super().__init__(num_replicas, dim, lambda_reg, device)
        self.count = 0
        self._allocate(-(-capacity // 64) * 64)

    def _allocate(self, capacity: int) -> None:
        """(Re)allocate zeroed buffers of ``capacity`` rows (a multiple of 64), keeping the data."""
        old = (self.features, self.features_t, self.rewards) if hasattr(self, "features") else None
        self.features = torch.zeros(self.num_replicas, capacity, self.dim, device=self.device)  # (R, cap, d)
        self.features_t = torch.zeros(self.num_replicas, self.dim, capacity, device=self.device)  # (R, d, cap)
        self.rewards = torch.zeros(self.num_replicas, capacity, device=self.device)  # (R, cap)
        if old is not None:
            n = self.count
            self.features[:, :n], self.features_t[:, :, :n], self.rewards[:, :n] = (
                old[0][:, :n], old[1][:, :, :n], old[2][:, :n])

    def scores(self, params: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
        return _math.scores(contexts, params)  # (R, K): the logits, monotone in the mean reward

    def add(self, features: torch.Tensor, rewards: torch.Tensor) -> None:
        if self.count == self.features.shape[1]:
            self._allocate(2 * self.count)
        self.features[:, self.count] = features
        self.features_t[:, :, self.count] = features
        self.rewards[:, self.count] = rewards
        self.count += 1

    def loss(self, params: torch.Tensor) -> torch.Tensor:
        """``L_t(params)`` per replica, ``(R, p) -> (R,)`` (softplus keeps it stable)."""
        x, r = self.features[:, : self.count], self.rewards[:, : self.count]  # (R, n, d), (R, n)
        z = (x * params[:, None, :]).sum(dim=-1)  # (R, n)
        return (F.softplus(z) - r * z).sum(dim=1) + self.lambda_reg * (params**2).sum(dim=1)

    def gradient(self, params: torch.Tensor, batch: torch.Tensor | None = None) -> torch.Tensor:
        ridge = (2.0 * self.lambda_reg) * params  # (R, d)
        if batch is not None:
            rows = torch.arange(self.num_replicas, device=batch.device)[:, None]  # (R, 1)
            x, r = self.features[rows, batch], self.rewards[rows, batch]  # (R, B, d), (R, B)
            residual = _sigmoid_rows((x * params[:, None, :]).sum(dim=-1)) - r  # (R, B)
            return (self.count / batch.shape[1]) * (residual[:, :, None] * x).sum(dim=1) + ridge
        # Full batch over the first n rows rounded up to a multiple of 64: the extra rows are zero
        # (zero features contribute nothing), and with 64-multiple widths this bmm is batch-size
        # invariant on CPU (a width such as 37 is not; tests/agents/test_lmcts.py checks replicas).
        n = -(-self.count // 64) * 64
        z = torch.bmm(params[:, None, :], self.features_t[:, :, :n])[:, 0]  # (R, n)
        residual = torch.sigmoid(z) - self.rewards[:, :n]  # (R, n); rows start 64-aligned
        # The gradient as a last-axis reduction: bmm(residual, features) is not batch-size invariant.
        return (self.features_t[:, :, :n] * residual[:, None, :]).sum(dim=-1) + ridge  # (R, d)

    def state(self) -> dict[str, torch.Tensor]:
        return {"features": self.features[:, : self.count], "rewards": self.rewards[:, : self.count]}

    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.count = 0
        capacity = 1024
        while capacity < state["features"].shape[1]:  # the capacity the run had (doubling from 1024)
            capacity *= 2
        self._allocate(capacity)
        self.count = n = state["features"].shape[1]
        self.features[:, :n] = state["features"]
        self.features_t[:, :, :n] = state["features"].transpose(1, 2)
        self.rewards[:, :n] = state["rewards"]


#: The models ``LMCTS(model=...)`` accepts; the neural model joins here.
MODELS: dict[str, type[RewardModel]] = {"linear": LinearModel, "glm": LogisticModel}
