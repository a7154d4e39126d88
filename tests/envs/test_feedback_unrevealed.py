"""A reward that has not arrived cannot be taken for one: under delayed or batched feedback ``step``'s reward is
NaN unless the step reveals its own round and no other, so a hand-written ``predict``/``update`` loop fails on
its first such step; the loop of ``docs/envs.md`` (``PendingRounds.update``) learns what ``learn`` learns, bit
for bit. And ``Drift`` over an env that is no bandit names the env."""

from __future__ import annotations

import math
import pickle

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LinTS, LinUCB
from agents.loop.feedback import PendingRounds
from bandit_gym.feedback import BatchedFeedback, DelayedFeedback, Drift, UnrevealedReward

SIZES = {"n_arms": 5, "dim": 3}


def make(num_envs: int | None = None, horizon: int = 30):
    if num_envs is None:
        return gym.make("LinearBandit-v0", **SIZES, horizon=horizon)
    return gym.make_vec("LinearBandit-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **SIZES,
                        horizon=horizon)


def test_single_env_reward_is_nan_unless_the_step_reveals_its_own_round_alone():
    env, plain = DelayedFeedback(make(), delay=(0, 2), delay_seed=1), make()
    env.reset(seed=4)
    plain.reset(seed=4)
    alone = 0
    for t in range(30):
        _, reward, _, _, info = env.step(t % 5)
        own = plain.step(t % 5)[1]
        if info["revealed_rounds"].tolist() == [t]:
            assert reward == own and type(reward) is type(own)
            alone += 1
        else:
            assert isinstance(reward, UnrevealedReward) and math.isnan(reward)
    assert 0 < alone < 30  # both kinds of step were seen


def test_unrevealed_reward_is_nan_yet_equal_to_itself_and_pickles():
    reward = UnrevealedReward()
    assert math.isnan(reward) and math.isnan(reward + 1.0) and np.isnan(np.asarray(reward, dtype=np.float32))
    assert reward == UnrevealedReward() and not reward != UnrevealedReward()  # check_env compares two seeded runs
    assert reward != math.nan and reward != 0.0
    copy = pickle.loads(pickle.dumps(reward))
    assert type(copy) is UnrevealedReward and copy == reward


@pytest.mark.parametrize(("wrapper", "kwargs"), [(DelayedFeedback, {"delay": 3}), (BatchedFeedback, {"batch_size": 4})])
def test_vector_env_reward_is_a_nan_array_until_revealed(wrapper, kwargs):
    env = wrapper(make(3), **kwargs)
    env.reset(seed=0)
    for t in range(29):
        _, reward, _, _, info = env.step(np.full(3, t % 5))
        assert reward.shape == (3,) and np.isnan(reward).all(), t  # delay 3 / batches of 4: no round is alone
        assert info["revealed_rewards"].shape[0] == 3 and np.isfinite(info["revealed_rewards"]).all()


def test_a_hand_written_update_loop_under_delayed_feedback_fails_loudly():
    env = DelayedFeedback(make(), delay=10)
    agent = LinUCB(env, seed=0, device="cpu")
    obs, _ = env.reset(seed=0)
    actions, _ = agent.predict(obs)
    _, reward, _, _, _ = env.step(actions)
    with pytest.raises(ValueError, match=r"^reward must be a finite number, got \[nan\]: a feedback wrapper "
                                         r"\(bandit_gym\.feedback\) returns NaN for a round whose reward has not "
                                         r"arrived; learn from info\['revealed_rounds'\]"):
        agent.update(obs, actions, reward)
    assert agent.t == 1


def own_loop(agent, env, rounds: int, seed) -> np.ndarray:
    """The loop of docs/envs.md ("Feedback settings"); the regret of each round, ``(rounds,)`` or ``(rounds, R)``."""
    pending = PendingRounds()
    obs, info = env.reset(seed=seed)
    regrets = []
    for _ in range(rounds):
        actions, _ = agent.predict(obs)
        next_obs, reward, terminated, truncated, info = env.step(actions)
        pending.update(agent, obs, actions, info)
        regrets.append(info["regret"])
        obs = next_obs
        if np.any(terminated) or np.any(truncated):
            obs, info = env.reset()
            pending.reset()
    return np.asarray(regrets, dtype=np.float64)


@pytest.mark.parametrize(("cls", "wrapper", "kwargs"), [(LinUCB, DelayedFeedback, {"delay": (0, 6)}),
                                                        (LinTS, BatchedFeedback, {"batch_size": 4})])
@pytest.mark.parametrize("num_envs", [None, 3])
def test_the_documented_loop_learns_what_learn_learns(cls, wrapper, kwargs, num_envs):
    """Over two episodes (70 rounds, horizon 30) the loop's regret and the agent's state equal ``learn``'s, bit for
    bit (LinTS: the agent's round ``t``, which seeds its draws, advances once per step, as in ``learn``)."""
    learned = cls(wrapper(make(num_envs), **kwargs), seed=3, device="cpu").learn(70)
    agent = cls(wrapper(make(num_envs), **kwargs), seed=3, device="cpu")
    regrets = own_loop(agent, agent.get_env(), 70, agent.seeds if num_envs else agent.seeds[0])
    np.testing.assert_array_equal(regrets, learned.history["regret"])
    assert agent.t == learned.t == 71
    for name, value in learned._state().items():
        assert torch.equal(agent._state()[name], value), name
    assert regrets.sum() > 0


def test_pending_rounds_update_refuses_a_step_without_feedback():
    env = make()
    agent = LinUCB(env, seed=0, device="cpu")
    obs, _ = env.reset(seed=0)
    actions, _ = agent.predict(obs)
    *_, info = env.step(actions)
    with pytest.raises(ValueError, match=r"^info must hold 'revealed_rounds' \(a step of a delayed or batched "
                                         r"feedback wrapper, bandit_gym\.feedback\), got the keys \[.*\]; without "
                                         r"one, learn with agent\.update\(obs, action, reward\)$"):
        PendingRounds().update(agent, obs, actions, info)
    assert agent.t == 1


@pytest.mark.parametrize("num_envs", [None, 2])
def test_drift_over_an_env_that_is_no_bandit_names_it(num_envs):
    env = gym.make("CartPole-v1") if num_envs is None else gym.make_vec("CartPole-v1", num_envs=num_envs)
    expected = "CartPoleEnv" if num_envs is None else type(env.unwrapped).__name__
    with pytest.raises(ValueError, match=rf"^env must be a bandit env of bandit_gym for Drift to wrap \(a synthetic "
                                         rf"or dataset env, single or native batched: Drift changes the bandit's own "
                                         rf"world\), got {expected}$"):
        Drift(env, kind="abrupt", every=5)
