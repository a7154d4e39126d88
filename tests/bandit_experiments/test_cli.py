"""The ``bandit-gym`` command line: its verbs, and one clear line for every bad value."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib.metadata import version

import gymnasium as gym
import pytest

import bandit_gym
from bandit_experiments import cli, demo


def _fails(capsys, argv: list[str], status: int = 2) -> str:
    """Run a command that must fail; return its one-line error message (no traceback, no usage block)."""
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == status
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def test_demo_prints_a_row_per_agent_with_the_numbers_play_computes(capsys):
    assert cli.main(["demo", "--rounds", "60", "--seeds", "3", "--agents", "UniformRandom", "LinUCB"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "LinearBandit-v0: 3 seeds x 60 rounds per agent, each agent's runs as one batch"
    assert out[1] == demo.explanation(60, 3, ["UniformRandom", "LinUCB"])
    assert len(out) == 4
    for line, name in zip(out[2:], ["UniformRandom", "LinUCB"], strict=True):
        printed_mean, printed_error = (float(x) for x in re.fullmatch(
            rf"\s+{name}\s+([\d.]+) \+-\s+([\d.]+)\s+[\d.]+ s", line).groups())
        result = demo.play("LinearBandit-v0", name, rounds=60, seeds=3)  # same seeds: the same numbers
        assert printed_mean == pytest.approx(result.mean, abs=0.051)  # printed with one decimal
        assert printed_error == pytest.approx(result.standard_error, abs=0.051)


def test_demo_with_one_seed_prints_no_standard_error(capsys):
    assert cli.main(["demo", "--rounds", "20", "--seeds", "1", "--agents", "UniformRandom"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out and "+-" not in out and "one seed" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--seeds", "0"], "bandit-gym demo: error: argument --seeds: must be an integer >= 1, got 0"),
        (["demo", "--rounds", "ten"], "bandit-gym demo: error: argument --rounds: must be an integer >= 1, got 'ten'"),
        (["demo", "--agents", "LinUBC"], "bandit-gym demo: error: argument --agents: unknown agent 'LinUBC'; "
                                         "did you mean 'LinUCB'?"),
        (["demo", "--env", "LinearBandit-v1"], "bandit-gym demo: error: argument --env: unknown env "
                                               "'LinearBandit-v1'; did you mean 'LinearBandit-v0'?"),
        (["demo", "--env", "Hopper-v4"], "bandit-gym demo: error: argument --env: unknown env 'Hopper-v4' (accepted: "),
        (["download", "iris"], "bandit-gym download: error: argument NAME: invalid choice: 'iris'"),
        (["nope"], "bandit-gym: error: argument COMMAND: invalid choice: 'nope' (choose from 'demo', "),
        (["runn"], "bandit-gym: error: argument COMMAND: invalid choice: 'runn'; did you mean 'run'? (choose from "),
        (["Agents"], "bandit-gym: error: argument COMMAND: invalid choice: 'Agents'; did you mean 'agents'?"),
        (["download", "shutle"], "bandit-gym download: error: argument NAME: invalid choice: 'shutle'; did you mean "
                                 "'shuttle'?"),
        (["run", "x.yaml", "--backend", "rey"], "bandit-gym run: error: argument --backend: invalid choice: 'rey'; "
                                                "did you mean 'ray'? (choose from 'local', 'ray')"),
    ],
)
def test_bad_values_get_one_clear_line(capsys, argv, message):
    line = _fails(capsys, argv)
    assert line.startswith(message), line
    assert "Hopper" not in line or argv[-1] == "Hopper-v4"  # bandit-gym's ids only, never Gymnasium's others


def test_unknown_env_lists_only_bandit_gym_ids(capsys):
    line = _fails(capsys, ["demo", "--env", "Hopper-v4"])
    accepted = re.search(r"\(accepted: ([^)]*)\)", line).group(1).split(", ")
    assert accepted == list(bandit_gym.ENV_IDS)


def test_agents_lists_agents_with_hyperparameter_defaults_and_nothing_else(capsys):
    import agents

    assert cli.main(["agents"]) == 0
    out = capsys.readouterr().out
    names = re.findall(r"^(\w+):", out, flags=re.MULTILINE)
    assert "LMCTS" in names and "UniformRandom" in names
    assert not {"BanditAgent", "DivergenceError", "LangevinOptimizer"} & set(names)
    assert all(issubclass(getattr(agents, name), agents.BanditAgent) for name in names)
    lmcts_block = out.split("LMCTS:")[1].split("\n")[1]
    assert "n_inner_steps=100" in lmcts_block and "seed=" not in lmcts_block and "device=" not in lmcts_block


def test_envs_lists_every_registered_id_with_the_shapes_gym_make_gives(capsys):
    assert cli.main(["envs"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line for line in lines[:-1]}
    assert list(rows) == list(bandit_gym.ENV_IDS)
    env = gym.make("LinearBanditFixed-v0")
    n_arms, dim = env.observation_space.shape
    assert rows["LinearBanditFixed-v0"].split()[1:] == [str(n_arms), str(dim), str(env.unwrapped.horizon)]
    assert "bandit-gym download shuttle" in rows["Shuttle-v0"]
    assert rows["Shuttle-v0"].endswith("horizon: rows, at most 10000")  # its rows in order
    showdown = gym.registry["MushroomShowdown-v0"].kwargs["horizon"]  # rows drawn with replacement: a fixed horizon
    assert rows["MushroomShowdown-v0"].endswith(f"horizon: {showdown}")
    arms_end = header.index("arms") + len("arms")  # the arms column ends under its heading on every shaped row
    assert all(line[:arms_end].split()[-1].isdigit() and line[arms_end] == " " for env_id, line in rows.items()
               if line.split()[1].isdigit())


def test_version_is_the_installed_distribution(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"bandit-gym {version('contextual-bandit-gym')}\n"


def test_no_command_prints_the_verbs_and_fails(capsys):
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert all(verb in err for verb in ("demo", "run", "table", "plot", "envs", "agents", "download"))


def test_python_dash_m_experiments_is_the_command():
    out = subprocess.run([sys.executable, "-m", "bandit_experiments", "demo", "--seeds", "0"], capture_output=True,
                         text=True)
    assert out.returncode == 2
    assert out.stderr.startswith("bandit-gym demo: error: argument --seeds")


def test_every_listed_hyperparameter_is_accepted_by_its_agent():
    from bandit_experiments import catalog

    for cls in catalog.agent_classes().values():
        listed = catalog.agent_hyperparameters(cls)
        kwargs = {key: value for key, value in listed.items() if value is not None}  # the listed defaults, given
        if "horizon" in listed:
            kwargs["horizon"] = 10
        cls(n_arms=3, dim=2, num_replicas=1, seed=0, device="cpu", **kwargs)  # a TypeError names a wrong listing


def test_agents_lists_the_defaults_an_agent_resolves_from_its_class():
    from agents.neural import NeuralTS, NeuralUCB
    from bandit_experiments import catalog

    for cls in (NeuralTS, NeuralUCB):
        listed = catalog.agent_hyperparameters(cls)
        agent = cls(n_arms=3, dim=2, num_replicas=1, seed=0, device="cpu")
        assert listed["step_size"] == agent.hyperparameters()["step_size"] is not None
        assert listed["exploration_scale"] == agent.hyperparameters()["exploration_scale"] is not None


def _agent_blocks(out: str) -> dict[str, tuple[str, str]]:
    """``bandit-gym agents``'s output: name -> (summary, hyperparameter line)."""
    lines = out.splitlines()
    return {line.split(": ", 1)[0]: (line.split(": ", 1)[1], lines[i + 1].strip())
            for i, line in enumerate(lines) if re.match(r"^\w+: ", line)}


