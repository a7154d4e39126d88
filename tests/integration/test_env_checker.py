"""check_bandit_env passes on every env we ship and names what is wrong with broken ones."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from bandit_ids import DATASET_IDS, SHOWDOWN_IDS, SYNTHETIC_IDS, data_kwargs

import bandit_gym  # noqa: F401  (registers the envs)
from bandit_gym.env_checker import BanditEnvCheckError, check_bandit_env


@pytest.mark.parametrize("env_id", SYNTHETIC_IDS + SHOWDOWN_IDS)
def test_every_synthetic_env_passes_check_bandit_env(env_id: str) -> None:
    check_bandit_env(gym.make(env_id))
    check_bandit_env(gym.make(env_id, horizon=5), n_steps=8)  # rollouts cut at the horizon


@pytest.mark.parametrize("env_id", DATASET_IDS)
def test_every_dataset_env_with_data_passes_check_bandit_env(env_id: str, openml_cache) -> None:
    try:
        env = gym.make(env_id, **data_kwargs(env_id, openml_cache))
    except (FileNotFoundError, ModuleNotFoundError) as exc:  # its data (or its extra) is not here
        pytest.skip(f"{env_id} cannot be made here: {exc}")
    check_bandit_env(env)  # and its native batched env, replica by replica


def test_a_bandit_from_user_data_passes_check_bandit_env_without_any_cache() -> None:
    check_bandit_env(gym.make("ClassificationBandit-v0", **data_kwargs("ClassificationBandit-v0", None)))


class ToyBandit(gym.Env):
    """A small correct linear bandit written as a user would; flags break one promise each."""

    def __init__(self, n_arms: int = 4, dim: int = 3, flat_obs: bool = False, regret_sign: float = 1.0,
                 argmin_optimal: bool = False, global_noise: bool = False, ignore_seed: bool = False,
                 seed_offset: int = 0) -> None:
        self.n_arms, self.dim = n_arms, dim
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(n_arms, dim), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(n_arms)
        self.flat_obs, self.regret_sign, self.argmin_optimal = flat_obs, regret_sign, argmin_optimal
        self.global_noise, self.ignore_seed, self.seed_offset = global_noise, ignore_seed, seed_offset

    def _new_round(self):
        self.arms = self.np_random.normal(size=(self.n_arms, self.dim)).astype(np.float32)  # (K, d)
        self.expected = self.arms @ self.theta  # (K,)
        info = {"expected_rewards": self.expected.copy(),
                "optimal_action": int(self.expected.argmin() if self.argmin_optimal else self.expected.argmax())}
        return (self.arms.ravel() if self.flat_obs else self.arms.copy()), info

    def reset(self, *, seed=None, options=None):
        super().reset(seed=None if self.ignore_seed or seed is None else seed + self.seed_offset)
        self.theta = self.np_random.normal(size=self.dim).astype(np.float32)  # (d,)
        return self._new_round()

    def step(self, action):
        if self.global_noise:  # the bug under test: numpy's global generator ignores reset(seed=...)
            noise = np.random.normal()  # noqa: NPY002
        else:
            noise = self.np_random.normal()
        reward = float(self.expected[action] + noise)
        regret = self.regret_sign * float(self.expected.max() - self.expected[action])
        obs, info = self._new_round()
        info["regret"] = regret
        return obs, reward, False, False, info


def _toy_vector(**flags):
    """A hand-made batched toy: replica r is the toy env reset with seed + r (SyncVectorEnv does that)."""
    return lambda num_envs: gym.vector.SyncVectorEnv([lambda: ToyBandit(**flags) for _ in range(num_envs)])


def test_a_correct_user_env_passes_with_and_without_its_vector_env() -> None:
    check_bandit_env(ToyBandit())
    check_bandit_env(ToyBandit(), vector_env=_toy_vector())
    check_bandit_env(ToyBandit(), vector_env=gym.vector.SyncVectorEnv([ToyBandit, ToyBandit]))


@pytest.mark.parametrize(("flags", "message"), [
    ({"flat_obs": True}, r"observation has shape \(12,\), observation_space has \(4, 3\)"),
    ({"regret_sign": -1.0}, r"info\['regret'\] = .* but the previous info's expected_rewards give max - expected"),
    ({"argmin_optimal": True}, r"info\['optimal_action'\] = \d is not an arm with the largest expected reward"),
    ({"global_noise": True}, r"seeding is not deterministic: .* differ in 'reward'"),
    ({"ignore_seed": True}, r"seeding is not deterministic"),
])
def test_a_broken_env_fails_with_a_message_naming_the_broken_promise(flags: dict, message: str) -> None:
    with pytest.raises(BanditEnvCheckError, match=message):
        check_bandit_env(ToyBandit(**flags))


def test_an_env_that_ignores_its_seed_only_in_part_fails() -> None:
    class SameInstanceEverySeed(ToyBandit):  # deterministic, but every seed gives one and the same run
        def reset(self, *, seed=None, options=None):
            return super().reset(seed=0, options=options)
    with pytest.raises(BanditEnvCheckError, match=r"reset\(seed=0\) and reset\(seed=1\) give the same rollout"):
        check_bandit_env(SameInstanceEverySeed())


def test_a_flat_observation_space_is_refused() -> None:
    env = ToyBandit()
    env.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(12,), dtype=np.float32)
    with pytest.raises(BanditEnvCheckError, match=r"observation_space must be a Box of shape \(n_arms, dim\)"):
        check_bandit_env(env)


def test_a_vector_env_whose_replica_differs_fails() -> None:
    def vector(num_envs: int) -> gym.vector.VectorEnv:  # replica 1 is seeded seed + 1 + 1
        return gym.vector.SyncVectorEnv([lambda: ToyBandit(), lambda: ToyBandit(seed_offset=1), lambda: ToyBandit()])
    message = r"vector env replica 1 .* differs from the single env reset with seed 0 \+ 1"
    with pytest.raises(BanditEnvCheckError, match=message):
        check_bandit_env(ToyBandit(), vector_env=vector)


def test_a_vector_env_with_other_spaces_fails() -> None:
    with pytest.raises(BanditEnvCheckError, match="vector env's single spaces"):
        check_bandit_env(ToyBandit(), vector_env=_toy_vector(n_arms=5))


def test_check_bandit_env_names_a_bad_argument() -> None:
    with pytest.raises(ValueError, match="num_envs must be an integer >= 2, got 1"):
        check_bandit_env(ToyBandit(), num_envs=1)
    with pytest.raises(TypeError, match="env must be a gymnasium.Env"):
        check_bandit_env(gym.vector.SyncVectorEnv([ToyBandit]))


class ShiftedInfo(gym.Wrapper):
    """A Showdown env whose info tells a wrong ``optimal_reward`` or whose step pays off its ``reward_row``."""

    def __init__(self, env: gym.Env, key: str) -> None:
        super().__init__(env)
        self.key = key

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, self._shifted(info)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._shifted(info)

    def _shifted(self, info: dict) -> dict:
        return {**info, self.key: info[self.key] + 1.0}


@pytest.mark.parametrize(("key", "message"), [
    ("optimal_reward", r"info\['regret'\] = .* but the previous info's optimal_reward - reward = "),
    ("reward_row", r"reward .* but the previous info's reward_row\[action=\d\] = "),
])
def test_check_bandit_env_scores_a_showdown_env_by_its_optimal_reward_and_reward_row(key: str, message: str) -> None:
    check_bandit_env(gym.make("LinearShowdown-v0"))  # the env as it is passes
    with pytest.raises(BanditEnvCheckError, match=message):
        check_bandit_env(ShiftedInfo(gym.make("LinearShowdown-v0"), key), vector_env=None)
