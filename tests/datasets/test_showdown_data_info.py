"""What the Showdown's real-data envs tell in ``info``, on the small data of ``conftest.py``: Mushroom's arms' means
as ``expected_rewards``, the coin's row as ``reward_row``; every one passes ``check_bandit_env``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bandit_gym  # noqa: F401  (registers the envs)
from bandit_gym.env_checker import check_bandit_env

pytest.importorskip("pandas")


def mushroom(cache, **kwargs) -> gym.Env:
    return gym.make("MushroomShowdown-v0", cache_dir=str(cache), verify_checksums=False, **kwargs)


def test_mushroom_showdown_info_expected_rewards_are_the_means_and_reward_row_the_coin(small_cache):
    env = mushroom(small_cache, horizon=300)
    obs, info = env.reset(seed=4)
    seen = set()
    for t in range(300):
        edible = info["optimal_action"] == 1
        means = [0.0, 5.0] if edible else [0.0, 0.5 * -35 + 0.5 * 5]  # the poisonous coin's mean: -15
        assert np.array_equal(info["expected_rewards"], np.array(means, np.float32))
        assert info["reward_row"][0] == 0 and info["reward_row"][1] in ((5.0,) if edible else (-35.0, 5.0))
        assert info["optimal_reward"] == (5.0 if edible else 0.0)  # the expected optimum
        seen.add((bool(edible), float(info["reward_row"][1])))
        action = t % 2
        row, optimal_reward = info["reward_row"], info["optimal_reward"]
        obs, reward, _, _, info = env.step(action)
        assert reward == row[action] and info["regret"] == optimal_reward - reward
    assert seen == {(True, 5.0), (False, -35.0), (False, 5.0)}


@pytest.mark.parametrize("env_id", ["MushroomShowdown-v0", "StatlogShowdown-v0", "CovertypeShowdown-v0"])
def test_showdown_dataset_env_on_small_data_passes_check_bandit_env(env_id, small_cache):
    horizon = {"StatlogShowdown-v0": 42, "CovertypeShowdown-v0": 35}.get(env_id, 100)  # the small data's rows
    check_bandit_env(gym.make(env_id, cache_dir=str(small_cache), verify_checksums=False, horizon=horizon))
