"""The runner: a cell is ONE batch of grid points x seeds; the best point is chosen; divergence is contained."""

from __future__ import annotations

import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import agents
from bandit_experiments import runner
from bandit_experiments.config import load_config

CONFIG = """\
name: runner-test
env: LinearBandit-v0
horizon: 40
seeds: 3
seed: 5
agents:
  LMCTS:
    fixed: {n_inner_steps: 10}
    grid: {step_size: [0.1, 0.5], inverse_temperature: [10, 1000]}
  LinUCB:
    grid: {exploration_scale: [0.01, 1.0]}
"""


def _config(tmp_path: Path, text: str = CONFIG):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(text))
    return load_config(path)


def test_a_cell_runs_grid_times_seeds_as_one_batch_equal_to_each_point_alone(tmp_path, monkeypatch):
    config = _config(tmp_path)
    made = []
    make_env = runner.make_env
    monkeypatch.setattr(runner, "make_env", lambda c, r, d: made.append(r) or make_env(c, r, d))
    result = runner.run_cell(config, "LMCTS")
    assert made == [4 * 3]  # one env (and one agent) for 4 grid points x 3 seeds
    assert result.regret.shape == (40, 12)
    for p, point in enumerate(result.record["grid_points"]):
        env = gym.make_vec("LinearBandit-v0", num_envs=3, vectorization_mode="vector_entry_point", horizon=40)
        alone = agents.LMCTS(env, seed=5, device="cpu", n_inner_steps=10, **point).learn(env)
        # Same seeds, same draws; a batch may differ from a single run in the last bits (the core's contract),
        # and 40 rounds are too few for such a difference to flip a choice.
        np.testing.assert_allclose(result.regret[:, 3 * p:3 * p + 3], alone.history["regret"], rtol=1e-5, atol=1e-6)
    assert result.record["seeds"] == [5, 6, 7]
    assert result.record["hyperparameters"][3]["step_size"] == 0.5
    assert result.record["hyperparameters"][3]["inverse_temperature"] == 1000
    assert result.record["hyperparameters"][0]["n_inner_steps"] == 10


def test_the_chosen_point_has_the_lowest_mean_final_regret(tmp_path):
    result = runner.run_cell(_config(tmp_path), "LinUCB")
    final = result.regret.sum(axis=0).reshape(2, 3)  # (points, seeds)
    assert result.record["chosen"] == int(np.argmin(final.mean(axis=1)))
    for p in range(2):
        assert result.record["final_regret"][p]["mean"] == pytest.approx(final[p].mean())
        assert result.record["final_regret"][p]["se"] == pytest.approx(final[p].std(ddof=1) / np.sqrt(3))
    # the two scales play differently: the choice is not a tie
    assert final[0].mean() != final[1].mean()


def test_a_diverging_grid_point_is_recorded_and_the_others_kept(tmp_path):
    config = _config(tmp_path, CONFIG.replace("step_size: [0.1, 0.5]", "step_size: [0.1, 50]"))
    result = runner.run_cell(config, "LMCTS")
    assert result.record["diverged"] == [False, False, True, True]
    assert np.isnan(result.regret[:, 6:]).all() and np.isfinite(result.regret[:, :6]).all()
    assert result.record["chosen"] in (0, 1)
    assert result.record["final_regret"][2] == {"mean": None, "se": None}
    alone = runner.run_cell(_config(tmp_path, CONFIG.replace("step_size: [0.1, 0.5]", "step_size: [0.1]")), "LMCTS")
    np.testing.assert_allclose(result.regret[:, :6], alone.regret, rtol=1e-5, atol=1e-6)


def test_jobs_in_processes_give_the_numbers_of_the_sequential_run(tmp_path):
    config = _config(tmp_path)
    sequential = runner.run_experiment(config, tmp_path / "seq", log=lambda line: None).read_cells()
    parallel = runner.run_experiment(config, tmp_path / "par", jobs=2, log=lambda line: None).read_cells()
    assert [c.label for c in parallel] == [c.label for c in sequential] == ["LMCTS", "LinUCB"]
    for a, b in zip(sequential, parallel, strict=True):
        np.testing.assert_array_equal(a.regret, b.regret)  # same seeds, batch and device: the same numbers
        assert a.record["chosen"] == b.record["chosen"]


def test_an_agent_whose_every_point_diverges_is_reported_as_diverged(tmp_path):
    from bandit_experiments import plots, summary

    config = _config(tmp_path, CONFIG.replace("step_size: [0.1, 0.5]", "step_size: [50]"))
    results = runner.run_experiment(config, tmp_path / "out", log=lambda line: None)
    text, _, md_path = summary.write_summary(results.path)
    lmcts, linucb = summary.rows(results.read_cells())
    assert (lmcts.mean, lmcts.diverged_points, lmcts.grid_points) == (None, 2, 2)
    assert "diverged" in text.splitlines()[2] and "| LMCTS | diverged | - | 2 (2 diverged) |" in md_path.read_text()
    assert linucb.mean is not None
    assert text.splitlines()[-1] == summary.EXPLANATION and "lower is better" in summary.EXPLANATION
    plots.plot_experiment(results.path)  # draws the agents that have a curve
    assert (results.path / "regret.png").is_file() and not (results.path / "grid_LMCTS.png").exists()
