"""The horizon a config asks for governs the runner's env, above the registry's ``max_episode_steps`` too."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np

import bandit_gym  # noqa: F401  (registers the ids)
from bandit_experiments import runner
from bandit_experiments.config import load_config

CONFIG = """\
name: horizon-test
env: LinearBandit-v0
horizon: 30
seeds: 2
env_kwargs: {n_arms: 4, dim: 3}
agents:
  LinUCB: {}
"""


def test_a_horizon_above_the_registrys_max_episode_steps_plays_every_round(write_config, monkeypatch):
    # The registry's limit is 10,000 rounds; a limit of 20 below the config's 30 is the same fault, made fast.
    # Before the fix the episode ended at round 20 and round 21's step only reset: KeyError: 'regret'.
    config = load_config(write_config(CONFIG, "c.yaml"))
    reference = runner.run_cell(config, "LinUCB")  # the registry's 10,000 rounds: no cut at 30
    assert not reference.failed
    monkeypatch.setattr(gym.registry["LinearBandit-v0"], "max_episode_steps", 20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the env warns when its episode ends before the horizon
        result = runner.run_cell(config, "LinUCB")
    assert not result.failed, result.record.get("failed")
    assert result.regret.shape == (30, 2)
    np.testing.assert_array_equal(result.regret, reference.regret)
    assert runner.make_env(config, 2, "cpu").episode_steps == 30
