"""Env inputs: a vector step's actions that are not arm indices, and reward noise float32 cannot hold."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import bandit_gym  # noqa: F401  (registers the envs)
from bandit_gym.synthetic import MAX_NOISE_STD

SMALL = {"n_arms": 3, "dim": 2, "horizon": 20}


@pytest.fixture
def venv():
    env = gym.make_vec("LinearBandit-v0", num_envs=2, vectorization_mode="vector_entry_point", **SMALL)
    env.reset(seed=0)
    return env


@pytest.mark.parametrize(
    ("actions", "error", "match"),
    [
        (None, TypeError, r"actions must be an array-like of 2 arm indices \(one per replica\), got the scalar None"),
        ("abc", TypeError, r"actions must be an array-like of 2 arm indices .*, got the scalar 'abc'"),
        (["a", "b"], ValueError, r"actions must be an array-like of 2 integer arm indices .*, got \['a', 'b'\] of "
                                 r"type list \(dtype <U1\)"),
        ([None, None], ValueError, r"actions must be an array-like of 2 integer arm indices .* \(dtype object\)"),
        ([[1], 2], ValueError, r"actions must be an array-like of 2 integer arm indices .*, got \[\[1\], 2\] of "
                               "type list$"),
    ],
)
def test_vector_step_names_actions_that_are_not_arm_indices(venv, actions, error, match):
    with pytest.raises(error, match=match) as excinfo:
        venv.step(actions)
    message = str(excinfo.value)
    assert "\n" not in message and "can't convert" not in message
    obs, *_ = venv.step(np.zeros(2, np.int64))  # the env is unharmed: the round is played
    assert obs.shape == (2, 3, 2)


def test_noise_std_bound_keeps_the_largest_reward_finite_in_float32():
    # The largest |z| a standard normal draw can take: Box-Muller's radius at the smallest uniform, 2^-33.
    z_max = np.float32(math.sqrt(-2.0 * math.log(0.5 * 2.0**-32)))
    with np.errstate(over="raise"):
        largest = np.float32(10.0) + np.float32(MAX_NOISE_STD) * z_max  # the quadratic bandit's largest mean
    assert np.isfinite(largest)


@pytest.mark.parametrize("env_id", ["LinearBandit-v0", "QuadraticBandit-v0", "LogisticBandit-v0"])
def test_noise_std_accepts_zero_and_the_bound(env_id):
    for noise_std in (0.0, MAX_NOISE_STD):
        env = gym.make_vec(env_id, num_envs=64, vectorization_mode="vector_entry_point", noise_std=noise_std, **SMALL)
        env.reset(seed=1)
        rewards = np.concatenate([env.step(np.zeros(64, np.int64))[1] for _ in range(SMALL["horizon"])])
        assert np.isfinite(rewards).all()
        if noise_std and env_id != "LogisticBandit-v0":  # the noise is there, at its scale
            assert np.abs(rewards).max() > MAX_NOISE_STD


@pytest.mark.parametrize(
    ("noise_std", "match"),
    [
        (1e300, r"noise_std must be a finite number >= 0.0 and <= 5e\+37, got 1e\+300"),
        (MAX_NOISE_STD * 1.01, r"noise_std must be a finite number >= 0.0 and <= 5e\+37, got 5.05e\+37"),
        (math.inf, r"noise_std must be a finite number .*, got inf"),
        (1e-45, r"noise_std must be 0 or in \[1.18e-38, 5e\+37\] \(the noise is drawn in float32.*got 1e-45"),
    ],
)
def test_noise_std_refuses_what_float32_rewards_cannot_hold(noise_std, match):
    with pytest.raises(ValueError, match=match):
        gym.make("LinearBandit-v0", noise_std=noise_std, **SMALL)
