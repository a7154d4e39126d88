"""The one threading policy (bandit_gym/threads.py): the library's loops run on its chosen number of torch
intra-op threads (default 1, ``threads=``, ``BANDIT_GYM_THREADS``) and leave the user's setting as it was,
exception or not; torch.set_num_threads is called once on entering and once on leaving, not per round.

The user's setting in these tests is 3, a number no default or test choice uses, so a test that passed
while the library ignored or leaked its choice would need torch to report 3 and the chosen number at once.
"""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
import torch

import bandit_gym  # noqa: F401  (registers the envs)
from agents import LinUCB
from bandit_gym import threads
from bandit_gym.threads import policy

USER = 3  # the user's own torch.set_num_threads


@pytest.fixture(autouse=True)
def user_threads(monkeypatch):
    """The user has set 3 threads; nothing in the environment chooses for the library."""
    monkeypatch.delenv(threads.ENV_VAR, raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(USER)
    yield
    torch.set_num_threads(before)


def learn_seeing_threads(agent_env=None, **learn_kwargs) -> list[int]:
    """torch's threads as the callback sees them in each of 5 rounds of LinUCB on LinearBandit-v0."""
    env = agent_env or gym.make("LinearBandit-v0", n_arms=4, dim=3, horizon=50)
    seen = []
    LinUCB(env, seed=0, device="cpu").learn(total_timesteps=5, callback=lambda agent, t: seen.append(
        torch.get_num_threads()), **learn_kwargs)
    return seen


def test_learn_runs_on_one_thread_and_restores_the_users_setting():
    assert learn_seeing_threads() == [1] * 5
    assert torch.get_num_threads() == USER


def test_learn_restores_the_users_setting_after_an_exception():
    def fail(agent, played):
        assert torch.get_num_threads() == 1
        raise KeyboardInterrupt

    env = gym.make("LinearBandit-v0", n_arms=4, dim=3, horizon=50)
    with pytest.raises(KeyboardInterrupt):
        LinUCB(env, seed=0, device="cpu").learn(total_timesteps=5, callback=fail)
    assert torch.get_num_threads() == USER


def test_the_variable_and_threads_argument_choose_and_threads_wins(monkeypatch):
    monkeypatch.setenv(threads.ENV_VAR, "2")
    assert learn_seeing_threads() == [2] * 5
    assert learn_seeing_threads(threads=4) == [4] * 5  # the argument before the variable
    monkeypatch.setenv(threads.ENV_VAR, " torch ")
    assert learn_seeing_threads() == [USER] * 5  # torch's own setting, untouched
    assert learn_seeing_threads(threads=1) == [1] * 5
    assert torch.get_num_threads() == USER


def test_a_choice_holds_for_the_library_calls_inside_it(monkeypatch):
    """The env's draws inside learn(threads=2) (its rounds in one chunk: next_rounds), and env.step inside
    `with policy(2)`, use 2 threads, not the default 1."""
    env = gym.make("LinearBandit-v0", n_arms=4, dim=3, horizon=50)
    seen_by_chunks, seen_by_step = [], []
    sim_step, sim_next_rounds = env.unwrapped.sim.step, env.unwrapped.sim.next_rounds

    def recording_step(actions):
        seen_by_step.append(torch.get_num_threads())
        return sim_step(actions)

    def recording_next_rounds(n):
        seen_by_chunks.append((n, torch.get_num_threads()))
        return sim_next_rounds(n)

    monkeypatch.setattr(env.unwrapped.sim, "step", recording_step)
    monkeypatch.setattr(env.unwrapped.sim, "next_rounds", recording_next_rounds)
    learn_seeing_threads(env, threads=2)
    assert seen_by_chunks == [(5, 2)] and seen_by_step == []  # the 5 rounds drawn as one chunk, on 2 threads
    env.reset(seed=0)
    with policy(2):
        env.step(0)
    env.step(1)  # outside any choice: the default
    assert seen_by_step == [2, 1]
    assert torch.get_num_threads() == USER


@pytest.mark.parametrize("vector", [False, True], ids=["single", "vector"])
def test_env_step_and_reset_run_on_one_thread_and_restore_even_after_an_error(monkeypatch, vector):
    if vector:
        env = gym.make_vec("LinearBandit-v0", num_envs=2, vectorization_mode="vector_entry_point", n_arms=4, dim=3)
        good, bad = np.array([0, 1]), np.array([0, 9])
    else:
        env = gym.make("LinearBandit-v0", n_arms=4, dim=3)
        good, bad = 0, 9
    seen = []
    sim = env.unwrapped.sim if not vector else env.sim
    for name in ("step", "reset"):
        original = getattr(sim, name)
        monkeypatch.setattr(sim, name, lambda *a, _original=original: (seen.append(torch.get_num_threads()),
                                                                      _original(*a))[1])
    env.reset(seed=0)
    env.step(good)
    assert seen == [1, 1] and torch.get_num_threads() == USER
    with pytest.raises(ValueError, match="9"):
        env.step(bad)
    assert torch.get_num_threads() == USER


def test_predict_and_update_run_on_one_thread_and_restore(monkeypatch):
    agent = LinUCB(None, n_arms=4, dim=3, seed=0, device="cpu")
    seen = []
    for name in ("_select", "_observe"):
        original = getattr(agent, name)
        monkeypatch.setattr(agent, name, lambda *a, _original=original: (seen.append(torch.get_num_threads()),
                                                                        _original(*a))[1])
    obs = np.ones((4, 3), dtype=np.float32)
    action, _ = agent.predict(obs)
    agent.update(obs, action, 1.0)
    assert seen == [1, 1] and torch.get_num_threads() == USER


def counting_set_num_threads(monkeypatch) -> list[int]:
    calls = []
    set_num_threads = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (calls.append(n), set_num_threads(n))[1])
    return calls


