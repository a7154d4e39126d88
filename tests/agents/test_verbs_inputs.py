"""The verbs' bad input is one line naming the argument, the value and what is accepted: ``predict`` given a
string, ``update`` given rewards or actions that are not one number per replica, ``learn`` given a
``progress_bar`` that is not a bool. Nothing is learned from what is refused."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LinUCB

SIZES = {"n_arms": 4, "dim": 3}


def agent_of(num_replicas: int = 2) -> LinUCB:
    return LinUCB(None, **SIZES, num_replicas=num_replicas, seed=0, device="cpu")


def observation(num_replicas: int = 2) -> np.ndarray:
    return np.linspace(-1, 1, num_replicas * 4 * 3, dtype=np.float32).reshape(num_replicas, 4, 3)


@pytest.mark.parametrize(("bad", "shown"), [("x", "'x'"), (np.array(["a", "b"]), "ndarray of shape (2,)")])
def test_predict_refuses_an_observation_that_is_not_numbers(bad, shown):
    agent = agent_of()
    with pytest.raises(ValueError) as error:
        agent.predict(bad)
    message = str(error.value)
    assert message.startswith("observation must be an array of numbers, (4, 3) or (2, 4, 3), numpy or torch, got ")
    assert shown in message and "\n" not in message


@pytest.mark.parametrize(("reward", "message"), [
    ([1.0, 0.0, 1.0], r"^reward must hold one value per replica \(2\), got 3 values of shape \(3,\)$"),
    (torch.ones(2, 2), r"^reward must hold one value per replica \(2\), got 4 values of shape \(2, 2\)$"),
    ("x", r"^reward must be a number or one number per replica \(2\), got 'x'$"),
])
def test_update_refuses_rewards_that_are_not_one_number_per_replica(reward, message):
    agent = agent_of()
    before = {name: value.clone() for name, value in agent._state().items()}
    with pytest.raises(ValueError, match=message):
        agent.update(observation(), np.array([0, 1]), reward)
    assert agent.t == 1
    assert all(torch.equal(value, before[name]) for name, value in agent._state().items())


def test_update_refuses_a_nan_reward_and_names_where_late_rewards_are():
    agent = agent_of()
    with pytest.raises(ValueError, match=r"^reward must be a finite number, got \[1\.0, nan\]: a feedback wrapper .*"
                                         r"info\['revealed_rounds'\] with agents\.loop\.feedback\.PendingRounds"):
        agent.update(observation(), np.array([0, 1]), np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match=r"^reward must be finite, got \[1\.0, inf\]$"):
        agent.update(observation(), np.array([0, 1]), np.array([1.0, np.inf]))
    assert agent.t == 1


@pytest.mark.parametrize(("action", "message"), [
    (np.array([0.7, 1.2]), r"^action must be integers \(arms in \[0, 4\)\), one per replica \(2\), got ndarray of "
                           r"shape \(2,\) and dtype float64$"),
    (torch.tensor([True, False]), r"^action must be integers"),
    ("x", r"^action must be integers .* got 'x'$"),
    (np.array([0, 1, 2]), r"^action must hold one value per replica \(2\), got 3 values: \[0, 1, 2\]$"),
])
def test_update_refuses_actions_that_are_not_one_arm_per_replica(action, message):
    agent = agent_of()
    with pytest.raises(ValueError, match=message):
        agent.update(observation(), action, np.array([1.0, 0.0]))
    assert agent.t == 1


def test_update_takes_integer_actions_of_any_integer_type():
    agents = [agent_of() for _ in range(3)]
    for agent, action in zip(agents, [np.array([0, 3], dtype=np.int32), torch.tensor([0, 3]), [0, 3]], strict=True):
        agent.update(observation(), action, np.array([1.0, 0.5]))
    for agent in agents[1:]:
        assert torch.equal(agent.theta_hat, agents[0].theta_hat)
    assert agents[0].t == 2 and agents[0].theta_hat.abs().sum() > 0


@pytest.mark.parametrize("bad", ["yes", 1, None, np.bool_(True)])
def test_learn_refuses_a_progress_bar_that_is_not_a_bool(bad):
    """Stable-Baselines3 reads ``progress_bar`` by its truth value (``"no"`` would show a bar); ``learn`` takes
    True or False only, before it plays a round."""
    agent = LinUCB(gym.make("LinearBandit-v0", **SIZES, horizon=5), seed=0, device="cpu")
    with pytest.raises(ValueError, match=rf"^progress_bar must be True or False, got {bad!r}$"):
        agent.learn(5, progress_bar=bad)
    assert agent.t == 1 and agent._learn_calls == 0
