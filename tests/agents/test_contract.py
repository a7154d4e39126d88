"""The input side of the agents' verbs, on LinUCB: Gymnasium's SyncVectorEnv (numpy observations and rewards)
plays as the native batched env, and ``update`` takes the caller's numpy arrays without copying them.

What every agent promises (seeding, replicas, per-replica values, save/load, predict) is tested on every exported
agent in test_agent_contract.py.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from replicas import make_vec

from agents import LinUCB

SIZES = {"n_arms": 8, "dim": 5, "horizon": 300}


def test_learn_on_gymnasium_sync_vector_env_with_numpy_arrays():
    """SyncVectorEnv gives numpy observations and rewards; the same seeds give the native env's rounds."""
    sync = gym.vector.SyncVectorEnv([lambda: gym.make("LinearBandit-v0", **SIZES) for _ in range(3)])
    with pytest.raises(ValueError, match="SyncVectorEnv has no horizon: give total_timesteps"):
        LinUCB(sync, seed=0, device="cpu").learn(sync)
    on_sync = LinUCB(sync, seed=0, device="cpu").learn(sync, total_timesteps=25)
    native = make_vec("LinearBandit-v0", 3, SIZES)
    on_native = LinUCB(native, seed=0, device="cpu").learn(native, total_timesteps=25)
    assert on_sync.history["regret"].shape == (25, 3)
    np.testing.assert_array_equal(on_sync.history["action"], on_native.history["action"])
    np.testing.assert_allclose(on_sync.history["regret"], on_native.history["regret"], rtol=1e-5, atol=1e-6)


def test_update_accepts_numpy_arrays_without_copying_them(monkeypatch):
    """A writeable float32 array reaches the agent's round as a tensor over the caller's own buffer."""
    agent = LinUCB(None, n_arms=3, dim=2, num_replicas=2, seed=0, device="cpu")
    seen, observe = [], agent._observe

    def spy(contexts, actions, rewards):  # the round's own view of the observation
        seen.append(contexts)
        observe(contexts, actions, rewards)

    monkeypatch.setattr(agent, "_observe", spy)
    obs = np.ones((2, 3, 2), dtype=np.float32)
    agent.update(obs, np.array([0, 1]), np.array([1.0, 0.0]))
    assert seen[0].data_ptr() == obs.ctypes.data  # the same memory: no copy
    assert agent.theta_hat[0].sum() > 0 and agent.t == 2
    with pytest.raises(ValueError, match=r"observation must have shape \(3, 2\) or \(2, 3, 2\), got \(3, 3, 2\)"):
        agent.update(np.ones((3, 3, 2)), np.array([0, 1]), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"action must be in \[0, 3\), got \[0, 3\]"):
        agent.update(obs, np.array([0, 3]), np.array([1.0, 0.0]))