def test_learn_and_the_runner_set_threads_once_not_per_round(monkeypatch):
    """Cheap: torch.set_num_threads is called on entering and leaving, never by the nested per-round calls."""
    from bandit_experiments.runner import play_rounds

    calls = counting_set_num_threads(monkeypatch)
    learn_seeing_threads()
    assert calls == [1, USER]
    venv = gym.make_vec("LinearBandit-v0", num_envs=2, vectorization_mode="vector_entry_point", n_arms=4, dim=3)
    calls.clear()
    played = play_rounds(LinUCB(venv, seed=0, device="cpu"), venv, 20)
    assert played.regret.shape == (20, 2)
    assert calls == [1, USER]
    calls.clear()
    torch.set_num_threads(1)  # already what the policy wants: nothing to set or restore
    calls.clear()
    learn_seeing_threads()
    assert calls == []


@pytest.mark.parametrize("bad", [0, -2, 1.5, "two", "", True])
def test_a_bad_threads_argument_is_named(bad):
    message = f"threads must be a positive integer (torch intra-op threads) or 'torch' (leave torch's setting), " \
              f"got {bad!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        policy(bad)
    env = gym.make("LinearBandit-v0", n_arms=4, dim=3, horizon=50)
    with pytest.raises(ValueError, match=r"^threads must be a positive integer"):
        LinUCB(env, seed=0, device="cpu").learn(total_timesteps=5, threads=bad)
    assert torch.get_num_threads() == USER


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_a_bad_variable_is_named_and_changes_nothing(monkeypatch, bad):
    monkeypatch.setenv(threads.ENV_VAR, bad)
    shown = repr(int(bad)) if bad.lstrip("-").isdigit() else repr(bad)
    env = gym.make("LinearBandit-v0", n_arms=4, dim=3, horizon=50)
    with pytest.raises(ValueError, match=rf"^BANDIT_GYM_THREADS must be a positive integer .* got {shown}$"):
        LinUCB(env, seed=0, device="cpu").learn(total_timesteps=5)
    with pytest.raises(ValueError, match=r"^BANDIT_GYM_THREADS must be"):
        env.reset(seed=0)
    assert torch.get_num_threads() == USER


def test_resolve_reports_the_choice():
    assert threads.resolve() == threads.DEFAULT_THREADS == 1
    assert threads.resolve(5) == 5 and threads.resolve("torch") is None
    with policy(2):
        assert threads.resolve() == 2 and torch.get_num_threads() == 2
        with policy():  # nested, no choice of its own: the enclosing one
            assert torch.get_num_threads() == 2
    assert threads.resolve() == 1 and torch.get_num_threads() == USER


