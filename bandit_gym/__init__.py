"""bandit-gym: contextual bandits as Gymnasium environments.

``import bandit_gym`` registers every env of ``envs_registry.yaml``::

    import gymnasium as gym
    import bandit_gym

    env = gym.make("LinearBandit-v0")
    venv = gym.make_vec("LinearBandit-v0", num_envs=64, vectorization_mode="vector_entry_point")

``bandit_gym.ENV_IDS`` lists the registered ids. Public modules beside the envs:
``bandit_gym.rng`` (the counter-based random streams every env and agent draws from) and
``bandit_gym.validation`` (argument checks). See ``docs/envs.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from bandit_gym.registration import register_envs

if TYPE_CHECKING:
    from bandit_gym._base import BanditEnv, BanditSimulator, BanditVectorEnv, RoundChunk, chunked_rounds
    from bandit_gym.feedback import BatchedFeedback, DelayedFeedback, Drift

#: Where each public class lives. They are imported on first use (``bandit_gym.DelayedFeedback``), so that
#: ``import bandit_gym`` (registering the ids) needs gymnasium and yaml but not torch: a command that only reads
#: results (``bandit-gym table``) starts in a fraction of a second.
_LAZY = {"BanditEnv": "_base", "BanditSimulator": "_base", "BanditVectorEnv": "_base", "RoundChunk": "_base",
         "chunked_rounds": "_base",
         "BatchedFeedback": "feedback", "DelayedFeedback": "feedback", "Drift": "feedback"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'bandit_gym' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"bandit_gym.{_LAZY[name]}"), name)
    globals()[name] = value
    return value

__version__ = "0.1.0"

ENV_IDS: tuple[str, ...] = tuple(register_envs())
"""Ids of every env registered at import."""

__all__ = ["BanditEnv", "BanditSimulator", "BanditVectorEnv", "BatchedFeedback", "DelayedFeedback", "Drift", "ENV_IDS",
           "RoundChunk", "chunked_rounds", "register_envs", "__version__"]
