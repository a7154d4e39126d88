"""``bandit_gym.rng``: the counter-based generator behind every env and agent (public API)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bandit_gym import rng
from bandit_gym.rng import Stream

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def _mix64_reference(x: int) -> int:
    """SplitMix64 finaliser in Python integers (the published algorithm)."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _words_reference(key: int, stream: int, counter: int, n: int) -> list[int]:
    """Word j of counter (stream, counter)'s draws: mix64(key + mix64(stream << 40 + counter) + j golden), as uint64."""
    start = (key + _mix64_reference(((stream << 40) + counter) & MASK)) & MASK
    return [_mix64_reference((start + j * GOLDEN) & MASK) for j in range(n)]


def test_mix64_matches_the_published_algorithm():
    values = [0, 1, 2, 12345678901234567, (1 << 63) - 1, (1 << 63), (1 << 64) - 1]
    expected = np.array([_mix64_reference(v) for v in values], dtype=np.uint64)
    as_int64 = torch.from_numpy(np.array(values, dtype=np.uint64).view(np.int64))
    np.testing.assert_array_equal(rng.mix64(as_int64).numpy().view(np.uint64), expected)


def test_random_words_are_splitmix64_from_a_per_block_start():
    keys = rng.seed_to_key([0, 7])
    words = rng.random_words(keys, Stream.CONTEXT, 17, 300).numpy().view(np.uint64)  # (2, 300)
    for r, key in enumerate(keys.numpy().view(np.uint64).tolist()):
        assert words[r].tolist() == _words_reference(key, int(Stream.CONTEXT), 17, 300)


def test_normals_are_float64_box_muller_of_the_words_rounded_once():
    keys = rng.seed_to_key([11, 12, 13])
    n = 4001  # odd: the last word gives one draw
    words = rng.random_words(keys, Stream.CONTEXT, 5, (n + 1) // 2).numpy().view(np.uint64)
    radius = np.sqrt(-2.0 * np.log(((words >> np.uint64(32)).astype(np.float64) + 0.5) * 2.0**-32))
    angle = (words & np.uint64(0xFFFFFFFF)).astype(np.float64) * (2.0 * math.pi * 2.0**-32)
    want = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)], axis=1)[:, :n]
    # numpy's and torch's float64 log/cos/sin differ by an ulp at most; after the rounding to float32
    # the draws agree to one float32 ulp.
    np.testing.assert_allclose(rng.normal(keys, Stream.CONTEXT, 5, (n,)).numpy(), want, rtol=2**-23, atol=2**-40)


