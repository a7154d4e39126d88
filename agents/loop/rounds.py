"""The one round loop of the agents: :meth:`agents.base.BanditAgent.rounds` (public API).

``learn`` and the experiment runner (:func:`bandit_experiments.runner.play_rounds`) both play their rounds by
iterating it; each adds only what is its own (``learn``: history, logger, callbacks, progress bar; the
runner: timing, progress bar, checkpoints). One round is::

    actions = choose(obs)                       # _select, or predict when checked
    obs, reward, terminated, truncated, info = env.step(actions)
    learn(contexts, actions, rewards)           # _observe (+ t += 1), or update when checked;
                                                # under delayed or batched feedback: the rounds paid now
                                                # (PendingRounds.learn, or PendingRounds.update when checked)
    yield Round(...)

Where the env draws its rounds in chunks (:func:`bandit_gym.chunked_rounds`: a bandit env of bandit_gym, bare or
in the wrappers ``gym.make`` adds), ``env.step`` is :class:`ChunkSteps`' ``step``: it draws up to
:data:`CHUNK_ROUNDS` rounds with one ``next_rounds`` call and hands them out round by round, the same numbers as
the env's steps (``info`` holds ``regret`` only). Any other env or wrapper is stepped (``docs/envs.md``,
"Rounds in chunks").

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

from agents.loop.feedback import REVEALED, PendingRounds, paid
from bandit_gym import chunked_rounds
from bandit_gym.threads import holds, policy

#: Most rounds one ``next_rounds`` call draws: 256 rounds make the call's own cost (a few tensor operations per
#: chunk of rounds) small beside the rounds' (measured with ``benchmarks/chunks.py``).
CHUNK_ROUNDS = 256
#: Most bytes of arm features a chunk holds (``n R K d`` float32): 4 MiB, so that a chunk of many replicas or wide
#: arms (a dataset's one-hot blocks) stays in cache; at least one round is drawn.
CHUNK_BYTES = 2**22


@dataclass
class Round:
    """What one round of :meth:`~agents.base.BanditAgent.rounds` did.

    ``round``: 1-based within this loop; ``contexts``: the arms' features ``(R, K, d)``; ``actions``: the arms
    played ``(R,)`` int64 tensor; ``observation``, ``reward``, ``terminated``, ``truncated``, ``info``: what
    ``env.step`` returned (``observation`` is the next round's); ``rewards``: the reward as ``(R,)`` float32 on
    the agent's device (under delayed or batched feedback, where ``reward`` is NaN until revealed: what the step
    paid, the sum of the rewards ``info`` reveals, :func:`agents.loop.feedback.paid`); ``select_s``, ``update_s``:
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
        self._threads = policy(threads, work=agent.round_work())
        self._observation = observation
        self._checked, self._timed = checked, timed
        self._loop = self._play()

    def __iter__(self) -> Rounds:
        return self

    def __next__(self) -> Round:
        if holds(self._threads.threads):  # learn's or the runner's policy, entered once around the whole loop
            return next(self._loop)
        with self._threads:  # a bare loop: each round on the library's threads, the code between on the user's
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
        next_rounds = chunked_rounds(env)  # the seam: chunks where the env draws them, else its own steps
        step = env.step if next_rounds is None else ChunkSteps(env, next_rounds, self.total, obs).step
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
            next_obs, reward, terminated, truncated, info = step(step_actions)
            stepped = clock()
            self.updating = True
            if self._checked:  # (update and pending.update check the contexts they are given)
                contexts = agent._as_contexts(obs)
            if REVEALED in info:  # delayed or batched feedback: learn from the rounds paid now (loop/feedback.py)
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
                    agent._end_round()  # t += 1, and every CHECK_ROUNDS rounds the check for NaN or Inf
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
        agent._check_learned(agent.t - 1)  # agents that check for NaN or Inf every CHECK_ROUNDS rounds (agents/base.py)


