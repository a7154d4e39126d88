"""Contract tests of every registered synthetic env (single-env face)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from bandit_ids import SYNTHETIC_IDS  # tests/integration is on pytest's pythonpath

import bandit_gym
import bandit_gym.synthetic

SMALL = {"n_arms": 6, "dim": 4, "horizon": 50}


def test_every_synthetic_env_is_registered_with_its_vector_env():
    """Each env class of bandit_gym.synthetic has a registered id, and each synthetic id's vector entry point
    builds the batched face of the same simulator as its entry point."""
    classes = {cls for cls in vars(bandit_gym.synthetic).values()
               if isinstance(cls, type) and issubclass(cls, bandit_gym.BanditEnv) and cls is not bandit_gym.BanditEnv}
    assert classes and {type(gym.make(env_id).unwrapped) for env_id in SYNTHETIC_IDS} == classes
    for env_id in SYNTHETIC_IDS:
        single = gym.make(env_id, **SMALL).unwrapped
        batched = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point", **SMALL)
        assert isinstance(batched, bandit_gym.BanditVectorEnv) and batched.num_envs == 3
        assert batched.simulator_class is single.simulator_class


@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_env_spaces_follow_the_contract(env_id):
    env = gym.make(env_id)
    assert env.observation_space == gym.spaces.Box(-1.0, 1.0, shape=(50, 20), dtype=np.float32)
    assert env.action_space == gym.spaces.Discrete(50)
    assert env.unwrapped.horizon == 10_000
    small = gym.make(env_id, n_arms=10, dim=5)
    assert small.observation_space.shape == (10, 5) and small.action_space.n == 10


@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_different_seeds_differ_and_unseeded_reset_continues_deterministically(env_id):
    a, b = gym.make(env_id, **SMALL), gym.make(env_id, **SMALL)
    seeded, _ = a.reset(seed=3)
    assert not np.array_equal(seeded, b.reset(seed=4)[0])
    b.reset(seed=3)
    first, _ = a.reset()
    np.testing.assert_array_equal(first, b.reset()[0])
    assert not np.array_equal(first, seeded)  # a new episode, not a replay


@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_regret_is_nonnegative_and_zero_for_optimal_arm(env_id):
    env = gym.make(env_id, **SMALL)
    obs, info = env.reset(seed=11)
    for t in range(SMALL["horizon"]):
        expected = info["expected_rewards"]
        assert info["optimal_action"] == int(np.argmax(expected))
        action = info["optimal_action"] if t % 2 == 0 else (t * 5) % 6
        obs, reward, terminated, truncated, info_next = env.step(action)
        if action == int(np.argmax(expected)):
            assert info_next["regret"] == 0.0  # exactly, not approximately
        else:
            assert info_next["regret"] == pytest.approx(float(expected.max() - expected[action]), abs=1e-6)
            assert info_next["regret"] >= 0.0
        info = info_next


def _recovered_theta(observations: list, expected: list) -> tuple[np.ndarray, float]:
    """Least-squares theta with x . theta = expected over the given rounds, and the largest residual."""
    x, y = np.concatenate(observations).astype(np.float64), np.concatenate(expected).astype(np.float64)
    theta = np.linalg.lstsq(x, y, rcond=None)[0]
    return theta, float(np.abs(x @ theta - y).max())


def test_linear_expected_rewards_are_x_dot_one_unit_theta_and_arms_have_unit_norm():
    env = gym.make("LinearBandit-v0", **SMALL)
    obs, info = env.reset(seed=2)
    observations, expected = [], []
    for _ in range(10):
        np.testing.assert_allclose(np.linalg.norm(obs, axis=1), 1.0, rtol=1e-6)
        observations.append(obs)
        expected.append(info["expected_rewards"])
        obs, _, _, _, info = env.step(0)
    theta, residual = _recovered_theta(observations, expected)
    assert residual < 1e-6  # one theta* explains every round (float32 sums: errors ~1e-7)
    assert np.linalg.norm(theta) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(("env_id", "twin", "link"), [
    ("QuadraticBandit-v0", "LinearBandit-v0", lambda score: 10 * score**2),
    ("LogisticBandit-v0", "LinearBanditFixed-v0", lambda score: 1 / (1 + np.exp(-score))),
])
def test_link_functions_apply_to_the_linear_score_of_the_same_instance(env_id, twin, link):
    # Same seed, same streams: the same theta* and arms as the linear twin; only the link differs.
    env, linear = gym.make(env_id, **SMALL), gym.make(twin, **SMALL)
    (obs, info), (linear_obs, linear_info) = env.reset(seed=6), linear.reset(seed=6)
    for _ in range(5):
        np.testing.assert_array_equal(obs, linear_obs)
        np.testing.assert_allclose(info["expected_rewards"], link(linear_info["expected_rewards"]), rtol=1e-5,
                                   atol=1e-6)
        obs, _, _, _, info = env.step(0)
        linear_obs, _, _, _, linear_info = linear.step(0)


@pytest.mark.parametrize("env_id", ["LinearBanditFixed-v0", "LogisticBandit-v0"])
def test_fixed_arm_envs_keep_their_arms(env_id):
    env = gym.make(env_id, **SMALL)
    first, _ = env.reset(seed=9)
    for _ in range(20):
        obs, *_ = env.step(1)
        np.testing.assert_array_equal(obs, first)


@pytest.mark.parametrize("env_id", ["LinearBandit-v0", "QuadraticBandit-v0"])
def test_changing_arm_envs_draw_new_arms(env_id):
    env = gym.make(env_id, **SMALL)
    first, _ = env.reset(seed=9)
    obs, *_ = env.step(1)
    assert not np.array_equal(obs, first)


@pytest.mark.parametrize(("env_id", "noise_std"), [("LinearBandit-v0", 0.3), ("QuadraticBandit-v0", 1.0)])
def test_noise_level_matches_its_keyword(env_id, noise_std):
    # reward - expected reward of the chosen arm is N(0, noise_std^2). With n draws the sample
    # variance has relative standard error sqrt(2 / (n - 1)) = 0.02 at n = 5000; allow 4 s.e.
    n = 5000
    env = gym.make(env_id, n_arms=3, dim=2, horizon=n, noise_std=noise_std)
    _, info = env.reset(seed=0)
    residuals = []
    for _ in range(n):
        expected = info["expected_rewards"][0]
        _, reward, _, _, info = env.step(0)
        residuals.append(reward - expected)
    residuals = np.asarray(residuals)
    assert abs(residuals.mean()) < 4 * noise_std / math.sqrt(n)
    assert residuals.var(ddof=1) == pytest.approx(noise_std**2, rel=4 * math.sqrt(2 / (n - 1)))


def test_logistic_rewards_are_bernoulli_with_the_expected_mean():
    # Mean of n Bernoulli(p) draws has standard error <= 0.5 / sqrt(n); allow 4 s.e.
    n = 5000
    env = gym.make("LogisticBandit-v0", n_arms=3, dim=2, horizon=n)
    _, info = env.reset(seed=1)
    p = info["expected_rewards"][2]
    rewards = np.array([env.step(2)[1] for _ in range(n)])
    assert set(np.unique(rewards)) <= {0.0, 1.0}
    assert abs(rewards.mean() - p) < 4 * 0.5 / math.sqrt(n)


def test_instance_seed_fixes_the_problem_across_seeds():
    a = gym.make("LinearBanditFixed-v0", instance_seed=3, **SMALL)
    b = gym.make("LinearBanditFixed-v0", instance_seed=3, **SMALL)
    obs_a, info_a = a.reset(seed=1)
    obs_b, info_b = b.reset(seed=2)
    np.testing.assert_array_equal(obs_a, obs_b)
    np.testing.assert_array_equal(info_a["expected_rewards"], info_b["expected_rewards"])  # the same theta*
    # the noise still follows the run seed
    assert a.step(0)[1] != b.step(0)[1]
    c = gym.make("LinearBanditFixed-v0", **SMALL)
    obs_c1, _ = c.reset(seed=1)
    obs_c2, _ = c.reset(seed=2)
    assert not np.array_equal(obs_c1, obs_c2)  # default: each seed is a new instance


def test_horizon_is_enforced_as_truncation():
    env = gym.make("LinearBandit-v0", **SMALL)
    env.reset(seed=0)
    for t in range(SMALL["horizon"]):
        _, _, terminated, truncated, info = env.step(0)
        assert terminated is False
        assert truncated == (t == SMALL["horizon"] - 1)
    assert set(info) == {"expected_rewards", "optimal_action", "regret"}
    with pytest.raises(RuntimeError, match="horizon"):
        env.unwrapped.step(0)


@pytest.mark.parametrize(
    ("action", "match"),
    [(6, "out of range"), (-1, "out of range"), (1.5, "not an integer"), (np.nan, "not an integer"),
     (True, "not an integer"), ("2", "not an integer"), (np.array([1, 2]), "shape"), (None, "not an integer")],
)
def test_bad_action_raises_naming_value_and_accepted(action, match):
    env = gym.make("LinearBandit-v0", **SMALL).unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match=match) as excinfo:
        env.step(action)
    assert "[0, 6)" in str(excinfo.value)


def test_numpy_and_torch_integer_actions_are_accepted():
    env = gym.make("LinearBandit-v0", **SMALL).unwrapped
    env.reset(seed=0)
    for action in (np.int64(2), np.array(3), torch.tensor(1), 5):
        env.step(action)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"n_arms": 1}, "n_arms"), ({"n_arms": 2.5}, "n_arms"), ({"dim": 0}, "dim"), ({"horizon": -3}, "horizon"),
     ({"noise_std": -0.1}, "noise_std"), ({"noise_std": float("nan")}, "noise_std"),
     ({"changing_arms": "yes"}, "changing_arms"), ({"instance_seed": -1}, "instance_seed")],
)
def test_bad_keywords_raise_naming_the_argument_and_value(kwargs, name):
    with pytest.raises(ValueError, match=f"{name} must be .*, got {kwargs[name]!r}"):
        gym.make("LinearBandit-v0", **kwargs)


def test_make_with_module_prefix_works_in_a_fresh_interpreter():
    import subprocess
    import sys

    code = "import gymnasium as gym; e = gym.make('bandit_gym:LinearBandit-v0'); print(e.reset(seed=0)[0].shape)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(50, 20)"
