"""Light commands: ``--version``, ``table``, ``plot`` and the argument and config errors found before a run
starts import neither torch nor the agents (each is run in a fresh interpreter, then ``sys.modules`` is read);
the command line's modules import one another in one direction only."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Runs each command line of argv[1] (JSON) in turn; prints, per command, its status and whether torch or a
#: module of ``agents`` had been imported by then.
PROBE = """\
import json, sys
from bandit_experiments.cli import main
for argv in json.loads(sys.argv[1]):
    try:
        status = main(argv)
    except SystemExit as stop:
        status = stop.code
    heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'agents'))[:3]
    print(json.dumps([status, heavy]), flush=True)
"""


def _probe(commands: list[list[str]], cwd: Path) -> tuple[list[list], str]:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(commands)], capture_output=True, text=True,
                         cwd=cwd, timeout=300)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("[")], out.stderr


def test_version_and_errors_before_the_run_import_neither_torch_nor_agents(tmp_path):
    (tmp_path / "bad_yaml.yaml").write_text("env: [LinearBandit-v0\n")
    (tmp_path / "unknown_key.yaml").write_text("env: LinearBandit-v0\nhorizon: 5\nseeds: 1\nagents: {}\nhorizn: 5\n")
    (tmp_path / "no_agents_key.yaml").write_text("env: LinearBandit-v0\nhorizon: 5\nseeds: 1\n")
    commands = [["--version"], ["tabel", "DIR"], ["run"], ["run", "missing.yaml"],
                ["run", "bad_yaml.yaml"], ["run", "unknown_key.yaml"], ["run", "no_agents_key.yaml"],
                ["run", "unknown_key.yaml", "--seeds", "0"], ["run", "unknown_key.yaml", "--backend", "rayy"],
                ["run", "unknown_key.yaml", "--env-kwargs", "[1, 2]"],
                ["run", "unknown_key.yaml", "--address", "host:1"]]
    results, stderr = _probe(commands, tmp_path)
    assert results == [[0, []]] + [[2, []]] * 2 + [[1, []]] * 4 + [[2, []]] * 4, stderr
    lines = stderr.splitlines()  # each refused for its own reason, on one line
    assert len(lines) == len(commands) - 1, stderr
    for line, expected in zip(lines, ["did you mean 'table'?", "required: CONFIG", "missing.yaml' does not exist",
                                      "bad_yaml.yaml:2: not valid YAML", "did you mean 'horizon'?",
                                      "the key 'agents' is missing", "argument --seeds", "did you mean 'ray'?",
                                      "--env-kwargs must be a YAML mapping", "--address: only with --backend ray"],
                              strict=True):
        assert expected in line, line


@pytest.fixture(scope="module")
def finished_results(tmp_path_factory) -> Path:
    """A results directory with one finished cell with a grid (written by this process, which has torch)."""
    from bandit_experiments.config import load_config
    from bandit_experiments.runner import run_experiment

    folder = tmp_path_factory.mktemp("light")
    config = folder / "light.yaml"
    config.write_text(textwrap.dedent("""\
        name: light
        env: LinearBandit-v0
        horizon: 20
        seeds: 2
        agents:
          LinUCB: {grid: {exploration_scale: [0.1, 1.0]}}
        """))
    return run_experiment(load_config(config), folder / "out", log=lambda line: None).path


def test_table_and_plot_import_neither_torch_nor_agents(finished_results):
    pytest.importorskip("matplotlib")
    results, stderr = _probe([["table", str(finished_results)], ["plot", str(finished_results)]], ROOT)
    assert results == [[0, []], [0, []]], stderr
    assert (finished_results / "summary.csv").is_file() and (finished_results / "regret.png").is_file()


def _imports_of(module: Path) -> set[str]:
    """The ``bandit_experiments`` modules that ``module`` imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(module.read_text(), filename=str(module))):
        if isinstance(node, ast.ImportFrom) and node.module == "bandit_experiments":
            found |= {f"bandit_experiments.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bandit_experiments."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("bandit_experiments.")}
    return found


def test_cli_modules_import_one_another_in_one_direction():
    imports = {name: _imports_of(ROOT / "bandit_experiments" / f"{name}.py")
               for name in ("cli", "commands", "arguments")}
    assert "bandit_experiments.commands" in imports["cli"] and "bandit_experiments.arguments" in imports["cli"]
    assert "bandit_experiments.cli" not in imports["commands"] | imports["arguments"]
    assert "bandit_experiments.commands" not in imports["arguments"]
