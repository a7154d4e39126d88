"""Dataset envs on small self-written data: Gymnasium contract, seeding, row order, one-hot blocks, rewards."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import bandit_gym
from bandit_gym.datasets import DATASET_ENV_IDS, DatasetBanditEnv, load_dataset

# id -> (dataset name, n_arms, features per example) of the small stand-ins in conftest.py
SMALL = {
    "Shuttle-v0": ("shuttle", 7, 9),
    "MagicTelescope-v0": ("magictelescope", 2, 10),
    "Mushroom-v0": ("mushroom", 2, 3),
    "Covertype-v0": ("covertype", 7, 54),
    "CIFAR10-v0": ("cifar10", 10, 3072),
}


@pytest.fixture
def make(small_cache, small_cifar):
    """``make(env_id, vector=False, **kwargs)`` on the small data."""

    def _make(env_id: str, num_envs: int | None = None, **kwargs):
        root = small_cifar if env_id == "CIFAR10-v0" else small_cache
        kwargs = {"cache_dir": root, "verify_checksums": False, **kwargs}  # small stand-ins, not the published data
        if num_envs is None:
            return gym.make(env_id, **kwargs)
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)

    return _make


def test_every_dataset_env_is_registered_from_the_registry():
    assert set(DATASET_ENV_IDS) <= set(bandit_gym.ENV_IDS)
    for env_id in DATASET_ENV_IDS:
        assert gym.registry[env_id].vector_entry_point == "bandit_gym.datasets.envs:DatasetBanditVectorEnv"


@pytest.mark.parametrize("env_id", DATASET_ENV_IDS)
def test_every_dataset_env_passes_check_env(make, env_id):
    env = make(env_id, horizon=5)
    check_env(env.unwrapped, skip_render_check=True)
    _, k, d = SMALL[env_id]
    assert env.observation_space.shape == (k, k * d)
    assert env.observation_space.dtype == np.float32
    assert env.action_space == gym.spaces.Discrete(k)


@pytest.mark.parametrize("env_id", DATASET_ENV_IDS)
def test_observation_is_one_hot_block_of_the_row_and_reward_is_the_true_class(make, env_id):
    name, k, d = SMALL[env_id]
    env = make(env_id, horizon=6)
    sim = env.unwrapped.sim
    obs, info = env.reset(seed=3)
    for t in range(6):
        row = int(sim.rows[0, t])
        x, label = sim.features[row].numpy(), int(sim.labels[row])
        expected = np.zeros((k, k * d), dtype=np.float32)
        for j in range(k):
            expected[j, j * d : (j + 1) * d] = x
        np.testing.assert_array_equal(obs, expected)
        np.testing.assert_array_equal(info["expected_rewards"], np.eye(k, dtype=np.float32)[label])
        assert info["optimal_action"] == label
        action = label if t % 2 == 0 else (label + 1) % k
        obs, reward, terminated, truncated, info = env.step(action)
        assert reward == (1.0 if t % 2 == 0 else 0.0)
        assert info["regret"] == 1.0 - reward
        assert not terminated and truncated == (t == 5)


def test_each_run_visits_rows_without_replacement_in_a_seeded_order(make):
    env = make("Shuttle-v0", horizon=42)  # all 42 rows of the small Shuttle
    sim = env.unwrapped.sim
    env.reset(seed=0)
    first = sim.rows[0].clone()
    assert sorted(first.tolist()) == list(range(42))
    env.reset(seed=0)
    torch.testing.assert_close(sim.rows[0], first)
    env.reset(seed=1)
    assert not torch.equal(sim.rows[0], first)
    env.reset()  # unseeded: the next episode's key, a new order
    assert not torch.equal(sim.rows[0], first)
    obs_seen = []
    env.reset(seed=0)
    for _ in range(42):
        obs_seen.append(env.unwrapped.sim.contexts[0].clone())
        _, _, _, truncated, _ = env.step(0)
    assert truncated
    assert len({tuple(o.flatten().tolist()) for o in obs_seen}) == 42  # 42 distinct examples


@pytest.mark.parametrize("env_id", ["Shuttle-v0", "Mushroom-v0", "CIFAR10-v0"])
def test_batched_replica_equals_single_env_with_shifted_seed(make, env_id):
    venv = make(env_id, num_envs=3, horizon=8)
    obs, info = venv.reset(seed=10)
    singles = [make(env_id, horizon=8) for _ in range(3)]
    single_obs = [single.reset(seed=10 + i)[0] for i, single in enumerate(singles)]
    rng = np.random.default_rng(0)
    for _ in range(8):
        for i in range(len(singles)):
            np.testing.assert_array_equal(obs[i], single_obs[i])
        actions = rng.integers(0, venv.single_action_space.n, size=3)
        obs, rewards, _, truncated, info = venv.step(actions)
        for i, single in enumerate(singles):
            single_obs[i], reward, _, single_truncated, single_info = single.step(int(actions[i]))
            assert rewards[i] == reward and info["regret"][i] == single_info["regret"]  # 0 or 1: exact
            assert bool(truncated[i]) == single_truncated


def test_vector_env_shares_the_dataset_tensors(make, small_cache):
    a, b = make("MagicTelescope-v0", num_envs=2, horizon=4), make("MagicTelescope-v0", num_envs=5, horizon=4)
    assert a.unwrapped.sim.data is b.unwrapped.sim.data
    assert a.unwrapped.sim.features is b.unwrapped.sim.features
    loaded = load_dataset("magictelescope", cache_dir=small_cache, verify_checksums=False)
    assert a.unwrapped.sim.features is loaded.on("cpu")[0]


def test_horizon_defaults_to_all_rows_below_10000_and_rejects_more_than_the_rows(make):
    assert make("Mushroom-v0").unwrapped.horizon == 8
    with pytest.raises(ValueError, match=r"horizon must be at most the number of rows, 42 \(Shuttle\).*got 43"):
        make("Shuttle-v0", horizon=43)
    with pytest.raises(ValueError, match="horizon must be an integer >= 1, got 0"):
        make("Shuttle-v0", horizon=0)


def test_max_rows_draws_one_fixed_subset_for_every_run(make):
    env = make("Shuttle-v0", max_rows=10)
    sim = env.unwrapped.sim
    assert env.unwrapped.horizon == 10
    env.reset(seed=0)
    subset = sorted(sim.rows[0].tolist())
    env.reset(seed=5)
    assert sorted(sim.rows[0].tolist()) == subset and len(set(subset)) == 10
    other = make("Shuttle-v0", max_rows=10, subset_seed=1).unwrapped.sim
    assert sorted(other.pool.tolist()) != subset
    with pytest.raises(ValueError, match="subset_seed must be an integer >= 0, got -1"):
        make("Shuttle-v0", subset_seed=-1)
    with pytest.raises(ValueError, match=r"max_rows must be at most the 42 rows of Shuttle, got 50"):
        make("Shuttle-v0", max_rows=50)
    with pytest.raises(ValueError, match=r"at most the number of rows, 10 \(Shuttle with max_rows=10\)"):
        make("Shuttle-v0", max_rows=10, horizon=11)


def test_preprocessing_options_reach_the_observation_space(make):
    l2 = make("Mushroom-v0", horizon=3)
    assert (l2.observation_space.low.min(), l2.observation_space.high.max()) == (-1.0, 1.0)
    onehot = make("Mushroom-v0", encoding="onehot", scaling="standardize", horizon=3)
    assert onehot.observation_space.shape == (2, 2 * 9)
    assert np.isinf(onehot.observation_space.high).all()
    with pytest.raises(ValueError, match="download must be True or False, got 'yes'"):
        make("Mushroom-v0", download="yes")


def test_single_env_exposes_class_names(make):
    env = make("MagicTelescope-v0", horizon=2)
    assert isinstance(env.unwrapped, DatasetBanditEnv)
    assert env.unwrapped.class_names == ("g", "h")


def test_final_observation_at_the_horizon_is_consistent(make):
    env = make("Mushroom-v0")  # horizon = all 8 rows: round 8 (observed, never played) wraps to row 0
    obs, info = env.reset(seed=2)
    first_obs = obs.copy()
    for _ in range(8):
        obs, _, _, truncated, info = env.step(0)
    assert truncated
    np.testing.assert_array_equal(obs, first_obs)
    assert info["optimal_action"] == int(np.argmax(info["expected_rewards"]))
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("env_id", ["Shuttle-v0", "CIFAR10-v0"])
def test_cuda_vector_env_matches_cpu_and_holds_the_data_once(make, env_id):
    cpu, gpu = make(env_id, num_envs=4, horizon=10), make(env_id, num_envs=4, horizon=10, device="cuda")
    a, _ = cpu.reset(seed=3)
    b, _ = gpu.reset(seed=3)
    assert b.device.type == "cuda" and gpu.unwrapped.sim.features.device.type == "cuda"
    other = make(env_id, num_envs=2, horizon=10, device="cuda")
    assert other.unwrapped.sim.features is gpu.unwrapped.sim.features  # copied to the GPU once
    for _ in range(10):
        torch.testing.assert_close(b.cpu(), torch.as_tensor(a))  # the CPU env hands out numpy arrays
        actions = torch.arange(4) % cpu.single_action_space.n
        a, ra, *_ = cpu.step(actions)
        b, rb, *_ = gpu.step(actions.cuda())
        torch.testing.assert_close(rb.cpu(), torch.as_tensor(ra))
