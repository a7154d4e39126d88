"""Counter-based random numbers, batched over replicas.

Every random number an environment uses is a pure function of
``(replica key, stream, counter, index)``, computed with the SplitMix64 mixer
in plain int64 tensor arithmetic. This is what lets one batched environment
simulate ``R`` independent replicas with no Python loop over replicas, while
replica ``i`` still reproduces, bit for bit on the same device, the single env
seeded with the derived seed (see :func:`seed_to_key`).

Integer hashing is exact on every device, so CPU and CUDA draw the same bits. On CPU
the hashing runs in numpy's uint64 arithmetic or in compiled (numba) kernels, on CUDA in
torch; ``tests/envs/test_rng.py`` checks that they give the same bits. Normal draws
(Box-Muller, two per word) are computed in float64 and rounded once to float32: on CPU by
one compiled kernel whose logarithm, sine and cosine are float64 series (the draws equal
numpy's float64 formula rounded to float32, tested), on CUDA by torch's float64 functions,
so the two devices agree up to that one rounding. :func:`unit_normal` scales rows to unit
norm before the rounding.

References:
    Steele, Lea and Flood (2014), "Fast splittable pseudorandom number
    generators" (SplitMix64). Salmon et al. (2011), "Parallel random numbers:
    as easy as 1, 2, 3" (counter-based generators).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
from numba import njit

# SplitMix64 constants written as signed int64 (torch has no uint64 arithmetic);
# int64 multiplication wraps modulo 2**64, exactly like uint64.
_GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)
_MUL1 = 0xBF58476D1CE4E5B9 - (1 << 64)
_MUL2 = 0x94D049BB133111EB - (1 << 64)
_LOW32 = (1 << 32) - 1
_TWO_PI = 2.0 * math.pi

# Streams: independent sequences for the different uses of randomness.
STREAM_INSTANCE = 1  # the problem instance (theta*, a fixed arm set)
STREAM_CONTEXT = 2  # per-round arm features / row order
STREAM_REWARD = 3  # per-round reward noise
STREAM_EPISODE = 4  # derivation of the next episode's key


def _shift_right(x: torch.Tensor, k: int) -> torch.Tensor:
    """Logical right shift of int64 viewed as uint64 (torch's ``>>`` is arithmetic)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def mix64(x: torch.Tensor) -> torch.Tensor:
    """SplitMix64 finaliser: a bijection of 64-bit words with full avalanche."""
    x = (x ^ _shift_right(x, 30)) * _MUL1
    x = (x ^ _shift_right(x, 27)) * _MUL2
    return x ^ _shift_right(x, 31)


_NP_GOLDEN, _NP_MUL1, _NP_MUL2 = (np.uint64(c + (1 << 64)) for c in (_GOLDEN, _MUL1, _MUL2))
_NP_SHIFTS = tuple(np.uint64(k) for k in (30, 27, 31))


def _mix64_np(x: np.ndarray) -> np.ndarray:
    """:func:`mix64` on a numpy uint64 array, in place (array arithmetic wraps silently)."""
    s30, s27, s31 = _NP_SHIFTS
    x ^= x >> s30
    x *= _NP_MUL1
    x ^= x >> s27
    x *= _NP_MUL2
    x ^= x >> s31
    return x


def seed_to_key(seeds: torch.Tensor) -> torch.Tensor:
    """Map integer seeds ``(R,)`` to replica keys ``(R,)``.

    The seed derivation of the whole package: a single env reset with
    ``seed=s`` uses key ``seed_to_key(s)``; replica ``i`` of a batched env
    reset with ``seed=s`` uses ``seed_to_key(s + i)``.
    """
    return mix64(seeds.to(torch.int64) * _GOLDEN + 0x5EED)


def next_episode_key(keys: torch.Tensor) -> torch.Tensor:
    """Key of the next episode after an unseeded ``reset`` (deterministic)."""
    return mix64(keys ^ mix64(torch.full_like(keys, STREAM_EPISODE)))


def _offset(stream: int, counter: int) -> int:
    """Pseudo-random 64-bit start of the ``(stream, counter)`` block, as a signed int64 value."""
    x, mask = ((stream << 40) + counter) & ((1 << 64) - 1), (1 << 64) - 1
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
    x ^= x >> 31
    return x - (1 << 64) if x >= (1 << 63) else x


def _block_bits(keys: torch.Tensor, stream: int, counter: int, n: int) -> torch.Tensor:
    """``n`` random 64-bit words per replica: ``(R,)`` keys -> ``(R, n)`` int64.

    Word ``j`` is ``mix64(key + offset(stream, counter) + j * golden)``: SplitMix64 started at
    a pseudo-random point per replica, stream and round.
    """
    offset = _offset(stream, counter)
    if keys.device.type == "cpu":
        start = keys.numpy().view(np.uint64) + np.uint64(offset & ((1 << 64) - 1))  # (R,)
        words = start[:, None] + _np_index(n)  # (R, n)
        return torch.from_numpy(_mix64_np(words).view(np.int64))
    index = torch.arange(n, dtype=torch.int64, device=keys.device) * _GOLDEN  # (n,)
    return mix64((keys + offset)[:, None] + index)  # (R, n)


@functools.lru_cache(maxsize=16)
def _np_index(n: int) -> np.ndarray:
    """Offsets ``j * golden`` of the words ``j < n`` of a block, ``(n,)`` uint64 (read-only)."""
    index = np.arange(n, dtype=np.uint64) * _NP_GOLDEN
    index.flags.writeable = False
    return index


_U64 = np.uint64
_LN2 = math.log(2.0)
_SQRT2 = math.sqrt(2.0)
_ANGLE_UNIT = _TWO_PI * 2.0**-32  # radians per step of a 32-bit angle
_MANTISSA, _ONE_BITS = 0x000FFFFFFFFFFFFF, 0x3FF0000000000000
# Taylor coefficients of (sin(x) / x - 1) / x^2 (to x^15) and of (cos(x) - 1) / x^2 (to x^16),
# highest first: on |x| <= pi / 4 the truncation errors are below 1e-16.
_SIN = (-1 / 1307674368000, 1 / 6227020800, -1 / 39916800, 1 / 362880, -1 / 5040, 1 / 120, -1 / 6)
_COS = (1 / 20922789888000, -1 / 87178291200, 1 / 479001600, -1 / 3628800, 1 / 40320, -1 / 720, 1 / 24, -1 / 2)
# 1 / (2k + 1) for k = 8, ..., 0: atanh(s) / s = sum_k s^2k / (2k + 1), highest first.
_ATANH = (1 / 17, 1 / 15, 1 / 13, 1 / 11, 1 / 9, 1 / 7, 1 / 5, 1 / 3, 1.0)


@njit(inline="always")
def _horner(coefficients, x):
    """``sum_i coefficients[i] x^(n - 1 - i)``, highest power first (Horner's rule)."""
    value = coefficients[0]
    for c in coefficients[1:]:
        value = value * x + c
    return value


@njit(nogil=True, cache=True, error_model="numpy")
def _hash_row(x0, words):
    """``words[j] = mix64(x0 + j golden)``: one replica's block of 64-bit words (uint64)."""
    for j in range(words.shape[0]):
        x = x0 + _U64(j) * _NP_GOLDEN
        x ^= x >> _U64(30)
        x *= _NP_MUL1
        x ^= x >> _U64(27)
        x *= _NP_MUL2
        words[j] = x ^ (x >> _U64(31))


@njit(nogil=True, cache=True, error_model="numpy")
def _box_muller(words, cosines, sines, radius, exponent, mantissa, reduced, quadrant):
    """``2 half`` standard normals from ``half`` 64-bit words (Box-Muller), into ``cosines`` and
    ``sines`` (float64, ``half`` each).

    Word ``j``'s upper 32 bits ``h`` give ``u1 = (h + 1/2) 2^-32`` in ``(0, 1)``, its lower 32
    bits ``l`` the angle ``2 pi l 2^-32``; ``cosines[j] = sqrt(-2 ln u1) cos(angle)`` and
    ``sines[j] = sqrt(-2 ln u1) sin(angle)``. The logarithm, sine and cosine are series in
    float64, accurate to about 1e-16, in passes of plain arithmetic that the compiler
    vectorises; rounded to float32, the draws equal numpy's float64 ``log``, ``cos`` and ``sin``
    of the same words rounded to float32 (``tests/envs/test_rng.py``). The scratch arrays
    hold ``half`` entries each.
    """
    half = words.shape[0]
    bits = radius.view(np.int64)
    mantissa_value = mantissa.view(np.float64)
    for j in range(half):  # split each word into h + 1/2 and a quarter-turn-reduced angle
        x = words[j]
        # h - 2^31 fits an int32, whose conversion to float64 vectorises; the sum is exact.
        radius[j] = np.float64(np.int32(np.int64(x >> _U64(32)) - 2147483648)) + 2147483648.5
        low = np.int64(x & _U64(0xFFFFFFFF))
        turn = (low + (1 << 29)) >> 30  # the nearest quarter turn, 0..4
        reduced[j] = np.int32(low - (turn << 30))  # angle - turn pi / 2, in steps of 2 pi 2^-32
        quadrant[j] = np.int32(turn & 3)
    for j in range(half):  # h + 1/2 = m 2^e with m in [1, 2), read off the float64 bits
        b = bits[j]
        exponent[j] = np.float64(np.int32((b >> 52) - 1023))
        mantissa[j] = (b & _MANTISSA) | _ONE_BITS
    for j in range(half):  # radius = sqrt(-2 ln u1), ln m = 2 atanh(s), s = (m - 1) / (m + 1)
        m = mantissa_value[j]
        e = exponent[j]
        if m > _SQRT2:  # m in [sqrt(1/2), sqrt(2)): |s| <= 0.172, and the series to s^17 suffices
            m *= 0.5
            e += 1.0
        s = (m - 1.0) / (m + 1.0)
        radius[j] = math.sqrt(-2.0 * ((e - 32.0) * _LN2 + 2.0 * s * _horner(_ATANH, s * s)))
    for j in range(half):  # cos and sin of turn pi / 2 + x, |x| <= pi / 4
        x = np.float64(reduced[j]) * _ANGLE_UNIT
        x2 = x * x
        sin_x = x + x * x2 * _horner(_SIN, x2)
        cos_x = 1.0 + x2 * _horner(_COS, x2)
        k = quadrant[j]
        odd = (k & 1) != 0
        # cos(x + k pi / 2) is cos x, -sin x, -cos x, sin x; sin(x + k pi / 2) is sin x, cos x, -sin x, -cos x.
        # Signs as arithmetic, not branches: the loop then vectorises.
        cos_sign = 1.0 - 2.0 * np.float64(((k + 1) >> 1) & 1)
        sin_sign = 1.0 - 2.0 * np.float64((k >> 1) & 1)
        cosines[j] = radius[j] * (cos_sign * (sin_x if odd else cos_x))
        sines[j] = radius[j] * (sin_sign * (cos_x if odd else sin_x))


@njit(nogil=True, cache=True, error_model="numpy")
def _scratch(n):
    """Work arrays of :func:`_normal_row` for ``n`` draws per replica."""
    half = (n + 1) // 2
    return (np.empty(half, np.uint64), np.empty(2 * half, np.float64), np.empty(half, np.float64),
            np.empty(half, np.float64), np.empty(half, np.int64), np.empty(half, np.int32), np.empty(half, np.int32),
            np.empty(n, np.float64))


@njit(nogil=True, cache=True, error_model="numpy")
def _normal_row(x0, n, dim, out, scratch):
    """One replica's ``n`` draws from the words hashed from ``x0`` into ``out`` (float32, 1-D); with
    ``dim > 0`` each run of ``dim`` entries is scaled to unit norm in float64, before the one rounding."""
    words, z, radius, exponent, mantissa, reduced, quadrant, norms = scratch
    _hash_row(x0, words)
    half = words.shape[0]
    _box_muller(words, z[:half], z[half:], radius, exponent, mantissa, reduced, quadrant)
    if dim == 0:
        for j in range(n):
            out[j] = np.float32(z[j])
        return
    rows = n // dim
    total = norms[:rows]  # the squared norm of each row, summed in index order
    row = 0
    while row + 4 <= rows:  # four rows side by side: four independent chains of adds, not one
        b0, s0, s1, s2, s3 = row * dim, 0.0, 0.0, 0.0, 0.0
        for i in range(b0, b0 + dim):
            s0 += z[i] * z[i]
            s1 += z[i + dim] * z[i + dim]
            s2 += z[i + 2 * dim] * z[i + 2 * dim]
            s3 += z[i + 3 * dim] * z[i + 3 * dim]
        total[row], total[row + 1], total[row + 2], total[row + 3] = s0, s1, s2, s3
        row += 4
    for tail in range(row, rows):
        s0 = 0.0
        for i in range(tail * dim, (tail + 1) * dim):
            s0 += z[i] * z[i]
        total[tail] = s0
    for row in range(rows):
        scale = 1.0 / math.sqrt(total[row])
        for i in range(row * dim, (row + 1) * dim):
            out[i] = np.float32(z[i] * scale)


@njit(nogil=True, cache=True, error_model="numpy")
def _normal_kernel(start, n, dim, out):
    """``out[r]`` (``n`` float32) gets replica ``r``'s draws, from the words hashed from ``start[r]``."""
    scratch = _scratch(n)
    for r in range(start.shape[0]):
        _normal_row(start[r], n, dim, out[r], scratch)


def start_words(keys: torch.Tensor, stream: int, counter: int) -> np.ndarray:
    """Where each replica's ``(stream, counter)`` block of words starts: ``(R,)`` uint64, for CPU kernels."""
    return keys.numpy().view(np.uint64) + np.uint64(_offset(stream, counter) & ((1 << 64) - 1))


def _normal_block(keys: torch.Tensor, stream: int, counter: int, n: int, dim: int) -> torch.Tensor:
    """``n`` draws per replica, ``(R, n)`` float32; runs of ``dim`` scaled to unit norm when ``dim > 0``."""
    if keys.device.type == "cpu":
        out = np.empty((len(keys), n), np.float32)
        _normal_kernel(start_words(keys, stream, counter), n, dim, out)
        return torch.from_numpy(out)
    # Elsewhere the same formula in torch's float64, rounded once: equal to the CPU's up to that rounding.
    half = (n + 1) // 2
    bits = _block_bits(keys, stream, counter, half)  # (R, half)
    radius = (-2.0 * torch.log((_shift_right(bits, 32).double() + 0.5) * 2.0**-32)).sqrt_()  # (R, half)
    angle = (bits & _LOW32).double() * _ANGLE_UNIT  # (R, half)
    z = torch.cat((radius * torch.cos(angle), radius * torch.sin(angle)), dim=1)[:, :n]  # (R, n)
    if dim > 0:
        rows = z.reshape(len(keys), n // dim, dim)
        z = (rows / torch.linalg.vector_norm(rows, dim=-1, keepdim=True)).reshape(len(keys), n)
    return z.float()


def uniform(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Uniform ``[0, 1)`` float32 draws of shape ``(R, *shape)``, 24 bits each."""
    bits = _block_bits(keys, stream, counter, math.prod(shape))  # (R, n)
    u = _shift_right(bits, 40).to(torch.float32) * (2.0**-24)  # (R, n)
    return u.reshape(keys.shape[0], *shape)


def normal(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Standard normal float32 draws of shape ``(R, *shape)`` (Box-Muller, two per word)."""
    return _normal_block(keys, stream, counter, math.prod(shape), 0).reshape(keys.shape[0], *shape)


def unit_normal(keys: torch.Tensor, stream: int, counter: int, shape: tuple[int, ...]) -> torch.Tensor:
    """:func:`normal` draws scaled to unit norm along the last axis (uniform on the sphere), ``(R, *shape)``.

    The scaling happens before the rounding to float32: each row is the float32 rounding of
    the float64 ``z / |z|``.
    """
    return _normal_block(keys, stream, counter, math.prod(shape), shape[-1]).reshape(keys.shape[0], *shape)


def permutation_keys(keys: torch.Tensor, stream: int, n: int) -> torch.Tensor:
    """Random permutations of ``range(n)`` per replica, ``(R, n)`` int64 (argsort of hashes)."""
    bits = _block_bits(keys, stream, 0, n)  # (R, n)
    return torch.argsort(bits, dim=1)


class BlockDraws:
    """Per-round draws fetched ``block`` rounds at a time: ``draws(keys, t) -> (R, *shape)``.

    Round ``t`` gets row ``t % block`` of the block drawn with counter ``t // block``
    from ``stream``: still a pure function of (replica key, stream, t), so the cache
    changes nothing but speed. Each :func:`normal` call has a fixed cost of about
    100 us on CPU whatever its size; this pays it once per ``block`` rounds.

    Args:
        kind: ``"normal"`` (standard normal) or ``"uniform"`` (``[0, 1)``).
        stream: Stream id; use it for nothing else.
        shape: Shape of one round's draw per replica.
        block: Rounds per generator call.
        transform: Applied once to each block ``(R, block, *shape)`` (e.g. normalisation).
    """

    def __init__(self, kind: str, stream: int, shape: tuple[int, ...], block: int = 128, transform=None) -> None:
        if kind not in ("normal", "uniform"):
            raise ValueError(f"kind must be 'normal' or 'uniform', got {kind!r}")
        self._draw = normal if kind == "normal" else uniform
        self.stream, self.shape, self.block, self.transform = stream, tuple(shape), block, transform
        self._keys: torch.Tensor | None = None
        self._index = -1
        self._values: tuple[torch.Tensor, ...] | None = None  # block rounds of (R, *shape) views

    def __call__(self, keys: torch.Tensor, t: int) -> torch.Tensor:
        index = t // self.block
        if index != self._index or keys is not self._keys:
            values = self._draw(keys, self.stream, index, (self.block, *self.shape)).to(keys.device)
            values = values if self.transform is None else self.transform(values)
            self._values = values.unbind(1)  # the block's rounds as views, split once
            self._index, self._keys = index, keys
        return self._values[t % self.block]

    def __getstate__(self) -> dict:
        # The cache is derived state: pickles stay small and are rebuilt on demand.
        return {**self.__dict__, "_keys": None, "_index": -1, "_values": None}
