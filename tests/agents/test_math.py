"""Shared batched math: exact answers, and the same bits whatever the batch size."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents import _math


@pytest.mark.parametrize(("R", "K", "d"), [(10, 50, 20), (7, 7, 21), (33, 2, 63), (5, 10, 9)])
def test_quad_form_is_exact_and_batch_size_invariant(R, K, d):
    gen = torch.Generator().manual_seed(R * K * d)
    a = torch.randn(R, d, d, generator=gen, dtype=torch.float64)
    matrix = (a @ a.transpose(1, 2) / d).float()  # (R, d, d) symmetric
    x = torch.randn(R, K, d, generator=gen)  # (R, K, d)
    got = _math.quad_form(matrix, x)
    want = torch.einsum("rkd,rde,rke->rk", x.double(), matrix.double(), x.double())
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)
    for r in range(R):  # a replica computed alone gives the same bits as inside the batch
        assert torch.equal(_math.quad_form(matrix[r : r + 1], x[r : r + 1]), got[r : r + 1])


def test_sherman_morrison_matches_the_inverse():
    gen = torch.Generator().manual_seed(0)
    inverse = torch.eye(6).repeat(3, 1, 1)  # V = I
    design = torch.eye(6).repeat(3, 1, 1)
    for _ in range(40):
        x = torch.randn(3, 6, generator=gen)
        inverse = _math.sherman_morrison(inverse, x)
        design = design + x[:, :, None] * x[:, None, :]
    torch.testing.assert_close(inverse, torch.linalg.inv(design), rtol=1e-4, atol=1e-5)


def _problem(R, K, d, seed=0):
    """A symmetric positive definite ``(R, d, d)`` matrix, contexts ``(R, K, d)`` and a vector ``(R, d)``."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(R, d, d, generator=gen, dtype=torch.float64)
    matrix = (a @ a.mT / d + torch.eye(d, dtype=torch.float64)).float()
    return matrix, torch.randn(R, K, d, generator=gen), torch.randn(R, d, generator=gen)


# Each function has a kernel path (plain float32 CPU tensors, agents._kernels) and a torch path
# (CUDA, or tensors that require grad). Both must agree with a float64 reference, and the
# kernel path must give a replica the same bits alone as inside a batch.
def _check_paths(fn, args, got, grad_arg=1, atol=1e-6):
    """The torch path (argument ``grad_arg`` requiring grad) agrees with ``got``; every replica alone equals its row."""
    args = list(args)
    traced = [a.clone().requires_grad_() if i == grad_arg else a for i, a in enumerate(args)]
    outputs = (got,) if isinstance(got, torch.Tensor) else got
    via_torch = fn(*traced)
    for g, t in zip(outputs, (via_torch,) if isinstance(via_torch, torch.Tensor) else via_torch, strict=True):
        torch.testing.assert_close(t.detach(), g, rtol=1e-5, atol=atol)
    for r in range(len(args[0])):
        alone = fn(*(a[r : r + 1] if isinstance(a, torch.Tensor) else a for a in args))
        alone = (alone,) if isinstance(alone, torch.Tensor) else alone
        assert all(torch.equal(a, g[r : r + 1]) for a, g in zip(alone, outputs, strict=True))


@pytest.mark.parametrize(("R", "K", "d"), [(10, 50, 20), (7, 7, 21), (5, 10, 9)])
def test_optimistic_scores_both_paths(R, K, d):
    matrix, x, theta = _problem(R, K, d)
    width = torch.einsum("rkd,rde,rke->rk", x.double(), matrix.double(), x.double()).sqrt()
    want = torch.einsum("rkd,rd->rk", x.double(), theta.double()) + 0.7 * width
    got = _math.optimistic_scores(x, theta, matrix, 0.7)
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)
    _check_paths(_math.optimistic_scores, (x, theta, matrix, 0.7), got, atol=1e-5)


