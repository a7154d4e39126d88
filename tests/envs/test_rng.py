"""The counter-based generator behind every env and agent."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bandit_gym import _rng


def _mix64_reference(x: int) -> int:
    """SplitMix64 finaliser in Python integers (the published algorithm)."""
    mask = (1 << 64) - 1
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
    return x ^ (x >> 31)


def test_mix64_matches_reference_in_torch_and_numpy():
    values = [0, 1, 2, 12345678901234567, (1 << 63) - 1, (1 << 63), (1 << 64) - 1]
    expected = np.array([_mix64_reference(v) for v in values], dtype=np.uint64)
    as_int64 = torch.from_numpy(np.array(values, dtype=np.uint64).view(np.int64))
    np.testing.assert_array_equal(_rng.mix64(as_int64).numpy().view(np.uint64), expected)
    np.testing.assert_array_equal(_rng._mix64_np(np.array(values, dtype=np.uint64)), expected)


def test_numpy_and_torch_paths_give_the_same_bits():
    # The CPU path hashes in numpy; the CUDA path runs the same arithmetic in torch.
    keys = _rng.seed_to_key(torch.arange(5))
    cpu_bits = _rng._block_bits(keys, _rng.STREAM_CONTEXT, 17, 300)
    offset = _rng.mix64(torch.tensor((_rng.STREAM_CONTEXT << 40) + 17))
    assert offset.item() == _rng._offset(_rng.STREAM_CONTEXT, 17)
    torch_bits = _rng.mix64((keys + offset)[:, None] + torch.arange(300) * _rng._GOLDEN)
    assert torch.equal(cpu_bits, torch_bits)


def _box_muller_reference(keys: torch.Tensor, stream: int, counter: int, n: int) -> np.ndarray:
    """Box-Muller of the block's words in numpy float64 (its own log, cos and sin): ``(R, n)``."""
    half = (n + 1) // 2
    bits = _rng._block_bits(keys, stream, counter, half).numpy().view(np.uint64)  # (R, half)
    radius = np.sqrt(-2.0 * np.log(((bits >> np.uint64(32)).astype(np.float64) + 0.5) * 2.0**-32))
    angle = (bits & np.uint64(0xFFFFFFFF)).astype(np.float64) * (2.0 * math.pi * 2.0**-32)
    return np.concatenate([radius * np.cos(angle), radius * np.sin(angle)], axis=1)[:, :n]


@pytest.mark.parametrize("n", [1, 7, 4000, 40_000])
def test_compiled_normals_are_float64_box_muller_rounded_once(n):
    # The kernel's own log, sine and cosine series: every draw must be the float32 rounding of the
    # float64 formula (a series off by more than ~1e-9 relative would miss in a fraction of 80,000).
    keys = _rng.seed_to_key(torch.arange(3) + 11)
    want = _box_muller_reference(keys, _rng.STREAM_CONTEXT, 5, n).astype(np.float32)
    np.testing.assert_array_equal(_rng.normal(keys, _rng.STREAM_CONTEXT, 5, (n,)).numpy(), want)


def test_compiled_box_muller_at_the_extremes_of_the_words():
    # h = 0 and 2^32 - 1 are the largest and smallest radius; the angle's quarter-turn boundaries
    # (l near k 2^30 +- 2^29, and the wrap from turn 4 to 0) are where the reduction could slip.
    highs = [0, 1, 2**31, 2**32 - 1]
    lows = [0, 1, 2**29 - 1, 2**29, 2**30 - 1, 2**30, 2**31, 3 * 2**30 + 2**29, 2**32 - 2**29 - 1, 2**32 - 2**29,
            2**32 - 1]
    words = np.array([(h << 32) | low for h in highs for low in lows], dtype=np.uint64)
    half = len(words)
    z = np.empty(2 * half)
    scratch = (np.empty(half), np.empty(half), np.empty(half, np.int64), np.empty(half, np.int32),
               np.empty(half, np.int32))
    _rng._box_muller(words, z[:half], z[half:], *scratch)
    radius = np.sqrt(-2.0 * np.log(((words >> np.uint64(32)).astype(np.float64) + 0.5) * 2.0**-32))
    angle = (words & np.uint64(0xFFFFFFFF)).astype(np.float64) * (2.0 * math.pi * 2.0**-32)
    # numpy's cos of the rounded angle is off by ~1e-16 absolute: near a zero that is the bound.
    np.testing.assert_allclose(z, np.concatenate([radius * np.cos(angle), radius * np.sin(angle)]),
                               rtol=1e-14, atol=1e-14)


