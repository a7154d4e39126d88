"""Experiment configs: every shipped config checks; a bad one fails before any work, naming its line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bandit_experiments.config import ConfigError, load_config

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


def test_a_cell_is_laid_out_by_the_agents_hyperparameter_grid(tmp_path):
    from agents import HyperparameterGrid
    from bandit_experiments.runner import build_agent, make_env

    config = load_config(_write(tmp_path, GOOD.replace("seeds: 2", "seeds: 2\nseed: 7")))
    spec = config.agent("LMCTS")
    layout = config.layout(spec)
    grid = HyperparameterGrid(spec.grid, n_seeds=2, seed=7)
    assert layout.points == grid.points == spec.points() and layout.agent_kwargs() == grid.agent_kwargs()
    env = make_env(config, layout.num_replicas, "cpu")
    agent = build_agent(spec, config, env, "cpu")
    assert agent.seeds == [7, 8] * 4 and agent.hyperparameters()["step_size"] == grid.agent_kwargs()["step_size"]
    one = config.layout(spec, [spec.points()[2]])  # a point played alone (after a batch diverged)
    assert one.agent_kwargs() == {"step_size": [0.3, 0.3], "inverse_temperature": [10, 10], "seed": [7, 8]}
    assert config.layout(config.agent("LinUCB")).agent_kwargs() == {"seed": [7, 8]}


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
    from bandit_experiments import runner

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
    from bandit_experiments import standin

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


# -- hostile YAML -----------------------------------------------------------------------------------
def _alias_bomb(levels: int, aliases: int) -> str:
    """A config whose description nests ``levels`` lists of ``aliases`` aliases: about ``aliases ** levels`` strings."""
    lines = ["description:", '  - &a0 "lol"']
    lines += [f"  - &a{i} [{', '.join([f'*a{i - 1}'] * aliases)}]" for i in range(1, levels + 1)]
    return GOOD + "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_once(tmp_path):
    """9 levels x 9 aliases would expand to 9^9 (387 million) strings: the CLI refuses it in one line.

    In a subprocess with a timeout, so that a regression fails instead of filling the memory."""
    import subprocess
    import sys

    path = _write(tmp_path, _alias_bomb(9, 9))
    out = subprocess.run([sys.executable, "-m", "bandit_experiments", "run", str(path), "--out", str(tmp_path / "o")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    (line,) = out.stderr.splitlines()
    assert line.startswith(f"bandit-gym run: error: {path}:13: description: the document expands to more than ")
    assert not (tmp_path / "o").exists()


def test_aliases_that_stay_small_are_read(tmp_path):
    text = GOOD.replace("  LinUCB: {}", "  LinUCB: {grid: {exploration_scale: &scales [0.1, 1.0]}}\n"
                        "  EpsGreedy: {grid: {exploration_scale: *scales}}")
    config = load_config(_write(tmp_path, text), check_agents=False)
    assert config.agent("EpsGreedy").grid == config.agent("LinUCB").grid == {"exploration_scale": [0.1, 1.0]}
    bushy = load_config(_write(tmp_path, _alias_bomb(4, 9)), check_agents=False)  # 7,381 strings: read
    assert bushy.description.count("lol") == sum(9**k for k in range(5))


@pytest.mark.parametrize(("old", "new", "line", "tag"), [
    ("  LMCTS:\n", "  LMCTS: !!python/object/apply:os.system\n", 6, "!!python/object/apply:os.system"),
    ("      step_size: [0.1, 3e-1]", "      step_size: !!python/tuple [0.1, 3e-1]", 9, "!!python/tuple"),
    ("  LinUCB: {}", "  LinUCB: !custom {}", 11, "!custom"),
    ("  LinUCB: {}", "  LinUCB: !!set {fixed}", 11, "!!set"),
    ("horizon: 50", "horizon: !!python/int 50", 3, "!!python/int"),
    ("name: tiny", "name: !!binary dGlueQ==", 1, "!!binary"),
])
def test_an_unknown_yaml_tag_is_refused_naming_the_tag_and_line(tmp_path, old, new, line, tag):
    message = _error(tmp_path, GOOD.replace(old, new))
    assert message.startswith(f"{tmp_path / 'experiment.yaml'}:{line}: "), message
    assert f"the YAML tag {tag!r} is not accepted" in message


def test_deeply_nested_yaml_is_one_error(tmp_path):
    assert "nested too deeply" in _error(tmp_path, GOOD + "description: " + "[" * 5000 + "]" * 5000 + "\n")


# -- blame on the right source ---------------------------------------------------------------------
def test_a_bad_env_keyword_of_the_command_line_is_blamed_on_the_command_line(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, GOOD), env_kwargs={"noise_stdd": 0.5})
    message = str(info.value)
    assert message.startswith("argument --env-kwargs: LinearBandit-v0 cannot be made: "), message
    assert "'noise_stdd' (did you mean 'noise_std'?)" in message
    with pytest.raises(ConfigError, match=r"^argument --env-kwargs: 'num_envs' is set by the runner"):
        load_config(_write(tmp_path, GOOD), env_kwargs={"num_envs": 3})


def test_a_bad_env_keyword_of_the_file_is_blamed_on_its_line(tmp_path):
    text = GOOD.replace("horizon: 50", "env_kwargs:\n  noise_std: 0.5\n  n_arm: 3\nhorizon: 50")
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, text), env_kwargs={"noise_std": 0.1})  # a good one on the command line
    assert str(info.value).startswith(f"{tmp_path / 'experiment.yaml'}:5: env_kwargs.n_arm: ")


def test_a_bad_grid_value_names_the_value_not_the_grid_rule(tmp_path):
    message = _error(tmp_path, GOOD.replace("step_size: [0.1, 3e-1]", "step_size: [0.1, -3e-1]"))
    assert message.startswith(f"{tmp_path / 'experiment.yaml'}:9: agents.LMCTS.grid.step_size: step_size must be "
                              "a finite number > 0, got -0.3"), message
    assert "one value per replica" not in message


@pytest.mark.parametrize(("given", "suggested"), [
    ("configs/quickstart.yml", "configs/quickstart.yaml"),   # the wrong extension
    ("quickstart.yaml", "configs/quickstart.yaml"),          # the folder left out
    ("configs/quickstar.yaml", "configs/quickstart.yaml"),   # a typo
    ("configs/fig1a.yaml", "configs/fig1a_linear_fixed.yaml"),  # the figure's name only
])
def test_a_missing_config_suggests_the_closest_existing_one(monkeypatch, given, suggested):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    with pytest.raises(FileNotFoundError) as info:
        load_config(given)
    assert str(info.value) == (f"config {given!r} does not exist; did you mean {suggested!r}? "
                               "(the configs/ folder has one per experiment)")


def test_a_missing_config_with_nothing_close_suggests_nothing(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        load_config(tmp_path / "nothing.yaml")
    assert "did you mean" not in str(info.value)


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("n_inner_steps: 10", "model: linaer", "model must be one of ['glm', 'linear', 'mlp'], got 'linaer'; "
                                           "did you mean 'linear'?"),
    ("n_inner_steps: 10", "step_schedule: constnat", "got 'constnat'; did you mean 'constant'?"),
    ("n_inner_steps: 10", "beta: 10", "unknown hyperparameter of LMCTS 'beta'; did you mean 'inverse_temperature' "
                                      "(the papers' beta)?"),
    ("n_inner_steps: 10", "K: 10", "did you mean 'n_inner_steps' (the papers' K)?"),
])
def test_an_agent_keyword_typo_gets_the_closest_name(tmp_path, old, new, expected):
    message = _error(tmp_path, GOOD.replace(old, new))
    assert message.startswith(f"{tmp_path / 'experiment.yaml'}:7: agents.LMCTS.fixed."), message
    assert expected in message