class ChunkSteps:
    """``env.step``'s results for the rounds of ``next_rounds`` chunks (:func:`bandit_gym.chunked_rounds`).

    ``step(actions)`` returns ``(observation, reward, terminated, truncated, info)`` as the env's ``step`` would:
    the same numbers, types and array type (numpy or torch, as ``observation`` is), with ``info`` holding
    ``regret`` alone. A chunk is drawn when the last one is used up: up to :data:`CHUNK_ROUNDS` rounds, at most
    :data:`CHUNK_BYTES` of arm features, never past the episode's end or the ``total`` rounds of the loop. On CPU
    a chunk's rounds are read as numpy views (no torch call per round, as the single env's own step).

    A loop left early leaves the env at the end of its chunk, up to ``CHUNK_ROUNDS - 1`` rounds past the last
    round played (the next loop resets it).
    """

    def __init__(self, env: gym.Env | gym.vector.VectorEnv, next_rounds, total: int, observation: Any) -> None:
        self.next_rounds, self.left = next_rounds, total
        self.vector = isinstance(env, gym.vector.VectorEnv)
        self.bandit = env.unwrapped
        self.end = self.bandit.episode_steps if self.vector else self.bandit.horizon
        R, K, d = self.bandit.sim.num_replicas, self.bandit.n_arms, self.bandit.dim
        self.size = max(1, min(CHUNK_ROUNDS, CHUNK_BYTES // (R * K * d * 4)))
        self.numpy_out = isinstance(observation, np.ndarray)
        self.replicas = np.arange(R)
        self.chunk, self.arrays, self.i = None, None, 0

    def _draw(self) -> None:
        n = min(self.size, self.left, self.end - self.bandit.sim.t)
        self.chunk, self.i = self.next_rounds(n), 0
        fields = (self.chunk.contexts, self.chunk.next_contexts, self.chunk.scored, self.chunk.best,
                  self.chunk.rewards)
        self.arrays = tuple(x.numpy() for x in fields) if self.chunk.rewards.is_cpu else fields

    def step(self, actions: Any):
        if self.chunk is None or self.i == len(self.chunk):
            self._draw()
        i, chunk = self.i, self.chunk
        self.i, self.left = i + 1, self.left - 1
        contexts, next_contexts, scored, best, rewards = self.arrays  # (n, R, K, d), (R, K, d), (n, R, K), ...
        last = i + 1 == len(chunk)
        truncated = chunk.first_round + i + 1 >= self.end
        if isinstance(rewards, np.ndarray):  # CPU: numpy reads, the float32 arithmetic of step
            arms = np.asarray(actions.cpu() if isinstance(actions, torch.Tensor) else actions).reshape(-1)  # (R,)
            reward = rewards[i, self.replicas, arms]  # (R,)
            regret = best[i] - scored[i, self.replicas, arms]  # (R,) as RoundChunk.regret_of
            observation = next_contexts if last else contexts[i + 1]
        else:
            arms = torch.as_tensor(actions, device=rewards.device).reshape(-1)  # (R,)
            reward, regret = chunk.rewards_of(arms, i), chunk.regret_of(arms, i)  # (R,)
            observation = next_contexts if last else contexts[i + 1]
        if not self.vector:  # the single env: Python numbers, one (K, d) observation
            return observation[0], reward.item(), False, truncated, {"regret": regret.item()}
        return (self._out(observation), self._out(reward, float64=True), self._flags(False), self._flags(truncated),
                {"regret": self._out(regret, float64=True)})

    def _out(self, x, float64: bool = False):
        """``x`` (numpy or torch) as the env hands it out: its array type, float64 for rewards and regret."""
        if isinstance(x, np.ndarray):
            x = x.astype(np.float64) if float64 else x
            return x if self.numpy_out else torch.from_numpy(x)
        x = x.double() if float64 else x
        return x.cpu().numpy() if self.numpy_out else x

    def _flags(self, value: bool):
        R = len(self.replicas)
        if self.numpy_out:
            return np.full(R, value, dtype=bool)
        return torch.full((R,), value, dtype=torch.bool, device=self.chunk.rewards.device)


def _any(flags) -> bool:
    """Whether any flag is set: a bool, a numpy array or a tensor."""
    return bool(flags.any()) if isinstance(flags, torch.Tensor | np.ndarray) else bool(flags)
