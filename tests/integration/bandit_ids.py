"""Env ids of the integration tests, by family (imported by the test modules)."""

from __future__ import annotations

import gymnasium as gym

import bandit_gym

#: The synthetic envs: made without data.
SYNTHETIC_IDS = [i for i in bandit_gym.ENV_IDS if gym.spec(i).entry_point.startswith("bandit_gym.synthetic")]
#: The dataset envs: made only with their data in an OpenML cache.
DATASET_IDS = [i for i in bandit_gym.ENV_IDS if i not in SYNTHETIC_IDS]
