"""The MLP's batched evaluation against the per-replica torch definition, and ``benchmarks/neural_rounds.py``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from benchmark_scripts import benchmark_module  # tests/integration is on pytest's pythonpath

from agents.models.mlp import MLPModel
from bandit_gym import rng

ROOT = Path(__file__).resolve().parents[2]
CPU = torch.device("cpu")

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py




@pytest.mark.parametrize("activation", ["leaky_relu", "relu"])
def test_mlp_forward_equals_per_replica_linear_layers(activation):
    replicas, dim, hidden = 3, 7, (5, 4, 6)
    model = MLPModel(replicas, dim, torch.full((replicas,), 0.5), CPU, keys=rng.seed_to_key([0, 1, 2]),
                     hidden=hidden, activation=activation)
    noise = torch.randn(replicas, model.n_params, generator=torch.Generator().manual_seed(1))
    params = model.initial_params() + 0.1 * noise  # (R, p): nonzero biases too
    x = torch.randn(replicas, 9, dim, generator=torch.Generator().manual_seed(2))  # (R, n, d)
    layers = model.layers(params)
    flat = torch.cat([piece.reshape(replicas, -1) for layer in layers for piece in layer], dim=1)
    assert torch.equal(flat, params)  # (W_1, b_1, W_2, ...) in order, nothing left out
    act = torch.relu if activation == "relu" else (lambda z: F.leaky_relu(z, 0.01))
    expected = []
    for r in range(replicas):  # the definition: one network at a time, torch's own linear layers
        h = x[r]
        for index, (weight, bias) in enumerate(layers):
            h = F.linear(h, weight[r], bias[r])
            h = h if index == len(layers) - 1 else act(h)
        expected.append(h[:, 0])
    torch.testing.assert_close(model.forward(params, x)[0], torch.stack(expected))


def test_neural_rounds_ms_per_round_averages_the_rounds_around_t():
    neural_rounds = benchmark_module("neural_rounds")
    clock = np.cumsum(np.r_[np.full(99, 0.001), np.full(100, 0.003), np.full(101, 0.001)])  # after rounds 1-300
    # rounds 100-199 took 3 ms each (the clock after round i is clock[i - 1]); around t = 150: rounds 100-199
    assert neural_rounds.ms_per_round(clock, 150) == pytest.approx(3.0)
    assert neural_rounds.ms_per_round(clock, 250) == pytest.approx(1.0)


def test_neural_rounds_prints_a_row_per_agent_and_keeps_the_table(real_openml_cache, tmp_path, capsys):
    neural_rounds = benchmark_module("neural_rounds")
    out = tmp_path / "neural_rounds.md"
    neural_rounds.main(["--rounds", "20", "--seeds", "2", "--cache-dir", str(real_openml_cache), "--out", str(out)])
    printed = capsys.readouterr().out
    rows = [line.split(" | ") for line in out.read_text().splitlines() if line.startswith("| ") and "---" not in line]
    assert [row[0] for row in rows[1:]] == ["| LMCTS-mlp", "| NeuralTS"], printed
    for line in out.read_text().splitlines():
        assert line in printed
    assert [p.name for p in out.parent.iterdir()] == ["neural_rounds.md"]  # no temporary file left behind
    per_seed = [[float(v) for v in line.split(":")[1].split()] for line in printed.splitlines()
                if line.startswith("  regret per seed:")]
    for row, regret in zip(rows[1:], per_seed, strict=True):
        assert 0 <= min(regret) and max(regret) <= 20, printed  # at most one regret a round on 0/1 rewards
        assert float(row[-2].split(" +- ")[0]) == pytest.approx(np.mean(regret), abs=0.5)


def test_neural_rounds_rejects_more_rounds_than_the_dataset_has(capsys):
    neural_rounds = benchmark_module("neural_rounds")
    with pytest.raises(SystemExit):
        neural_rounds.main(["--rounds", "9000"])
    assert "--rounds must be within 2-8124 (every row of Mushroom-v0 at most once), got 9000" in capsys.readouterr().err
