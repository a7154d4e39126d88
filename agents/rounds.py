"""The one round loop of the agents: :meth:`agents.base.BanditAgent.rounds` (public API).

``learn`` and the experiment runner (:func:`experiments.runner.play_rounds`) both play their rounds by
iterating it; each adds only what is its own (``learn``: history, logger, callbacks, progress bar; the
runner: timing, progress bar, checkpoints). One round is::

    actions = choose(obs)                       # _select, or predict when checked
    obs, reward, terminated, truncated, info = env.step(actions)
    learn(contexts, actions, rewards)           # _observe (+ t += 1), or update when checked;
                                                # under delayed or batched feedback: the rounds paid now
                                                # (PendingRounds.learn, or PendingRounds.update when checked)
    yield Round(...)

Example (timing the parts as the runner does)::

    for r in agent.rounds(env, 1000, timed=True):
        print(r.round, r.select_s, r.update_s, r.info["regret"])
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from agents.feedback import REVEALED, PendingRounds, paid
from bandit_gym.threads import policy


@dataclass
class Round:
    """What one round of :meth:`~agents.base.BanditAgent.rounds` did.

    ``round``: 1-based within this loop; ``contexts``: the arms' features ``(R, K, d)``; ``actions``: the arms
    played ``(R,)`` int64 tensor; ``observation``, ``reward``, ``terminated``, ``truncated``, ``info``: what
    ``env.step`` returned (``observation`` is the next round's); ``rewards``: the reward as ``(R,)`` float32 on
    the agent's device (under delayed or batched feedback, where ``reward`` is NaN until revealed: what the step
    paid, the sum of the rewards ``info`` reveals, :func:`agents.feedback.paid`); ``select_s``, ``update_s``:
    seconds spent choosing the arms and learning (waiting for a CUDA device only with ``timed=True``).
    """

    round: int
    contexts: torch.Tensor
    actions: torch.Tensor
    observation: Any
    reward: Any
    rewards: torch.Tensor
    terminated: Any
    truncated: Any
    info: dict[str, Any]
    select_s: float
    update_s: float


class Rounds:
    """Iterator over the rounds of ``agent`` on ``env`` (see :meth:`agents.base.BanditAgent.rounds`).

    ``updating`` is True while the agent learns from a round (its state may then be half-changed): a
    ``KeyboardInterrupt`` that leaves the loop with ``updating`` False left the agent between two rounds.
    """

    def __init__(self, agent, env: gym.Env | gym.vector.VectorEnv, total: int, observation: Any = None, *,
                 checked: bool = False, timed: bool = False, threads: int | str | None = None) -> None:
        self.agent, self.env, self.total = agent, env, total
        self.updating = False
        self._threads = policy(threads)
        self._observation = observation
        self._checked, self._timed = checked, timed
        self._loop = self._play()

    def __iter__(self) -> Rounds:
        return self

    def __next__(self) -> Round:
        with self._threads:
            return next(self._loop)

    def close(self) -> None:
        self._loop.close()

    def _play(self):
        agent, env = self.agent, self.env
        vector = isinstance(env, gym.vector.VectorEnv)
        obs = self._observation
        if obs is None:  # the agent's first loop resets with its seeds, later ones unseeded
            seeds = (agent.seeds if vector else agent.seeds[0]) if agent._learn_calls == 0 else None
            obs, _ = env.reset(seed=seeds)
            agent._learn_calls += 1
        synchronize = torch.cuda.synchronize if self._timed and agent.device.type == "cuda" else None
        clock = time.perf_counter
        pending = PendingRounds()  # rounds whose rewards have not arrived (delayed or batched feedback)
        for played in range(1, self.total + 1):
            start = clock()
            if self._checked:  # the public verbs, which check what they are given
                step_actions, _ = agent.predict(obs)
                actions = torch.as_tensor(step_actions, device=agent.device).reshape(-1)
            else:
                contexts = agent._as_contexts(obs)
                actions = agent._select(contexts)  # (R,)
                if not vector:
                    step_actions = actions.item()  # (R = 1: the one arm, a Python int)
                else:
                    step_actions = actions if isinstance(obs, torch.Tensor) else actions.cpu().numpy()
            if synchronize is not None:
                synchronize()
            chosen = clock()
            next_obs, reward, terminated, truncated, info = env.step(step_actions)
            stepped = clock()
            self.updating = True
            if self._checked:  # (update and pending.update check the contexts they are given)
                contexts = agent._as_contexts(obs)
            if REVEALED in info:  # delayed or batched feedback: learn from the rounds paid now (agents/feedback.py)
                rewards = agent._as_rewards(paid(info))  # (R,) (the step's own reward is NaN until revealed)
                if self._checked:
                    pending.update(agent, contexts, actions, info)
                else:
                    pending.learn(agent, contexts, actions, info)
            else:
                rewards = agent._as_rewards(reward)  # (R,)
                if self._checked:
                    agent.update(contexts, actions, rewards)
                else:
                    agent._observe(contexts, actions, rewards)
                    agent.t += 1
            if synchronize is not None:
                synchronize()
            updated = clock()
            self.updating = False
            yield Round(played, contexts, actions, next_obs, reward, rewards, terminated, truncated, info,
                        chosen - start, updated - stepped)
            obs = next_obs
            if played < self.total and (_any(terminated) or _any(truncated)):
                obs, _ = env.reset()
                pending.reset()


def _any(flags) -> bool:
    """Whether any flag is set: a bool, a numpy array or a tensor."""
    return bool(flags.any()) if isinstance(flags, torch.Tensor | np.ndarray) else bool(flags)
