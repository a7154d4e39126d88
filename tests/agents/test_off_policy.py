"""Agents' action probabilities (``agents/loop/propensity.py``) and off-policy evaluation from their logs.

Coverage: 200 logs (one batched env, replicas sharing one problem instance) of 500 rounds by a learning
epsilon-greedy; the target is a fixed greedy ridge policy. Its on-policy value is measured on 100,000 fresh
rounds from the env's expected rewards (standard error 0.0009, about 1 % of an interval's half-width). Each
95 % interval must hold it in a share of the logs within 3 binomial standard errors of 0.95
(``3 sqrt(0.95 0.05 / 200) = 0.046``); measured: IPS 0.94, SNIPS 0.945, DM 0.955, DR 0.95.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401
from agents import LMCTS, EpsGreedy, LinTS, LinUCB, UniformRandom
from agents.loop.propensity import monte_carlo_probabilities
from bandit_gym.logged import ESTIMATORS, record, target_probabilities

K, D = 5, 4


def venv(num_envs: int, horizon: int = 40, **kwargs):
    return gym.make_vec("LinearBandit-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", n_arms=K,
                        dim=D, horizon=horizon, **kwargs)


@pytest.mark.parametrize("cls", [EpsGreedy, UniformRandom])
def test_exact_probabilities_match_the_rules_frequencies(cls):
    """2,000 re-keyed draws: each frequency within 4.5 standard errors ``sqrt(p (1 - p) / n)`` of the exact value
    (a bound for all 15 at once: 15 x P(|Z| > 4.5) < 1e-4)."""
    kwargs = {"exploration_scale": 2.0} if cls is EpsGreedy else {}
    agent = cls(venv(3), seed=0, device="cpu", **kwargs).learn(20)
    obs, _ = venv(3).reset(seed=5)
    exact, errors = agent.action_probabilities(obs)
    assert (errors == 0).all()
    np.testing.assert_allclose(exact.sum(axis=1), 1.0)
    n = 2000
    frequency = monte_carlo_probabilities(agent, torch.from_numpy(obs), n).numpy()
    assert (np.abs(frequency - exact) <= 4.5 * np.sqrt(exact * (1 - exact) / n) + 1e-12).all()


@pytest.mark.parametrize("cls", [LinTS, LMCTS])
def test_sampler_probabilities_are_monte_carlo_with_their_error_and_change_nothing(cls):
    agent = cls(venv(2), seed=0, device="cpu").learn(20)
    obs, _ = venv(2).reset(seed=5)
    action, state = agent.predict(obs)[0], {k: v.clone() for k, v in agent._state().items()}
    probabilities, errors = agent.action_probabilities(obs, n_samples=50)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0)
    np.testing.assert_allclose(errors, np.sqrt(probabilities * (1 - probabilities) / 50))
    np.testing.assert_array_equal(agent.predict(obs)[0], action)
    for name, value in agent._state().items():
        torch.testing.assert_close(value, state[name], rtol=0, atol=0)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1"):
        agent.action_probabilities(obs, n_samples=0)


def test_estimators_cover_the_on_policy_value_at_their_rate():
    logs, rounds, instance = 200, 500, 7
    # the target: greedy ridge on 30 rounds of one run, the same in every replica (fixed: it does not learn)
    target = LinUCB(n_arms=K, dim=D, num_replicas=logs, exploration_scale=0.0, seed=0, device="cpu")
    train = gym.make("LinearBandit-v0", n_arms=K, dim=D, horizon=30, instance_seed=instance)
    obs, _ = train.reset(seed=1000)
    for t in range(30):
        next_obs, reward, *_ = train.step(t % K)
        target.update(np.broadcast_to(obs, (logs, K, D)), np.full(logs, t % K), np.full(logs, reward))
        obs = next_obs
    env = venv(logs, rounds, instance_seed=instance)  # its on-policy value, from the expected rewards
    obs, info = env.reset(seed=10_000)
    values = []
    for _ in range(rounds):
        action, _ = target.predict(obs)
        values.append(info["expected_rewards"][np.arange(logs), action])
        obs, _, _, _, info = env.step(action)
    truth = np.mean(values)
    logger = EpsGreedy(venv(logs, rounds, instance_seed=instance), exploration_scale=6.0, seed=0, device="cpu")
    log = record(logger, venv(logs, rounds, instance_seed=instance), rounds, seed=0)
    pi = target_probabilities(target, log)
    tolerance = 3 * np.sqrt(0.95 * 0.05 / logs)
    for name, estimator in ESTIMATORS.items():
        estimate = estimator(log, pi)
        coverage = estimate.covers(truth).mean()
        assert abs(coverage - 0.95) <= tolerance, (name, coverage)
        mean_error = estimate.standard_error.mean() / np.sqrt(logs)  # the spread of the mean of 200 estimates
        assert abs(estimate.value.mean() - truth) <= 3 * mean_error + 0.0009 * 3, (name, estimate.value.mean(), truth)