def test_unit_normal_rows_are_normals_scaled_to_unit_norm():
    keys = rng.seed_to_key(range(4))
    z = rng.normal(keys, Stream.CONTEXT, 2, (3, 7, 5)).double()
    got = rng.unit_normal(keys, Stream.CONTEXT, 2, (3, 7, 5))
    torch.testing.assert_close(got.double(), z / z.norm(dim=-1, keepdim=True), rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(got.double().norm(dim=-1), torch.ones(4, 3, 7, dtype=torch.float64))


def test_replica_r_draws_the_numbers_of_seed_s_plus_r():
    batch_keys, single_keys = rng.seed_to_key(range(10, 20)), rng.seed_to_key(14)
    assert torch.equal(rng.random_words(batch_keys, 2, 3, 35)[4:5], rng.random_words(single_keys, 2, 3, 35))
    assert torch.equal(rng.uniform(batch_keys, 2, 3, (7, 5))[4:5], rng.uniform(single_keys, 2, 3, (7, 5)))
    torch.testing.assert_close(rng.normal(batch_keys, 2, 3, (7, 5))[4:5], rng.normal(single_keys, 2, 3, (7, 5)))


def test_seeds_are_any_non_negative_integer():
    assert not torch.equal(rng.seed_to_key(2**64), rng.seed_to_key(0))  # folded, never wrapped onto 0
    assert not torch.equal(rng.seed_to_key(2**63), rng.seed_to_key(2**63 + 2**64))
    assert torch.equal(rng.seed_to_key([3, 2**70]), torch.cat([rng.seed_to_key(3), rng.seed_to_key(2**70)]))
    for bad in (-1, 0.5, "1", True, None):
        with pytest.raises(ValueError, match=f"seed must be a non-negative integer, got {bad!r}"):
            rng.seed_to_key(bad if bad is not None else [None])


def test_normal_draws_have_standard_normal_moments():
    # n = 2e5 draws: s.e. of the mean 1/sqrt(n) = 0.0022, of the variance sqrt(2/n) = 0.0032,
    # of the 4th moment sqrt(96/n) = 0.022; allow 4 s.e.
    z = rng.normal(rng.seed_to_key(range(200)), 2, 0, (1000,)).double().flatten()
    n = z.numel()
    assert abs(z.mean().item()) < 4 / math.sqrt(n)
    assert abs(z.var().item() - 1) < 4 * math.sqrt(2 / n)
    assert abs((z**4).mean().item() - 3) < 4 * math.sqrt(96 / n)


def test_uniform_draws_are_uniform():
    u = rng.uniform(rng.seed_to_key(range(100)), 3, 5, (1000,)).flatten().numpy()
    assert u.min() >= 0 and u.max() < 1
    counts, _ = np.histogram(u, bins=10, range=(0, 1))
    chi2 = ((counts - u.size / 10) ** 2 / (u.size / 10)).sum()
    assert chi2 < 27.9  # chi-square with 9 degrees of freedom: P(> 27.9) = 0.001


@pytest.mark.parametrize(("a", "b"), [((1, 2, 0), (1, 3, 0)), ((1, 2, 0), (1, 2, 1)), ((1, 2, 0), (2, 2, 0))])
def test_seed_stream_and_counter_each_change_the_draws(a, b):
    x, y = (rng.normal(rng.seed_to_key(seed), stream, counter, (50,)) for seed, stream, counter in (a, b))
    assert abs(torch.corrcoef(torch.cat([x, y]))[0, 1].item()) < 0.5  # |r| of independent draws: s.e. 0.14


def test_permutations_are_permutations():
    perms = rng.permutation(rng.seed_to_key(range(4)), 2, 100)
    for row in perms:
        assert sorted(row.tolist()) == list(range(100))
    assert not torch.equal(perms[0], perms[1])


def test_block_draws_give_round_t_its_row_of_block_t_over_block():
    keys = rng.seed_to_key(range(3))
    draws = rng.ChunkDraws("normal", Stream.REWARD, (2,), chunk_rounds=8)
    for t in (0, 7, 8, 21):
        assert torch.equal(draws(keys, t), rng.normal(keys, Stream.REWARD, t // 8, (8, 2))[:, t % 8])


def test_scaled_block_draws_are_the_same_numbers():
    # A synthetic env's reward noise is scaled once per chunk: it must be the tensor draws times the scale in
    # float32, bit for bit. (Their numpy view, a kernel: tests/envs/test_kernels.py.)
    keys = rng.seed_to_key(range(3))
    plain = rng.ChunkDraws("normal", Stream.REWARD, (), chunk_rounds=8)
    scaled = rng.ChunkDraws("normal", Stream.REWARD, (), chunk_rounds=8, scale=0.7)
    for t in (0, 1, 7, 8, 21, 3):
        assert torch.equal(scaled(keys, t), 0.7 * plain(keys, t))


@pytest.mark.parametrize("kind", ["normal", "uniform"])
def test_block_draws_kept_block_gives_the_definitions_rows_bit_for_bit(monkeypatch, kind):
    # With the kernels on a chunk is drawn once and kept (bandit_gym._rng_kernels.chunk_draws); off, every round
    # draws its chunk. The rows must be the same bits, also for new keys and rounds that go back to a chunk.
    keys, other = rng.seed_to_key(range(3)), rng.seed_to_key(range(5, 8))
    kept, drawn = (rng.ChunkDraws(kind, Stream.REWARD, (2,), chunk_rounds=8, scale=0.7) for _ in range(2))
    for key, t in ((keys, 0), (keys, 7), (keys, 8), (keys, 21), (other, 21), (keys, 3), (keys, 4)):
        monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
        fast = kept(key, t)
        assert kept._cache is not None and kept._cache[1] == t // 8  # the chunk is in hand
        monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
        assert torch.equal(fast, drawn(key, t)) and drawn._cache is None  # the definition keeps nothing
