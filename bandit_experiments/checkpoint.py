"""Checkpoints of a cell that is being played, so that an interrupted run continues mid-cell.

A checkpoint holds what the rounds played so far made, never the env: the agent's state (its
``_state()`` tensors, the ones ``save`` writes, and its round ``t``), the arms played and the regret
of every round so far ``(k, R)``, and the time spent in all, in arm selection and in updates (a
continued cell's times include the runs before it). The env is a pure function of its seeds and the
arms played, so on resume it is reset with the agent's seeds and the ``k`` recorded rounds are
stepped again, which costs the env's own share of those rounds (``benchmarks/checkpoint_replay.py``
times the replay against the play; its record is ``benchmarks/results/checkpoint_replay.json``); the
regret it gives back must equal the recorded one, else the checkpoint is not used. The rounds after
``k`` are then those of a run that was never interrupted, bit for bit (same seed, batch and device;
tested for every agent class).

A checkpoint is bound to what makes the cell's numbers (the cell config, the batch's grid points,
the device, the package versions and the kernel switch); one made otherwise, or one that cannot be
read, is named, removed, and the batch starts at round 1. It is written atomically
(:func:`bandit_experiments.storage.write_atomic`) every ``every_s`` seconds of play at most (and no sooner
than ten times the last save's duration), and when the run is interrupted; it is removed when the
cell is written. Files: ``DIR/checkpoints/<label>/batch.pt`` for the whole batch, ``point<p>.pt``
for grid point ``p`` played alone after the batch diverged. Read with
``torch.load(weights_only=True)``: no code runs.
"""

from __future__ import annotations

import io
import json
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bandit_experiments.storage import write_atomic

FORMAT_VERSION = 1
#: Seconds of play between two checkpoints (a checkpoint of a neural agent writes its history: keep it rare).
EVERY_S = 30.0


@dataclass
class Progress:
    """The rounds played so far: arms ``(k, R)`` int64, regret ``(k, R)`` float64, the timed parts (s)."""

    actions: list[np.ndarray] = field(default_factory=list)
    regret: list[Any] = field(default_factory=list)  # numpy (R,) or torch (R,) rows, as the env gives them
    select_s: float = 0.0
    update_s: float = 0.0
    earlier_s: float = 0.0  # wall time of the runs that played these rounds before (up to their checkpoint)

    @property
    def rounds(self) -> int:
        return len(self.regret)


def stack_rows(rows: list[Any]) -> np.ndarray:
    """Per-round rows ``(R,)`` as ``(k, R)`` float64: numpy rows (from the env, or restored from a checkpoint:
    those come first) then torch rows (an env that hands out tensors, on any device: one copy to the host)."""
    split = next((i for i, row in enumerate(rows) if isinstance(row, torch.Tensor)), len(rows))
    parts = [np.stack([np.asarray(row) for row in rows[:split]])] if split else []
    if split < len(rows):
        parts.append(torch.stack(rows[split:]).cpu().numpy())
    return np.concatenate(parts).astype(np.float64)


class Checkpoint:
    """One batch's checkpoint file; ``key`` is what must match for it to be used (JSON values)."""

    def __init__(self, path: Path, key: dict[str, Any], every_s: float = EVERY_S) -> None:
        self.path, self.every_s = Path(path), every_s
        self.key = json.loads(json.dumps(key))  # as it reads back (tuples as lists)
        self._last = self._created = time.monotonic()
        self._save_s = 0.0  # how long the last save took
        self.note: str | None = None  # what load() did, for the log

    def due(self) -> bool:
        """Whether ``every_s`` seconds have passed since the last save, and ten times that save's duration (a
        large state, a slow disk: checkpoints cost at most about a tenth of the run)."""
        return time.monotonic() - self._last >= max(self.every_s, 10 * self._save_s)

    def save(self, agent, progress: Progress) -> None:
        """Write the agent's state after ``progress.rounds`` rounds (call it between rounds only)."""
        start = time.monotonic()
        payload = {"format": FORMAT_VERSION, "key": self.key, "t": agent.t, "rounds": progress.rounds,
                   "state": {name: value.detach().cpu() for name, value in agent._state().items()},
                   "actions": torch.from_numpy(np.stack(progress.actions).astype(np.int64)),  # (k, R)
                   "regret": torch.from_numpy(stack_rows(progress.regret)),  # (k, R)
                   "select_s": progress.select_s, "update_s": progress.update_s,
                   "wall_s": progress.earlier_s + time.monotonic() - self._created}
        buffer = io.BytesIO()
        torch.save(payload, buffer)
        write_atomic(self.path, buffer.getvalue())
        self._last = time.monotonic()
        self._save_s = self._last - start

    def load(self, agent, env) -> tuple[Progress, Any] | None:
        """Restore ``agent`` (fresh, seeded) and ``env`` to the checkpoint; returns the progress and the
        observation of the next round, or None (no usable checkpoint: start at round 1)."""
        if not self.path.is_file():
            return None
        try:
            payload = torch.load(self.path, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001  (any unreadable file: start again, and say so)
            return self._discard(f"unreadable ({type(exc).__name__}: {exc})")
        if payload.get("format") != FORMAT_VERSION or payload.get("key") != self.key:
            return self._discard("made with another config, device or version")
        actions, regret = payload["actions"].numpy(), payload["regret"].numpy()  # (k, R) each
        obs, _ = env.reset(seed=list(agent.seeds))
        for k in range(payload["rounds"]):  # the env is a function of its seeds and the arms played
            obs, _, _, _, info = env.step(actions[k])
            replayed = info["regret"]
            replayed = replayed.cpu().numpy() if isinstance(replayed, torch.Tensor) else np.asarray(replayed)
            if not np.array_equal(replayed.astype(np.float64), regret[k]):
                return self._discard(f"the env gives other numbers at round {k + 1}")
        agent._load_state({name: value.to(agent.device) for name, value in payload["state"].items()})
        agent.t = payload["t"]
        self.note = f"continues from its checkpoint {self.path.name} at round {payload['rounds'] + 1}"
        progress = Progress(list(actions), list(regret), payload["select_s"], payload["update_s"], payload["wall_s"])
        return progress, obs

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    def _discard(self, why: str) -> None:
        self.note = f"checkpoint {self.path} not used ({why}): removed, the cell starts at round 1"
        self.remove()
        return None


class DeferredInterrupt:
    """While a checkpointed cell plays, the first Ctrl-C (SIGINT) is held until the round ends, so that the
    checkpoint is of a whole round; a second one interrupts at once. Only in the main thread, and only where
    SIGINT has Python's default handler (a handler of the caller's own is left alone); restored after."""

    def __init__(self, enabled: bool) -> None:
        self.enabled, self.requested, self._previous = enabled, False, None

    def __enter__(self) -> DeferredInterrupt:
        if (self.enabled and threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def raise_if_requested(self) -> None:
        if self.requested:
            raise KeyboardInterrupt
