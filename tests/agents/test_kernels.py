"""Each compiled kernel equals the torch function it accelerates, within float32 tolerances.

Tolerances: the kernels sum in another order than torch (and torch's own order is not
specified), so results agree to a few float32 ulps of the largest terms, not bit for bit.
"""

from __future__ import annotations

import pytest
import torch
from replicas import linear_rounds

from agents import _kernels
from agents.base import random_argmax
from agents.chains.langevin import langevin_steps
from agents.models.reward import LinearModel, add_observation, linear_scores
from bandit_gym import rng
from bandit_gym.rng import Stream


@pytest.fixture(autouse=True)
def kernels():
    """These tests call both paths themselves (overrides the two-way fixture of conftest.py)."""


def both_ways(monkeypatch, function, *args):
    """``function(*args)`` with the kernels on, then off."""
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    fast = function(*args)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    return fast, function(*args)


def test_kernels_switch_off_with_the_environment_variable(monkeypatch):
    x = torch.zeros(3)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    assert _kernels.enabled(x)
    assert not _kernels.enabled(x.double()) and not _kernels.enabled(x.requires_grad_())
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    assert not _kernels.enabled(torch.zeros(3))


def _statistics(R=6, d=5, T=40, seed=0):
    _, _, _, played, rewards = linear_rounds(T, R, 4, d, seed=seed, noise=0.1)
    model = LinearModel(R, d, torch.linspace(0.5, 2.0, R), torch.device("cpu"))
    for x, r in zip(played, rewards, strict=True):
        model.add(x, r)
    return model


