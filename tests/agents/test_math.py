"""Shared batched math: exact answers, and the same bits whatever the batch size."""

from __future__ import annotations

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
