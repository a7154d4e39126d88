"""The data an agent keeps, one row per round for each of R replicas (public API).

Every agent that learns from its history stores it here: the GLM baselines, LMC-TS with a GLM or a neural
model, the neural baselines (through :class:`agents.models.reward.HistoryModel`) and SW-LinUCB's window.
Preallocated tensors on the agent's device with a leading replica axis, ``(R, capacity, *shape)``: a whole
history doubles its capacity when full, so appending a round costs O(1) amortised and never copies the rows;
a window (``window=True``) keeps the last ``capacity`` rows, each new row taking the place of the oldest.
"""

from __future__ import annotations

import torch


class History:
    """Named per-round fields of R replicas: ``append`` one row per replica, read ``(R, n, *shape)`` views.

    Args:
        num_replicas: ``R``.
        fields: Name -> shape of one replica's row, e.g. ``{"features": (d,), "rewards": ()}``.
        device: Where the buffers live.
        capacity: Rows allocated at first (doubled whenever full); with ``window``, the rows kept.
        dtype: The buffers' dtype (float32 unless the sums read from them need float64).
        window: Keep only the last ``capacity`` rows (a ring: row ``n`` lives in slot ``n mod capacity``).

    Examples:
        >>> history = History(2, {"features": (3,), "rewards": ()}, torch.device("cpu"))
        >>> history.append(features=torch.ones(2, 3), rewards=torch.zeros(2))
        >>> history["features"].shape
        torch.Size([2, 1, 3])
    """

    def __init__(self, num_replicas: int, fields: dict[str, tuple[int, ...]], device: torch.device,
                 capacity: int = 256, *, dtype: torch.dtype = torch.float32, window: bool = False) -> None:
        self.num_replicas, self.device, self.dtype, self.window = num_replicas, device, dtype, window
        self.shapes = {name: tuple(shape) for name, shape in fields.items()}
        self._buffers = {name: torch.zeros(num_replicas, capacity, *shape, dtype=dtype, device=device)
                         for name, shape in self.shapes.items()}
        self._appended = 0  # rows appended since the start

    def __len__(self) -> int:
        """Rows stored per replica."""
        return min(self._appended, self.capacity) if self.window else self._appended

    @property
    def capacity(self) -> int:
        return next(iter(self._buffers.values())).shape[1]

    @property
    def appended(self) -> int:
        """Rows appended since the start (a window's older ones are gone)."""
        return self._appended

    def append(self, **rows: torch.Tensor) -> None:
        """Add one row per replica to every field: ``name=(R, *shape)``."""
        if set(rows) != set(self._buffers):
            raise ValueError(f"append needs exactly the fields {sorted(self._buffers)}, got {sorted(rows)}")
        if not self.window and self._appended == self.capacity:
            self._grow(2 * self.capacity)
        slot = self._appended % self.capacity
        for name, row in rows.items():
            self._buffers[name][:, slot] = row
        self._appended += 1

    def __getitem__(self, name: str) -> torch.Tensor:
        """The stored rows of a field, ``(R, n, *shape)`` (a view: do not keep it across ``append``); a window's
        rows in slot order, not in the order they came."""
        return self._buffers[name][:, : len(self)]

    def row_before(self, name: str, lag: torch.Tensor) -> torch.Tensor:
        """Each replica's row of ``name`` appended ``lag[r]`` appends before the next one, ``(R, *shape)``, for
        ``lag`` ``(R,)`` int64 in ``1 .. capacity`` (a window's row about to be replaced: ``lag = capacity``).
        A row not yet appended reads as the buffer's zeros or a kept row: mask it."""
        slot = (self._appended - lag) % self.capacity  # (R,)
        buffer = self._buffers[name]  # (R, capacity, *shape)
        index = slot.view(-1, 1, *([1] * (buffer.dim() - 2))).expand(-1, 1, *buffer.shape[2:])
        return buffer.gather(1, index)[:, 0]

    def _grow(self, capacity: int) -> None:
        for name, old in self._buffers.items():
            new = torch.zeros(self.num_replicas, capacity, *self.shapes[name], dtype=self.dtype, device=self.device)
            new[:, : self._appended] = old[:, : self._appended]
            self._buffers[name] = new

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The stored rows of every field (for ``save``); a window's whole ring and ``appended``."""
        if self.window:
            return {**self._buffers, "appended": torch.tensor(self._appended)}
        return {name: self[name] for name in self._buffers}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Replace the contents by ``state`` (as written by :meth:`state_dict`)."""
        if self.window:
            for name in self._buffers:
                self._buffers[name] = state[name].to(self.device, self.dtype)
            self._appended = int(state["appended"])
            return
        length = next(iter(state.values())).shape[1]
        capacity = self.capacity
        while capacity < length:
            capacity *= 2
        self._appended = 0
        self._grow(capacity)
        for name, rows in state.items():
            self._buffers[name][:, :length] = rows.to(self.device)
        self._appended = length
