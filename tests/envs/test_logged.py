"""``bandit_gym.logged``: logs, their files, the replay env and the estimators' arithmetic.

Exact tests with a fixed policy written here (bandit_gym knows no agents): a uniformly random policy, whose
propensity is 1/K. The estimators' coverage against on-policy values, with real agents, is tested in
``tests/agents/test_off_policy.py``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bandit_gym  # noqa: F401
from bandit_gym.logged import BanditLog, LoggedBanditEnv, direct_method, doubly_robust, ips, record, replay_value, snips

K, D = 4, 3


class UniformPolicy:
    """Plays arm ``floor(u K)`` from its own generator; knows its probabilities exactly."""

    def __init__(self, seed: int = 0) -> None:
        self.generator = np.random.default_rng(seed)
        self.updates = 0

    def action_probabilities(self, obs, n_samples: int = 1000):
        shape = np.shape(obs)[:-1]
        return np.full(shape, 1.0 / shape[-1]), np.zeros(shape)

    def predict(self, obs):
        shape = np.shape(obs)[:-2]
        return self.generator.integers(0, np.shape(obs)[-2], shape), None

    def update(self, obs, action, reward) -> None:
        self.updates += 1


def make(num_envs: int | None = None, horizon: int = 50):
    if num_envs is None:
        return gym.make("LinearBandit-v0", n_arms=K, dim=D, horizon=horizon)
    return gym.make_vec("LinearBandit-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", n_arms=K,
                        dim=D, horizon=horizon)


@pytest.mark.parametrize("num_envs", [None, 3])
def test_record_logs_what_the_env_showed_and_paid(num_envs):
    policy = UniformPolicy()
    log = record(policy, make(num_envs), 20, seed=4)
    R = 1 if num_envs is None else num_envs
    assert log.shape == (20, R, K, D) and policy.updates == 20
    np.testing.assert_array_equal(log.propensities, 1.0 / K)
    twin = make(num_envs)  # the same env, the same actions: the same arms and rewards
    obs, _ = twin.reset(seed=4)
    for t in range(20):
        np.testing.assert_array_equal(log.features[t], np.reshape(obs, (R, K, D)))
        obs, reward, *_ = twin.step(log.actions[t] if num_envs else int(log.actions[t, 0]))
        np.testing.assert_allclose(log.rewards[t], np.reshape(reward, R), rtol=1e-7)


def test_log_save_load_round_trip_and_refuses_other_files(tmp_path):
    log = record(UniformPolicy(), make(2), 10, seed=0)
    log.save(tmp_path / "log.npz")
    loaded = BanditLog.load(tmp_path / "log.npz")
    for name in ("features", "actions", "rewards", "propensities", "expected_rewards"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(log, name), strict=True)
    assert [p.name for p in tmp_path.iterdir()] == ["log.npz"]  # no temporary file left
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match="is not a bandit log: it lacks"):
        BanditLog.load(tmp_path / "other.npz")


def test_log_refuses_a_zero_propensity():
    log = record(UniformPolicy(), make(), 5, seed=0)
    with pytest.raises(ValueError, match="propensities must lie in \\(0, 1\\]"):
        BanditLog(log.features, log.actions, log.rewards, np.zeros_like(log.propensities))


def test_estimators_of_the_logging_policy_itself():
    """Target = logging policy: every weight is 1, so IPS and SNIPS are the logged mean reward exactly and
    DR is DM plus the mean residual."""
    log = record(UniformPolicy(), make(5, horizon=200), 200, seed=1)
    target = np.full((200, 5, K), 1.0 / K)
    mean = log.rewards.mean(axis=0)
    np.testing.assert_allclose(ips(log, target).value, mean)
    np.testing.assert_allclose(snips(log, target).value, mean)
    estimate = ips(log, target)
    half_width = 1.959964 * log.rewards.std(axis=0, ddof=1) / np.sqrt(200)
    np.testing.assert_allclose(estimate.high - estimate.low, 2 * half_width, rtol=1e-5)
    assert np.isfinite(direct_method(log, target).value).all() and np.isfinite(doubly_robust(log, target).value).all()


def test_estimators_refuse_a_target_of_the_wrong_shape():
    log = record(UniformPolicy(), make(), 5, seed=0)
    with pytest.raises(ValueError, match=r"target must hold pi\(k \| x\) of every logged round, shape \(5, 1, 4\)"):
        ips(log, np.ones((5, K)))


def test_replay_env_pays_only_the_logged_action():
    log = record(UniformPolicy(), make(), 30, seed=2)
    env = LoggedBanditEnv(log)
    obs, _ = env.reset()
    for t in range(30):
        np.testing.assert_array_equal(obs, log.features[t, 0])
        action = (int(log.actions[t, 0]) + (t % 2)) % K  # the logged arm on even rounds
        obs, reward, _, truncated, info = env.step(action)
        assert info["matched"] == (t % 2 == 0)
        assert reward == (log.rewards[t, 0] if t % 2 == 0 else 0.0)
        assert truncated == (t == 29)
    value, matched = replay_value(UniformPolicy(seed=9), log)
    assert 0 < matched < 30 and np.isfinite(value)


def test_record_refuses_a_played_arm_of_probability_zero():
    class Liar(UniformPolicy):
        def action_probabilities(self, obs, n_samples: int = 1000):
            probabilities, errors = super().action_probabilities(obs)
            return probabilities * 0, errors

    with pytest.raises(ValueError, match="round 0: action_probabilities gave the arm played probability 0"):
        record(Liar(), make(), 5, seed=0, n_samples=3)
