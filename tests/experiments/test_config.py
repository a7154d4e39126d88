"""Experiment configs: every shipped config checks; a bad one fails before any work, naming its line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from experiments.config import ConfigError, load_config

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
DATASET_ENVS = ("Shuttle-v0", "MagicTelescope-v0", "Mushroom-v0", "Covertype-v0", "CIFAR10-v0")

GOOD = """\
name: tiny
env: LinearBandit-v0
horizon: 50
seeds: 2
agents:
  LMCTS:
    fixed: {n_inner_steps: 10}
    grid:
      step_size: [0.1, 3e-1]
      inverse_temperature: [10, 100]
  LinUCB: {}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "experiment.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, text))
    return str(info.value)


def test_config_reads_names_grid_and_exponent_floats(tmp_path):
    config = load_config(_write(tmp_path, GOOD))
    assert (config.name, config.env, config.horizon, config.seeds, config.seed_list()) == (
        "tiny", "LinearBandit-v0", 50, 2, [0, 1])
    lmcts = config.agent("LMCTS")
    assert lmcts.grid == {"step_size": [0.1, 0.3], "inverse_temperature": [10, 100]}  # 3e-1 is a float, not a string
    assert lmcts.points() == [{"step_size": s, "inverse_temperature": b} for s in (0.1, 0.3) for b in (10, 100)]
    assert config.agent("LinUCB").points() == [{}]


def test_config_overrides_of_the_command_line(tmp_path):
    config = load_config(_write(tmp_path, GOOD), seeds=7, horizon=11)
    assert (config.seeds, config.horizon) == (7, 11)


@pytest.mark.parametrize(("text", "line", "expected"), [
    (GOOD.replace("LinearBandit-v0", "LinearBandit-v9"), 2,
     "unknown env 'LinearBandit-v9'; did you mean 'LinearBandit-v0'?"),
    (GOOD.replace("  LinUCB: {}", "  LinUBC: {}"), 11, "unknown agent 'LinUBC'; did you mean 'LinUCB'?"),
    (GOOD.replace("n_inner_steps: 10", "n_inner_step: 10"), 7, "unknown hyperparameter of LMCTS 'n_inner_step'"),
    (GOOD.replace("inverse_temperature: [10, 100]", "temperature: [10, 100]"), 10,
     "unknown hyperparameter of LMCTS 'temperature'"),
    (GOOD.replace("step_size: [0.1, 3e-1]", "step_size: [0.1, -3e-1]"), 9, "step_size"),
    (GOOD.replace("n_inner_steps: 10", "n_inner_steps: 0"), 7, "n_inner_steps"),
    (GOOD.replace("fixed: {n_inner_steps: 10}", "grid_: {n_inner_steps: 10}"), 7, "unknown agent setting 'grid_'"),
    (GOOD.replace("horizon: 50", "horizon: 0"), 3, "horizon: must be an integer >= 1, got 0"),
    (GOOD.replace("seeds: 2", "seeds: two"), 4, "seeds: must be an integer >= 1, got 'two'"),
    (GOOD.replace("horizon: 50", "horizn: 50"), 3, "unknown key 'horizn'; did you mean 'horizon'?"),
    (GOOD.replace("step_size: [0.1, 3e-1]", "step_size: []"), 9, "a grid gives a non-empty list of values"),
    (GOOD + "  LinUCB: {}\n", 12, "'LinUCB' is given twice (first on line 11)"),
    (GOOD.replace("seeds: 2", "seeds: 2: 3"), 4, "not valid YAML: mapping values are not allowed here"),
])
def test_bad_config_names_the_line_and_what_is_accepted(tmp_path, text, line, expected):
    message = _error(tmp_path, text)
    assert message.startswith(f"{tmp_path / 'experiment.yaml'}:{line}: "), message
    assert expected in message


def test_unknown_names_list_what_is_accepted(tmp_path):
    message = _error(tmp_path, GOOD.replace("n_inner_steps: 10", "n_inner_step: 10"))
    assert "accepted: model, step_size, inverse_temperature, n_inner_steps" in message
    message = _error(tmp_path, GOOD.replace("  LinUCB: {}", "  Nope: {}"))
    assert "accepted: " in message and "LinTS" in message and "BanditAgent" not in message


def test_grid_over_a_hyperparameter_without_per_replica_values_is_refused(tmp_path):
    message = _error(tmp_path, GOOD.replace("fixed: {n_inner_steps: 10}", "fixed: {}").replace(
        "inverse_temperature: [10, 100]", "n_inner_steps: [10, 20]"))
    assert ":10: agents.LMCTS.grid.n_inner_steps: " in message
    assert "one value per replica" in message and "agent: LMCTS" in message


def test_a_name_both_fixed_and_in_the_grid_is_refused(tmp_path):
    message = _error(tmp_path, GOOD.replace("n_inner_steps: 10", "step_size: 0.3"))
    assert ":9: agents.LMCTS.grid.step_size: 'step_size' is both fixed (line 7)" in message


def test_a_bad_config_fails_before_any_round_is_played(tmp_path, monkeypatch):
    from experiments import runner

    played = []
    monkeypatch.setattr(runner, "_play", lambda *args: played.append(args))
    with pytest.raises(ConfigError):
        load_config(_write(tmp_path, GOOD.replace("  LinUCB: {}", "  LinUCB: {fixed: {exploration_scale: -1}}")))
    assert played == []


def test_a_grid_point_that_diverges_at_once_is_left_to_the_runner(tmp_path):
    # LMC-TS runs round 1's chain when it is built: step size 50 diverges there (eta * 2 lambda > 2).
    config = load_config(_write(tmp_path, GOOD.replace("step_size: [0.1, 3e-1]", "step_size: [0.1, 50]")))
    assert config.agent("LMCTS").grid["step_size"] == [0.1, 50]


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory) -> Path:
    """Generated stand-ins of every dataset (40 rows each) in the loaders' cache layouts."""
    from experiments import standin

    root = tmp_path_factory.mktemp("standins")
    standin.main([*standin.SHAPES, "--out", str(root), "--rows", "40"])
    return root


# CIFAR10's agents hold a 3-million-parameter network per replica: building them takes half a minute.
@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stem == "fig3_cifar10" else p
                                  for p in CONFIGS], ids=[p.stem for p in CONFIGS])
def test_every_shipped_config_checks(path, stand_ins):
    structure = load_config(path, check_agents=False)  # names, keys and grids (no data needed)
    if path.stem.startswith("fig"):  # the paper's repeats: 10 runs, 5 on CIFAR10
        assert structure.seeds == (5 if structure.env == "CIFAR10-v0" else 10)
        assert structure.horizon == 10_000 or structure.env == "Mushroom-v0"  # Mushroom has 8,124 rows
    if structure.env in DATASET_ENVS:  # values too, on a stand-in of the data's shape (one seed: less memory)
        pytest.importorskip("pandas")
        load_config(path, seeds=1, horizon=20, env_kwargs={"cache_dir": str(stand_ins), "verify_checksums": False})
        return
    load_config(path)  # values too: builds every agent on its batched env
