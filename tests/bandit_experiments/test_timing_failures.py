"""The runner's own round loop (the numbers of ``learn``, arm selection timed apart from updates), failed cells
that do not stop the others, diverged points named with their error, ``--env-kwargs`` and the data stand-ins."""

from __future__ import annotations

import csv

import gymnasium as gym
import numpy as np
import pytest

import agents
from bandit_experiments import cli, runner, standin, summary
from bandit_experiments.config import ConfigError, load_config, parse_env_kwargs
from bandit_experiments.results import ResultsDir

CONFIG = """\
name: timing-test
env: LinearBandit-v0
horizon: 30
seeds: 2
agents:
  LMCTS:
    fixed: {n_inner_steps: 10}
    grid: {step_size: [0.1, 50]}
  LinUCB: {grid: {exploration_scale: [0.1, 1.0]}}
  EpsGreedy: {}
"""


@pytest.fixture
def config_file(write_config):
    return write_config(CONFIG, "timing.yaml")


@pytest.mark.parametrize("make", [
    lambda env: agents.LMCTS(env, seed=[3, 4, 3, 4], device="cpu", n_inner_steps=10, step_size=[0.1, 0.1, 0.3, 0.3]),
    lambda env: agents.LinUCB(env, seed=[3, 4, 3, 4], device="cpu"),
    lambda env: agents.NeuralTS(env, seed=[3, 4, 3, 4], device="cpu", model_kwargs={"hidden": [8]}, n_inner_steps=2,
                                batch_size=4),
], ids=["LMCTS", "LinUCB", "NeuralTS"])
def test_the_runners_round_loop_gives_the_numbers_of_learn(make):
    def env():
        return gym.make_vec("LinearBandit-v0", num_envs=4, vectorization_mode="vector_entry_point", horizon=25)

    learned = make(env()).learn(env())
    played = runner.play_rounds(make(env()), env(), 25)
    # predict + step + update is what learn does, op for op: the same numbers, not merely close ones
    np.testing.assert_array_equal(played.regret, learned.history["regret"])
    assert played.select_s > 0 and played.update_s > 0


def test_a_cell_records_arm_selection_and_update_time_within_its_wall_time(config_file, tmp_path):
    result = runner.run_cell(load_config(config_file), "LinUCB")
    record = result.record
    assert 0 < record["select_time_s"] and 0 < record["update_time_s"]
    assert record["select_time_s"] + record["update_time_s"] < record["wall_time_s"]


def test_table_shows_the_arm_selection_time_column(capsys, config_file, tmp_path):
    out = tmp_path / "out"
    cli.main(["run", str(config_file), "--out", str(out), "--quiet"])
    printed = capsys.readouterr().out
    cells = {cell.label: cell.record for cell in ResultsDir(out).read_cells()}
    select = summary.seconds_text(cells["LinUCB"]["select_time_s"])
    assert f"{select} s" in printed.split("LinUCB", 2)[2].splitlines()[0]
    with open(out / "summary.csv") as f:
        rows = {row["agent"]: row for row in csv.DictReader(f)}
    assert float(rows["EpsGreedy"]["select_time_s"]) == pytest.approx(cells["EpsGreedy"]["select_time_s"], abs=1e-3)
    assert float(rows["EpsGreedy"]["update_time_s"]) == pytest.approx(cells["EpsGreedy"]["update_time_s"], abs=1e-3)
    markdown = (out / "summary.md").read_text()
    assert "| arm selection (s) | updates (s) |" in markdown
    assert f"| {select} | {summary.seconds_text(cells['LinUCB']['update_time_s'])} |" in markdown
    assert [summary.seconds_text(t) for t in (0.0312, 0.5, 12.34, None)] == ["0.031", "0.5", "12.3", "-"]


