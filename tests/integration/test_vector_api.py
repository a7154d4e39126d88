"""Gymnasium's vector API on our envs: SyncVectorEnv, AsyncVectorEnv and the native batched env agree."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from bandit_ids import SYNTHETIC_IDS, data_kwargs

import bandit_gym  # noqa: F401  (registers the envs)

NUM_ENVS = 3
HORIZON = 4  # short, so that the rollouts below cross the horizon and autoreset
N_STEPS = 7


def _numpy(x):
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _rollout(venv: gym.vector.VectorEnv, seed: int) -> list[dict[str, np.ndarray]]:
    """Reset with ``seed``; play fixed random arms; record what every step shows."""
    actions = np.random.default_rng(seed).integers(0, venv.single_action_space.n, size=(N_STEPS, venv.num_envs))
    obs, info = venv.reset(seed=seed)
    record = [{"obs": _numpy(obs).copy(), "expected_rewards": _numpy(info["expected_rewards"]).copy()}]
    for action in actions:
        obs, reward, terminated, truncated, info = venv.step(action)
        step = {"obs": _numpy(obs).copy(), "reward": _numpy(reward).astype(np.float64),
                "terminated": _numpy(terminated), "truncated": _numpy(truncated),
                "expected_rewards": _numpy(info["expected_rewards"]).copy()}
        # regret is given for the replicas that played a round (Gymnasium's "_regret" mask);
        # a native env without masks plays every replica or none.
        played = _numpy(info["_regret"]) if "_regret" in info else np.full(venv.num_envs, "regret" in info)
        step["regret"] = np.where(played, _numpy(info["regret"]) if "regret" in info else 0.0, np.nan)
        record.append(step)
    venv.close()
    return record


def _assert_same_rollouts(got: list[dict], want: list[dict], what: str) -> None:
    # Floats: batched and single runs may differ in the last bits (the project's contract).
    for t, (a, b) in enumerate(zip(got, want, strict=True)):
        for key in b:
            if a[key].dtype == bool:
                np.testing.assert_array_equal(a[key], b[key], err_msg=f"{what}: {key} at step {t}")
            else:
                np.testing.assert_allclose(a[key], b[key], rtol=1e-5, atol=1e-6, err_msg=f"{what}: {key} at step {t}")


@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_sync_vector_env_and_native_batched_env_agree(env_id: str) -> None:
    sync = gym.make_vec(env_id, num_envs=NUM_ENVS, vectorization_mode="sync", horizon=HORIZON)
    native = gym.make_vec(env_id, num_envs=NUM_ENVS, vectorization_mode="vector_entry_point", horizon=HORIZON)
    want = _rollout(sync, seed=11)
    assert any(step.get("truncated", np.zeros(1)).any() for step in want)  # the horizon was crossed
    _assert_same_rollouts(_rollout(native, seed=11), want, f"{env_id} native vs sync")


@pytest.mark.parametrize("array_type", ["numpy", "torch"])
def test_native_batched_env_agrees_in_either_array_type(array_type: str) -> None:
    sync = gym.make_vec("LinearBandit-v0", num_envs=NUM_ENVS, vectorization_mode="sync", horizon=HORIZON)
    native = gym.make_vec("LinearBandit-v0", num_envs=NUM_ENVS, vectorization_mode="vector_entry_point",
                          horizon=HORIZON, array_type=array_type)
    _assert_same_rollouts(_rollout(native, seed=2), _rollout(sync, seed=2), f"native ({array_type}) vs sync")


def test_async_vector_env_agrees_with_sync() -> None:
    # "spawn": workers start a fresh interpreter. Each worker imports torch (seconds), so two
    # workers and one env id; the dataset envs below also run with "fork".
    env_id = "LinearBandit-v0"
    kwargs = {"num_envs": 2, "horizon": HORIZON}
    asynchronous = gym.make_vec(env_id, vectorization_mode="async", vector_kwargs={"context": "spawn"}, **kwargs)
    sync = gym.make_vec(env_id, vectorization_mode="sync", **kwargs)
    _assert_same_rollouts(_rollout(asynchronous, seed=5), _rollout(sync, seed=5), f"{env_id} async vs sync")


#: Seconds an async call may wait for its workers: a worker hung in torch's thread pool fails the test.
ASYNC_TIMEOUT_S = 120


class _Within(gym.vector.VectorWrapper):
    """An ``AsyncVectorEnv`` whose ``reset`` and ``step`` wait at most ``timeout`` seconds for the workers."""

    def __init__(self, env: gym.vector.AsyncVectorEnv, timeout: float) -> None:
        super().__init__(env)
        self.timeout = timeout

    def reset(self, *, seed=None, options=None):
        self.env.reset_async(seed=seed, options=options)
        return self.env.reset_wait(timeout=self.timeout)

    def step(self, actions):
        self.env.step_async(actions)
        return self.env.step_wait(timeout=self.timeout)

    def close(self, **kwargs):
        self.env.close(terminate=True)


@pytest.mark.parametrize(("context", "threads"), [
    ("fork", "1"), ("fork", "torch"), pytest.param("spawn", "1", marks=pytest.mark.slow),  # spawn: 8-16 s
])
@pytest.mark.parametrize("env_id", ["MagicTelescope-v0", "ClassificationBandit-v0"])
def test_async_dataset_envs_agree_with_sync_under_fork_and_spawn(openml_cache, monkeypatch, env_id, context,
                                                                  threads) -> None:
    # A forked worker of a parent that has started torch's intra-op threads hangs in any multi-threaded
    # torch op; the dataset envs used to refuse fork there (their row order is a multi-threaded sort).
    # The parent starts those threads first, as any torch user's process has. BANDIT_GYM_THREADS=torch
    # leaves torch's own thread count (2 or more here) during reset and step (bandit_gym/threads.py).
    monkeypatch.setenv("BANDIT_GYM_THREADS", threads)
    torch.randn(2**20).exp()
    if env_id == "ClassificationBandit-v0":  # a small made-up array, which travels to the workers
        features = np.random.default_rng(0).normal(size=(40, 3))
        kwargs = {"X": features, "y": (features[:, 0] > 0).astype(int) + (features[:, 1] > 0)}
    else:
        kwargs = data_kwargs(env_id, openml_cache)  # MagicTelescope from the shared real cache
    kwargs = {**kwargs, "num_envs": 2, "horizon": HORIZON}
    asynchronous = gym.make_vec(env_id, vectorization_mode="async", vector_kwargs={"context": context}, **kwargs)
    sync = gym.make_vec(env_id, vectorization_mode="sync", **kwargs)
    got = _rollout(_Within(asynchronous, ASYNC_TIMEOUT_S), seed=5)
    _assert_same_rollouts(got, _rollout(sync, seed=5), f"{env_id} {context} vs sync")
