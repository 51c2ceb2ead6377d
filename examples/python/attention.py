"""Single-head attention ``O = softmax(Q K^T / sqrt(d)) V`` with an online
softmax, for a small head size d (32 or 64).

    python examples/python/attention.py [queries] [keys] [d]

One simdgroup (32 lanes) per query row; lane ``l`` owns the ``d / 32``
columns ``l, l + 32, ...`` of the row. The lane's slice of the query is read
once into per-lane values (or, with ``make_kernel(d, registers=True)``, a
``register_tensor``). The loop over the keys carries the running
maximum ``m``, the running sum ``s`` of ``exp(score - m)`` and the lane's
slice of the output accumulator; for each key:

    score  = simd_sum(q_slice . k_slice) / sqrt(d)   (every lane gets it)
    m'     = max(m, score)
    alpha  = exp(m - m'),  p = exp(score - m')
    s      = s * alpha + p
    acc[c] = acc[c] * alpha + p * V[key, c]

and at the end ``O = acc / s``. Q, K, V and O are row-major (rows, d).
"""

import functools
import math
import sys

import numpy as np

import enigma

SIMD = 32
THREADS = 128  # four query rows per threadgroup


class _LaneValues:
    """The query slice as plain traced values (a Python list indexed like
    a register_tensor): the same code, kept in SSA values."""

    def __init__(self, n):
        self._v = [None] * n

    def __getitem__(self, index):
        return self._v[index[0]]

    def __setitem__(self, index, value):
        self._v[index[0]] = value


@functools.lru_cache(maxsize=None)
def make_kernel(d: int, registers: bool = False):
    """The attention kernel for head size ``d`` (a multiple of 32). With
    ``registers`` the query slice lives in an ``enigma.register_tensor``;
    without, in traced values held in a Python list (the default)."""
    if d % SIMD or d <= 0:
        raise ValueError(f"head size must be a positive multiple of 32, got {d}")
    per_lane = d // SIMD
    scale = 1.0 / math.sqrt(d)

    @enigma.kernel
    def attention(Q: enigma.f32, K: enigma.f32, V: enigma.f32,
                  keys: enigma.Scalar(enigma.u32), O: enigma.f32):
        query = enigma.thread_position_in_grid // SIMD
        lane = enigma.thread_index_in_simdgroup()
        if registers:  # a Python bool: decided at trace time
            q = enigma.register_tensor((per_lane,), "float")
        else:
            q = _LaneValues(per_lane)
        for c in enigma.range_constexpr(per_lane):
            q[(c,)] = Q[query * d + lane + c * SIMD]

        init = [float("-inf"), 0.0] + [0.0] * per_lane
        with enigma.for_range(0, keys, dtype="uint",
                              init=init) as (j, carry):
            partial = q[(0,)] * K[j * d + lane]
            for c in enigma.range_constexpr(per_lane - 1):
                partial = enigma.fma(q[(c + 1,)],
                                     K[j * d + lane + (c + 1) * SIMD], partial)
            score = enigma.simd_sum(partial) * scale
            m_new = enigma.fmax(carry[0], score)
            alpha = enigma.exp(carry[0] - m_new)
            p = enigma.exp(score - m_new)
            carry[1] = carry[1] * alpha + p
            for c in enigma.range_constexpr(per_lane):
                carry[2 + c] = (carry[2 + c] * alpha +
                                p * V[j * d + lane + c * SIMD])
            carry[0] = m_new

        inv = 1.0 / carry[1]
        for c in enigma.range_constexpr(per_lane):
            O[query * d + lane + c * SIMD] = carry[2 + c] * inv

    return attention


def reference(q, k, v):
    """softmax(Q K^T / sqrt(d)) V in float64."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    s = q @ k.T / math.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


def check_output(o, q, k, v):
    """Each output is a weighted mean of V's column (weights summing to 1)
    computed with f32 exps and rescalings: the error grows with the number
    of keys (one rescaling each) and is bounded by the column's magnitude.
    Tolerance: 1e-4 relative plus 1e-5 * max|V| (a dozen f32 ulps per
    step and the scores' own rounding, amplified by exp)."""
    q = np.asarray(q, np.float64)
    o = np.asarray(o, np.float64).reshape(q.shape[0], np.shape(v)[1])
    vmax = float(np.max(np.abs(v))) if np.size(v) else 1.0
    np.testing.assert_allclose(o, reference(q, k, v), rtol=1e-4,
                               atol=1e-5 * vmax)


def compiled(d: int = 64, registers: bool = False):
    return _compiled(d, registers)


@functools.lru_cache(maxsize=None)
def _compiled(d, registers):
    return enigma.compile(make_kernel(d, registers))


def _arrays(q, k, v):
    q, k, v = (np.ascontiguousarray(a, np.float32) for a in (q, k, v))
    assert q.ndim == k.ndim == v.ndim == 2
    assert q.shape[1] == k.shape[1] == v.shape[1], "one head size for Q, K, V"
    assert k.shape[0] == v.shape[0], "K and V need the same number of keys"
    return q, k, v


def run(rt, q, k, v, registers=False):
    """O for 2-D float32 Q (queries, d), K and V (keys, d)."""
    q, k, v = _arrays(q, k, v)
    queries, d = q.shape
    raw = rt.execute(compiled(d, registers), [q, k, v], output_size=q.nbytes,
                     grid=(queries * SIMD, 1, 1), threads=(THREADS, 1, 1),
                     scalars=[k.shape[0]])
    return np.frombuffer(raw, dtype=np.float32).reshape(queries, d).copy()


def run_prepared(rt, x):
    """(prepared, grid, threads, check) for ``x = (Q, K, V)``."""
    q, k, v = _arrays(*x)
    queries, d = q.shape
    prepared = rt.prepare(compiled(d), [q, k, v], q.nbytes,
                          scalars=[k.shape[0]])

    def check(out):
        check_output(out, q, k, v)

    return prepared, (queries * SIMD, 1, 1), (THREADS, 1, 1), check


def main(queries: int = 100, keys: int = 300, d: int = 64) -> int:
    rng = np.random.default_rng()
    q = rng.standard_normal((queries, d)).astype(np.float32)
    k = rng.standard_normal((keys, d)).astype(np.float32)
    v = rng.standard_normal((keys, d)).astype(np.float32)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}")
    check_output(run(rt, q, k, v), q, k, v)
    print("pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:4])))
