"""The Ray backend: a small sweep on a local Ray with 2 CPUs gives the local backend's results."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from experiments.config import load_config
from experiments.results import ResultsDir
from experiments.runner import run_experiment

ray = pytest.importorskip("ray", reason='the Ray backend needs the ray extra: pip install "bandit-gym[ray]"')

CONFIG = """\
name: ray-test
env: LinearBandit-v0
horizon: 60
seeds: 2
agents:
  LMCTS: {fixed: {n_inner_steps: 5}, grid: {step_size: [0.1, 0.3]}}
  LinUCB: {grid: {exploration_scale: [0.1, 1.0]}}
  EpsGreedy: {}
"""


@pytest.mark.slow  # about a minute here: starting Ray and its workers
def test_ray_backend_results_equal_the_local_backend(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(CONFIG))
    config = load_config(path)
    local = run_experiment(config, tmp_path / "local", log=lambda line: None)
    from experiments import ray_backend

    started = []
    original = ray_backend.run_cells_on_ray
    monkeypatch.setattr(ray_backend, "run_cells_on_ray", lambda *args, **kwargs: started.append(1) or original(
        *args, **{**kwargs, "num_cpus": 2}))
    on_ray = run_experiment(config, tmp_path / "ray", backend="ray", log=lambda line: None)
    assert started == [1] and not ray.is_initialized()  # the local instance is stopped after the run
    assert json.loads((local.path / "experiment.json").read_text())["config"] == \
        json.loads((on_ray.path / "experiment.json").read_text())["config"]
    local_cells, ray_cells = ResultsDir(local.path).read_cells(), ResultsDir(on_ray.path).read_cells()
    assert [c.label for c in ray_cells] == [c.label for c in local_cells] == ["LMCTS", "LinUCB", "EpsGreedy"]
    for a, b in zip(local_cells, ray_cells, strict=True):
        np.testing.assert_array_equal(a.regret, b.regret)  # same seeds, batch and device: the same numbers
        for key in ("grid_points", "hyperparameters", "final_regret", "chosen", "seeds", "cell_config"):
            assert a.record[key] == b.record[key]
