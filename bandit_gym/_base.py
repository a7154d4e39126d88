"""Shared machinery of every bandit env: one batched simulator, two Gymnasium faces.

A :class:`BanditSimulator` holds ``R`` independent replicas of one contextual
bandit problem as tensors and advances them all with tensor operations. The
single env (:class:`BanditEnv`, ``R = 1``, numpy in and out) and the native
batched env (:class:`BanditVectorEnv`, any ``R``, torch or numpy) both drive the
same simulator class, so a problem's math is written exactly once.

Seeding: every random number is a function of the replica's key (see
``bandit_gym._rng``). ``reset(seed=s)`` on a single env uses the key of ``s``;
replica ``i`` of a batched env reset with ``seed=s`` uses the key of ``s + i``
(Gymnasium's own convention for vector envs), so it reproduces the single env
reset with ``seed=s + i`` exactly. An unseeded ``reset`` moves every replica to
its next episode key; the first unseeded ``reset`` draws a seed from
``self.np_random``.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from bandit_gym import _kernels, _rng


def check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """Validate an integer keyword, naming it in the error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_nonnegative_float(name: str, value: Any) -> float:
    """Validate a finite float keyword >= 0, naming it in the error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


class BanditSimulator(ABC):
    """``R`` replicas of a contextual bandit, advanced in lockstep with tensor ops.

    Subclasses implement :meth:`_new_episode` (draw the instance from the keys),
    :meth:`_contexts` (the arm features of round ``t``) and
    :meth:`_mean_rewards` / :meth:`_sample_rewards`; everything else (round
    counting, regret, seeding) lives here. A subclass that can compute many
    rounds at once overrides :meth:`_round` instead of :meth:`_contexts`.
    """

    n_arms: int
    dim: int
    horizon: int
    #: Bounds of every feature, for the observation space.
    feature_low: float = -np.inf
    feature_high: float = np.inf
    #: Bounds of a single reward, for ``reward_range``-style documentation.
    reward_low: float = -np.inf
    reward_high: float = np.inf

    def __init__(self, num_replicas: int, device: torch.device | str = "cpu") -> None:
        self.num_replicas = check_positive_int("num_envs", num_replicas)
        self.device = torch.device(device)
        self.keys = torch.zeros(self.num_replicas, dtype=torch.int64, device=self.device)  # (R,)
        self.t = 0
        self.contexts: torch.Tensor | None = None  # (R, K, d) of the current round
        self.expected: torch.Tensor | None = None  # (R, K) expected rewards of those arms
        self.best: torch.Tensor | None = None  # (R,) the largest of them
        self.optimal_action: torch.Tensor | None = None  # (R,) the first arm that has it

    # -- to implement -------------------------------------------------------
    @abstractmethod
    def _new_episode(self) -> None:
        """Draw what stays fixed for the episode (theta*, a fixed arm set) from ``self.keys``."""

    def _contexts(self, t: int) -> torch.Tensor:
        """Arm features of round ``t`` (0-based), ``(R, K, d)`` float32 (used by :meth:`_round`)."""
        raise NotImplementedError

    @abstractmethod
    def _mean_rewards(self, contexts: torch.Tensor) -> torch.Tensor:
        """Expected reward of every arm, ``(R, K, d) -> (R, K)`` (or ``(R, B, K, d) -> (R, B, K)``, B rounds)."""

    @abstractmethod
    def _sample_rewards(self, chosen_mean: torch.Tensor, t: int) -> torch.Tensor:
        """Random rewards of the chosen arms given their expected rewards ``(R,) -> (R,)``."""

    # -- driven by the envs ---------------------------------------------------
    def reset(self, keys: torch.Tensor) -> None:
        self.keys = keys.to(self.device)
        self.t = 0
        self._new_episode()
        self._observe()

    def _round(self, t: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Round ``t`` (0-based): arm features ``(R, K, d)``, expected rewards ``(R, K)``, their largest
        value ``(R,)`` and the first arm that has it ``(R,)``.

        The features are the caller's to keep or modify: a new tensor, or a view of memory the
        simulator never reads again. The other three are read only by the simulator (``info``
        copies them). A subclass that computes many rounds at once overrides this method.
        """
        contexts = self._contexts(t)
        expected = self._mean_rewards(contexts)  # (R, K)
        best, optimal = expected.max(dim=1)  # (R,), (R,): the first maximiser
        return contexts, expected, best, optimal

    def _observe(self) -> None:
        self.contexts, self.expected, self.best, self.optimal_action = self._round(self.t)

    def step(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Play ``actions`` ``(R,)`` int64 in the current round; return ``(rewards, regret)``, both ``(R,)``."""
        rewards, regret = self._outcome(actions)
        self.t += 1
        # The round after the horizon is observed too, so that the final observation
        # and its info agree as always; it is never played.
        self._observe()
        return rewards, regret

    def _outcome(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The round's rewards and regrets of ``actions`` ``(R,)``: ``(R,)`` each."""
        if self.device.type == "cpu" and self.expected.dtype == torch.float32:  # one compiled call, same numbers
            chosen, regret = _kernels.chosen_and_regret(self.expected.numpy(), self.best.numpy(), actions.numpy())
            chosen, regret = torch.from_numpy(chosen), torch.from_numpy(regret)  # (R,) each
        else:
            chosen = self.expected.gather(1, actions[:, None]).squeeze(1)  # (R,)
            regret = self.best - chosen
        return self._sample_rewards(chosen, self.t), regret

    @property
    def truncated(self) -> bool:
        return self.t >= self.horizon

    def info(self) -> dict[str, torch.Tensor]:
        """What the current observation's arms are worth (never needed to act); copies, the caller's to keep."""
        return {"expected_rewards": self.expected.clone(), "optimal_action": self.optimal_action.clone()}


def _action_error(action: Any, n_arms: int, why: str) -> ValueError:
    return ValueError(
        f"action must be an integer arm index in [0, {n_arms}) (Discrete({n_arms})); "
        f"got {action!r} of type {type(action).__name__}: {why}"
    )


class BanditEnv(gym.Env):
    """A single contextual bandit: the ``R = 1`` face of a :class:`BanditSimulator`.

    Observations are numpy ``(n_arms, dim)`` float32; ``info`` carries
    ``expected_rewards`` and ``optimal_action`` of the observation it comes with,
    and, from ``step``, the ``regret`` of the round just played.
    """

    metadata = {"render_modes": []}
    simulator_class: type[BanditSimulator]

    def __init__(self, **kwargs: Any) -> None:
        self.sim = self.simulator_class(num_replicas=1, device="cpu", **kwargs)
        self.n_arms, self.dim, self.horizon = self.sim.n_arms, self.sim.dim, self.sim.horizon
        self.observation_space = gym.spaces.Box(
            self.sim.feature_low, self.sim.feature_high, shape=(self.n_arms, self.dim), dtype=np.float32
        )
        self.action_space = gym.spaces.Discrete(self.n_arms)
        self._key: torch.Tensor | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._key = _rng.seed_to_key(torch.tensor([seed]))
        elif self._key is None:
            self._key = _rng.seed_to_key(torch.from_numpy(self.np_random.integers(0, 2**62, size=1)))
        else:
            self._key = _rng.next_episode_key(self._key)
        self.sim.reset(self._key)
        return self._observation(), self._info()

    def step(self, action: Any):
        if self._key is None:
            raise RuntimeError("call reset() before step()")
        if self.sim.truncated:
            raise RuntimeError(f"the episode ended at its horizon ({self.horizon} rounds); call reset()")
        index = self._check_action(action)
        rewards, regret = self.sim.step(torch.tensor([index]))
        info = self._info()
        info["regret"] = float(regret[0])
        return self._observation(), float(rewards[0]), False, self.sim.truncated, info

    def _check_action(self, action: Any) -> int:
        if isinstance(action, np.ndarray):
            if action.shape != ():
                raise _action_error(action, self.n_arms, f"expected a scalar, got shape {action.shape}")
            action = action[()]
        elif isinstance(action, torch.Tensor):
            if action.ndim != 0:
                raise _action_error(action, self.n_arms, f"expected a scalar, got shape {tuple(action.shape)}")
            action = action.item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, numbers.Integral):
            raise _action_error(action, self.n_arms, "not an integer")
        if not 0 <= action < self.n_arms:
            raise _action_error(action, self.n_arms, "out of range")
        return int(action)

    def _observation(self) -> np.ndarray:
        return self.sim.contexts[0].numpy()  # (K, d)

    def _info(self) -> dict[str, Any]:
        info = self.sim.info()
        return {"expected_rewards": info["expected_rewards"][0].numpy(),
                "optimal_action": int(info["optimal_action"][0])}


