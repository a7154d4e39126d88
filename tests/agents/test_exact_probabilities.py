"""Each rule with a closed form answers ``exact_probabilities`` itself; the others leave it to Monte Carlo."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401
from agents import DiscountedLinUCB, LinTS, LinUCB, SlidingWindowLinUCB
from agents.loop.propensity import monte_carlo_probabilities, uniform_over_maximisers

K, D = 5, 4


def venv(num_envs: int):
    return gym.make_vec("LinearBandit-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", n_arms=K,
                        dim=D, horizon=40)


@pytest.mark.parametrize("cls", [LinUCB, DiscountedLinUCB, SlidingWindowLinUCB])
def test_ucb_exact_probabilities_are_the_rules_choice(cls):
    agent = cls(venv(3), seed=0, device="cpu").learn(20)
    obs, _ = venv(3).reset(seed=5)
    exact, errors = agent.action_probabilities(obs)
    assert (errors == 0).all()
    np.testing.assert_array_equal(exact, monte_carlo_probabilities(agent, torch.from_numpy(obs), 20).numpy())
    np.testing.assert_array_equal(exact.argmax(axis=1), agent.predict(obs)[0])


@pytest.mark.parametrize("cls", [LinUCB, DiscountedLinUCB, SlidingWindowLinUCB])
def test_ucb_exact_probabilities_share_ties_uniformly(cls):
    agent = cls(venv(2), seed=0, device="cpu")  # round 1: nu_1 = 0 and theta_hat = 0, every arm ties
    obs, _ = venv(2).reset(seed=5)
    exact, errors = agent.action_probabilities(obs)
    np.testing.assert_array_equal(exact, np.full((2, K), 1.0 / K))
    assert (errors == 0).all()


def test_a_sampling_agent_has_no_closed_form():
    agent = LinTS(venv(2), seed=0, device="cpu")
    assert agent.exact_probabilities(torch.from_numpy(venv(2).reset(seed=5)[0])) is None


def test_uniform_over_maximisers_splits_ties():
    scores = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    assert torch.equal(uniform_over_maximisers(scores),
                       torch.tensor([[0.0, 0.5, 0.5, 0.0], [0.25, 0.25, 0.25, 0.25]], dtype=torch.float64))
