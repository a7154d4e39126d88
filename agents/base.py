"""The base of every agent: R independent replicas as one batch, Stable-Baselines3 verbs.

An agent holds the state of ``R`` independent runs as tensors with a leading
replica axis (contexts ``(R, K, d)``, scores ``(R, K)``, actions ``(R,)``).
Subclasses implement two methods:

* :meth:`BanditAgent._select` ``(R, K, d) -> (R,)``: the arms to play this round.
* :meth:`BanditAgent._observe` ``(R, K, d), (R,), (R,)``: learn from the round.

Seeding: an agent made with ``seed=s`` gives replica ``r`` the random stream of
seed ``s + r`` (the envs' convention), so replica ``r`` of a batched run equals
a single run (``R = 1``) with ``seed=s + r``. Random numbers come from the
counter-based generator of ``bandit_gym._rng``: the draws of round ``t`` are a
function of ``(seed, stream, t)``, so ``predict`` never changes the agent.
"""

from __future__ import annotations

import numbers
import os
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from agents import _math, _rng_streams
from bandit_gym import _rng
from bandit_gym._base import _resolve_device


def check_positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """Validate a finite real hyperparameter > 0 (or >= 0), naming it in the error."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return float(value)


def check_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def env_sizes(env: gym.Env | gym.vector.VectorEnv) -> tuple[int, int, int]:
    """``(num_replicas, n_arms, dim)`` of a single env or a vector env, from its spaces."""
    if isinstance(env, gym.vector.VectorEnv):
        space, num = env.single_observation_space, env.num_envs
    else:
        space, num = env.observation_space, 1
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 2:
        raise ValueError(f"env must observe an arm-feature matrix Box(n_arms, dim), got observation space {space}")
    return num, space.shape[0], space.shape[1]


class _RoundLog:
    """One value per replica per round, as a ``(rounds, width)`` numpy array at the end.

    CPU values are written into a preallocated numpy array as they come. numpy arrays are not
    tracked by Python's cyclic garbage collector; a list of 10,000 tensors is, and it made
    the collector run every few rounds and walk the growing list (measured on a LinTS run of
    10,000 rounds: 0.03-0.5 s of collections, against 0.001-0.24 s with numpy rows). Values on
    another device (CUDA tensors) are kept as they come and stacked once at the end, so the
    loop never waits for the device.
    """

    def __init__(self, rounds: int, width: int, dtype: np.dtype) -> None:
        self._array = np.empty((rounds, width), dtype)
        self._rows: list[torch.Tensor] = []  # device tensors
        self._count = 0

    def add(self, value) -> None:
        if isinstance(value, torch.Tensor):
            if not value.is_cpu:
                self._rows.append(value)
                return
            value = value.numpy()
        self._array[self._count] = value  # a float, or an array of the row's shape
        self._count += 1

    def rows(self) -> np.ndarray:
        if self._rows:
            return torch.stack(self._rows).reshape(len(self._rows), -1).cpu().numpy().astype(self._array.dtype)
        # A run stopped early (callback) keeps a copy of its rows, not the whole preallocated array.
        return self._array if self._count == len(self._array) else self._array[: self._count].copy()


def _any(flags) -> bool:
    """``flags.any()`` for a numpy array or a tensor (on CPU through a Python list: 1 us, against 2-5 us
    for numpy's or torch's ``any`` on the 10 flags of a typical batch)."""
    if isinstance(flags, torch.Tensor):
        return any(flags.tolist()) if flags.is_cpu else bool(flags.any())
    return bool(np.any(flags))


class DivergenceError(RuntimeError):
    """Parameters became NaN or Inf (e.g. a step size too large)."""


class BanditAgent(ABC):
    """Base class: ``learn``, ``predict``, ``update``, ``save``/``load`` over R replicas.

    Args:
        env: A bandit env (``R = 1``) or a batched env (``R = num_envs``); sizes come from its
            spaces. May be None if ``n_arms``, ``dim`` (and ``num_replicas``) are given.
        seed: Seed of replica 0; replica ``r`` uses ``seed + r``. None draws one at random.
        device: ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda"``.
        n_arms, dim, num_replicas: Sizes, when no env is given.
    """

    #: Names of the tensor attributes that make up the agent's learned state (saved by ``save``).
    state_names: tuple[str, ...] = ()

    def __init__(
        self,
        env: gym.Env | gym.vector.VectorEnv | None = None,
        *,
        seed: int | None = None,
        device: str | torch.device = "auto",
        n_arms: int | None = None,
        dim: int | None = None,
        num_replicas: int | None = None,
    ) -> None:
        if env is not None:
            self.num_replicas, self.n_arms, self.dim = env_sizes(env)
        elif n_arms is None or dim is None:
            raise ValueError("give an env, or n_arms and dim (and num_replicas)")
        else:
            self.num_replicas = check_int("num_replicas", 1 if num_replicas is None else num_replicas)
            self.n_arms, self.dim = check_int("n_arms", n_arms), check_int("dim", dim)
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (2**31))
        self.seed = check_int("seed", seed, minimum=0)
        self.device = _resolve_device(device)
        self.keys = _rng.seed_to_key(torch.arange(self.num_replicas, dtype=torch.int64) + self.seed).to(self.device)
        self._batch_shape = (self.num_replicas, self.n_arms, self.dim)
        self.t = 1  # the round about to be played (1-based, as in the papers)
        self.history: dict[str, np.ndarray] = {}
        self._learn_calls = 0

    # -- what an algorithm implements ------------------------------------------
    @abstractmethod
    def _select(self, contexts: torch.Tensor) -> torch.Tensor:
        """Arms to play in round ``self.t``: ``(R, K, d) -> (R,)`` int64. Must not change state."""

    @abstractmethod
    def _observe(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        """Learn from round ``self.t``: ``(R, K, d), (R,), (R,)``. ``self.t`` is advanced afterwards."""

    def hyperparameters(self) -> dict[str, Any]:
        """Constructor keywords that rebuild this agent (saved with its state)."""
        return {}

    # -- public verbs ---------------------------------------------------------
    def predict(self, observation, state=None, episode_start=None, deterministic: bool = False):
        """Choose arms (Stable-Baselines3 signature); returns ``(actions, None)``.

        ``observation`` is ``(K, d)`` (then ``R`` must be 1; the action is a 0-d array) or
        ``(R, K, d)``, numpy or torch. The answer is numpy for numpy input, torch otherwise.
        ``deterministic`` is accepted for compatibility; Thompson-style agents still sample.
        """
        contexts, single, as_numpy = self._as_batch(observation, "observation")
        actions = self._select(contexts)  # (R,)
        if single:
            actions = actions[0]
        return (actions.cpu().numpy() if as_numpy else actions), None

    def update(self, observation, action, reward) -> None:
        """One online step: learn from playing ``action`` on ``observation`` and getting ``reward``."""
        contexts, _, _ = self._as_batch(observation, "observation")
        actions = torch.as_tensor(np.asarray(action) if not isinstance(action, torch.Tensor) else action)
        actions = actions.to(self.device, torch.int64).reshape(-1)  # (R,)
        rewards = torch.as_tensor(np.asarray(reward) if not isinstance(reward, torch.Tensor) else reward)
        rewards = rewards.to(self.device, torch.float32).reshape(-1)  # (R,)
        for name, value in (("action", actions), ("reward", rewards)):
            if value.shape != (self.num_replicas,):
                raise ValueError(
                    f"{name} must hold one value per replica ({self.num_replicas}), got shape {tuple(value.shape)}"
                )
        if bool(((actions < 0) | (actions >= self.n_arms)).any()):
            raise ValueError(f"action must be in [0, {self.n_arms}), got {actions.tolist()}")
        if not bool(torch.isfinite(rewards).all()):
            raise ValueError(f"reward must be finite, got {rewards.tolist()}")
        self._observe(contexts, actions, rewards)
        self.t += 1

    def learn(
        self,
        env: gym.Env | gym.vector.VectorEnv,
        total_timesteps: int | None = None,
        callback: Callable[[BanditAgent, int], bool | None] | None = None,
        progress_bar: bool = False,
    ) -> BanditAgent:
        """Play ``total_timesteps`` rounds (default: the env's horizon) and learn from each.

        The first ``learn`` resets the env with the agent's seed; later calls continue with
        unseeded resets. ``history["regret"]``, ``["reward"]`` and ``["action"]`` hold one row
        per round, shape ``(T,)`` for a single env and ``(T, R)`` for a batched one.
        ``callback(agent, round)`` runs after every round; returning False stops.
        """
        num, n_arms, dim = env_sizes(env)
        if (num, n_arms, dim) != (self.num_replicas, self.n_arms, self.dim):
            raise ValueError(
                f"env has (num_envs, n_arms, dim) = {(num, n_arms, dim)}, the agent was built for "
                f"{(self.num_replicas, self.n_arms, self.dim)}"
            )
        horizon = getattr(env.unwrapped if isinstance(env, gym.Env) else env, "horizon", None)
        total = check_int("total_timesteps", total_timesteps if total_timesteps is not None else horizon or 0)
        vector = isinstance(env, gym.vector.VectorEnv)
        obs, _ = env.reset(seed=self.seed if self._learn_calls == 0 else None)
        self._learn_calls += 1
        rounds = range(total)
        if progress_bar:
            from tqdm.auto import tqdm

            rounds = tqdm(rounds, desc=type(self).__name__, unit="round")
        logs = {"regret": _RoundLog(total, self.num_replicas, np.float32),
                "reward": _RoundLog(total, self.num_replicas, np.float32),
                "action": _RoundLog(total, self.num_replicas, np.int64)}
        torch_actions = vector and isinstance(obs, torch.Tensor)
        played = 0
        for _ in rounds:
            contexts, _, _ = self._as_batch(obs, "observation")
            actions = self._select(contexts)  # (R,)
            if torch_actions:
                step_action = actions
            else:
                step_action = actions.cpu().numpy() if vector else int(actions[0])
            obs, reward, _, truncated, info = env.step(step_action)
            rewards = self._as_rewards(reward)  # (R,)
            self._observe(contexts, actions, rewards)
            self.t += 1
            logs["regret"].add(info["regret"])
            logs["reward"].add(rewards)
            logs["action"].add(actions)
            played += 1
            if callback is not None and callback(self, played) is False:
                break
            ended = _any(truncated)
            if played < total and ended:
                obs, _ = env.reset()
        self.history = {name: (log.rows()[:, 0] if not vector else log.rows()) for name, log in logs.items()}
        return self

    # -- persistence ----------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write hyperparameters and state to ``path`` atomically (never half-written)."""
        path = Path(path)
        payload = {
            "class": type(self).__name__,
            "hyperparameters": self.hyperparameters(),
            "sizes": {"n_arms": self.n_arms, "dim": self.dim, "num_replicas": self.num_replicas},
            "seed": self.seed,
            "t": self.t,
            "state": {name: value.detach().cpu() for name, value in self._get_state().items()},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save(payload, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike, device: str | torch.device = "auto") -> BanditAgent:
        """Rebuild an agent saved with :meth:`save`."""
        payload = torch.load(Path(path), map_location="cpu", weights_only=True)
        if payload["class"] != cls.__name__:
            raise ValueError(f"{path} holds a {payload['class']} agent, not a {cls.__name__}")
        agent = cls(None, seed=payload["seed"], device=device, **payload["sizes"], **payload["hyperparameters"])
        agent.t = payload["t"]
        agent._set_state({name: value.to(agent.device) for name, value in payload["state"].items()})
        return agent

    def _get_state(self) -> dict[str, torch.Tensor]:
        """The tensors ``save`` writes; by default the attributes named in ``state_names``."""
        return {name: getattr(self, name) for name in self.state_names}

    def _set_state(self, state: dict[str, torch.Tensor]) -> None:
        """Inverse of :meth:`_get_state` (tensors already on ``self.device``)."""
        for name, value in state.items():
            setattr(self, name, value)

    # -- helpers for subclasses ------------------------------------------------
    def _as_batch(self, observation, what: str) -> tuple[torch.Tensor, bool, bool]:
        if (isinstance(observation, torch.Tensor) and observation.shape == self._batch_shape
                and observation.dtype == torch.float32 and observation.device == self.device):
            return observation, False, False  # the common case in learn: a batched env's own tensor
        as_numpy = not isinstance(observation, torch.Tensor)
        x = torch.as_tensor(np.asarray(observation) if as_numpy else observation)
        single = x.ndim == 2
        if single:
            x = x[None]
        if x.shape != (self.num_replicas, self.n_arms, self.dim):
            raise ValueError(
                f"{what} must have shape ({self.n_arms}, {self.dim}) or "
                f"({self.num_replicas}, {self.n_arms}, {self.dim}), "
                f"got {tuple(x.shape) if not single else tuple(x.shape[1:])}"
            )
        return x.to(self.device, torch.float32), single, as_numpy

    def _as_rewards(self, reward) -> torch.Tensor:
        """An env's reward(s) as ``(R,)`` float32 on the device."""
        if isinstance(reward, torch.Tensor) and reward.dtype == torch.float32 and reward.device == self.device:
            return reward if reward.shape == (self.num_replicas,) else reward.reshape(self.num_replicas)
        if isinstance(reward, torch.Tensor):
            return reward.to(self.device, torch.float32).reshape(self.num_replicas)
        return torch.as_tensor(np.asarray(reward, dtype=np.float32), device=self.device).reshape(self.num_replicas)

    def _argmax(self, values: torch.Tensor) -> torch.Tensor:
        """Greedy arm per replica with uniform random tie-breaking: ``(R, K) -> (R,)``."""
        return _math.random_argmax(values, *self._ties())

    def _ties(self) -> tuple[torch.Tensor, int, int]:
        """This round's tie-breaking draws: the ``(keys, stream, counter)`` of :func:`_math.random_argmax`."""
        return self.keys, _rng_streams.TIES, self.t

    def _check_finite(self, tensor: torch.Tensor, what: str, step_size: float | None = None) -> None:
        if not _math.all_finite(tensor):
            self._diverged(what, step_size)

    def _diverged(self, what: str, step_size: float | None = None) -> None:
        hint = f" with step size {step_size:g}" if step_size is not None else ""
        raise DivergenceError(
            f"{type(self).__name__}: {what} became NaN or Inf in round {self.t}{hint}; try a smaller step size"
        )