def test_agents_shows_the_defaults_lmcts_resolves_for_each_model(capsys):
    from agents import LMCTS

    assert cli.main(["agents"]) == 0
    shown = _agent_blocks(capsys.readouterr().out)["LMCTS"][1]
    built = {model: LMCTS(n_arms=3, dim=2, num_replicas=1, seed=0, device="cpu", model=model).hyperparameters()
             for model in ("linear", "glm", "mlp")}
    for name in ("step_size", "inverse_temperature", "lambda_reg"):
        match = re.search(rf"\b{name}=(\S+)( \(([^)]*)\))?", shown)
        assert float(match.group(1)) == built["linear"][name], shown  # the default model's, not None
        others = dict(part.split() for part in match.group(3).split(", ")) if match.group(3) else {}
        assert {model: ast.literal_eval(value) for model, value in others.items()} == {
            model: built[model][name] for model in ("glm", "mlp") if built[model][name] != built["linear"][name]}
    assert "step_size=None" not in shown and "inverse_temperature=None" not in shown


def test_agents_keeps_none_for_a_default_scaled_by_the_problem():
    from agents import SGDTS
    from bandit_experiments import catalog

    assert SGDTS(n_arms=2, dim=3, seed=0, device="cpu").hyperparameters()["n_explore_rounds"] == 3  # tau = d
    assert catalog.resolved_defaults(SGDTS)["n_explore_rounds"] is None


def test_agents_describes_each_agent_in_whole_sentences(capsys):
    import inspect

    assert cli.main(["agents"]) == 0
    blocks = _agent_blocks(capsys.readouterr().out)
    for name, (summary, _) in blocks.items():
        first_paragraph = inspect.getdoc(getattr(__import__("agents"), name)).split("\n\n")[0]
        assert summary == " ".join(first_paragraph.split()), name
        assert summary.endswith("."), (name, summary)
    assert blocks["NeuralLinUCB"][0].endswith("alpha sigma_t sqrt(phi(x)^T A^-1 phi(x))``.")


def test_demo_on_a_dataset_env_without_its_data_says_how_to_get_it(capsys, tmp_path, monkeypatch):
    pytest.importorskip("pandas")  # with the datasets extra; without it the missing extra is named (test_layers.py)
    monkeypatch.setenv("OPENML_CACHE_DIR", str(tmp_path / "empty"))
    assert cli.main(["demo", "--env", "Mushroom-v0", "--rounds", "5", "--seeds", "1"]) == 1
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("bandit-gym demo: error: ") and "bandit-gym download mushroom" in line
