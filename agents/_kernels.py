"""Compiled CPU kernels of the agents' per-round math (numba), one loop per replica.

``agents._math`` calls these on zero-copy numpy views of CPU tensors. Each kernel
loops over the replicas and runs the same instructions on every replica's own
rows, so replica ``r`` of a batch gets the bits of a single run (``R = 1``) by
construction. Sums run in a fixed order (no ``fastmath``): the innermost loops
that the compiler turns into SIMD code are elementwise updates ``acc[j] += a * m[i, j]``,
whose rounding does not depend on the vector width, so the results are also the
same on every x86 CPU.

Why compiled code: at the sizes of the paper's experiments (R = 10 replicas,
K = 50 arms, d = 20) one round of LinUCB is a few thousand flops per replica,
and in numpy it is a dozen calls of a few microseconds each; here it is one call.
The kernels are compiled on first use and cached on disk (``cache=True``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_JIT = {"nogil": True, "cache": True, "error_model": "numpy"}  # numpy's error model: x / 0 is inf, no exception


@njit(**_JIT)
def _dot(a, b):
    """``a . b`` for two 1-d float32 arrays, summed left to right."""
    acc = np.float32(0.0)
    for i in range(a.shape[0]):
        acc += a[i] * b[i]
    return acc


@njit(**_JIT)
def _vec_mat(v, m, out):
    """``out = v^T m`` (row combination: the inner loop is elementwise, so it vectorises exactly)."""
    out[:] = 0.0
    for i in range(m.shape[0]):
        vi = v[i]
        for j in range(m.shape[1]):
            out[j] += vi * m[i, j]


@njit(**_JIT)
def _mat_vec(m, v, out):
    """``out = m v``: one dot product per row, each summed as :func:`_dot` sums it (the same bits).

    Four rows at a time: a dot product is a chain of dependent adds, and four independent chains
    side by side keep the adder busy (about 1.5x faster at the paper's sizes).
    """
    n, d = m.shape
    i = 0
    while i + 3 < n:
        s0 = s1 = s2 = s3 = np.float32(0.0)
        m0, m1, m2, m3 = m[i], m[i + 1], m[i + 2], m[i + 3]
        for j in range(d):
            vj = v[j]
            s0 += m0[j] * vj
            s1 += m1[j] * vj
            s2 += m2[j] * vj
            s3 += m3[j] * vj
        out[i], out[i + 1], out[i + 2], out[i + 3] = s0, s1, s2, s3
        i += 4
    for row in range(i, n):
        out[row] = _dot(m[row], v)


@njit(**_JIT)
def matvec(m, v):
    """``(R, d, d) @ (R, d) -> (R, d)``."""
    out = np.empty(v.shape, np.float32)
    for r in range(m.shape[0]):
        _mat_vec(m[r], v[r], out[r])
    return out


@njit(**_JIT)
def scores(x, theta):
    """``x . theta`` per arm: ``(R, K, d), (R, d) -> (R, K)``."""
    R, K = x.shape[0], x.shape[1]
    out = np.empty((R, K), np.float32)
    for r in range(R):
        _mat_vec(x[r], theta[r], out[r])
    return out


@njit(**_JIT)
def sampled_scores(x, center, s, z, scale):
    """``x . theta`` per arm for ``theta = center + scale * S z``: (R, K) scores, and their :func:`first_argmax`."""
    R, K, d = x.shape
    scale = np.float32(scale)
    out = np.empty((R, K), np.float32)
    u, theta = np.empty(d, np.float32), np.empty(d, np.float32)
    first = np.empty(R, np.int64)
    unique = True
    for r in range(R):
        _mat_vec(s[r], z[r], u)
        for j in range(d):
            theta[j] = center[r, j] + scale * u[j]
        _mat_vec(x[r], theta, out[r])
        first[r], row_unique = _row_argmax(out[r])
        unique &= row_unique
    return out, first, unique


@njit(**_JIT)
def epsilon_greedy(x, theta, u, epsilon):
    """Epsilon-greedy's choice: ``min(floor(K u[r, 1]), K - 1)`` where ``u[r, 0] < epsilon``, else the
    :func:`first_argmax` of ``x . theta``; returns the (R, K) scores, the choices and whether every
    row's largest score is unique. The float32 arithmetic of the torch expression (``u * K`` and
    ``u < epsilon`` in float32), so the same arms.
    """
    R, K, d = x.shape
    eps, arms = np.float32(epsilon), np.float32(K)
    out = np.empty((R, K), np.float32)
    choice = np.empty(R, np.int64)
    unique = True
    for r in range(R):
        _mat_vec(x[r], theta[r], out[r])
        choice[r], row_unique = _row_argmax(out[r])
        unique &= row_unique
        if u[r, 0] < eps:
            choice[r] = min(np.int64(u[r, 1] * arms), K - 1)
    return out, choice, unique


@njit(**_JIT)
def _transpose_into(x, xt):
    """``xt = x^T`` for a ``(K, d)`` array and a ``(d, K)`` buffer."""
    for k in range(x.shape[0]):
        for i in range(x.shape[1]):
            xt[i, k] = x[k, i]


@njit(**_JIT)
def _widths_into(xt, m, y, width):
    """``width[k] = x_k^T m x_k`` for one replica's arms transposed, ``xt`` ``(d, K)``, and a symmetric ``m``.

    Only the upper triangle of ``m`` is read: ``x^T m x = sum_i x_i (m_ii x_i + 2 sum_{j>i} m_ij x_j)``,
    half the multiply-adds of the full form. ``y`` ``(d, K)`` receives the bracket, summed over
    ``j`` in order: the inner loops run along the K arms, elementwise, so they vectorise with the
    same rounding whatever the SIMD width. Four ``j`` share one pass over ``y[i]`` (the same
    additions in the same order, a quarter of the loads and stores).
    """
    d, K = xt.shape
    two = np.float32(2.0)
    for i in range(d):
        mii, yi = m[i, i], y[i]
        for k in range(K):
            yi[k] = mii * xt[i, k]
        j = i + 1
        while j + 3 < d:
            c0, c1, c2, c3 = two * m[i, j], two * m[i, j + 1], two * m[i, j + 2], two * m[i, j + 3]  # exact
            x0, x1, x2, x3 = xt[j], xt[j + 1], xt[j + 2], xt[j + 3]
            for k in range(K):
                yi[k] = (((yi[k] + c0 * x0[k]) + c1 * x1[k]) + c2 * x2[k]) + c3 * x3[k]
            j += 4
        for col in range(j, d):
            c, xj = two * m[i, col], xt[col]
            for k in range(K):
                yi[k] += c * xj[k]
    width[:] = 0.0
    for i in range(d):
        for k in range(K):
            width[k] += xt[i, k] * y[i, k]


@njit(**_JIT)
def quad_form(m, x):
    """``x^T M x`` per arm for symmetric ``M`` (its upper triangle is read): ``(R, d, d), (R, K, d) -> (R, K)``."""
    R, K, d = x.shape
    out = np.empty((R, K), np.float32)
    xt, xm = np.empty((d, K), np.float32), np.empty((d, K), np.float32)
    for r in range(R):
        _transpose_into(x[r], xt)
        _widths_into(xt, m[r], xm, out[r])
    return out


@njit(**_JIT)
def optimistic_scores(x, theta, m, nu):
    """``x . theta + nu sqrt(max(x^T M x, 0))`` per arm, ``(R, K, d), (R, d), (R, d, d) -> (R, K)``, and its
    :func:`first_argmax`."""
    R, K, d = x.shape
    nu = np.float32(nu)
    out = np.empty((R, K), np.float32)
    first = np.empty(R, np.int64)
    unique = True
    xt, xm = np.empty((d, K), np.float32), np.empty((d, K), np.float32)
    width, mean = np.empty(K, np.float32), np.empty(K, np.float32)
    for r in range(R):
        _transpose_into(x[r], xt)
        _widths_into(xt, m[r], xm, width)
        _vec_mat(theta[r], xt, mean)  # x_k . theta, summed in index order as _dot sums it, vectorised along k
        for k in range(K):
            w = width[k]
            if w < 0.0:  # rounding can make x^T V^-1 x negative by an ulp (NaN stays NaN)
                w = np.float32(0.0)
            out[r, k] = mean[k] + nu * np.sqrt(w)
        first[r], row_unique = _row_argmax(out[r])
        unique &= row_unique
    return out, first, unique


@njit(**_JIT)
def _row_argmax(row):
    """First index of the largest entry of a 1-d array, and whether it is the only one (False with a NaN)."""
    best, index, count = row[0], 0, 1
    unique = not np.isnan(best)
    for k in range(1, row.shape[0]):
        v = row[k]
        if v > best:
            best, index, count = v, k, 1
        elif v == best:
            count += 1
        elif np.isnan(v):
            unique = False
    return index, unique and count == 1


@njit(**_JIT)
def first_argmax(values):
    """First index of the largest value per row, and whether every row's largest value is unique.

    ``(R, K) -> (R,) int64, bool``. A row holding a NaN counts as not unique (the caller falls
    back to its general path, which handles it).
    """
    R = values.shape[0]
    first = np.empty(R, np.int64)
    unique = True
    for r in range(R):
        first[r], row_unique = _row_argmax(values[r])
        unique &= row_unique
    return first, unique


@njit(**_JIT)
def _sherman_morrison_into(m, v, out, mv):
    """``out = m - (m v)(m v)^T / (1 + v^T m v)`` for one replica (``m`` symmetric)."""
    _mat_vec(m, v, mv)
    denom = np.float32(1.0) + _dot(mv, v)
    d = m.shape[0]
    for i in range(d):
        mvi = mv[i]
        for j in range(d):
            # (mv_i mv_j) / denom, not mv_i (mv_j / denom): only the former is exactly symmetric.
            out[i, j] = m[i, j] - mvi * mv[j] / denom


@njit(**_JIT)
def sherman_morrison(m, v):
    """Rank-one update of ``V^-1`` after ``V <- V + x x^T``: ``(R, d, d), (R, d) -> (R, d, d)``."""
    out = np.empty(m.shape, np.float32)
    mv = np.empty(m.shape[1], np.float32)
    for r in range(m.shape[0]):
        _sherman_morrison_into(m[r], v[r], out[r], mv)
    return out


@njit(**_JIT)
def _ridge_into(m, b, x, reward, m_new, b_new, theta, mv):
    """One replica's Sherman-Morrison update, ``b + r x`` and ``theta = V^-1 b``; whether theta is finite."""
    _sherman_morrison_into(m, x, m_new, mv)
    for j in range(x.shape[0]):
        b_new[j] = b[j] + reward * x[j]
    _mat_vec(m_new, b_new, theta)
    return np.isfinite(theta).all()


