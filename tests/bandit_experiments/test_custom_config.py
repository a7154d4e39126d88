"""Configs name your own agent (``package.module:ClassName``), your own env (``module:EnvId`` or ``imports:``) and
bandit_gym's wrappers; the runner plays them with the numbers of ``agent.learn`` on the same env."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import bandit_gym
from agents import LinUCB
from bandit_experiments import runner
from bandit_experiments.config import ConfigError, load_config

USER_AGENTS = '''
from agents import LinUCB


class MyUCB(LinUCB):
    """LinUCB under another name: the runner must give it LinUCB's numbers."""


class NotAnAgent:
    pass
'''

USER_ENVS = '''
import gymnasium as gym

base = gym.registry["LinearBandit-v0"]
for env_id in ("H11Small-v0", "H11Other-v0"):
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=base.entry_point, vector_entry_point=base.vector_entry_point,
                     kwargs={**base.kwargs, "n_arms": 5, "dim": 3})
'''


@pytest.fixture
def user_modules(tmp_path, monkeypatch):
    """``h11_user_agents`` and ``h11_user_envs`` importable from ``tmp_path/modules``, as a user's package is."""
    folder = tmp_path / "modules"
    folder.mkdir()
    (folder / "h11_user_agents.py").write_text(USER_AGENTS)
    (folder / "h11_user_envs.py").write_text(USER_ENVS)
    monkeypatch.syspath_prepend(str(folder))
    return folder


def _config(write_config, body: str, name: str = "c.yaml", check_agents: bool = True):
    return load_config(write_config(body, name), check_agents=check_agents)


def _regret(config, tmp_path, label: str) -> np.ndarray:
    results = runner.run_experiment(config, tmp_path / f"out_{config.name}", log=lambda line: None)
    return np.load(results.path / "cells" / f"{label}.npz")["regret"]


@pytest.mark.parametrize("value, message", [
    ("h11_no_such_module:MyUCB", "agent 'h11_no_such_module:MyUCB': cannot import the module 'h11_no_such_module' "
                                 "(ModuleNotFoundError"),
    ("h11_user_agents:Nope", "agent 'h11_user_agents:Nope': the module 'h11_user_agents' has no 'Nope'"),
    ("h11_user_agents:NotAnAgent", "agent 'h11_user_agents:NotAnAgent' is not a subclass of agents.BanditAgent"),
    ("h11_user_agents:", "agent 'h11_user_agents:': your own agent is written 'package.module:ClassName'"),
])
def test_a_bad_agent_path_is_one_line_naming_the_value(user_modules, write_config, value, message):
    body = f"""\
        env: LinearBandit-v0
        horizon: 5
        seeds: 1
        agents:
          Mine:
            agent: '{value}'
        """
    with pytest.raises(ConfigError) as error:
        _config(write_config, body)
    text = str(error.value)
    assert "\n" not in text
    assert text.startswith(f"{user_modules.parent / 'c.yaml'}:6: agents.Mine.agent: ")
    assert message in text


def test_your_own_agent_class_plays_with_the_numbers_of_the_library_class_it_copies(user_modules, write_config,
                                                                                    tmp_path):
    config = _config(write_config, """\
        env: LinearBandit-v0
        env_kwargs: {n_arms: 5, dim: 3}
        horizon: 30
        seeds: 2
        agents:
          Mine: {agent: 'h11_user_agents:MyUCB', grid: {exploration_scale: [0.1, 1.0]}}
          LinUCB: {grid: {exploration_scale: [0.1, 1.0]}}
        """)
    results = runner.run_experiment(config, tmp_path / "out", log=lambda line: None)
    mine = np.load(results.path / "cells" / "Mine.npz")["regret"]
    np.testing.assert_array_equal(mine, np.load(results.path / "cells" / "LinUCB.npz")["regret"])
    record = json.loads((results.path / "cells" / "Mine.json").read_text())
    assert record["agent"] == "h11_user_agents:MyUCB"
    assert "wrappers" not in record["cell_config"]  # none given: the records of older runs still match


def test_your_own_env_by_module_colon_id_or_by_imports_is_the_env_it_registers(user_modules, write_config, tmp_path):
    body = """\
        {head}
        horizon: 25
        seeds: 2
        agents:
          LinUCB: {{}}
        """
    by_colon = _config(write_config, body.format(head="env: 'h11_user_envs:H11Small-v0'"), "colon.yaml")
    by_imports = _config(write_config, body.format(head="imports: [h11_user_envs]\n        env: H11Other-v0"),
                         "imports.yaml")
    plain = _config(write_config, body.format(head="env: LinearBandit-v0\n        env_kwargs: {n_arms: 5, dim: 3}"),
                    "plain.yaml")
    expected = _regret(plain, tmp_path, "LinUCB")
    np.testing.assert_array_equal(_regret(by_colon, tmp_path, "LinUCB"), expected)
    np.testing.assert_array_equal(_regret(by_imports, tmp_path, "LinUCB"), expected)


def test_an_env_module_that_does_not_register_the_id_is_refused(user_modules, write_config):
    with pytest.raises(ConfigError, match=r"c.yaml:1: env: env 'h11_user_envs:H11Smal-v0': importing 'h11_user_envs' "
                                          r"did not register 'H11Smal-v0'; did you mean h11_user_envs:H11Small-v0\?"):
        _config(write_config, "env: 'h11_user_envs:H11Smal-v0'\nhorizon: 5\nseeds: 1\nagents: {LinUCB: {}}\n")
    with pytest.raises(ConfigError, match=r"c.yaml:1: imports.0: .*cannot import the module 'h11_nothing'"):
        _config(write_config, "imports: [h11_nothing]\nenv: LinearBandit-v0\nhorizon: 5\nseeds: 1\n"
                              "agents: {LinUCB: {}}\n")


@pytest.mark.parametrize("wrappers, message", [
    ("[{DelayedFeedbak: {delay: 3}}]", r"c.yaml:4: wrappers.0: unknown wrapper 'DelayedFeedbak'; "
                                       r"did you mean 'DelayedFeedback'\? \(accepted: .*DelayedFeedback"),
    ("[{DelayedFeedback: {delay: -1}}]", r"c.yaml:4: wrappers.0: DelayedFeedback\(delay=-1\) cannot wrap "
                                         r"LinearBandit-v0's batched env: .*delay"),
    ("[{DelayedFeedback: {dealy: 3}}]", r"c.yaml:4: wrappers.0: DelayedFeedback takes the keywords delay, "
                                        r"delay_seed, got \{'dealy': 3\}"),
    ("{DelayedFeedback: {delay: 3}}", r"c.yaml:4: wrappers: must be a list such as"),
    ("[OneStepEpisodes]", r"c.yaml:4: wrappers.0: unknown wrapper 'OneStepEpisodes' \(accepted: DelayedFeedback, "
                          r"BatchedFeedback, Drift\)"),  # a Gymnasium wrapper, not one of bandit_gym.feedback's
])
def test_a_bad_wrapper_is_one_line_on_its_line(write_config, wrappers, message):
    body = f"env: LinearBandit-v0\nhorizon: 5\nseeds: 1\nwrappers: {wrappers}\nagents: {{LinUCB: {{}}}}\n"
    with pytest.raises(ConfigError, match=message) as error:
        _config(write_config, body)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("name, kwargs, yaml", [
    ("DelayedFeedback", {"delay": 7}, "{delay: 7}"),
    ("BatchedFeedback", {"batch_size": 5}, "{batch_size: 5}"),
    ("Drift", {"kind": "abrupt", "every": 20}, "{kind: abrupt, every: 20}"),
])
def test_a_cell_in_a_wrapper_has_the_numbers_of_learn_on_the_wrapped_env(write_config, tmp_path, name, kwargs, yaml):
    """The runner plays predict/env.step itself: under a feedback wrapper it must learn from each round when
    its reward arrives, as ``learn`` does; the same seeds give the same regret, bit for bit."""
    horizon, seeds = 60, 3
    config = _config(write_config, f"""\
        env: LinearBandit-v0
        env_kwargs: {{n_arms: 5, dim: 3}}
        horizon: {horizon}
        seeds: {seeds}
        wrappers: [{{{name}: {yaml}}}]
        agents:
          LinUCB: {{}}
        """)
    results = runner.run_experiment(config, tmp_path / "out", log=lambda line: None)
    played = np.load(results.path / "cells" / "LinUCB.npz")["regret"]

    def vector_env():
        return gym.make_vec("LinearBandit-v0", num_envs=seeds, vectorization_mode="vector_entry_point", n_arms=5,
                            dim=3, horizon=horizon, max_episode_steps=horizon)

    agent = LinUCB(getattr(bandit_gym, name)(vector_env(), **kwargs), seed=list(range(seeds)), device="cpu").learn()
    np.testing.assert_array_equal(played, agent.history["regret"])
    plain = LinUCB(vector_env(), seed=list(range(seeds)), device="cpu").learn()
    assert not np.array_equal(played, plain.history["regret"])  # the wrapper changed what was played
    record = json.loads((results.path / "cells" / "LinUCB.json").read_text())
    assert record["cell_config"]["wrappers"] == [{name: kwargs}]
    assert json.loads((results.path / "experiment.json").read_text())["config"]["wrappers"] == [{name: kwargs}]


def test_a_config_without_wrappers_defines_the_results_as_before(write_config):
    config = _config(write_config, "env: LinearBandit-v0\nhorizon: 5\nseeds: 1\nagents: {LinUCB: {}}\n",
                     check_agents=False)
    assert "wrappers" not in config.to_dict()
