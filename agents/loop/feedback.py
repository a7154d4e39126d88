"""Learning when rewards arrive late: the rounds an agent played and has not yet been paid for.

A feedback wrapper (:mod:`bandit_gym.feedback`: delayed or batched rewards) reveals a round's reward in
the ``info`` of a later step (``revealed_rounds``, ``revealed_rewards``, rounds counted from 0 at
``reset``); ``step``'s own reward is NaN until then, which ``agent.update`` refuses. The round loop of
``learn`` and of the experiment runner (:meth:`agents.base.BanditAgent.rounds`) keeps what each played round
needs here (its arm features and the arms played) and hands a round to the agent's ``_observe`` when its
reward arrives, oldest first; the agent's math does not change. Without those keys in ``info`` the loop learns
from each round at once. A loop of your own does the same with :meth:`PendingRounds.update`, and learns what
``learn`` learns, bit for bit::

    pending = PendingRounds()
    obs, info = env.reset(seed=agent.seeds[0])    # (a batched env: seed=agent.seeds)
    for t in range(T):
        actions, _ = agent.predict(obs)
        next_obs, reward, terminated, truncated, info = env.step(actions)   # reward: NaN until revealed
        pending.update(agent, obs, actions, info)  # keep this round, learn from the rounds info reveals
        obs = next_obs
        if terminated or truncated:
            obs, info = env.reset()
            pending.reset()
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from bandit_gym.threads import policy
from bandit_gym.validation import short_repr

#: The ``info`` key that says a step reveals rewards of earlier rounds.
REVEALED = "revealed_rounds"


def paid(info: dict[str, Any]) -> np.ndarray:
    """What a step paid: the sum of the rewards its ``info`` reveals, float64, ``()`` or ``(R,)`` (0.0: none).
    ``learn``'s ``history["reward"]`` under delayed or batched feedback."""
    return np.asarray(info["revealed_rewards"], dtype=np.float64).sum(axis=-1)


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

    @policy()
    def update(self, agent, observation, action, info: dict[str, Any]) -> None:
        """One step of your own loop under delayed or batched feedback, as ``learn`` plays it (module docstring):
        keep the round just played (``observation``: the arms it chose among, ``action``: the arms played, as
        given to :meth:`~agents.base.BanditAgent.update`) and learn from the rounds whose rewards ``info``
        reveals, oldest first. The agent's round ``t`` advances by one, as in ``learn``.

        Raises:
            ValueError: a bad observation or action (as ``agent.update`` says), an ``info`` without
                ``revealed_rounds`` (no feedback wrapper: use ``agent.update(obs, action, reward)``), a revealed
                reward that is not finite, or a revealed round this object did not keep (see :meth:`revealed`).
        """
        contexts = agent._as_contexts(observation, check_finite=True)  # (R, K, d)
        actions = agent._as_actions(action)  # (R,)
        if REVEALED not in info:
            raise ValueError(f"info must hold {REVEALED!r} (a step of a delayed or batched feedback wrapper, "
                             f"bandit_gym.feedback), got the keys {sorted(info)}; without one, learn with "
                             "agent.update(obs, action, reward)")
        rewards = np.asarray(info["revealed_rewards"], dtype=np.float64)
        if not np.isfinite(rewards).all():
            raise ValueError(f"info['revealed_rewards'] must be finite, got {short_repr(rewards.tolist())}")
        self.learn(agent, contexts, actions, info)

    def learn(self, agent, contexts: torch.Tensor, actions: torch.Tensor, info: dict[str, Any]) -> None:
        """:meth:`update` without its checks, for the round loop of ``learn``: ``contexts`` ``(R, K, d)`` float32 and
        ``actions`` ``(R,)`` int64 on the agent's device."""
        self.played(contexts, actions)
        for paid_round in self.revealed(info, agent.device):
            agent._observe(*paid_round)
        agent._end_round()

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
