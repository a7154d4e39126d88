"""OneStepEpisodes and Gymnasium's own wrappers on the bandit envs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from bandit_ids import SYNTHETIC_IDS
from gymnasium.wrappers import FlattenObservation, NormalizeReward, RecordEpisodeStatistics, TimeLimit

import bandit_gym  # noqa: F401  (registers the envs)
from bandit_gym.wrappers import OneStepEpisodes


def _actions(n_arms: int, n: int, seed: int = 0) -> list[int]:
    return [int(a) for a in np.random.default_rng(seed).integers(0, n_arms, size=n)]


@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_one_step_episodes_continue_the_same_run(env_id: str) -> None:
    # The wrapped rounds must be exactly the rounds of one unwrapped run: an unseeded reset
    # that started a new run (new theta*) would show other arms and other regrets.
    raw, wrapped = gym.make(env_id), OneStepEpisodes(gym.make(env_id))
    raw_obs, _ = raw.reset(seed=3)
    obs, _ = wrapped.reset(seed=3)
    np.testing.assert_array_equal(obs, raw_obs)
    for action in _actions(raw.action_space.n, 12):
        raw_obs, raw_reward, _, _, raw_info = raw.step(action)
        step_obs, reward, terminated, truncated, info = wrapped.step(action)
        assert terminated is True and truncated is False
        assert reward == raw_reward and info["regret"] == raw_info["regret"]
        obs, reset_info = wrapped.reset()
        np.testing.assert_array_equal(obs, raw_obs)
        np.testing.assert_array_equal(obs, step_obs)
        np.testing.assert_array_equal(reset_info["expected_rewards"], raw_info["expected_rewards"])
        assert reset_info["optimal_action"] == raw_info["optimal_action"] and "regret" not in reset_info


def test_one_step_episodes_reset_twice_returns_the_same_round() -> None:
    env = OneStepEpisodes(gym.make("LinearBandit-v0"))
    env.reset(seed=0)
    env.step(1)
    first, _ = env.reset()
    second, _ = env.reset()
    np.testing.assert_array_equal(first, second)


def test_one_step_episodes_seeded_reset_restarts_the_run() -> None:
    env = OneStepEpisodes(gym.make("LinearBandit-v0"))
    start, _ = env.reset(seed=5)
    start = start.copy()
    for action in _actions(50, 4):
        env.step(action)
        env.reset()
    again, _ = env.reset(seed=5)
    np.testing.assert_array_equal(again, start)


def test_one_step_episodes_start_the_next_run_after_the_horizon() -> None:
    # horizon 3: the third step truncates the run; the next unseeded reset is the unwrapped
    # env's reset after its horizon (a new run, theta* drawn from the next episode key).
    raw, wrapped = gym.make("LinearBandit-v0", horizon=3), OneStepEpisodes(gym.make("LinearBandit-v0", horizon=3))
    raw.reset(seed=1)
    wrapped.reset(seed=1)
    for t, action in enumerate(_actions(50, 3)):
        raw.step(action)
        _, _, terminated, truncated, _ = wrapped.step(action)
        assert terminated and truncated == (t == 2)
        wrapped.reset()
    raw_next, _ = raw.reset()
    np.testing.assert_array_equal(wrapped.reset()[0], raw_next)


def test_record_episode_statistics_sums_a_run_and_counts_one_step_episodes() -> None:
    env = RecordEpisodeStatistics(gym.make("LinearBandit-v0", horizon=5))
    env.reset(seed=0)
    rewards = []
    for action in _actions(50, 5):
        _, reward, _, truncated, info = env.step(action)
        rewards.append(reward)
    assert truncated and info["episode"]["l"] == 5
    assert info["episode"]["r"] == pytest.approx(sum(rewards), rel=1e-5)

    per_round = RecordEpisodeStatistics(OneStepEpisodes(gym.make("LinearBandit-v0")))
    per_round.reset(seed=0)
    for action in _actions(50, 3):
        _, reward, _, _, info = per_round.step(action)
        assert info["episode"]["l"] == 1 and info["episode"]["r"] == pytest.approx(reward, rel=1e-5)
        per_round.reset()


@pytest.mark.parametrize("env_id", SYNTHETIC_IDS)
def test_flatten_observation_gives_the_arm_matrix_row_by_row(env_id: str) -> None:
    raw, flat = gym.make(env_id), FlattenObservation(gym.make(env_id))
    n_arms, dim = raw.observation_space.shape
    assert flat.observation_space.shape == (n_arms * dim,)
    raw_obs, _ = raw.reset(seed=2)
    flat_obs, _ = flat.reset(seed=2)
    np.testing.assert_array_equal(flat_obs.reshape(n_arms, dim), raw_obs)
    assert flat.observation_space.contains(flat_obs)


def test_normalize_reward_divides_by_the_running_return_scale() -> None:
    raw, normed = gym.make("LinearBandit-v0"), NormalizeReward(gym.make("LinearBandit-v0"), gamma=0.9)
    raw.reset(seed=4)
    normed.reset(seed=4)
    for action in _actions(50, 20):
        _, raw_reward, _, _, raw_info = raw.step(action)
        _, reward, _, _, info = normed.step(action)
        scale = np.sqrt(normed.return_rms.var + normed.epsilon)  # NormalizeReward's definition
        assert reward == pytest.approx(raw_reward / scale, rel=1e-5)
        assert info["regret"] == raw_info["regret"]  # regret stays in reward units


@pytest.mark.parametrize("make", ["wrapper", "gym.make"])
def test_time_limit_truncates_before_the_horizon(make: str) -> None:
    env = (TimeLimit(gym.make("LinearBandit-v0"), max_episode_steps=4) if make == "wrapper"
           else gym.make("LinearBandit-v0", max_episode_steps=4))
    env.reset(seed=0)
    truncations = [env.step(a)[3] for a in _actions(50, 4)]
    assert truncations == [False, False, False, True]
    obs, _ = env.reset()
    assert env.observation_space.contains(obs)