def test_unit_normal_rows_are_the_float64_normals_scaled_then_rounded():
    keys = _rng.seed_to_key(torch.arange(4))
    z = _box_muller_reference(keys, _rng.STREAM_CONTEXT, 2, 3 * 7 * 5).reshape(4, 3, 7, 5)
    want = (z / np.linalg.norm(z, axis=-1, keepdims=True)).astype(np.float32)
    got = _rng.unit_normal(keys, _rng.STREAM_CONTEXT, 2, (3, 7, 5)).numpy()
    # numpy's norm sums in another order than the kernel: allow one float32 ulp.
    np.testing.assert_allclose(got, want, rtol=2**-23, atol=0)
    assert np.abs(np.linalg.norm(got.astype(np.float64), axis=-1) - 1).max() < 4 * 2**-24


def test_draws_of_a_replica_do_not_depend_on_the_batch():
    keys = _rng.seed_to_key(torch.arange(10, 20))
    batch = _rng.normal(keys, 2, 3, (7, 5))
    single = _rng.normal(keys[4:5], 2, 3, (7, 5))
    assert torch.equal(batch[4:5], single)


def test_normal_draws_have_standard_normal_moments():
    # n = 2e5 draws: s.e. of the mean 1/sqrt(n) = 0.0022, of the variance sqrt(2/n) = 0.0032,
    # of the 4th moment sqrt(96/n) = 0.022; allow 4 s.e.
    z = _rng.normal(_rng.seed_to_key(torch.arange(200)), 2, 0, (1000,)).double().flatten()
    n = z.numel()
    assert abs(z.mean().item()) < 4 / math.sqrt(n)
    assert abs(z.var().item() - 1) < 4 * math.sqrt(2 / n)
    assert abs((z**4).mean().item() - 3) < 4 * math.sqrt(96 / n)


def test_uniform_draws_are_uniform():
    u = _rng.uniform(_rng.seed_to_key(torch.arange(100)), 3, 5, (1000,)).flatten().numpy()
    assert u.min() >= 0 and u.max() < 1
    counts, _ = np.histogram(u, bins=10, range=(0, 1))
    # chi-square with 9 degrees of freedom: P(> 27.9) = 0.001
    chi2 = ((counts - u.size / 10) ** 2 / (u.size / 10)).sum()
    assert chi2 < 27.9


@pytest.mark.parametrize(("a", "b"), [((1, 2, 0), (1, 3, 0)), ((1, 2, 0), (1, 2, 1)), ((1, 2, 0), (2, 2, 0))])
def test_seed_stream_and_counter_each_change_the_draws(a, b):
    def draw(seed, stream, counter):
        return _rng.normal(_rng.seed_to_key(torch.tensor([seed])), stream, counter, (50,))

    x, y = draw(*a), draw(*b)
    assert abs(torch.corrcoef(torch.stack([x[0], y[0]]))[0, 1].item()) < 0.5
    assert not torch.equal(x, y)


def test_permutations_are_permutations():
    perms = _rng.permutation_keys(_rng.seed_to_key(torch.arange(4)), 2, 100)
    for row in perms:
        assert sorted(row.tolist()) == list(range(100))
    assert not torch.equal(perms[0], perms[1])