def test_the_cli_threads_option_chooses_the_rounds_threads(monkeypatch, tmp_path):
    """``bandit-gym run --threads 2``: the runner's rounds run on 2 threads (not the policy's default 1)."""
    from agents.linear import LinUCB as LinUCBClass
    from bandit_experiments import cli

    for name in ("OMP_NUM_THREADS", threads.ENV_VAR):  # the CLI sets them for its workers: restored after
        monkeypatch.setenv(name, "")
    seen = []
    select = LinUCBClass._select
    monkeypatch.setattr(LinUCBClass, "_select", lambda self, contexts: (seen.append(torch.get_num_threads()),
                                                                        select(self, contexts))[1])
    config = tmp_path / "threads.yaml"
    config.write_text("name: threads\nenv: LinearBandit-v0\nhorizon: 5\nseeds: 2\nagents:\n  LinUCB: {}\n")
    assert cli.main(["run", str(config), "--out", str(tmp_path / "out"), "--quiet", "--threads", "2"]) == 0
    assert seen == [2] * 5


def test_policy_chooses_by_work_one_thread_below_large_work_and_torchs_from_it():
    with policy(work=threads.LARGE_WORK - 1):
        assert torch.get_num_threads() == 1
    with policy(work=threads.LARGE_WORK):
        assert torch.get_num_threads() == USER  # torch's own setting, untouched
        with policy():  # a library call inside keeps the choice
            assert torch.get_num_threads() == USER
    assert torch.get_num_threads() == USER
    assert threads.resolve(work=threads.LARGE_WORK) is None and threads.resolve(work=0) == 1


def test_policy_work_yields_to_the_variable_and_the_argument(monkeypatch):
    with policy(2, work=threads.LARGE_WORK):
        assert torch.get_num_threads() == 2
    monkeypatch.setenv(threads.ENV_VAR, "1")
    with policy(work=threads.LARGE_WORK):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == USER


def test_learn_chooses_threads_by_its_round_work_and_restores_the_users_setting(monkeypatch):
    env = gym.make("LinearBandit-v0", n_arms=4, dim=3, horizon=50)
    work = LinUCB(env, seed=0, device="cpu").round_work()
    assert work == 1 * 3 * (3 + 4)  # R p (p + K)
    monkeypatch.setattr(threads, "LARGE_WORK", work)
    assert learn_seeing_threads(env) == [USER] * 5
    monkeypatch.setattr(threads, "LARGE_WORK", work + 1)
    assert learn_seeing_threads(env) == [1] * 5
    assert torch.get_num_threads() == USER


@pytest.mark.parametrize("bad", [-1, 2.5, True, "big"])
def test_policy_refuses_work_that_is_not_a_count(bad):
    with pytest.raises(ValueError, match=rf"^work must be None or an integer >= 0 \(floats of a round's arithmetic\), "
                                         rf"got {re.escape(repr(bad))}$"):
        policy(work=bad)


def counting_enters(monkeypatch) -> list[object]:
    """Every entering of a policy (``with policy():``, ``@policy()``), recorded by its ``threads``."""
    calls = []
    enter = threads._enter
    monkeypatch.setattr(threads, "_enter", lambda chosen, work=None: (calls.append(chosen), enter(chosen, work))[1])
    return calls


def test_learn_enters_the_policy_once_per_loop_not_per_round(monkeypatch):
    """learn(60) enters as many policies as learn(6): its own, around the loop; none per round."""
    counts = []
    for rounds in (6, 60):
        env = gym.make("LinearBandit-v0", n_arms=4, dim=3, horizon=1000)
        agent = LinUCB(env, seed=0, device="cpu")
        calls = counting_enters(monkeypatch)
        agent.learn(rounds)
        counts.append(len(calls))
    assert counts[0] == counts[1] and counts[0] >= 1


def test_a_bare_rounds_loop_enters_the_policy_per_round_and_leaves_the_users_setting_between(monkeypatch):
    """Outside any policy the round loop runs each round on the library's thread and the loop's body on the user's:
    the same decisions as entering per round."""
    env = gym.make("LinearBandit-v0", n_arms=4, dim=3, horizon=1000)
    agent = LinUCB(env, seed=0, device="cpu")
    calls = counting_enters(monkeypatch)
    between = [torch.get_num_threads() for _ in agent.rounds(env, 7)]
    assert between == [USER] * 7 and len(calls) >= 7
    calls.clear()
    with policy(2):
        between = [torch.get_num_threads() for _ in agent.rounds(env, 7, threads=2)]
    assert between == [2] * 7 and calls.count(2) == 1  # policy(2) holds the loop's choice: no round enters it