class BanditVectorEnv(VectorEnv):
    """``num_envs`` independent replicas of a bandit, simulated as one batch.

    Arrays are torch tensors on ``device`` by default (``array_type="torch"``),
    or numpy arrays with ``array_type="numpy"``. Actions ``(num_envs,)`` may be
    either. When the horizon is reached every replica is truncated together and
    the next ``step`` resets them (Gymnasium's ``NEXT_STEP`` autoreset mode).
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}
    simulator_class: type[BanditSimulator]

    def __init__(self, num_envs: int = 1, device: str | torch.device = "cpu", array_type: str = "torch", **kwargs: Any):
        if array_type not in ("torch", "numpy"):
            raise ValueError(f"array_type must be 'torch' or 'numpy', got {array_type!r}")
        self.array_type = array_type
        self.device = _resolve_device(device)
        self.sim = self.simulator_class(num_replicas=num_envs, device=self.device, **kwargs)
        self.num_envs = self.sim.num_replicas
        self.n_arms, self.dim, self.horizon = self.sim.n_arms, self.sim.dim, self.sim.horizon
        self.single_observation_space = gym.spaces.Box(
            self.sim.feature_low, self.sim.feature_high, shape=(self.n_arms, self.dim), dtype=np.float32
        )
        self.single_action_space = gym.spaces.Discrete(self.n_arms)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._keys: torch.Tensor | None = None
        self._needs_reset = False

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        # self.np_random only supplies the seed of a first, unseeded reset.
        super().reset(seed=seed[0] if isinstance(seed, (list, tuple)) and seed else seed)
        if seed is not None:
            seeds = list(seed) if isinstance(seed, (list, tuple)) else [seed + i for i in range(self.num_envs)]
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed must be an int or a list of {self.num_envs} ints, got {len(seeds)} seeds")
            self._keys = _rng.seed_to_key(torch.tensor(seeds, dtype=torch.int64))
        elif self._keys is None:
            first = int(self.np_random.integers(0, 2**62))
            self._keys = _rng.seed_to_key(torch.arange(self.num_envs, dtype=torch.int64) + first)
        else:
            self._keys = _rng.next_episode_key(self._keys)
        self.sim.reset(self._keys)
        self._needs_reset = False
        return self._out(self.sim.contexts), self._info()

    def step(self, actions: Any):
        if self._keys is None:
            raise RuntimeError("call reset() before step()")
        if self._needs_reset:  # NEXT_STEP autoreset: this step only resets
            obs, info = self.reset()
            zeros = torch.zeros(self.num_envs, device=self.device)
            false = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
            return obs, self._out(zeros), self._out(false), self._out(false), info
        rewards, regret = self.sim.step(self._check_actions(actions))
        self._needs_reset = self.sim.truncated
        if self.device.type == "cpu":  # a third of torch's cost per call
            terminated = torch.from_numpy(np.zeros(self.num_envs, dtype=np.bool_))
            truncated = torch.from_numpy(np.zeros(self.num_envs, dtype=np.bool_))  # half np.full's cost
            if self._needs_reset:
                truncated.fill_(True)
        else:
            terminated = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
            truncated = torch.full((self.num_envs,), self._needs_reset, dtype=torch.bool, device=self.device)
        info = self.sim.info()
        info["regret"] = regret
        if self.array_type == "numpy":
            return (self.sim.contexts.cpu().numpy(), rewards.cpu().numpy(), terminated.cpu().numpy(),
                    truncated.cpu().numpy(), {k: v.cpu().numpy() for k, v in info.items()})
        return self.sim.contexts, rewards, terminated, truncated, info

    def _check_actions(self, actions: Any) -> torch.Tensor:
        if isinstance(actions, np.ndarray):
            actions = torch.from_numpy(actions)
        elif not isinstance(actions, torch.Tensor):
            raise ValueError(
                f"actions must be a numpy array or torch tensor of shape ({self.num_envs},), "
                f"got {type(actions).__name__}"
            )
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {tuple(actions.shape)}")
        if actions.dtype != torch.int64:  # an agent's own actions are int64: they skip these questions
            if actions.dtype == torch.bool or actions.is_floating_point() or actions.is_complex():
                raise ValueError(f"actions must have an integer dtype, got {actions.dtype}")
            actions = actions.to(torch.int64)
        if self.device.type == "cpu":
            actions = actions.cpu()
            bad = _kernels.first_invalid_action(actions.numpy(), self.n_arms)
        else:
            actions = actions.to(self.device)
            invalid = (actions < 0) | (actions >= self.n_arms)
            bad = int(invalid.int().argmax()) if bool(invalid.any()) else -1
        if bad >= 0:
            raise ValueError(
                f"actions must be arm indices in [0, {self.n_arms}); replica {bad} got {int(actions[bad])}")
        return actions

    def _out(self, x: torch.Tensor):
        return x if self.array_type == "torch" else x.cpu().numpy()

    def _info(self) -> dict[str, Any]:
        return {k: self._out(v) for k, v in self.sim.info().items()}


def _resolve_device(device: str | torch.device) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(device)!r} requested but CUDA is not available; use 'cpu' or 'auto'")
    return device