@pytest.mark.parametrize(("R", "K", "d"), [(10, 50, 20), (7, 7, 21)])
def test_sampled_scores_both_paths(R, K, d):
    factor, x, center = _problem(R, K, d)
    z = torch.randn(R, d, generator=torch.Generator().manual_seed(3))
    got = _math.sampled_scores(x, center, factor, z, 0.3)
    theta = center.double() + 0.3 * (factor.double() @ z.double()[:, :, None])[..., 0]  # (R, d)
    want = torch.einsum("rkd,rd->rk", x.double(), theta)
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)
    # The fused call is the composition it replaces, bit for bit (LinTS's draws did not change with it).
    assert torch.equal(got, _math.scores(x, center + 0.3 * _math.matvec(factor, z)))
    _check_paths(_math.sampled_scores, (x, center, factor, z, 0.3), got, atol=1e-5)


def test_fused_argmaxes_equal_random_argmax_of_the_scores():
    # LinUCB's and the Thompson agents' select in one call: the same arms as scoring, then random_argmax.
    R, K, d = 6, 9, 5
    matrix, x, theta = _problem(R, K, d, seed=9)
    z = torch.randn(R, d, generator=torch.Generator().manual_seed(10))
    ties = (torch.arange(R), 16, 3)
    for fused, score, args in ((_math.optimistic_argmax, _math.optimistic_scores, (theta, matrix, 0.4)),
                               (_math.sampled_argmax, _math.sampled_scores, (theta, matrix, z, 0.4))):
        want = _math.random_argmax(score(x, *args), *ties)
        assert torch.equal(fused(x, *args, ties), want)
        # Rows with ties (every arm the same) go through the random tie-breaking of random_argmax.
        tied = x.clone()
        tied[2] = tied[2, :1]
        want = _math.random_argmax(score(tied, *args), *ties)
        assert torch.equal(fused(tied, *args, ties), want)
        assert len(set(fused(tied, *args, (torch.arange(R), 16, c))[2].item() for c in range(20))) > 1
        # The torch path agrees.
        traced = (args[0].clone().requires_grad_(), *args[1:])
        assert torch.equal(fused(x, *traced, ties), fused(x, *args, ties))


def test_epsilon_greedy_argmax_equals_its_torch_composition():
    # EpsGreedy's select in one call: random arms where the coin says explore, random_argmax elsewhere.
    R, K, d = 40, 7, 5
    _, x, theta = _problem(R, K, d, seed=11)
    u = torch.rand(R, 2, generator=torch.Generator().manual_seed(12))
    u[0] = torch.tensor([0.0, 0.99999994])  # explores; the largest u_1 below 1 gives arm K - 1
    ties = (torch.arange(R), 16, 3)

    def composed(x, theta, u, epsilon):
        greedy = _math.random_argmax(_math.scores(x, theta), *ties)
        random_arm = (u[:, 1] * K).long().clamp_(max=K - 1)
        return torch.where(u[:, 0] < epsilon, random_arm, greedy)

    tied = x.clone()
    tied[2] = tied[2, :1]  # a row of equal arms: the tie-breaking path
    for arms in (x, tied):
        for epsilon in (0.0, 0.3, 1.0):
            got = _math.epsilon_greedy_argmax(arms, theta, u, epsilon, ties)
            assert torch.equal(got, composed(arms, theta, u, epsilon))
            traced = _math.epsilon_greedy_argmax(arms, theta.clone().requires_grad_(), u, epsilon, ties)
            assert torch.equal(traced, got)  # the torch path agrees
    explored = u[:, 0] < 0.3
    assert 0 < int(explored.sum()) < R  # both branches were taken
    assert int(_math.epsilon_greedy_argmax(x, theta, u, 1.0, ties)[0]) == K - 1


def test_kernels_take_strided_views_like_copies():
    # A changing arm set reaches the agents as a view of the env's block (R, B, K, d)[:, b].
    matrix, _, theta = _problem(4, 6, 5)
    block = torch.randn(4, 3, 6, 5, generator=torch.Generator().manual_seed(1))
    view = block[:, 1]
    assert not view.is_contiguous()
    for fn, args in ((_math.optimistic_scores, (theta, matrix, 0.7)), (_math.scores, (theta,))):
        assert torch.equal(fn(view, *args), fn(view.contiguous(), *args))
    assert torch.equal(_math.quad_form(matrix, view), _math.quad_form(matrix, view.contiguous()))