def test_a_diverged_point_is_named_with_its_error_under_the_table(capsys, config_file, tmp_path):
    out = tmp_path / "out"
    assert cli.main(["run", str(config_file), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    lmcts = next(cell for cell in ResultsDir(out).read_cells() if cell.label == "LMCTS").record
    assert lmcts["diverged"] == [False, True] and lmcts["errors"][0] is None
    assert "step size" in lmcts["errors"][1] and "NaN or Inf" in lmcts["errors"][1]  # the agent's own message
    assert f"LMCTS: step_size=50 diverged: {lmcts['errors'][1]}" in printed
    assert f"- LMCTS: step_size=50 diverged: {lmcts['errors'][1]}" in (out / "summary.md").read_text()


def test_a_failed_cell_is_recorded_shown_and_run_again_while_the_others_finish(capsys, config_file, tmp_path,
                                                                               monkeypatch):
    play = runner.play_rounds

    def broken_linucb(agent, *args, **kwargs):
        if isinstance(agent, agents.LinUCB):
            raise RuntimeError("out of memory (simulated)")
        return play(agent, *args, **kwargs)

    monkeypatch.setattr(runner, "play_rounds", broken_linucb)
    out = tmp_path / "out"
    assert cli.main(["run", str(config_file), "--out", str(out), "--quiet"]) == 1  # a failed cell: exit status 1
    printed = capsys.readouterr().out
    assert "LinUCB: FAILED after" in printed and "RuntimeError: out of memory (simulated)" in printed
    results = ResultsDir(out)
    assert [cell.label for cell in results.read_cells()] == ["LMCTS", "EpsGreedy"]  # the others finished
    (failure,) = results.read_failures()
    assert failure["failed"] == "RuntimeError: out of memory (simulated)" and "broken_linucb" in failure["traceback"]
    text, csv_path, md_path = summary.write_summary(out)
    assert any(line.startswith("LinUCB") and "FAILED" in line for line in text.splitlines())
    assert "| LinUCB | FAILED |" in md_path.read_text()
    with open(csv_path) as f:
        assert next(r for r in csv.DictReader(f) if r["agent"] == "LinUCB")["failed"] == failure["failed"]

    monkeypatch.setattr(runner, "play_rounds", play)  # fixed: the same command plays the failed cell only
    assert cli.main(["run", str(config_file), "--out", str(out), "--quiet"]) == 0
    assert "2 of 3 cells already finished" in capsys.readouterr().out
    assert results.read_failures() == [] and len(results.read_cells()) == 3


def test_env_kwargs_on_the_command_line_are_merged_over_the_configs(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG.replace("horizon: 30", "horizon: 30\nenv_kwargs: {noise_std: 0.1, n_arms: 5}"))
    config = load_config(path, env_kwargs=parse_env_kwargs("{n_arms: 7}"))
    assert config.env_kwargs == {"noise_std": 0.1, "n_arms": 7}
    with pytest.raises(ConfigError, match="--env-kwargs must be a YAML mapping"):
        parse_env_kwargs("[1, 2]")
    with pytest.raises(ConfigError, match="'horizon' is set by the runner"):
        load_config(path, env_kwargs={"horizon": 3})


def test_a_bad_env_kwargs_is_one_line(capsys, config_file):
    try:
        code = cli.main(["run", str(config_file), "--env-kwargs", "{a: [}"])
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "argument --env-kwargs: --env-kwargs:1: not valid YAML" in line


def test_a_config_runs_on_a_generated_stand_in_through_env_kwargs(capsys, tmp_path):
    pytest.importorskip("pandas")
    cache = tmp_path / "standin"
    assert standin.main(["covertype", "--out", str(cache), "--rows", "60"]) == 0
    assert "a stand-in, not the data" in capsys.readouterr().out
    path = tmp_path / "cov.yaml"
    path.write_text("env: Covertype-v0\nhorizon: 20\nseeds: 2\nagents:\n  LinUCB: {}\n")
    out = tmp_path / "out"
    argv = ["run", str(path), "--out", str(out), "--quiet", "--env-kwargs", f"{{cache_dir: {cache}, "
            "verify_checksums: false}"]
    assert cli.main(argv) == 0
    (cell,) = ResultsDir(out).read_cells()
    assert cell.regret.shape == (20, 2)
    assert cell.record["cell_config"]["env_kwargs"] == {"cache_dir": str(cache), "verify_checksums": False}
    env = gym.make("Covertype-v0", cache_dir=cache, verify_checksums=False)
    assert env.observation_space.shape == (7, 7 * 54)  # the real dataset's arms and features


def test_stand_in_classes_are_separated_by_the_stated_distance():
    # Means m_j ~ N(0, s^2 I), s = 3 / sqrt(2 d): E||m_0 - m_1||^2 = 9 (relative s.d. sqrt(2 / d) = 0.026 at
    # d = 3072). The class averages of the rows add noise of variance 1/n_0 + 1/n_1 per coordinate, so
    # E||mean_0 - mean_1||^2 = 9 + d (1/n_0 + 1/n_1); 10% covers four standard deviations of both parts.
    d = 3072
    x, labels = standin.class_mixture(4000, d, 2, seed=1)
    counts = [int((labels == c).sum()) for c in (0, 1)]
    means = np.stack([x[labels == c].mean(axis=0) for c in (0, 1)])  # (2, d)
    expected = standin.CLASS_DISTANCE**2 + d * (1 / counts[0] + 1 / counts[1])
    assert np.sum((means[0] - means[1]) ** 2) == pytest.approx(expected, rel=0.1)
    assert abs(counts[0] / 4000 - 0.5) < 0.04  # uniform classes: 5 standard deviations of 0.008