def test_linear_langevin_kernel_equals_langevin_steps(monkeypatch):
    model = _statistics()
    R, d = model.num_replicas, model.dim
    gen = torch.Generator().manual_seed(1)
    theta, noise = torch.randn(R, d, generator=gen), torch.randn(R, 50, d, generator=gen)
    eta, beta = torch.linspace(1e-3, 1e-2, R), torch.linspace(1.0, 100.0, R)
    fast = _kernels.linear_langevin(model.gram, model.moment, theta, eta, beta, noise)
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    # 50 contracting steps of O(1) values: float32 rounding accumulates to ~1e-6.
    torch.testing.assert_close(fast, langevin_steps(model, theta, eta, beta, noise), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs CUDA"))])
def test_linear_langevin_affine_equals_langevin_steps(monkeypatch, device):
    """The affine form (one product per step, the path off the CPU) is the step-by-step chain up to rounding."""
    model = _statistics()
    R, d = model.num_replicas, model.dim
    gen = torch.Generator().manual_seed(2)
    theta, noise = torch.randn(R, d, generator=gen), torch.randn(R, 100, d, generator=gen)
    eta, beta = torch.linspace(1e-3, 1e-2, R), torch.linspace(1.0, 100.0, R)
    fast = _kernels.linear_langevin_affine(*(t.to(device) for t in (model.gram, model.moment, theta, eta, beta,
                                                                    noise)))
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    # 100 contracting steps of O(1) values, each rounded in another order: ~1e-6 accumulated.
    torch.testing.assert_close(fast.cpu(), langevin_steps(model, theta, eta, beta, noise), rtol=1e-5, atol=1e-5)


def test_the_off_cpu_switch_takes_float32_tensors_off_the_cpu_only(monkeypatch):
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    assert not _kernels.enabled_off_cpu(torch.zeros(3))  # CPU tensors take the numba kernels instead
    meta = torch.zeros(3, device="meta")  # a tensor off the CPU, without needing a GPU
    assert _kernels.enabled_off_cpu(meta) and not _kernels.enabled_off_cpu(meta.double())
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    assert not _kernels.enabled_off_cpu(meta)


def test_linear_scores_and_add_observation_kernels_equal_torch(monkeypatch):
    R, K, d = 6, 9, 5
    _, contexts, _, played, rewards = linear_rounds(2, R, K, d, seed=5)
    theta = torch.randn(R, d, generator=torch.Generator().manual_seed(6))
    fast, plain = both_ways(monkeypatch, linear_scores, contexts[0], theta)
    torch.testing.assert_close(fast, plain, rtol=1e-5, atol=1e-6)
    gram, moment = torch.eye(d).expand(R, d, d).clone(), torch.randn(R, d)
    fast, plain = both_ways(monkeypatch, add_observation, gram, moment, played[0], rewards[0])
    for a, b in zip(fast, plain, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


def test_random_argmax_breaks_ties_uniformly():
    """All 7 arms tied in 4,000 rows: each wins with frequency 1/7 (sd 0.0055; bound 5 sd)."""
    keys = rng.seed_to_key(list(range(4000)))
    noise = rng.uniform(keys, Stream.TIES, 1, (7,))
    wins = torch.bincount(random_argmax(torch.zeros(4000, 7), noise), minlength=7) / 4000
    assert (wins - 1 / 7).abs().max() < 5 * (1 / 7 * 6 / 7 / 4000) ** 0.5


def _ridge_round(R=6, K=9, d=5, seed=7):
    """A positive definite ``V^-1`` (and its square root) after a few rows, this round's arms, row and rewards."""
    gen = torch.Generator().manual_seed(seed)
    rows = torch.randn(R, 12, d, generator=gen)
    gram = torch.eye(d) + rows.mT @ rows  # (R, d, d)
    inverse = torch.linalg.inv(gram)
    root = torch.linalg.cholesky(inverse)  # S S^T = V^-1
    contexts = torch.randn(R, K, d, generator=gen)
    moment, rewards = torch.randn(R, d, generator=gen), torch.randn(R, generator=gen)
    return gram.double(), inverse, root, moment, contexts, contexts[:, 0], rewards


def test_the_ridge_round_kernels_equal_torch(monkeypatch):
    """``ridge_update``, ``potter_update``, ``add_outer``, ``add_feature_sums`` and ``ucb_scores`` of
    :mod:`agents.linear` with the kernels on and off. Tolerances: float32 sums of ``d = 5`` products of O(1) values
    in another order, a few ulps; ``add_outer`` is float64 of float32 products (exact) and ``add_feature_sums``
    counts exactly."""
    from agents import linear

    gram, inverse, root, moment, contexts, x, rewards = _ridge_round()
    theta_hat, nu = torch.randn(6, 5), torch.linspace(0.0, 2.0, 6)
    fast, plain = both_ways(monkeypatch, linear.ucb_scores, contexts, theta_hat, inverse, nu)
    torch.testing.assert_close(fast, plain, rtol=1e-5, atol=1e-6)
    for update, state in ((linear.ridge_update, inverse), (linear.potter_update, root)):
        fast, plain = both_ways(monkeypatch, update, state, moment, x, rewards)
        for a, b in zip(fast, plain, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    fast, plain = both_ways(monkeypatch, linear.add_outer, gram, x)
    assert fast.dtype == torch.float64 and torch.equal(fast, plain)
    sparse = contexts * (contexts > 0)  # zeros to count
    sums = torch.rand(6, 5), torch.arange(30.0).reshape(6, 5)
    fast, plain = both_ways(monkeypatch, linear.add_feature_sums, *sums, sparse)
    torch.testing.assert_close(fast[0], plain[0], rtol=1e-6, atol=1e-6)
    assert torch.equal(fast[1], plain[1])


def test_the_ridge_kernels_keep_their_definitions_meaning():
    """Not only equal to the torch lines: the kernels' ``V^-1`` and ``S S^T`` are ``(V + x x^T)^-1``, and their
    ``theta_hat`` is that times ``b + r x`` (float32 against a float64 inverse: 1e-4 relative)."""
    from agents import _kernels

    gram, inverse, root, moment, _, x, rewards = _ridge_round()
    exact = torch.linalg.inv(gram + x.double()[:, :, None] * x.double()[:, None, :]).float()
    new_inverse, new_moment, theta_hat = _kernels.ridge_update(inverse, moment, x, rewards)
    torch.testing.assert_close(new_inverse, exact, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(new_moment, moment + rewards[:, None] * x)
    torch.testing.assert_close(theta_hat, (exact @ new_moment[:, :, None])[:, :, 0], rtol=1e-4, atol=1e-5)
    new_root, _, root_theta = _kernels.potter_update(root, moment, x, rewards)
    torch.testing.assert_close(new_root @ new_root.mT, exact, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(root_theta, theta_hat, rtol=1e-4, atol=1e-5)


def test_the_scaled_linear_langevin_kernel_equals_the_preconditioned_chain(monkeypatch):
    """With a scale ``S`` the kernel is ``langevin_steps`` preconditioned by ``S^2`` (50 contracting steps, as the
    unscaled test: ~1e-5); with ``S`` all ones it is the unscaled kernel, bit for bit (x 1 and / 1 are exact)."""
    from agents.chains.langevin import linear_langevin_steps

    model = _statistics()
    R, d = model.num_replicas, model.dim
    gen = torch.Generator().manual_seed(3)
    theta, noise = torch.randn(R, d, generator=gen), torch.randn(R, 50, d, generator=gen)
    eta, beta = torch.linspace(1e-3, 1e-2, R), torch.linspace(1.0, 100.0, R)
    scale = torch.rand(R, d, generator=gen) + 0.5
    fast, plain = both_ways(monkeypatch, linear_langevin_steps, model, theta, eta, beta, noise, scale)
    torch.testing.assert_close(fast, plain, rtol=1e-5, atol=1e-5)
    unscaled = _kernels.linear_langevin(model.gram, model.moment, theta, eta, beta, noise)
    ones = _kernels.linear_langevin(model.gram, model.moment, theta, eta, beta, noise, torch.ones(R, d))
    assert torch.equal(unscaled, ones)
    affine = _kernels.linear_langevin_affine(model.gram, model.moment, theta, eta, beta, noise, scale)
    torch.testing.assert_close(affine, plain, rtol=1e-5, atol=1e-5)