@pytest.mark.parametrize(("R", "d"), [(10, 20), (7, 21), (33, 63)])
def test_ridge_update_both_paths(R, d):
    matrix, x, b = _problem(R, 1, d, seed=1)
    x, rewards = x[:, 0], torch.randn(R, generator=torch.Generator().manual_seed(2))
    inverse = torch.linalg.inv(matrix.double()).float()
    got = _math.ridge_update(inverse, b, x, rewards)  # V^-1, b, theta_hat after adding (x, r)
    design = matrix.double() + x.double()[:, :, None] * x.double()[:, None, :]
    b_want = b.double() + rewards.double()[:, None] * x.double()
    want = (torch.linalg.inv(design), b_want, torch.linalg.solve(design, b_want))
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g.double(), w, rtol=1e-4, atol=1e-5)
    _check_paths(_math.ridge_update, (inverse, b, x, rewards), got)


def test_matvec_and_scores_are_batch_size_invariant():
    # (torch.bmm of a matrix and a vector is not, at this very shape with torch 2.14: the reason the
    # CPU path is a compiled loop per replica.)
    matrix, x, v = _problem(10, 50, 20, seed=3)
    for fn, args in ((_math.matvec, (matrix, v)), (_math.scores, (x, v))):
        batch = fn(*args)
        for r in range(10):
            assert torch.equal(fn(*(a[r : r + 1] for a in args)), batch[r : r + 1])


def test_cpu_kernels_sum_in_the_documented_order():
    # The recorded regrets depend on the rounding, so the order of each sum is part of the contract:
    # the compiled loops (interleaved rows, four terms per pass) must give the bits of plain float32
    # arithmetic in index order, written here in numpy (one rounding per multiply and per add).
    matrix, x, v = _problem(4, 13, 21, seed=5)
    m, xn, vn = matrix.numpy(), x.numpy(), v.numpy()
    dots = np.zeros((4, 13), np.float32)  # x_k . v, summed over i = 0, 1, ...
    for i in range(21):
        dots = dots + xn[:, :, i] * vn[:, i : i + 1]
    assert np.array_equal(_math.scores(x, v).numpy(), dots)
    width = np.zeros((4, 13), np.float32)  # sum_i x_i (m_ii x_i + sum_{j>i} (2 m_ij) x_j)
    for i in range(21):
        bracket = m[:, i, i, None] * xn[:, :, i]
        for j in range(i + 1, 21):
            bracket = bracket + (np.float32(2) * m[:, i, j, None]) * xn[:, :, j]
        width = width + xn[:, :, i] * bracket
    assert np.array_equal(_math.quad_form(matrix, x).numpy(), width)


def test_random_argmax_breaks_ties_at_random_and_returns_unique_maxima():
    keys = torch.arange(200, dtype=torch.int64) * 7919
    values = torch.tensor([[0.0, 2.0, 2.0, 1.0]]).expand(200, 4).contiguous()
    picks = _math.random_argmax(values, keys, stream=5, counter=3)
    assert set(picks.tolist()) == {1, 2}  # only maximisers, both of them
    assert 60 < int((picks == 1).sum()) < 140  # Binomial(200, 1/2): mean 100, sd 7.1; 5.6 sd either side
    unique = torch.tensor([[0.0, 3.0, 2.0], [5.0, 1.0, 4.9]])
    assert _math.random_argmax(unique, keys[:2], 5, 3).tolist() == [1, 0]


def test_all_finite():
    assert _math.all_finite(torch.ones(3, 4))
    for bad in (float("nan"), float("inf"), -float("inf")):
        x = torch.ones(3, 4)
        x[2, 1] = bad
        assert not _math.all_finite(x)
        assert not _math.all_finite(x.requires_grad_())


