"""The history buffer and the (grid x seeds) layout of a batched hyperparameter search."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from replicas import make_vec

from agents import LMCTS, History, HyperparameterGrid

SIZES = {"n_arms": 8, "dim": 5, "horizon": 30}


def test_history_grows_by_doubling_and_keeps_every_row(tmp_path):
    history = History(2, {"features": (3,), "rewards": ()}, torch.device("cpu"), capacity=4)
    rows = [(torch.randn(2, 3), torch.randn(2)) for _ in range(11)]
    for x, r in rows:
        history.append(features=x, rewards=r)
    assert len(history) == 11 and history.capacity == 16
    torch.testing.assert_close(history["features"], torch.stack([x for x, _ in rows], dim=1), rtol=0, atol=0)
    torch.testing.assert_close(history["rewards"], torch.stack([r for _, r in rows], dim=1), rtol=0, atol=0)
    copy = History(2, {"features": (3,), "rewards": ()}, torch.device("cpu"), capacity=4)
    copy.load_state_dict(history.state_dict())
    assert len(copy) == 11 and torch.equal(copy["features"], history["features"])
    with pytest.raises(ValueError, match=r"append needs exactly the fields \['features', 'rewards'\]"):
        history.append(features=torch.zeros(2, 3))


def test_history_window_keeps_the_last_rows_and_reads_each_replicas_lag():
    window = History(2, {"features": (3,), "rewards": ()}, torch.device("cpu"), capacity=4, dtype=torch.float64,
                     window=True)
    rows = [(torch.randn(2, 3, dtype=torch.float64), torch.randn(2, dtype=torch.float64)) for _ in range(7)]
    for x, r in rows:
        window.append(features=x, rewards=r)
    assert len(window) == 4 and window.appended == 7 and window.capacity == 4
    assert window["features"].dtype == torch.float64
    for n in range(3, 7):
        assert torch.equal(window["features"][:, n % 4], rows[n][0])
    lag = torch.tensor([1, 4])  # replica 0: the last row (6); replica 1: the oldest kept (3)
    assert torch.equal(window.row_before("features", lag), torch.stack([rows[6][0][0], rows[3][0][1]]))
    assert torch.equal(window.row_before("rewards", lag), torch.stack([rows[6][1][0], rows[3][1][1]]))
    copy = History(2, {"features": (3,), "rewards": ()}, torch.device("cpu"), capacity=4, dtype=torch.float64,
                   window=True)
    copy.load_state_dict(window.state_dict())
    assert copy.appended == 7 and torch.equal(copy.row_before("features", lag), window.row_before("features", lag))


def test_grid_layout_and_split():
    grid = HyperparameterGrid({"step_size": [0.1, 0.3], "inverse_temperature": [10.0, 100.0, 1000.0]}, n_seeds=2,
                              seed=5)
    assert grid.num_replicas == 12 and len(grid.points) == 6
    assert grid.points[1] == {"step_size": 0.1, "inverse_temperature": 100.0}  # the last name varies fastest
    kwargs = grid.agent_kwargs()
    assert kwargs["seed"] == [5, 6] * 6
    assert kwargs["step_size"][:6] == [0.1] * 6 and kwargs["inverse_temperature"][:4] == [10.0, 10.0, 100.0, 100.0]
    regret = np.arange(3 * 12).reshape(3, 12)  # (T, R)
    parts = grid.split(regret)
    assert len(parts) == 6 and parts[1].shape == (3, 2)
    np.testing.assert_array_equal(parts[1], regret[:, 2:4])
    with pytest.raises(ValueError, match=r"one entry per replica \(12\)"):
        grid.split(np.zeros((3, 10)))


def test_a_grid_without_values_and_a_grid_of_chosen_points():
    alone = HyperparameterGrid({}, n_seeds=3, seed=5)  # one point: the agent's defaults
    assert alone.points == [{}] and alone.agent_kwargs() == {"seed": [5, 6, 7]}
    grid = HyperparameterGrid({"step_size": [0.1, 0.3], "inverse_temperature": [10.0, 100.0]}, n_seeds=2, seed=1)
    assert [list(grid.replicas(p)) for p in range(4)] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    replicas = np.arange(grid.num_replicas)
    assert all(list(part) == list(grid.replicas(p)) for p, part in enumerate(grid.split(replicas)))
    chosen = HyperparameterGrid.from_points([grid.points[3], grid.points[0]], n_seeds=2, seed=1)
    full = grid.agent_kwargs()
    expected = {name: [full[name][r] for p in (3, 0) for r in grid.replicas(p)] for name in full}
    assert chosen.points == [grid.points[3], grid.points[0]] and chosen.agent_kwargs() == expected
    with pytest.raises(ValueError, match="points must be a non-empty list of dicts with the same names"):
        HyperparameterGrid.from_points([{"step_size": 0.1}, {"inverse_temperature": 10.0}], n_seeds=2)


def test_a_grid_run_equals_each_point_run_alone():
    """Point p, seed s of the batched grid is the run of that point alone with seed s (same problem
    instance: the env's replica is reset with the same seed). 30 rounds of continuous arm features:
    no near-ties, so the arms match exactly; regrets to float32 rounding."""
    grid = HyperparameterGrid({"step_size": [0.1, 0.5], "inverse_temperature": [3.0, 300.0]}, n_seeds=2)
    venv = make_vec("LinearBandit-v0", grid.num_replicas, SIZES)
    agent = LMCTS(venv, device="cpu", n_inner_steps=10, **grid.agent_kwargs()).learn(venv)
    assert agent.hyperparameters()["step_size"] == grid.agent_kwargs()["step_size"]
    for point, actions in zip(grid.points, grid.split(agent.history["action"]), strict=True):
        alone = make_vec("LinearBandit-v0", grid.n_seeds, SIZES)
        run = LMCTS(alone, seed=0, device="cpu", n_inner_steps=10, **point).learn(alone)
        np.testing.assert_array_equal(run.history["action"], actions)
    first, last = grid.split(agent.history["action"])[0], grid.split(agent.history["action"])[-1]
    assert not np.array_equal(first, last)  # the grid points play differently
