"""Learning when rewards arrive late: the rounds an agent played and has not yet been paid for.

A feedback wrapper (:mod:`bandit_gym.feedback`: delayed or batched rewards) reveals a round's reward in
the ``info`` of a later step (``revealed_rounds``, ``revealed_rewards``, rounds counted from 0 at
``reset``). The round loop of ``learn`` and of the experiment runner
(:meth:`agents.base.BanditAgent.rounds`) keeps what each played round needs here (its arm features and
the arms played) and hands a round to the agent's ``_observe`` when its reward arrives, oldest first; the
agent's math does not change. Without those keys in ``info`` the loop learns from each round at once.
A loop of your own does the same with the public verbs::

    pending = PendingRounds()                     # and pending.reset() after each env.reset()
    actions, _ = agent.predict(obs)
    next_obs, reward, terminated, truncated, info = env.step(actions)
    pending.played(torch.as_tensor(obs).reshape(R, K, d), torch.as_tensor(actions).reshape(R))
    for contexts, played, rewards in pending.revealed(info, agent.device):
        agent.update(contexts, played, rewards)   # (there the agent's round t counts updates, not rounds)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

#: The ``info`` key that says a step reveals rewards of earlier rounds.
REVEALED = "revealed_rounds"


class PendingRounds:
    """The rounds of the current episode whose rewards have not arrived: ``{round: (contexts, actions)}``."""

    def __init__(self) -> None:
        self._rounds: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self._played = 0  # rounds played since reset

    def reset(self) -> None:
        """A new episode: round numbers start again at 0 (what is still pending is dropped)."""
        self._rounds.clear()
        self._played = 0

    def __len__(self) -> int:
        return len(self._rounds)

    def played(self, contexts: torch.Tensor, actions: torch.Tensor) -> None:
        """Keep the round just played: its arms ``(R, K, d)`` (a copy: the env's arrays are not ours) and
        actions ``(R,)``."""
        self._rounds[self._played] = (contexts.clone(), actions.clone())
        self._played += 1

    def revealed(self, info: dict[str, Any], device: torch.device) -> Iterator[tuple[torch.Tensor, ...]]:
        """The rounds whose rewards ``info`` reveals, oldest first:
        ``(contexts (R, K, d), actions (R,), rewards (R,))``."""
        rounds = np.asarray(info[REVEALED])
        rewards = np.asarray(info["revealed_rewards"], dtype=np.float64)
        if rounds.ndim == 2:  # a batched env: (R, n), the same rounds for every replica
            if len(rounds) > 1 and not (rounds == rounds[:1]).all():
                raise ValueError("the replicas of a batched env revealed different rounds in one step; "
                                 "an agent updates its replicas together and needs one schedule for all")
            rounds = rounds[0]
        else:  # a single env: (n,)
            rewards = rewards[None]
        for j, index in enumerate(rounds.tolist()):
            if index not in self._rounds:
                raise ValueError(f"info revealed the reward of round {index}, which this agent did not play "
                                 f"or was already paid for (rounds pending: {sorted(self._rounds)[:5]}...)")
            contexts, actions = self._rounds.pop(index)
            yield contexts, actions, torch.from_numpy(rewards[:, j].astype(np.float32)).to(device)
