"""``bandit_gym._rng_kernels``: the one compiled SplitMix64 and Box-Muller, against ``bandit_gym.rng``'s torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bandit_gym import rng
from bandit_gym.rng import Stream

KEYS = rng.seed_to_key(list(range(5)) + [2**40, 123456789])


@pytest.mark.parametrize("shape", [(7,), (100, 20), (3, 5)])
def test_approx_normal_kernel_is_within_float32_trig_of_normal(monkeypatch, shape):
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    for counter in (0, 1, 10_000):
        # The kernel's float32 cosine and sine of a float32 angle (<= 2 pi, error <= 2 pi 2^-24) times a
        # radius <= 6.8: at most ~1e-6 from torch's float64 Box-Muller rounded once.
        got = rng.approx_normal(KEYS, Stream.SAMPLE, counter, shape)
        want = rng.normal(KEYS, Stream.SAMPLE, counter, shape)
        assert got.shape == want.shape == (len(KEYS), *shape) and got.dtype == torch.float32
        torch.testing.assert_close(got, want, rtol=0, atol=1.5e-6)
        assert not torch.equal(got, want)  # the loop ran (float32 trig), not the definition


def test_approx_normal_with_kernels_off_is_normal(monkeypatch):
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    assert torch.equal(rng.approx_normal(KEYS, Stream.SAMPLE, 3, (50, 4)), rng.normal(KEYS, Stream.SAMPLE, 3, (50, 4)))


def test_scalar_mixer_is_mix64_on_one_word():
    # rng's Python-integer SplitMix64 (seed folding, counter offsets) and its torch one give the same bits.
    values = [0, 1, 2**63 - 1, 2**63, 2**64 - 1, 0x123456789ABCDEF0]
    tensor = torch.tensor([rng._as_int64(v) for v in values], dtype=torch.int64)
    want = [int(x) for x in rng.mix64(tensor).numpy().view(np.uint64)]
    assert [rng._mix64_int(v) for v in values] == want



@pytest.mark.parametrize("shape", [(), (1,), (7,), (20, 32)])
def test_uniform_kernel_gives_the_definitions_floats_bit_for_bit(monkeypatch, shape):
    # The top 24 bits of a word are exact in float32 and so is the product by 2**-24: the loop and torch agree
    # to the bit, whatever the counter or the key (the largest word's float, 1 - 2**-24, included in range).
    for counter in (0, 1, 10_000):
        monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
        got = rng.uniform(KEYS, Stream.EXPLORE, counter, shape)
        monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
        want = rng.uniform(KEYS, Stream.EXPLORE, counter, shape)
        assert got.shape == want.shape == (len(KEYS), *shape) and got.dtype == want.dtype == torch.float32
        assert torch.equal(got, want)
        assert bool((got >= 0).all()) and bool((got < 1).all())


def test_uniform_kernel_is_the_one_that_runs_on_cpu(monkeypatch):
    # With the switch on, rng.uniform hands CPU keys to the loop (a stand-in kernel shows it was called).
    from bandit_gym import _rng_kernels

    calls = []
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "1")
    monkeypatch.setattr(_rng_kernels, "uniform", lambda keys, offset, shape: calls.append(offset) or
                        torch.zeros(len(keys), *shape))
    assert torch.equal(rng.uniform(KEYS, Stream.EXPLORE, 0, (3,)), torch.zeros(len(KEYS), 3)) and len(calls) == 1
    monkeypatch.setenv("BANDIT_GYM_KERNELS", "0")
    assert not torch.equal(rng.uniform(KEYS, Stream.EXPLORE, 0, (3,)), torch.zeros(len(KEYS), 3))
    assert len(calls) == 1
