"""The block-aware first layer (``model_kwargs={"block_arms": N}``: agents/models/blocks.py's rows, agents/_kernels.py's
products, on unless ``BANDIT_GYM_KERNELS=0``) against the dense MLP, the
definition: forward pass, hand-written loss gradient, per-arm gradient features and their weighted norms, and
whole agents. Tolerances: the two sum the same products in another order (the dense one adds the zeros of the
other blocks), so they agree to float32 rounding of O(1) values, 1e-5."""

from __future__ import annotations

import pytest
import torch

from agents import LMCTS
from agents.models.blocks import split_blocks
from agents.models.mlp import MLPModel
from agents.neural import NeuralTS
from bandit_gym import rng

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

R, N, D_BLOCK = 3, 4, 5  # replicas, arms (= blocks), features per block
CLOSE = {"rtol": 1e-5, "atol": 1e-5}


def one_hot_block_arms(n_sets: int, seed: int = 0) -> torch.Tensor:
    """``n_sets`` arm sets of the real-data envs' form: arm j holds an example in block j, ``(n_sets, R, N, N d)``."""
    x = torch.randn(n_sets, R, D_BLOCK, generator=torch.Generator().manual_seed(seed))  # one example per set
    arms = torch.zeros(n_sets, R, N, N, D_BLOCK)
    arms[:, :, torch.arange(N), torch.arange(N)] = x[:, :, None, :]
    return arms.reshape(n_sets, R, N, N * D_BLOCK)


def models(activation="relu", hidden=(6, 5)):
    keys = rng.seed_to_key(list(range(R)))
    lam = torch.full((R,), 0.3)
    return [MLPModel(R, N * D_BLOCK, lam, torch.device("cpu"), keys=keys, hidden=hidden, activation=activation,
                     block_arms=blocks) for blocks in (None, N)]


def fill(dense, block, n_rounds=20, seed=0):
    """The same played rows (random arms of random sets) and rewards in both models."""
    g = torch.Generator().manual_seed(seed + 1)
    for arm_set in one_hot_block_arms(n_rounds, seed):
        played = arm_set[torch.arange(R), torch.randint(N, (R,), generator=g)]  # (R, N d)
        reward = torch.randn(R, generator=g)
        dense.add(played, reward)
        block.add(played, reward)


@pytest.mark.parametrize("activation", ["relu", "leaky_relu"])
def test_block_forward_and_gradient_equal_dense(activation):
    dense, block = models(activation)
    theta = dense.initial_params()
    torch.testing.assert_close(block.initial_params(), theta)
    fill(dense, block)
    assert block.data["features"].shape == (R, 20, D_BLOCK)  # d values per row, not N d
    contexts = one_hot_block_arms(1, seed=9)[0]  # (R, K, N d)
    torch.testing.assert_close(block.scores(theta, contexts), dense.scores(theta, contexts), **CLOSE)
    batch = torch.randint(20, (R, 7), generator=torch.Generator().manual_seed(2))  # rows repeat
    for rows in (None, batch):
        torch.testing.assert_close(block.gradient(theta, rows), dense.gradient(theta, rows), **CLOSE)
        torch.testing.assert_close(block.loss(theta, rows), dense.loss(theta, rows), **CLOSE)


def test_block_rows_all_in_one_block_and_empty_rows():
    """Groups of very different sizes (every row of a replica in one block) and all-zero rows still match."""
    dense, block = models()
    theta = dense.initial_params()
    arms = one_hot_block_arms(6, seed=3)
    for t, arm_set in enumerate(arms):
        played = arm_set[:, 2] if t % 3 else torch.zeros(R, N * D_BLOCK)  # block 2, or zeros
        dense.add(played, torch.ones(R))
        block.add(played, torch.ones(R))
    torch.testing.assert_close(block.gradient(theta), dense.gradient(theta), **CLOSE)


def test_block_per_arm_gradient_features_equal_dense():
    """What NeuralTS/UCB use: g(x_k) of every arm, and the weighted norms sum_j w_j g_j(x_k)^2."""
    dense, block = models("leaky_relu")
    theta = dense.initial_params()
    contexts = one_hot_block_arms(1, seed=4)[0]
    mean_d, g_d = dense.arm_gradients(theta, contexts)
    mean_b, g_b = block.arm_gradients(theta, contexts)
    torch.testing.assert_close(mean_b, mean_d, **CLOSE)
    torch.testing.assert_close(g_b, g_d, **CLOSE)
    weights = torch.rand(R, dense.n_params, generator=torch.Generator().manual_seed(5)) + 0.5
    for model in (dense, block):
        mean, norms = model.gradient_norms(theta, contexts, weights)
        torch.testing.assert_close(mean, mean_d, **CLOSE)
        torch.testing.assert_close(norms, (g_d**2 * weights[:, None, :]).sum(dim=-1), **CLOSE)


def test_block_arms_rejects_features_that_are_not_one_hot_blocks():
    _, block = models()
    with pytest.raises(ValueError, match="block_arms=4 needs one-hot-block features"):
        block.add(torch.ones(R, N * D_BLOCK), torch.zeros(R))
    with pytest.raises(ValueError, match="block_arms must divide"):
        LMCTS(n_arms=3, dim=10, model="mlp", model_kwargs={"block_arms": 3}, device="cpu", seed=0)
    with pytest.raises(ValueError, match="block_arms"):
        LMCTS(n_arms=3, dim=12, model="mlp", model_kwargs={"block_arms": 1}, device="cpu", seed=0)


def test_split_blocks_round_trip():
    arms = one_hot_block_arms(1, seed=6)[0]  # (R, K, N d)
    rows = split_blocks(arms, N)
    assert torch.equal(rows.block, torch.arange(N).expand(R, N))
    assert torch.equal(rows.dense(), arms)


@pytest.mark.parametrize("cls", [LMCTS, NeuralTS])
def test_agents_with_block_arms_follow_the_dense_agents(cls):
    """The same rounds (fixed actions, so no near-tie forks the runs) give the same parameters, up to float32
    rounding that 10 rounds of 4 steps carry to ~1e-5 relative."""
    steps = {"n_inner_steps": 4, **({"inverse_temperature": 100.0} if cls is LMCTS else {})}
    agents = [cls(n_arms=N, dim=N * D_BLOCK, num_replicas=R, model="mlp", seed=1, device="cpu", batch_size=4,
                  step_size=0.05, model_kwargs={"hidden": (8, 8), **extra}, **steps)
              for extra in ({}, {"block_arms": N})]
    g = torch.Generator().manual_seed(0)
    for arm_set in one_hot_block_arms(10, seed=7):
        actions = torch.randint(N, (R,), generator=g)
        for agent in agents:
            agent.update(arm_set, actions, arm_set[:, 0, :D_BLOCK].sum(dim=1))
    torch.testing.assert_close(agents[1].theta, agents[0].theta, rtol=1e-4, atol=1e-5)


def test_an_mlp_object_keeps_its_block_setting_in_the_agent(tmp_path):
    """``LMCTS(model=MLP(block_arms=N))`` runs and saves the block layer, not a dense one."""
    from agents.models.mlp import MLP

    agent = LMCTS(n_arms=3, dim=12, model=MLP(hidden=(8,), block_arms=3), device="cpu", seed=0)
    assert agent.hyperparameters()["model_kwargs"]["block_arms"] == 3
    agent.save(tmp_path / "agent.pt")
    assert LMCTS.load(tmp_path / "agent.pt").hyperparameters()["model_kwargs"]["block_arms"] == 3