@pytest.mark.parametrize(("R", "d"), [(10, 20), (7, 21), (33, 63)])
def test_square_root_update_both_paths(R, d):
    matrix, x, b = _problem(R, 1, d, seed=4)
    x, rewards = x[:, 0], torch.randn(R, generator=torch.Generator().manual_seed(5))
    root = torch.linalg.cholesky(torch.linalg.inv(matrix.double())).float()  # S S^T = V^-1, not upper
    got = _math.square_root_update(root, b, x, rewards)  # S, b, theta_hat after adding (x, r)
    design = matrix.double() + x.double()[:, :, None] * x.double()[:, None, :]
    b_want = b.double() + rewards.double()[:, None] * x.double()
    factor = got[0].double()
    torch.testing.assert_close(factor @ factor.mT, torch.linalg.inv(design), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(got[1].double(), b_want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got[2].double(), torch.linalg.solve(design, b_want), rtol=1e-4, atol=1e-5)
    _check_paths(_math.square_root_update, (root, b, x, rewards), got)
    _check_paths(_math.potter_update, (root, x), got[0], grad_arg=0)


@pytest.mark.parametrize("update", ["ridge", "square_root"])
@pytest.mark.parametrize("cached_views", [False, True])
def test_played_updates_in_place_equal_their_composition(update, cached_views, monkeypatch):
    # An agent's round in one call, in place: the played rows, the update and the finiteness check, same bits.
    R, K, d = 6, 9, 7
    matrix, contexts, b = _problem(R, K, d, seed=6)
    start = torch.linalg.inv(matrix.double()).float()
    if update == "square_root":
        start = torch.linalg.cholesky(start.double()).float()
    actions = torch.randint(0, K, (R,), generator=torch.Generator().manual_seed(7))
    rewards = torch.randn(R, generator=torch.Generator().manual_seed(8))
    played = getattr(_math, f"played_{update}_update_")
    views = _math.NumpyViews() if cached_views else None
    state = (start.clone(), b.clone(), torch.zeros(R, d))
    objects = tuple(map(id, state))
    assert played(*state, contexts, actions, rewards, views) is True
    assert tuple(map(id, state)) == objects  # the same tensors, overwritten
    want = getattr(_math, f"{update}_update")(start, b, _math.chosen_rows(contexts, actions), rewards)
    assert all(torch.equal(g, w) for g, w in zip(state, want, strict=True))
    if cached_views:  # a second round through the cached views is a second update of the same tensors
        assert played(*state, contexts, actions, rewards, views) is True
        twice = getattr(_math, f"{update}_update")(*want[:2], _math.chosen_rows(contexts, actions), rewards)
        assert all(torch.equal(g, w) for g, w in zip(state, twice, strict=True))
    # The torch path (CUDA, autograd) gives the same values to rounding.
    monkeypatch.setattr(_math, "_kernel_ok", lambda *tensors: False)
    via_torch = (start.clone(), b.clone(), torch.zeros(R, d))
    assert played(*via_torch, contexts, actions, rewards) is True
    for t, g in zip(via_torch, want, strict=True):
        torch.testing.assert_close(t, g, rtol=1e-5, atol=1e-6)
    monkeypatch.undo()
    # A non-finite reward makes theta_hat non-finite, and the flag says so.
    rewards[2] = float("nan")
    assert played(start.clone(), b.clone(), torch.zeros(R, d), contexts, actions, rewards) is False


def test_numpy_views_follow_replaced_tensors_and_start_empty_in_copies():
    import copy

    views = _math.NumpyViews()
    a, b = torch.zeros(3), torch.ones(2)
    first = views(a, b)
    assert views(a, b) is first  # cached
    c = torch.full((3,), 2.0)
    assert views(c, b)[0][0] == 2.0  # a replaced tensor gets a new view
    twin = copy.deepcopy(views)
    assert twin._tensors == () and twin._arrays is None
    # Tensors the kernels cannot take (float64, or needing gradients) give None: the torch path.
    assert views(torch.zeros(3, dtype=torch.float64), b) is None
    assert views(torch.zeros(3, requires_grad=True), b) is None
    assert views(a, b)[0] is not None
