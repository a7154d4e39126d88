"""How agents meet Stable-Baselines3 conventions: an env id for an env, and SB3 callbacks in ``learn``.

Nothing here imports Stable-Baselines3 unless the user passes a list of its callbacks (which
become its ``CallbackList``); an SB3 callback is recognised by its methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

import bandit_gym
from agents.validation import check_int


def make_env(env_id: str, num_replicas: int | None = None) -> gym.Env | gym.vector.VectorEnv:
    """A registered env id as an env: ``gym.make(env_id)``, or its native batched env of ``num_replicas``."""
    if env_id not in gym.registry:
        raise ValueError(f"env {env_id!r} is not registered; bandit-gym's envs: {sorted(bandit_gym.ENV_IDS)}")
    if num_replicas is None:
        return gym.make(env_id)
    return gym.make_vec(env_id, num_envs=check_int("num_replicas", num_replicas),
                        vectorization_mode="vector_entry_point")


def as_round_hooks(agent: Any, callback: Any, learn_locals: dict[str, Any]) -> tuple[Callable, Callable]:
    """``(on_step(round, locals), on_end())`` for ``learn``: ``on_step`` runs ``callback`` after a round and
    returns False to stop. ``callback`` is None, a plain callable ``callback(agent, round)``, or a
    Stable-Baselines3 callback (anything with ``init_callback`` and ``on_step``; a list becomes SB3's
    ``CallbackList``), started and ended as SB3's own ``learn`` does."""
    if callback is None:
        return (lambda played, _: None), (lambda: None)
    if isinstance(callback, list):
        from stable_baselines3.common.callbacks import CallbackList

        callback = CallbackList(callback)
    if hasattr(callback, "init_callback") and hasattr(callback, "on_step"):
        callback.init_callback(agent)
        callback.on_training_start(learn_locals, globals())
        callback.on_rollout_start()

        def sb3_step(played: int, round_locals: dict[str, Any]) -> bool:
            callback.update_locals(round_locals)
            return callback.on_step()

        def sb3_end() -> None:
            callback.on_rollout_end()
            callback.on_training_end()

        return sb3_step, sb3_end
    if not callable(callback):
        raise ValueError(f"callback must be callable(agent, round) or a Stable-Baselines3 callback, got {callback!r}")
    return (lambda played, _: callback(agent, played)), (lambda: None)
