"""The native batched env handed to Stable-Baselines3 as a VecEnv."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from bandit_ids import SYNTHETIC_IDS

import bandit_gym  # noqa: F401  (registers the envs)
from bandit_gym.wrappers import OneStepEpisodes

pytest.importorskip("stable_baselines3")
from stable_baselines3 import A2C, PPO  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecMonitor  # noqa: E402

from bandit_gym.sb3 import NativeBatchedVecEnv, PerArmActorCriticPolicy, make_batched_vec_env  # noqa: E402

NUM_ENVS = 3
HORIZON = 4  # the rollouts below cross it: every replica starts its next run


@pytest.fixture(autouse=True)
def one_torch_thread():
    threads = torch.get_num_threads()  # see test_sb3_policies.py
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _dummy(env_id: str, one_step_episodes: bool, **kwargs) -> DummyVecEnv:
    def make() -> gym.Env:
        env = gym.make(env_id, horizon=HORIZON, **kwargs)
        return OneStepEpisodes(env) if one_step_episodes else env
    return DummyVecEnv([make for _ in range(NUM_ENVS)])


def _play(vec_env: VecEnv, seed: int, n_steps: int = 7) -> list[tuple]:
    vec_env.seed(seed)
    record = [(vec_env.reset(),)]
    actions = np.random.default_rng(seed).integers(0, vec_env.action_space.n, size=(n_steps, vec_env.num_envs))
    for action in actions:
        obs, rewards, dones, infos = vec_env.step(action)
        record.append((obs, rewards, dones, infos))
    return record


def _assert_same(got: list[tuple], want: list[tuple]) -> None:
    # Floats: replica r of the batch may differ from the single env seeded s + r in the last bits.
    close = {"rtol": 1e-5, "atol": 1e-6}
    np.testing.assert_allclose(got[0][0], want[0][0], **close)
    steps = zip(got[1:], want[1:], strict=True)
    for t, ((obs, rewards, dones, infos), (w_obs, w_rewards, w_dones, w_infos)) in enumerate(steps):
        np.testing.assert_allclose(obs, w_obs, **close, err_msg=f"obs at step {t}")
        np.testing.assert_allclose(rewards, w_rewards, **close, err_msg=f"rewards at step {t}")
        np.testing.assert_array_equal(dones, w_dones, err_msg=f"dones at step {t}")
        assert rewards.dtype == w_rewards.dtype and obs.dtype == w_obs.dtype
        for r, (info, w_info) in enumerate(zip(infos, w_infos, strict=True)):
            for key in ("regret", "expected_rewards", "optimal_action", "TimeLimit.truncated", "terminal_observation"):
                assert (key in info) == (key in w_info), f"{key} in infos[{r}] at step {t}"
                if key in w_info:
                    np.testing.assert_allclose(info[key], w_info[key], **close, err_msg=f"{key}, replica {r}, step {t}")


@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_native_vec_env_equals_dummy_vec_env_of_one_step_episodes(env_id: str) -> None:
    native = make_batched_vec_env(env_id, NUM_ENVS, env_kwargs={"horizon": HORIZON})
    _assert_same(_play(native, seed=8), _play(_dummy(env_id, one_step_episodes=True), seed=8))


@pytest.mark.parametrize("array_type", ["numpy", "torch"])
def test_native_vec_env_equals_dummy_vec_env_of_whole_runs(array_type: str) -> None:
    venv = gym.make_vec("LinearBandit-v0", num_envs=NUM_ENVS, vectorization_mode="vector_entry_point",
                        horizon=HORIZON, array_type=array_type)
    native = NativeBatchedVecEnv(venv, one_step_episodes=False)
    got = _play(native, seed=3)
    _assert_same(got, _play(_dummy("LinearBandit-v0", one_step_episodes=False), seed=3))
    assert [bool(step[2].all()) for step in got[1:]] == [False, False, False, True, False, False, False]


def test_ppo_and_a2c_train_on_the_native_vec_env() -> None:
    # instance_seed: one theta* for every replica, so one policy can fit them all.
    vec_env = VecMonitor(make_batched_vec_env("LinearBandit-v0", n_envs=8, seed=0, env_kwargs={"instance_seed": 0}))
    for algo, kwargs in ((PPO, {"n_steps": 32, "batch_size": 64}), (A2C, {"n_steps": 5})):
        model = algo(PerArmActorCriticPolicy, vec_env, seed=0, device="cpu", **kwargs)
        model.learn(400)
        assert model.num_timesteps >= 400
        assert all(episode["l"] == 1 for episode in model.ep_info_buffer) and len(model.ep_info_buffer) == 100


def test_native_vec_env_answers_attribute_queries_for_all_replicas() -> None:
    vec_env = make_batched_vec_env("LinearBandit-v0", NUM_ENVS)
    assert vec_env.get_attr("horizon") == [10_000] * NUM_ENVS
    assert vec_env.env_is_wrapped(gym.Wrapper) == [False] * NUM_ENVS
    with pytest.raises(ValueError, match="set_attr applies to all replicas"):
        vec_env.set_attr("horizon", 5, indices=[0])
    with pytest.raises(TypeError, match="venv must be a gymnasium.vector.VectorEnv"):
        NativeBatchedVecEnv(gym.make("LinearBandit-v0"))


def test_ppo_trains_on_a_dataset_env_through_the_native_vec_env(openml_cache) -> None:
    # One-hot-block arms (Shuttle: 7 arms, rows of 7 x 9 features); the replicas share the data.
    batched = make_batched_vec_env("Shuttle-v0", n_envs=4, seed=0, env_kwargs={"cache_dir": str(openml_cache)})
    vec_env = VecMonitor(batched)
    model = PPO(PerArmActorCriticPolicy, vec_env, seed=0, device="cpu", n_steps=32, batch_size=64).learn(256)
    assert model.num_timesteps == 256 and all(episode["l"] == 1 for episode in model.ep_info_buffer)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_native_vec_env_on_cuda_hands_sb3_the_cpu_numbers() -> None:
    # On CUDA the native env gives torch tensors on the GPU; SB3 gets numpy, equal to the CPU env's.
    gpu = gym.make_vec("LinearBandit-v0", num_envs=NUM_ENVS, vectorization_mode="vector_entry_point",
                       horizon=HORIZON, device="cuda")
    cpu = make_batched_vec_env("LinearBandit-v0", NUM_ENVS, env_kwargs={"horizon": HORIZON})
    _assert_same(_play(NativeBatchedVecEnv(gpu), seed=4), _play(cpu, seed=4))
