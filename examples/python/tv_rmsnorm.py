"""Row-wise RMSNorm, ``y = x * rsqrt(mean(x**2) + 1e-6)``, written with
Tensors and a thread-value layout: one threadgroup per row.

    python examples/python/tv_rmsnorm.py [rows] [cols]

The row is cut into chunks of ``4 * THREADS`` columns by
``tensor_zipped_divide``; in each chunk thread ``t`` owns 4 consecutive
floats (a TV layout with one value mode of 4), which ``load()`` reads as one
``float4``. Each thread sums its squares, ``simd_sum`` adds the 32 lanes of
a simdgroup, lane 0 of each simdgroup writes its sum to threadgroup memory,
and after a barrier every thread adds those sums itself. A second pass
scales the same fragments and stores them with ``float4`` writes.

Columns must be a multiple of ``4 * THREADS`` (512).
"""

import sys

import numpy as np

import enigma

THREADS = 128  # threads per row (a multiple of 32)
VALUES = 4     # consecutive floats per thread and chunk
EPS = 1e-6


@enigma.kernel
def tv_rmsnorm_kernel(gX, gY, tv_layout, cols):
    """Row ``block_idx`` of X normalised into the same row of Y. ``gX`` and
    ``gY`` are (rows, cols) tensors; ``cols`` is a compile-time int."""
    tid, _, _ = enigma.arch.thread_idx()
    row, _, _ = enigma.arch.block_idx()
    chunk_cols = enigma.size(tv_layout)
    chunks = cols // chunk_cols
    # This row, cut into chunks: mode 0 within a chunk, mode 1 the chunk.
    chunk = enigma.make_layout(chunk_cols)
    rowX = enigma.tensor_zipped_divide(gX[row, None], chunk)
    rowY = enigma.tensor_zipped_divide(gY[row, None], chunk)

    def fragment(tensor, k):
        """Thread tid's 4 values of chunk k."""
        return enigma.tensor_composition(tensor[None, k], tv_layout)[tid, None]

    # Pass 1: this thread's sum of squares over every chunk.
    with enigma.for_range(0, chunks, dtype="uint", init=[0.0]) as (k, acc):
        for v in fragment(rowX, k).load():
            acc[0] = enigma.fma(v, v, acc[0])

    simd_sums = enigma.threadgroup_alloc(enigma.f32, 32)
    total = enigma.simd_sum(acc[0])
    with enigma.if_(enigma.thread_index_in_simdgroup() == 0):
        simd_sums[enigma.simdgroup_index_in_threadgroup()] = total
    enigma.barrier()
    with enigma.for_range(0, enigma.simdgroups_per_threadgroup(),
                          dtype="uint", init=[0.0]) as (s, row_sum):
        row_sum[0] = row_sum[0] + simd_sums[s]
    scale = enigma.rsqrt(row_sum[0] / float(cols) + EPS)

    # Pass 2: the normalised row.
    with enigma.for_range(0, chunks, dtype="uint") as k:
        fragment(rowY, k).store(fragment(rowX, k).load() * scale)


@enigma.jit
def tv_rmsnorm(X, Y):
    """One threadgroup of THREADS threads per row of X."""
    rows, cols = X.shape
    thr = enigma.make_layout(THREADS)
    val = enigma.make_layout(VALUES)
    _, tv_layout = enigma.make_layout_tv(thr, val)
    tv_rmsnorm_kernel(X, Y, tv_layout, cols).launch(
        grid=[rows * THREADS, 1, 1], block=[THREADS, 1, 1])


def compile_for(rows, cols):
    """The kernel compiled for a (rows, cols) float32 matrix."""
    if cols % (THREADS * VALUES):
        raise ValueError(f"tv_rmsnorm needs cols % {THREADS * VALUES} == 0, "
                         f"got {cols}")
    layout = enigma.make_layout((rows, cols), stride=(cols, 1))
    X = enigma.Tensor("X", 0, enigma.f32, layout)
    Y = enigma.Tensor("Y", 1, enigma.f32, layout)
    return enigma.compile(tv_rmsnorm, X, Y)


def run(rt, x):
    """RMSNorm of the rows of the 2-D float32 array ``x``."""
    x = np.ascontiguousarray(x, np.float32)
    compiled = compile_for(*x.shape)
    grid, threads = enigma.dispatch_shape(compiled)
    raw = rt.execute(compiled, [x], output_size=x.nbytes, grid=grid,
                     threads=threads)
    return np.frombuffer(raw, np.float32).reshape(x.shape).copy()


def reference(x):
    """RMSNorm in float64."""
    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)


def check_output(y, x):
    """The sum of squares is added in another order than numpy's (per
    thread, then 32 lanes, then the simdgroups); all terms are positive, so
    the relative error stays below (additions in sequence) * 2**-24, halved
    by the square root, plus rsqrt's few ulps: rtol 2e-5 (as rmsnorm.py)."""
    np.testing.assert_allclose(y, reference(x), rtol=2e-5, atol=1e-30)


def main(rows: int = 64, cols: int = 1024) -> int:
    rng = np.random.default_rng()
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}")
    check_output(run(rt, x), x)
    print("pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:3])))
