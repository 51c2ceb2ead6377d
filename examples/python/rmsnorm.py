"""Row-wise RMSNorm: ``y = x * rsqrt(mean(x**2) + 1e-6)`` for each row of an
(R, C) float32 matrix.

    python examples/python/rmsnorm.py [rows] [cols]

One threadgroup per row. Each thread strides over the row (thread t reads
columns t, t + 256, ...), so neighbouring threads read neighbouring floats.
Each simdgroup adds its 32 partial sums with ``simd_sum``; lane 0 of every
simdgroup writes its sum to threadgroup memory; after a barrier every thread
adds the (at most 32) simdgroup sums itself, so no second barrier is needed;
a second strided pass writes ``y``.

When the row length is a multiple of 4 the kernel is compiled with
``vec_width=4``: every load and store moves a ``float4`` and each thread
keeps a ``float4`` partial sum.
"""

import functools
import sys

import numpy as np

import enigma

THREADS = 256  # threads per row; any multiple of 32 up to 1024 works
EPS = 1e-6


def _lane_sum(v, vec):
    """The sum of the lanes of a ``vec``-lane value, in lane order."""
    if vec == 1:
        return v
    total = v.x
    for lane in enigma.range_constexpr(1, vec):
        total = total + enigma.vec_extract(v, lane)
    return total


@functools.lru_cache(maxsize=None)
def make_kernel(vec: int = 1):
    """RMSNorm reading ``vec`` floats per load: 1, or 4 when compiled with
    ``vec_width=4`` (then ``cols`` counts float4 entries, and each thread
    keeps a float4 partial sum)."""

    @enigma.kernel
    def rmsnorm(x: enigma.f32, cols: enigma.Scalar(enigma.u32),
                y: enigma.f32):
        row = enigma.threadgroup_position_in_grid("x")
        tid = enigma.thread_index_in_threadgroup()
        step = enigma.threads_per_threadgroup("x")
        base = row * cols
        simd_sums = enigma.threadgroup_alloc(enigma.f32, 32)

        # Pass 1: this thread's share of the sum of squares.
        zero = 0.0 if vec == 1 else enigma.make_float4(0.0)
        with enigma.for_range(tid, cols, step, dtype="uint",
                              init=[zero]) as (i, acc):
            v = x[base + i]
            acc[0] = enigma.fma(v, v, acc[0])

        total = enigma.simd_sum(_lane_sum(acc[0], vec))
        with enigma.if_(enigma.thread_index_in_simdgroup() == 0):
            simd_sums[enigma.simdgroup_index_in_threadgroup()] = total
        enigma.barrier()

        with enigma.for_range(0, enigma.simdgroups_per_threadgroup(),
                              dtype="uint", init=[0.0]) as (s, row_sum):
            row_sum[0] = row_sum[0] + simd_sums[s]
        n = enigma.metal_cast(cols * vec, "float")
        scale = enigma.rsqrt(row_sum[0] / n + EPS)

        # Pass 2: write the normalised row.
        with enigma.for_range(tid, cols, step, dtype="uint") as i:
            y[base + i] = x[base + i] * scale

    return rmsnorm


rmsnorm = make_kernel(1)


def reference(x):
    """RMSNorm in float64."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)


def check_output(y, x):
    """A reduction: the sum of squares of a row is added in a different
    order than numpy's (per-thread strides, then a 32-lane tree, then the
    simdgroup sums). All terms are positive, so the relative error of the
    sum is at most (terms added in sequence) * 2**-24: about 16 + 5 + 3
    additions for 4096 columns, ~1.5e-6, halved by the square root, plus
    rsqrt's own few-ulp error. rtol 2e-5 covers rows up to ~10^5 columns."""
    y = np.asarray(y, np.float32).reshape(np.shape(x))
    np.testing.assert_allclose(y, reference(x), rtol=2e-5, atol=1e-30)


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
    """Runs RMSNorm over the rows of the 2-D array ``x``; returns (R, C) f32.
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
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}")
    check_output(run(rt, x), x)
    print("pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:3])))