@njit(**_JIT)
def _potter_into(s, v, out, p, sp):
    """Potter's update of one replica's square root ``S`` of ``V^-1`` (see ``_math.potter_update``)."""
    _vec_mat(v, s, p)  # p^T = x^T S
    q = np.sqrt(np.float32(1.0) + _dot(p, p))
    scale = q * (np.float32(1.0) + q)
    _mat_vec(s, p, sp)
    for i in range(s.shape[0]):
        sp[i] /= scale
    for i in range(s.shape[0]):
        spi = sp[i]
        for j in range(s.shape[1]):
            out[i, j] = s[i, j] - spi * p[j]


@njit(**_JIT)
def potter_update(s, v):
    """Square root of ``V^-1`` after ``V <- V + x x^T``: ``(R, d, d), (R, d) -> (R, d, d)``."""
    out = np.empty(s.shape, np.float32)
    p = np.empty(s.shape[1], np.float32)
    sp = np.empty(s.shape[1], np.float32)
    for r in range(s.shape[0]):
        _potter_into(s[r], v[r], out[r], p, sp)
    return out


@njit(**_JIT)
def _square_root_into(s, b, x, reward, s_new, b_new, theta, p, sp):
    """One replica's Potter update of ``S``, ``b + r x`` and ``theta = S (S^T b)``; whether theta is finite."""
    _potter_into(s, x, s_new, p, sp)
    for j in range(x.shape[0]):
        b_new[j] = b[j] + reward * x[j]
    _vec_mat(b_new, s_new, p)  # p^T = b^T S
    _mat_vec(s_new, p, theta)
    return np.isfinite(theta).all()


@njit(**_JIT)
def played_update(m, b, theta, contexts, actions, rewards, square_root):
    """One round of ridge statistics for the played arms ``x = contexts[r, actions[r]]``, in place.

    ``b += r x``, and either Sherman-Morrison on ``m = V^-1`` with ``theta = V^-1 b``
    (``square_root`` False) or Potter's update of ``m = S`` with ``theta = S (S^T b)`` (True);
    ``m (R, d, d), b (R, d), theta (R, d)`` are overwritten. Returns whether every theta is finite.
    (Each update reads what it needs of ``m`` before writing an entry, so in place is exact.)
    """
    R, d = b.shape
    u, v = np.empty(d, np.float32), np.empty(d, np.float32)  # scratch vectors
    finite = True
    for r in range(R):
        x = contexts[r, actions[r]]
        if square_root:
            finite &= _square_root_into(m[r], b[r], x, rewards[r], m[r], b[r], theta[r], u, v)
        else:
            finite &= _ridge_into(m[r], b[r], x, rewards[r], m[r], b[r], theta[r], u)
    return finite


@njit(**_JIT)
def all_finite(a):
    """Whether every entry of a float32 array is finite."""
    for v in a.ravel():
        if not np.isfinite(v):
            return False
    return True
