"""The default experiment behind README's first command."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bandit_gym import cli, demo


def test_demo_prints_regret_of_each_agent(capsys):
    assert cli.main(["demo", "--rounds", "60", "--seeds", "3", "--agents", "UniformRandom"]) == 0
    out = capsys.readouterr().out
    assert "LinearBandit-v0: 3 seeds x 60 rounds" in out
    mean = float(re.search(r"UniformRandom\s+([\d.]+) \+-", out).group(1))
    rows = demo.run("LinearBandit-v0", ["UniformRandom"], rounds=60, seeds=3)
    assert mean == pytest.approx(rows[0]["regret_mean"], abs=0.05)  # printed = computed, same seeds


def test_demo_regret_matches_the_history_it_summarises():
    (row,) = demo.run("LinearBandit-v0", ["UniformRandom"], rounds=40, seeds=4, seed=3)
    import gymnasium as gym

    from agents import UniformRandom

    venv = gym.make_vec("LinearBandit-v0", num_envs=4, vectorization_mode="vector_entry_point", horizon=40)
    final = UniformRandom(venv, seed=3, device="cpu").learn(venv).history["regret"].sum(axis=0)
    assert row["regret_mean"] == pytest.approx(float(final.mean()), rel=1e-6)
    assert row["regret_sem"] == pytest.approx(float(final.std(ddof=1) / 2), rel=1e-6)
    assert np.all(final > 0)


def test_demo_unknown_agent_is_a_clear_error():
    with pytest.raises(ValueError, match="agent 'Nope' is not in the agents package"):
        demo.run("LinearBandit-v0", ["Nope"], rounds=5, seeds=1)
