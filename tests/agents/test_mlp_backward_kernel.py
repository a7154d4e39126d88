"""``MLPModel``'s hand-written backward pass (``agents/_kernels.py``, on unless ``BANDIT_GYM_KERNELS=0``) against
the definition, autograd over the batched parameters (``agents/models/mlp.py`` with the switch off), and the block-aware
first layer against the dense one.

Tolerances: float32, both compute the same sums of products in another order (autograd accumulates the
per-row terms of ``grad L`` through its own kernels), so they differ by float32 rounding: a few ulps
(``eps = 1.2e-7``) of each term times the number of terms summed (here at most ~60 rows or units), on values of
order 1-10, so ``rtol = 1e-5`` and ``atol = 1e-5`` (about 80 ulps of 1) hold with a wide margin while a wrong
term (a missing activation derivative, a transposed weight) changes entries by O(0.01-1)."""

from __future__ import annotations

import pytest
import torch

from agents.models.blocks import BlockRows
from agents.models.mlp import MLPModel
from bandit_gym import rng

CLOSE = {"rtol": 1e-5, "atol": 1e-5}
CPU = torch.device("cpu")


def model_and_data(R, d, hidden, activation, n_rows, block_arms=None, seed=0):
    model = MLPModel(R, d, torch.full((R,), 0.3), CPU, keys=rng.seed_to_key(list(range(R))), hidden=hidden,
                     activation=activation, block_arms=block_arms)
    g = torch.Generator().manual_seed(seed)
    for _ in range(n_rows):
        x = torch.randn(R, d, generator=g)
        if block_arms:  # keep one random block per row
            width = d // block_arms
            keep = torch.randint(block_arms, (R,), generator=g)
            mask = (torch.arange(d) // width)[None, :] == keep[:, None]
            x = x * mask
        model.add(x, torch.randn(R, generator=g))
    theta = model.initial_params() + 0.1 * torch.randn(R, model.n_params, generator=g)  # not just the init
    if block_arms:
        width = d // block_arms
        values = torch.randn(R, block_arms, width, generator=g)
        contexts = torch.zeros(R, block_arms, block_arms, width)
        contexts[:, torch.arange(block_arms), torch.arange(block_arms)] = values
        contexts = contexts.reshape(R, block_arms, d)  # an arm set: arm j in block j
    else:
        contexts = torch.randn(R, 6, d, generator=g)
    weights = torch.rand(R, model.n_params, generator=g) + 0.5
    return model, theta, contexts, weights


def everything(model, theta, contexts, weights):
    batch = torch.randint(len(model.data), (model.num_replicas, 5), generator=torch.Generator().manual_seed(9))
    return {
        "scores": model.scores(theta, contexts),
        "gradient": model.gradient(theta),
        "gradient (batch)": model.gradient(theta, batch),
        "gradient_squares": model.gradient_squares(theta),
        "gradient_squares (batch)": model.gradient_squares(theta, batch),
        "arm_gradients": model.arm_gradients(theta, contexts)[1],
        "gradient_norms": model.gradient_norms(theta, contexts, weights)[1],
    }


CASES = [  # (R, d, hidden, activation, rows, block_arms)
    (3, 4, (6, 5), "relu", 30, None),
    (2, 7, (20, 20, 20), "leaky_relu", 40, None),
    (1, 3, (8,), "leaky_relu", 1, None),
    (3, 12, (6, 5), "leaky_relu", 25, 4),
    (2, 6, (10,), "relu", 15, 3),
]


@pytest.mark.parametrize("case", CASES, ids=[f"R{c[0]}-d{c[1]}-{c[3]}-blocks{c[5]}" for c in CASES])
def test_hand_written_backward_equals_autograd(case, monkeypatch):
    """Every gradient the agents use, hand-written (switch on) against autograd (switch off)."""
    model, theta, contexts, weights = model_and_data(*case)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    fast = everything(model, theta, contexts, weights)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    plain = everything(model, theta, contexts, weights)
    for name, value in plain.items():
        torch.testing.assert_close(fast[name], value, **CLOSE, msg=lambda m, name=name: f"{name}: {m}")
    # the plain path's per-arm gradients are the definition: autograd of one output at a time
    for r, k in [(0, 0), (model.num_replicas - 1, contexts.shape[1] - 1)]:
        p = theta.clone().requires_grad_()
        (expected,) = torch.autograd.grad(model.scores(p, contexts)[r, k], p)
        torch.testing.assert_close(plain["arm_gradients"][r, k], expected[r], **CLOSE)


def test_the_switch_turns_off_the_block_layer_and_the_hand_written_backward(monkeypatch):
    """With ``BANDIT_GYM_KERNELS=0`` a ``block_arms`` model runs the dense first layer on the written-out rows,
    so it gives exactly the dense model's numbers (the same operations on the same values)."""
    block, theta, contexts, weights = model_and_data(3, 12, (6, 5), "leaky_relu", 25, block_arms=4)
    dense = MLPModel(3, 12, torch.full((3,), 0.3), CPU, keys=rng.seed_to_key([0, 1, 2]), hidden=(6, 5),
                     activation="leaky_relu")
    stored, rewards, _ = block.rows(None)
    for x, r in zip(stored.dense().unbind(1), rewards.unbind(1), strict=True):
        dense.add(x, r)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    assert isinstance(block._as_rows(contexts), BlockRows)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    assert isinstance(block._as_rows(contexts), torch.Tensor)
    for name, value in everything(dense, theta, contexts, weights).items():
        assert torch.equal(everything(block, theta, contexts, weights)[name], value), name
