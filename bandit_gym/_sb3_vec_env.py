"""The native batched env as a Stable-Baselines3 ``VecEnv`` (public through :mod:`bandit_gym.sb3`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.vec_env import VecEnv

from bandit_gym.validation import check_bool


def _numpy(x: Any) -> np.ndarray:
    """An env output (numpy or torch, any device) as a numpy array."""
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


class NativeBatchedVecEnv(VecEnv):
    """A native batched bandit env (a Gymnasium ``VectorEnv`` of ``R`` replicas) as an SB3 ``VecEnv``.

    The ``R`` replicas are stepped with one call of the native env, so PPO and A2C
    collect ``R`` rounds per step at the cost of one batched round. Arrays may come
    from the native env as numpy or torch (``array_type``); SB3 gets numpy.

    Args:
        venv: The native batched env, e.g.
            ``gym.make_vec("LinearBandit-v0", num_envs=8, vectorization_mode="vector_entry_point")``.
        one_step_episodes: If True (default), every round is a one-step episode: ``dones`` is
            all True after every step and the next observation continues the same bandit
            runs (as :class:`bandit_gym.wrappers.OneStepEpisodes` does for a single env). If
            False, an episode is a whole run of ``horizon`` rounds, reported as a time-limit
            truncation (train with ``gamma=0`` then).

    Seeding follows SB3: ``vec_env.seed(s)`` makes the next ``reset()`` seed replica ``r``
    with ``s + r``, exactly as a ``DummyVecEnv`` of single envs seeded ``s + r``. When the
    runs reach their horizon every replica starts its next run at once (an unseeded reset
    of the native env). ``infos[r]`` holds replica ``r``'s ``regret``,
    ``expected_rewards`` and ``optimal_action``, plus SB3's ``TimeLimit.truncated`` and
    ``terminal_observation`` for done replicas.

    Note:
        Replicas are independent bandit problems: with a synthetic env each seed draws its
        own ``theta*``, and one policy shared by all replicas cannot fit them all. To train
        one policy on one problem with many replicas, fix the problem across seeds
        (``instance_seed=`` for the synthetic envs); the dataset envs share their data.
    """

    def __init__(self, venv: gym.vector.VectorEnv, one_step_episodes: bool = True) -> None:
        if not isinstance(venv, gym.vector.VectorEnv):
            raise TypeError(
                f"venv must be a gymnasium.vector.VectorEnv (a native batched env), got {type(venv).__name__}")
        self.venv = venv
        self.one_step_episodes = check_bool("one_step_episodes", one_step_episodes)
        self._actions: np.ndarray | None = None
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)

    # -- stepping ----------------------------------------------------------------
    def reset(self) -> np.ndarray:
        seed = self._native_seed(self._seeds)
        options = self._options[0] if self._options[0] else None
        if any(o != self._options[0] for o in self._options):
            raise ValueError(
                "NativeBatchedVecEnv steps its replicas as one batch: set_options must give all the same options")
        obs, info = self.venv.reset(seed=seed, options=options)
        self.reset_infos = self._split_info(info)
        self._reset_seeds()
        self._reset_options()
        return np.array(_numpy(obs), dtype=np.float32)  # (R, K, d), a copy SB3 may keep

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._actions is None:
            raise RuntimeError("call step_async(actions) before step_wait()")
        obs, rewards, terminated, truncated, info = self.venv.step(self._actions)
        self._actions = None
        obs = np.array(_numpy(obs), dtype=np.float32)  # (R, K, d)
        terminated, truncated = _numpy(terminated).astype(bool), _numpy(truncated).astype(bool)  # (R,) each
        infos = self._split_info(info)
        run_ended = terminated | truncated  # (R,)
        dones = np.ones(self.num_envs, dtype=bool) if self.one_step_episodes else run_ended
        for r in range(self.num_envs):
            infos[r]["TimeLimit.truncated"] = bool(truncated[r] and not terminated[r] and not self.one_step_episodes)
            if dones[r]:
                infos[r]["terminal_observation"] = obs[r]
        if run_ended.any():
            if not run_ended.all():
                raise RuntimeError(
                    "the native env ended the runs of some replicas only "
                    f"({np.flatnonzero(run_ended).tolist()}); NativeBatchedVecEnv needs runs that end together"
                )
            reset_obs, reset_info = self.venv.reset()  # every replica's next run
            obs = np.array(_numpy(reset_obs), dtype=np.float32)
            self.reset_infos = self._split_info(reset_info)
        return obs, _numpy(rewards).astype(np.float32), dones, infos

    def _native_seed(self, seeds: Sequence[int | None]) -> int | list[int] | None:
        if all(s is None for s in seeds):
            return None
        if any(s is None for s in seeds):
            raise ValueError(f"seed every replica or none; got seeds {list(seeds)}")
        if list(seeds) == [seeds[0] + r for r in range(self.num_envs)]:
            return int(seeds[0])  # the native env seeds replica r with seed + r
        return [int(s) for s in seeds]

    def _split_info(self, info: dict[str, Any]) -> list[dict[str, Any]]:
        """The native env's batched ``info`` (with or without ``_key`` masks) as one dict per replica."""
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for key, value in info.items():
            if key.startswith("_"):
                continue
            values = _numpy(value)
            mask = _numpy(info[f"_{key}"]) if f"_{key}" in info else np.ones(self.num_envs, dtype=bool)
            for r in np.flatnonzero(mask):
                item = values[r]
                infos[r][key] = item.item() if item.ndim == 0 else item.copy()
        return infos

    def close(self) -> None:
        self.venv.close()

    # -- attributes: the native env is one object for all replicas ---------------
    def _all(self, indices: Any) -> list[int]:
        return list(self._get_indices(indices))

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        value = getattr(self.venv, attr_name)
        return [value for _ in self._all(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        if sorted(self._all(indices)) != list(range(self.num_envs)):
            raise ValueError("the native batched env is one object: set_attr applies to all replicas (indices=None)")
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        if sorted(self._all(indices)) != list(range(self.num_envs)):
            raise ValueError(
                "the native batched env is one object: env_method calls it for all replicas (indices=None)")
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result for _ in range(self.num_envs)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: Any = None) -> list[bool]:
        return [False for _ in self._all(indices)]  # single-env wrappers cannot wrap a batched env


def make_batched_vec_env(
    env_id: str,
    n_envs: int = 1,
    seed: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    one_step_episodes: bool = True,
) -> NativeBatchedVecEnv:
    """Build the native batched env of ``env_id`` with ``n_envs`` replicas as an SB3 ``VecEnv``.

    The counterpart of SB3's ``make_vec_env(env_id, n_envs, seed, env_kwargs=...)``, stepping
    all replicas as one batch. ``seed`` (if given) seeds replica ``r`` with ``seed + r`` at the
    first ``reset()``; ``env_kwargs`` go to the env (e.g. ``horizon``, ``instance_seed``).
    """
    kwargs = dict(env_kwargs or {})
    kwargs.setdefault("array_type", "numpy")
    venv = gym.make_vec(env_id, num_envs=n_envs, vectorization_mode="vector_entry_point", **kwargs)
    vec_env = NativeBatchedVecEnv(venv, one_step_episodes=one_step_episodes)
    if seed is not None:
        vec_env.seed(seed)
    return vec_env

