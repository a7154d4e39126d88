"""Native batched envs: shapes, replica/single equivalence, autoreset, devices."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401

SYNTHETIC_IDS = ["LinearBandit-v0", "LinearBanditFixed-v0", "LogisticBandit-v0", "QuadraticBandit-v0"]
SMALL = {"n_arms": 6, "dim": 4, "horizon": 30}


def make_vec(env_id: str, num_envs: int, **kwargs) -> gym.vector.VectorEnv:
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **{**SMALL, **kwargs})


@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_vector_env_shapes_and_types(env_id):
    venv = make_vec(env_id, 5)
    assert isinstance(venv, gym.vector.VectorEnv) and venv.num_envs == 5
    assert venv.single_observation_space.shape == (6, 4)
    assert venv.observation_space.shape == (5, 6, 4)
    obs, info = venv.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.shape == (5, 6, 4) and obs.dtype == torch.float32
    assert info["expected_rewards"].shape == (5, 6) and info["optimal_action"].shape == (5,)
    obs, reward, terminated, truncated, info = venv.step(torch.zeros(5, dtype=torch.int64))
    assert reward.shape == (5,) and terminated.dtype == torch.bool and truncated.shape == (5,)
    assert info["regret"].shape == (5,)
    assert venv.observation_space.contains(obs.numpy())


@pytest.mark.parametrize("sizes", [SMALL, {"horizon": 30}], ids=["small", "paper-sizes"])
@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_vector_replica_reproduces_single_env_exactly(env_id, sizes):
    # Seed derivation: replica i of reset(seed=s) == single env reset(seed=s + i), bit for bit.
    # Odd replica counts put replicas in both the SIMD body and the scalar tail of torch's kernels.
    seed, num = 40, 5
    venv = gym.make_vec(env_id, num_envs=num, vectorization_mode="vector_entry_point", **sizes)
    singles = [gym.make(env_id, **sizes) for _ in range(num)]
    vobs, vinfo = venv.reset(seed=seed)
    sobs = [env.reset(seed=seed + i) for i, env in enumerate(singles)]
    for t in range(SMALL["horizon"]):
        for i in range(num):
            np.testing.assert_array_equal(vobs[i].numpy(), sobs[i][0])
            np.testing.assert_array_equal(vinfo["expected_rewards"][i].numpy(), sobs[i][1]["expected_rewards"])
        actions = torch.tensor([(t + i) % 6 for i in range(num)])  # valid for both sizes
        vobs, vrew, _, vtrunc, vinfo = venv.step(actions)
        for i, env in enumerate(singles):
            obs, rew, _, trunc, info = env.step(int(actions[i]))
            assert float(vrew[i]) == np.float32(rew)
            assert float(vinfo["regret"][i]) == np.float32(info["regret"])
            assert bool(vtrunc[i]) == trunc
            sobs[i] = (obs, info)


def test_vector_reset_accepts_a_list_of_seeds():
    venv = make_vec("LinearBandit-v0", 3)
    a, _ = venv.reset(seed=[5, 9, 2])
    single, _ = gym.make("LinearBandit-v0", **SMALL).reset(seed=9)
    np.testing.assert_array_equal(a[1].numpy(), single)
    with pytest.raises(ValueError, match="3 ints"):
        venv.reset(seed=[1, 2])


def test_vector_numpy_array_type():
    venv = make_vec("LogisticBandit-v0", 3, array_type="numpy")
    obs, info = venv.reset(seed=1)
    assert isinstance(obs, np.ndarray) and obs.dtype == np.float32 and isinstance(info["optimal_action"], np.ndarray)
    obs, reward, terminated, truncated, info = venv.step(np.array([0, 1, 2]))
    assert isinstance(reward, np.ndarray) and isinstance(info["regret"], np.ndarray)
    with pytest.raises(ValueError, match="array_type"):
        make_vec("LinearBandit-v0", 2, array_type="jax")


def test_vector_truncates_together_then_autoresets_next_step():
    venv = make_vec("LinearBandit-v0", 2, horizon=3)
    venv.reset(seed=0)
    for t in range(3):
        obs, reward, terminated, truncated, info = venv.step(torch.tensor([0, 1]))
        assert bool(truncated.all()) == (t == 2) and not bool(terminated.any())
    obs, reward, terminated, truncated, info = venv.step(torch.tensor([0, 1]))  # the reset step
    assert bool((reward == 0).all()) and not bool(truncated.any())
    assert "regret" not in info
    obs, reward, terminated, truncated, info = venv.step(torch.tensor([0, 1]))
    assert info["regret"].shape == (2,)


@pytest.mark.parametrize(
    ("actions", "match"),
    [(torch.tensor([0, 6]), r"replica 1 got 6"), (torch.tensor([0.0, 1.0]), "integer dtype"),
     (torch.tensor([0, 1, 2]), "shape"), ([0, 1], "numpy array or torch tensor"), (np.array([True, False]), "integer")],
)
def test_vector_bad_actions_raise(actions, match):
    venv = make_vec("LinearBandit-v0", 2)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=match):
        venv.step(actions)


def test_vector_bad_device_raises_when_cuda_missing():
    if torch.cuda.is_available():
        pytest.skip("CUDA is available")
    with pytest.raises(ValueError, match="CUDA is not available"):
        make_vec("LinearBandit-v0", 2, device="cuda")


def test_sync_vector_env_of_single_envs_matches_native():
    native = make_vec("QuadraticBandit-v0", 3, array_type="numpy")
    sync = gym.make_vec("QuadraticBandit-v0", num_envs=3, vectorization_mode="sync", **SMALL)
    a, _ = native.reset(seed=8)
    b, _ = sync.reset(seed=8)
    np.testing.assert_array_equal(a, b)
    for _ in range(5):
        a, ra, *_ = native.step(np.array([1, 2, 3]))
        b, rb, *_ = sync.step(np.array([1, 2, 3]))
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ra.astype(np.float32), rb.astype(np.float32))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_cuda_vector_env_matches_cpu(env_id):
    cpu, gpu = make_vec(env_id, 8), make_vec(env_id, 8, device="cuda")
    a, _ = cpu.reset(seed=3)
    b, _ = gpu.reset(seed=3)
    assert b.device.type == "cuda"
    torch.testing.assert_close(a, b.cpu(), rtol=1e-5, atol=1e-6)
    for _ in range(10):
        actions = torch.arange(8) % 6
        a, ra, *_ = cpu.step(actions)
        b, rb, *_ = gpu.step(actions.cuda())
        torch.testing.assert_close(a, b.cpu(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(ra, rb.cpu(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("env_id", ["LinearBandit-v0", "LinearBanditFixed-v0"])
def test_observations_are_the_callers_to_modify(env_id):
    # A changing arm set comes as a view of the env's block of rounds, a fixed one as a copy: either
    # way, writing into an observation must change nothing the env does afterwards.
    twins = [gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point", horizon=40) for _ in range(2)]
    kept = []
    for env in twins:
        obs, _ = env.reset(seed=4)
        kept.append(obs.clone())
    actions = torch.tensor([1, 2, 3])
    for _ in range(20):
        (obs_a, reward_a, _, _, info_a), (obs_b, reward_b, _, _, info_b) = (env.step(actions) for env in twins)
        assert torch.equal(obs_a, obs_b) and torch.equal(reward_a, reward_b)
        assert torch.equal(info_a["regret"], info_b["regret"])
        assert torch.equal(info_a["expected_rewards"], info_b["expected_rewards"])
        obs_a.fill_(7.0)  # the caller scribbles on one twin's observation and info
        info_a["expected_rewards"].fill_(7.0)
    assert torch.equal(kept[0], kept[1])
