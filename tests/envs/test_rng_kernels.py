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

