"""The data an agent keeps, one row per round for each of R replicas (public API).

Every agent that learns from its whole history (the GLM baselines, LMC-TS with a GLM or a
neural model) stores it here: preallocated tensors on the agent's device with a leading replica
axis, ``(R, capacity, *shape)``, that double in capacity when full, so appending a round costs
O(1) amortised and never copies the history.
"""

from __future__ import annotations

import torch


class History:
    """Named per-round fields of R replicas: ``append`` one row per replica, read ``(R, n, *shape)`` views.

    Args:
        num_replicas: ``R``.
        fields: Name -> shape of one replica's row, e.g. ``{"features": (d,), "rewards": ()}``.
        device: Where the buffers live.
        capacity: Rows allocated at first (doubled whenever full).

    Examples:
        >>> history = History(2, {"features": (3,), "rewards": ()}, torch.device("cpu"))
        >>> history.append(features=torch.ones(2, 3), rewards=torch.zeros(2))
        >>> history["features"].shape
        torch.Size([2, 1, 3])
    """

    def __init__(self, num_replicas: int, fields: dict[str, tuple[int, ...]], device: torch.device,
                 capacity: int = 256) -> None:
        self.num_replicas, self.device = num_replicas, device
        self.shapes = {name: tuple(shape) for name, shape in fields.items()}
        self._buffers = {name: torch.zeros(num_replicas, capacity, *shape, device=device)
                         for name, shape in self.shapes.items()}
        self._length = 0

    def __len__(self) -> int:
        """Rows stored per replica."""
        return self._length

    @property
    def capacity(self) -> int:
        return next(iter(self._buffers.values())).shape[1]

    def append(self, **rows: torch.Tensor) -> None:
        """Add one row per replica to every field: ``name=(R, *shape)``."""
        if set(rows) != set(self._buffers):
            raise ValueError(f"append needs exactly the fields {sorted(self._buffers)}, got {sorted(rows)}")
        if self._length == self.capacity:
            self._grow(2 * self.capacity)
        for name, row in rows.items():
            self._buffers[name][:, self._length] = row
        self._length += 1

    def __getitem__(self, name: str) -> torch.Tensor:
        """The stored rows of a field, ``(R, n, *shape)`` (a view: do not keep it across ``append``)."""
        return self._buffers[name][:, : self._length]

    def _grow(self, capacity: int) -> None:
        for name, old in self._buffers.items():
            new = torch.zeros(self.num_replicas, capacity, *self.shapes[name], device=self.device)
            new[:, : self._length] = old[:, : self._length]
            self._buffers[name] = new

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The stored rows of every field (for ``save``)."""
        return {name: self[name] for name in self._buffers}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Replace the contents by ``state`` (as written by :meth:`state_dict`)."""
        length = next(iter(state.values())).shape[1]
        capacity = self.capacity
        while capacity < length:
            capacity *= 2
        self._length = 0
        self._grow(capacity)
        for name, rows in state.items():
            self._buffers[name][:, :length] = rows.to(self.device)
        self._length = length
