"""Agents follow Stable-Baselines3's verbs: env ids, learn(total_timesteps=N), get_env, load(env=), repr,
SB3 callbacks that can stop learn, and SB3's evaluate_policy."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LinTS, LinUCB

sb3 = pytest.importorskip("stable_baselines3")
from stable_baselines3.common.callbacks import BaseCallback, CallbackList  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402


class StopAfter(BaseCallback):
    """Counts its calls and stops learn after ``n`` rounds."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n, self.started, self.ended, self.seen_timesteps = n, False, False, []

    def _on_training_start(self) -> None:
        self.started = True

    def _on_step(self) -> bool:
        self.seen_timesteps.append(self.num_timesteps)
        return self.n_calls < self.n

    def _on_training_end(self) -> None:
        self.ended = True


def test_agent_from_env_id_learns_total_timesteps_on_its_own_env():
    agent = LinUCB("LinearBandit-v0", seed=0, device="cpu")
    assert isinstance(agent.get_env(), gym.Env) and agent.get_env().spec.id == "LinearBandit-v0"
    agent.learn(total_timesteps=30)
    assert agent.history["regret"].shape == (30,) and agent.t == 31
    agent.learn(12)  # SB3 style: an integer is total_timesteps
    assert agent.history["regret"].shape == (12,) and agent.t == 43


def test_agent_from_env_id_with_replicas_uses_the_native_batched_env():
    agent = LinUCB("LinearBandit-v0", num_replicas=3, seed=5, device="cpu").learn(total_timesteps=20)
    assert agent.history["regret"].shape == (20, 3)
    single = LinUCB(gym.make("LinearBandit-v0"), seed=6, device="cpu").learn(total_timesteps=20)
    # replica 1 of the batch seeded 5 is the single run seeded 6 (floats may differ in the last bits)
    np.testing.assert_allclose(agent.history["regret"][:, 1], single.history["regret"], rtol=1e-5, atol=1e-6)


def test_unknown_env_id_is_named():
    with pytest.raises(ValueError, match="'LinearBandit-v9' is not registered"):
        LinUCB("LinearBandit-v9")


def test_learn_without_any_env_says_so():
    with pytest.raises(ValueError, match="learn needs an env"):
        LinUCB(n_arms=3, dim=2, device="cpu").learn(total_timesteps=5)


def test_load_with_env_continues_learning_on_it(tmp_path):
    env = gym.make("LinearBandit-v0", horizon=40)
    agent = LinTS(env, seed=1, device="cpu").learn(env, total_timesteps=10)
    agent.save(tmp_path / "agent.pt")
    loaded = LinTS.load(tmp_path / "agent.pt", env=env, device="cpu")
    assert loaded.get_env() is env and loaded.t == 11
    loaded.learn(total_timesteps=5)
    assert loaded.t == 16
    with pytest.raises(ValueError, match="agent was built for"):
        loaded.set_env(gym.make("LinearBandit-v0", n_arms=7))


def test_repr_names_class_sizes_hyperparameters_and_device():
    text = repr(LinUCB(n_arms=5, dim=3, num_replicas=2, exploration_scale=[0.1, 0.2], seed=0, device="cpu"))
    for part in ("LinUCB(", "n_arms=5", "dim=3", "num_replicas=2", "exploration_scale=[0.1, 0.2]", "device='cpu'"):
        assert part in text, (part, text)


def test_sb3_callback_sees_the_agent_and_stops_learn():
    callback = StopAfter(4)
    agent = LinUCB("LinearBandit-v0", num_replicas=2, seed=0, device="cpu")
    agent.learn(total_timesteps=50, callback=callback)
    assert callback.model is agent and callback.training_env is agent.get_env()
    assert callback.started and callback.ended
    assert agent.history["regret"].shape == (4, 2)  # the rounds played before the stop
    assert callback.seen_timesteps == [2, 4, 6, 8]  # SB3 counts steps over all replicas


def test_sb3_callback_list_and_plain_list_stop_at_the_first_false():
    for callbacks in (CallbackList([StopAfter(9), StopAfter(3)]), [StopAfter(9), StopAfter(3)]):
        agent = LinUCB("LinearBandit-v0", seed=0, device="cpu").learn(total_timesteps=50, callback=callbacks)
        assert agent.history["regret"].shape == (3,)


def test_plain_callable_callback_still_works_and_bad_callback_is_refused():
    rounds = []
    agent = LinUCB("LinearBandit-v0", seed=0, device="cpu")
    agent.learn(total_timesteps=10, callback=lambda a, t: rounds.append(t) or t < 6)
    assert rounds == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="callback must be callable"):
        agent.learn(total_timesteps=3, callback=42)


def test_evaluate_policy_plays_whole_episodes_with_our_predict():
    from stable_baselines3.common.monitor import Monitor

    env = Monitor(gym.make("LinearBandit-v0", horizon=30))
    agent = LinUCB(env, seed=0, device="cpu").learn(env)
    calls = []
    predict = agent.predict
    agent.predict = lambda *args, **kwargs: calls.append(1) or predict(*args, **kwargs)
    rewards, lengths = evaluate_policy(agent, env, n_eval_episodes=2, return_episode_rewards=True)
    assert lengths == [30, 30] and len(calls) == 60  # SB3 asked our agent for every one of the 60 rounds
    assert all(np.isfinite(rewards))
