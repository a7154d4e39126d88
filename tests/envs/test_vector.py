"""Native batched envs (``vectorization_mode="vector_entry_point"``) for every registered id."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
import torch
from bandit_ids import SYNTHETIC_IDS  # tests/integration is on pytest's pythonpath

import bandit_gym

ALL_IDS = list(bandit_gym.ENV_IDS)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_vector_env_returns_numpy_on_cpu_and_torch_when_asked(make_env, env_id):
    venv = make_env(env_id, num_envs=3)
    obs, info = venv.reset(seed=0)
    assert isinstance(obs, np.ndarray) and obs.dtype == np.float32 and venv.observation_space.contains(obs)
    obs, reward, terminated, truncated, info = venv.step([0, 1, 0])  # a list is an array-like of actions
    assert all(isinstance(x, np.ndarray) for x in (obs, reward, terminated, truncated, *info.values()))
    as_torch = make_env(env_id, num_envs=3, array_type="torch")
    obs, info = as_torch.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and isinstance(info["optimal_action"], torch.Tensor)
    assert isinstance(as_torch.step(np.array([0, 1, 0]))[1], torch.Tensor)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_vector_env_info_matches_sync_vector_env_layout_dtypes_and_values(make_env, env_id):
    native = make_env(env_id, num_envs=3)
    sync = gym.vector.SyncVectorEnv([lambda: make_env(env_id) for _ in range(3)])
    outputs = [(native.reset(seed=8), sync.reset(seed=8))]
    horizon = native.unwrapped.horizon
    for t in range(horizon + 2):  # through the truncation and the autoreset step
        actions = np.array([t % 2, 1, (t + 1) % 2])
        outputs.append((native.step(actions), sync.step(actions)))
    for ours, theirs in outputs:
        for a, b in zip(ours[:-1], theirs[:-1], strict=True):  # observations, rewards, terminated, truncated
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        info, sync_info = ours[-1], theirs[-1]
        assert sorted(info) == sorted(sync_info)
        for key in info:
            assert info[key].dtype == sync_info[key].dtype, key
            np.testing.assert_allclose(info[key], sync_info[key], rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_replica_r_is_the_single_env_seeded_s_plus_r(make_env, env_id):
    # Replicas draw exactly the single runs' random numbers; their floating point may differ in the
    # last bits, so features and rewards are compared with float32 tolerances and the integer optimal
    # arms exactly (the paper-size gaps between the best two arms are far above 1e-6).
    seed, num = 40, 5
    venv = make_env(env_id, num_envs=num)
    singles = [make_env(env_id) for _ in range(num)]
    obs, info = venv.reset(seed=seed)
    single = [env.reset(seed=seed + i) for i, env in enumerate(singles)]
    for t in range(venv.unwrapped.horizon):
        for i in range(num):
            np.testing.assert_allclose(obs[i], single[i][0], rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(info["expected_rewards"][i], single[i][1]["expected_rewards"], atol=1e-6)
            assert info["optimal_action"][i] == single[i][1]["optimal_action"]
        actions = np.array([(t + i) % venv.single_action_space.n for i in range(num)])
        obs, reward, _, truncated, info = venv.step(actions)
        for i, env in enumerate(singles):
            s_obs, s_reward, _, s_truncated, s_info = env.step(int(actions[i]))
            assert reward[i] == pytest.approx(s_reward, abs=1e-6)
            assert info["regret"][i] == pytest.approx(s_info["regret"], abs=1e-6)
            assert truncated[i] == s_truncated
            single[i] = (s_obs, s_info)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_same_seed_same_batch_gives_the_same_numbers(make_env, env_id):
    a, b = make_env(env_id, num_envs=4), make_env(env_id, num_envs=4)
    np.testing.assert_array_equal(a.reset(seed=3)[0], b.reset(seed=3)[0])
    for t in range(20):
        for x, y in zip(a.step(np.full(4, t % 2))[:4], b.step(np.full(4, t % 2))[:4], strict=True):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_pickled_vector_env_holds_state_not_caches(make_env, env_id):
    venv = make_env(env_id, num_envs=64, small=False)
    venv.reset(seed=1)
    for _ in range(3):
        venv.step(np.zeros(64, dtype=np.int64))
    data = pickle.dumps(venv)
    # The state is 64 keys, the round and the keywords; one chunk of the synthetic envs' arm sets
    # alone is 64 x 2 x 50 x 20 x 4 bytes = 512 kB, a dataset at least 100 kB.
    assert len(data) < 64_000
    clone = pickle.loads(data)
    for _ in range(10):
        actions = np.arange(64) % venv.single_action_space.n
        for x, y in zip(venv.step(actions)[:4], clone.step(actions)[:4], strict=True):
            np.testing.assert_array_equal(x, y)


def test_vector_reset_accepts_a_list_of_seeds_and_huge_seeds(make_env):
    venv = make_env("LinearBandit-v0", num_envs=3)
    obs, _ = venv.reset(seed=[5, 9, 2])
    np.testing.assert_allclose(obs[1], make_env("LinearBandit-v0").reset(seed=9)[0], atol=1e-7)
    obs, _ = venv.reset(seed=2**64)
    np.testing.assert_allclose(obs[2], make_env("LinearBandit-v0").reset(seed=2**64 + 2)[0], atol=1e-7)
    with pytest.raises(ValueError, match="3 ints"):
        venv.reset(seed=[1, 2])
    with pytest.raises(ValueError, match="seed must be a non-negative integer, got -4"):
        venv.reset(seed=-4)


@pytest.mark.parametrize(
    ("actions", "error", "match"),
    [(3, TypeError, "array-like of 2 arm indices"), (np.int64(1), TypeError, "scalar"),
     ([0, 6], ValueError, r"replica 1 got 6"), (np.array([0.0, 1.0]), ValueError, "integer dtype"),
     (torch.tensor([0, 1, 2]), ValueError, "shape"), (np.array([True, False]), ValueError, "integer dtype")],
)
def test_vector_bad_actions_raise_as_gymnasium_expects(make_env, actions, error, match):
    venv = make_env("LinearBandit-v0", num_envs=2)
    venv.reset(seed=0)
    with pytest.raises(error, match=match):
        venv.step(actions)


def test_vector_reset_options_full_mask_resets_partial_mask_is_refused(make_env):
    venv = make_env("LinearBandit-v0", num_envs=3)
    first, _ = venv.reset(seed=1)
    venv.step([0, 0, 0])
    again, _ = venv.reset(seed=1, options={"reset_mask": np.array([True, True, True])})
    np.testing.assert_array_equal(first, again)
    with pytest.raises(ValueError, match="reset_mask with every replica True"):
        venv.reset(options={"reset_mask": np.array([True, False, True])})
    with pytest.raises(ValueError, match="got {'difficulty': 1}"):
        venv.reset(options={"difficulty": 1})


def test_vector_truncates_together_then_autoresets_next_step(make_env):
    venv = make_env("LinearBandit-v0", num_envs=2, horizon=3)
    venv.reset(seed=0)
    for t in range(3):
        _, _, terminated, truncated, _ = venv.step([0, 1])
        assert truncated.all() == (t == 2) and not terminated.any()
    _, reward, _, truncated, info = venv.step([0, 1])  # the reset step
    assert (reward == 0).all() and not truncated.any() and "regret" not in info
    assert venv.step([0, 1])[-1]["regret"].shape == (2,)


def test_vector_max_episode_steps_truncates_before_the_horizon_like_time_limit(make_env):
    with pytest.warns(UserWarning, match="max_episode_steps=5 rounds, before horizon="):
        venv = make_env("LinearBandit-v0", num_envs=2, max_episode_steps=5)
    venv.reset(seed=0)
    assert [bool(venv.step([0, 0])[3].all()) for _ in range(5)] == [False] * 4 + [True]


def test_vector_render_ansi_shows_every_replica(make_env):
    venv = make_env("LinearBandit-v0", num_envs=2, render_mode="ansi")
    venv.reset(seed=0)
    venv.step([3, 4])
    frames = venv.render()
    assert len(frames) == 2 and "last choice: 3" in frames[0] and "last choice: 4" in frames[1]


def test_vector_bad_device_raises_when_cuda_missing(make_env):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available")
    with pytest.raises(ValueError, match="CUDA is not available"):
        make_env("LinearBandit-v0", num_envs=2, device="cuda")


@pytest.mark.parametrize("env_id", ["LinearBandit-v0", "LinearBanditFixed-v0"])
def test_observations_and_info_are_the_callers_to_modify(make_env, env_id):
    twins = [make_env(env_id, num_envs=3, array_type="torch") for _ in range(2)]
    for env in twins:
        env.reset(seed=4)
    for _ in range(20):  # over chunk boundaries (8 rounds at most at these sizes)
        (obs_a, reward_a, _, _, info_a), (obs_b, reward_b, _, _, info_b) = (env.step([1, 2, 3]) for env in twins)
        assert torch.equal(obs_a, obs_b) and torch.equal(reward_a, reward_b)
        assert torch.equal(info_a["regret"], info_b["regret"])
        obs_a.fill_(7.0)  # the caller scribbles on one twin's observation and info
        info_a["expected_rewards"].fill_(7.0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_cuda_vector_env_returns_torch_and_matches_cpu(make_env, env_id):
    cpu, gpu = make_env(env_id, num_envs=8), make_env(env_id, num_envs=8, device="cuda")
    a, _ = cpu.reset(seed=3)
    b, _ = gpu.reset(seed=3)
    assert isinstance(b, torch.Tensor) and b.device.type == "cuda"
    for _ in range(10):
        torch.testing.assert_close(torch.from_numpy(a), b.cpu(), rtol=1e-5, atol=1e-6)
        actions = np.arange(8) % 6
        a, ra, *_ = cpu.step(actions)
        b, rb, *_ = gpu.step(torch.from_numpy(actions).cuda())
        torch.testing.assert_close(torch.from_numpy(ra), rb.cpu(), rtol=1e-4, atol=1e-5)
