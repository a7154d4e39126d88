"""The one round loop, ``BanditAgent.rounds``: learn and the experiment runner iterate it; its records, its
checked mode (predict and update), continuing from an observation, and where an exception leaves the agent."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from replicas import make_vec

from agents import LMCTS, LinTS, LinUCB
from bandit_gym.feedback import DelayedFeedback

SIZES = {"n_arms": 6, "dim": 4, "horizon": 30}


def env(num_envs: int = 3):
    return make_vec("LinearBandit-v0", num_envs, SIZES)


AGENTS = {
    "LinTS": lambda e: LinTS(e, seed=2, device="cpu"),
    "LMCTS": lambda e: LMCTS(e, seed=2, device="cpu", n_inner_steps=5, step_size=[0.05, 0.1, 0.2]),
}


def played(loop) -> dict[str, np.ndarray]:
    rows = list(loop)
    return {"regret": np.stack([np.asarray(r.info["regret"]) for r in rows]),
            "action": np.stack([r.actions.numpy() for r in rows]),
            "reward": np.stack([r.rewards.numpy() for r in rows])}


@pytest.mark.parametrize("name", list(AGENTS))
def test_learn_records_what_its_round_loop_plays(name):
    learned = AGENTS[name](env()).learn(env())
    agent = AGENTS[name](env())
    rows = played(agent.rounds(env()))  # default total: the env's horizon
    for key, value in rows.items():
        np.testing.assert_array_equal(value, learned.history[key])  # the same loop: equal, not close
    assert agent.t == learned.t == SIZES["horizon"] + 1
    for key, value in agent._state().items():
        assert torch.equal(value, learned._state()[key]), key


@pytest.mark.parametrize("name", list(AGENTS))
def test_checked_rounds_use_predict_and_update_and_give_the_same_numbers(name):
    plain = played(AGENTS[name](env()).rounds(env(), 20))
    agent, calls = AGENTS[name](env()), {"predict": 0, "update": 0}
    for verb in calls:
        original = getattr(agent, verb)

        def counted(*args, _verb=verb, _original=original, **kwargs):
            calls[_verb] += 1
            return _original(*args, **kwargs)

        setattr(agent, verb, counted)
    checked = played(agent.rounds(env(), 20, checked=True, timed=True))
    assert calls == {"predict": 20, "update": 20}
    for key, value in plain.items():
        np.testing.assert_array_equal(checked[key], value)


def test_checked_rounds_under_delayed_feedback_learn_as_learn_does():
    def delayed():
        return DelayedFeedback(env(2), delay=3)

    learned = LinUCB(delayed(), seed=0, device="cpu").learn()
    agent = LinUCB(delayed(), seed=0, device="cpu")
    rows = played(agent.rounds(checked=True))
    np.testing.assert_array_equal(rows["regret"], learned.history["regret"])
    assert torch.equal(agent._state()["theta_hat"], learned._state()["theta_hat"])


def test_a_loop_continues_from_an_observation_as_one_loop_would():
    whole = played(LinTS(env(), seed=5, device="cpu").rounds(env(), 30))
    agent, e = LinTS(env(), seed=5, device="cpu"), env()
    first = list(agent.rounds(e, 12))
    rest = played(agent.rounds(e, 18, observation=first[-1].observation))  # no reset: the env goes on
    regret = np.concatenate([np.stack([np.asarray(r.info["regret"]) for r in first]), rest["regret"]])
    np.testing.assert_array_equal(regret, whole["regret"])
    assert [r.round for r in first] == list(range(1, 13)) and agent.t == 31


def test_times_are_recorded_per_round():
    rows = list(LinUCB(env(), seed=0, device="cpu").rounds(env(), 10, timed=True))
    assert all(r.select_s > 0 and r.update_s > 0 for r in rows)


@pytest.mark.parametrize("where, updating", [("_select", False), ("_observe", True)])
def test_updating_says_whether_an_exception_left_the_agent_mid_update(where, updating):
    agent = LinUCB(env(), seed=0, device="cpu")
    original = getattr(agent, where)

    def fails_in_round_5(*args):
        if agent.t == 5:
            raise RuntimeError("simulated")
        return original(*args)

    setattr(agent, where, fails_in_round_5)
    loop = agent.rounds(env(), 10)
    with pytest.raises(RuntimeError, match="simulated"):
        list(loop)
    assert loop.updating is updating and agent.t == 5  # rounds 1-4 played, round 5 not counted


def test_rounds_refuses_an_env_of_other_sizes_and_a_bad_total():
    agent = LinUCB(env(), seed=0, device="cpu")
    with pytest.raises(ValueError, match=r"env has \(num_envs, n_arms, dim\) = \(2, 6, 4\)"):
        agent.rounds(env(2))
    with pytest.raises(ValueError, match="total_timesteps"):
        agent.rounds(env(), 0)
