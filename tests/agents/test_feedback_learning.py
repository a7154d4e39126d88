"""Agents under delayed and batched feedback (``bandit_gym.feedback``, ``agents/loop/feedback.py``).

``learn`` keeps each round's arm features and learns from a round when its reward arrives through
``info``. Tested: delay 0 and batch size 1 give the plain run bit for bit; the statistics change only when
rewards arrive; every round is learned from once; LinUCB's regret grows with the delay (paired over the
same seeds, by more than 3 standard errors of the per-seed difference); LMC-TS under delay learns, within the
delay's bounded cost.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401
from agents import LMCTS, LinUCB, UniformRandom
from bandit_gym.feedback import BatchedFeedback, DelayedFeedback

SIZES = {"n_arms": 6, "dim": 4}


def make(num_envs: int | None = None, horizon: int = 60, **kwargs):
    kwargs = {**SIZES, "horizon": horizon, **kwargs}
    if num_envs is None:
        return gym.make("LinearBandit-v0", **kwargs)
    return gym.make_vec("LinearBandit-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


@pytest.mark.parametrize("num_envs", [None, 4])
@pytest.mark.parametrize(("wrapper", "kwargs"), [(DelayedFeedback, {"delay": 0}), (BatchedFeedback, {"batch_size": 1})])
def test_linucb_identity_feedback_learns_the_plain_run_bit_for_bit(num_envs, wrapper, kwargs):
    plain = LinUCB(make(num_envs), seed=2, device="cpu").learn(130)  # past the horizon: two episodes
    wrapped = LinUCB(wrapper(make(num_envs), **kwargs), seed=2, device="cpu").learn(130)
    for name in ("regret", "reward", "action"):
        np.testing.assert_array_equal(plain.history[name], wrapped.history[name], strict=True)
    for name, value in plain._state().items():
        torch.testing.assert_close(wrapped._state()[name], value, rtol=0, atol=0)


@pytest.mark.parametrize("num_envs", [None, 3])
def test_linucb_batched_feedback_updates_only_when_a_batch_arrives(num_envs):
    moments = []
    LinUCB(BatchedFeedback(make(num_envs, horizon=23), batch_size=5), seed=0, device="cpu").learn(
        callback=lambda agent, played: moments.append(agent.moment.clone()))
    changed = [played for played in range(2, 24) if not torch.equal(moments[played - 1], moments[played - 2])]
    assert changed == [5, 10, 15, 20, 23]  # the batches' last rounds, and the episode's end


def test_linucb_delayed_run_learns_every_round_once():
    """After the horizon every reward has arrived: the moment ``b = sum r x`` equals the plain sum over the run."""
    agent = LinUCB(DelayedFeedback(make(3), delay=(0, 7)), seed=1, device="cpu").learn()
    twin = make(3)
    obs, _ = twin.reset(seed=agent.seeds)
    moment = torch.zeros(3, agent.model_dim, dtype=torch.float64)
    for actions in agent.history["action"]:
        next_obs, reward, *_ = twin.step(actions)
        moment += torch.from_numpy(reward[:, None] * obs[np.arange(3), actions]).double()
        obs = next_obs
    torch.testing.assert_close(agent.moment.double(), moment, rtol=1e-4, atol=1e-4)


@pytest.mark.learning
def test_lmcts_learns_under_delayed_feedback():
    """16 seeds x 200 rounds, rewards 4 rounds late. Learning: the mean cumulative regret is below a quarter of
    uniform play's on the same envs (measured: 12.7 against 127.9 +- 2.1). The delay's cost is bounded: d + 1
    interleaved copies of the undelayed learner, each seeing every (d + 1)-th round, play under delay d with regret
    (d + 1) R(T / (d + 1)) <= (d + 1) R(T) (Joulani et al., 2013), so the delayed regret stays within 5x the
    undelayed one (measured: 12.7 against 10.8)."""
    R, T, delay = 16, 200, 4
    runs = {}
    for name, cls, wrap in (("plain", LMCTS, False), ("delayed", LMCTS, True), ("uniform", UniformRandom, False)):
        venv = make(R, horizon=T)
        env = DelayedFeedback(venv, delay=delay) if wrap else venv
        runs[name] = cls(env, seed=0, device="cpu", **({"n_inner_steps": 20} if cls is LMCTS else {})).learn()
    regret = {name: agent.history["regret"].sum(axis=0).mean() for name, agent in runs.items()}  # mean over seeds
    assert not np.array_equal(runs["delayed"].history["action"], runs["plain"].history["action"])  # the delay acts
    assert regret["delayed"] < regret["uniform"] / 4, regret
    assert regret["delayed"] < (delay + 1) * regret["plain"], regret


@pytest.mark.learning
def test_linucb_regret_grows_with_the_delay():
    """32 seeds x 400 rounds (K = 10, d = 5): cumulative regret per seed at delays 0, 25, 100, paired by seed;
    each step up in delay raises the mean by more than 3 standard errors of the per-seed difference
    (measured: 21.7, 38.7 and 86.2, s.e. 1.3 to 1.4 each)."""
    R, T = 32, 400
    regret = {}
    for delay in (0, 25, 100):
        venv = make(R, horizon=T, n_arms=10, dim=5)
        agent = LinUCB(DelayedFeedback(venv, delay=delay), seed=0, device="cpu").learn()
        regret[delay] = agent.history["regret"].sum(axis=0)  # (R,)
    for low, high in ((0, 25), (25, 100)):
        difference = regret[high] - regret[low]
        assert difference.mean() > 3 * difference.std(ddof=1) / np.sqrt(R), (low, high, difference.mean())
