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


@pytest.mark.parametrize("n", [1, 7, 4000])
def test_compiled_split_gives_the_same_floats_as_numpy(n):
    # normal() on CPU hashes and splits each word in one compiled pass; it must equal the numpy path.
    keys = _rng.seed_to_key(torch.arange(3) + 11)
    high, low = _rng._split_block(keys, _rng.STREAM_CONTEXT, 5, n)
    want_high, want_low = _rng._split_words(_rng._block_bits(keys, _rng.STREAM_CONTEXT, 5, n))
    assert torch.equal(high, want_high) and torch.equal(low, want_low)


def test_numpy_and_torch_paths_split_words_alike():
    # The CPU path reads the uint32 halves of each word; the CUDA path shifts and masks in torch.
    bits = _rng._block_bits(_rng.seed_to_key(torch.arange(4)), _rng.STREAM_REWARD, 3, 257)  # (4, 257)
    high, low = _rng._split_words(bits)
    assert torch.equal(high, _rng._shift_right(bits, 32).to(torch.float32))
    assert torch.equal(low, (bits & _rng._LOW32).to(torch.float32))
    assert high.shape == low.shape == (4, 257)


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
