"""Numerically stable row softmax of an (R, C) float32 matrix.

    python examples/python/softmax.py [rows] [cols]

One threadgroup per row, two strided passes over the row:

1. each thread keeps a running maximum ``m_t`` of its elements and the sum
   ``s_t`` of ``exp(x - m_t)``, rescaling the sum whenever the maximum
   grows ("online softmax"); the threadgroup then reduces the maxima to the
   row maximum ``m`` (``simd_max``, then the simdgroup maxima through
   threadgroup memory and a barrier) and the rescaled sums
   ``s_t * exp(m_t - m)`` to the row sum ``s`` (the same with ``simd_sum``);
2. ``y = exp(x - m) * (1 / s)``.

The row is read twice (the second time mostly from cache) and written once,
the fewest bytes a softmax can move.

When the row length is a multiple of 4 the kernel is compiled with
``vec_width=4``: every load and store moves a ``float4``.

Subtracting the maximum keeps every exponent <= 0, so nothing overflows even
for rows of large values.
"""

import functools
import sys

import numpy as np

import enigma

THREADS = 256


def _group_reduce(value, scratch, simd_op, combine, identity):
    """Reduces ``value`` over the threadgroup; every thread gets the result.
    ``scratch`` holds one partial per simdgroup."""
    part = simd_op(value)
    with enigma.if_(enigma.thread_index_in_simdgroup() == 0):
        scratch[enigma.simdgroup_index_in_threadgroup()] = part
    enigma.barrier()
    with enigma.for_range(0, enigma.simdgroups_per_threadgroup(),
                          dtype="uint", init=[identity]) as (s, acc):
        acc[0] = combine(acc[0], scratch[s])
    return acc[0]


def _lanes(v, vec, combine):
    """Combines the lanes of a ``vec``-lane value in lane order."""
    if vec == 1:
        return v
    total = v.x
    for lane in enigma.range_constexpr(1, vec):
        total = combine(total, enigma.vec_extract(v, lane))
    return total


def _add(a, b):
    return a + b


def _finite_or_zero(m):
    """The shift used in exp(x - m): a maximum of -inf (no element yet, or
    only -inf elements) becomes 0, so exp(-inf - shift) is 0 rather than
    exp(NaN)."""
    return enigma.where(m, 0.0, m == float("-inf"))


@functools.lru_cache(maxsize=None)
def make_kernel(vec: int = 1):
    """Softmax reading ``vec`` floats per load: 1, or 4 when compiled with
    ``vec_width=4`` (``cols`` then counts float4 entries)."""

    @enigma.kernel
    def softmax(x: enigma.f32, cols: enigma.Scalar(enigma.u32),
                y: enigma.f32):
        row = enigma.threadgroup_position_in_grid("x")
        tid = enigma.thread_index_in_threadgroup()
        step = enigma.threads_per_threadgroup("x")
        base = row * cols
        # Two scratch arrays: a thread may still be reading the maxima while
        # a faster one already writes its sum.
        max_scratch = enigma.threadgroup_alloc(enigma.f32, 32)
        sum_scratch = enigma.threadgroup_alloc(enigma.f32, 32)

        # Pass 1: running maximum and rescaled sum of exponentials.
        with enigma.for_range(tid, cols, step, dtype="uint",
                              init=[float("-inf"), 0.0]) as (i, st):
            v = x[base + i]
            new_max = enigma.fmax(st[0], _lanes(v, vec, enigma.fmax))
            shift = _finite_or_zero(new_max)
            st[1] = (st[1] * enigma.exp(st[0] - shift)
                     + _lanes(enigma.exp(v - shift), vec, _add))
            st[0] = new_max
        row_max = _group_reduce(st[0], max_scratch, enigma.simd_max,
                                enigma.fmax, float("-inf"))
        mine = st[1] * enigma.exp(st[0] - _finite_or_zero(row_max))
        row_sum = _group_reduce(mine, sum_scratch, enigma.simd_sum, _add, 0.0)
        inv = 1.0 / row_sum

        # Pass 2: the outputs.
        with enigma.for_range(tid, cols, step, dtype="uint") as i:
            y[base + i] = enigma.exp(x[base + i] - row_max) * inv

    return softmax


softmax = make_kernel(1)


def reference(x):
    """Softmax over axis 1 in float64."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check_output(y, x):
    """A reduction: each output is exp(x - m) (a few ulps) times 1/s, where
    s is a sum of positive terms added in another order than numpy's (per
    thread, then 32 lanes, then <= 32 simdgroups): relative error about
    (16 + 5 + 5) * 2**-24 for 4096 columns. rtol 2e-5; the absolute floor
    covers outputs that underflow towards zero (exp of very negative x)."""
    y = np.asarray(y, np.float32).reshape(np.shape(x))
    np.testing.assert_allclose(y, reference(x), rtol=2e-5, atol=1e-12)


@functools.lru_cache(maxsize=None)
def compiled(vec: int = 1):
    return enigma.compile(make_kernel(vec), vec_width=vec if vec > 1 else 0)


def _vec(cols, vec):
    """float4 loads when the rows allow them (``vec=None``: automatic)."""
    if vec is None:
        vec = 4 if cols % 4 == 0 else 1
    if cols % vec:
        raise ValueError(f"vec={vec} needs a column count divisible by it")
    return vec


def run(rt, x, vec=None):
    """Softmax over the rows of the 2-D array ``x``; returns (R, C) f32.
    ``vec``: 1 or 4 floats per load (default: 4 when C % 4 == 0)."""
    x = np.ascontiguousarray(x, np.float32)
    rows, cols = x.shape
    vec = _vec(cols, vec)
    raw = rt.execute(compiled(vec), [x], output_size=x.nbytes,
                     grid=(rows * THREADS, 1, 1), threads=(THREADS, 1, 1),
                     scalars=[cols // vec])
    return np.frombuffer(raw, dtype=np.float32).reshape(rows, cols).copy()


def run_prepared(rt, x, vec=None):
    """(prepared, grid, threads, check) for the 2-D array ``x``."""
    x = np.ascontiguousarray(x, np.float32)
    rows, cols = x.shape
    vec = _vec(cols, vec)
    prepared = rt.prepare(compiled(vec), [x], x.nbytes,
                          scalars=[cols // vec])

    def check(out):
        check_output(out, x)

    return prepared, (rows * THREADS, 1, 1), (THREADS, 1, 1), check


def main(rows: int = 512, cols: int = 1000) -> int:
    rng = np.random.default_rng()
    x = (4 * rng.standard_normal((rows, cols))).astype(np.float32)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}")
    check_output(run(rt, x), x)
    print("pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:3])))
