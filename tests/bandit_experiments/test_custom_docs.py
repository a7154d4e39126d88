"""docs/custom.md's example, as a reader runs it: its agent module and its config saved as the page says,
then its ``bandit-gym run`` line, in a fresh folder."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

PAGE = Path(__file__).resolve().parents[2] / "docs" / "custom.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", PAGE.read_text(), re.S | re.M)


def test_the_pages_agent_runs_through_bandit_gym_run_with_its_config(tmp_path):
    (tmp_path / "my_agents.py").write_text(_blocks("python")[0])
    (tmp_path / "custom.yaml").write_text(_blocks("yaml")[0])
    [command] = [line for line in _blocks("bash")[0].splitlines() if "bandit-gym run" in line]
    words = shlex.split(command)  # PYTHONPATH=. bandit-gym run custom.yaml --out results/custom
    settings = dict(word.split("=", 1) for word in words if "=" in word and not word.startswith("-"))
    argv = words[words.index("bandit-gym") + 1:]
    env = {**os.environ, **settings, "BANDIT_GYM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "bandit_experiments", *argv], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    results = tmp_path / "results" / "custom"
    cell = json.loads((results / "cells" / "RidgeGreedy.json").read_text())
    assert cell["agent"] == "my_agents:RidgeGreedy"
    assert cell["grid_points"] == [{"lambda_reg": 0.1}, {"lambda_reg": 1.0}]
    assert cell["cell_config"]["wrappers"] == [{"DelayedFeedback": {"delay": 10}}]
    assert json.loads((results / "experiment.json").read_text())["config"]["wrappers"] == [
        {"DelayedFeedback": {"delay": 10}}]
    regret = np.load(results / "cells" / "RidgeGreedy.npz")
    assert "RidgeGreedy" in out.stdout and "LinUCB" in out.stdout
    assert all(np.isfinite(regret[key]).all() for key in regret.files)
