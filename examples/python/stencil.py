"""1-D three-point stencil with a boundary branch.

    python examples/python/stencil.py [n]

Every interior element becomes ``0.25 * x[i-1] + 0.5 * x[i] + 0.25 * x[i+1]``;
the two edge elements, which lack a neighbour, copy the input. The edge test
is a two-armed ``enigma.if_``: each thread takes one arm, and only the
interior arm reads the neighbours, so the kernel never reads outside the
buffer.
"""

import functools
import sys

import numpy as np

import enigma

THREADS = 256


@enigma.kernel
def stencil3(x: enigma.f32, n: enigma.Scalar(enigma.u32), y: enigma.f32):
    # The grid is exactly n threads (Metal's dispatchThreads: the last
    # threadgroup is partial), so every thread owns one element.
    i = enigma.thread_position_in_grid
    is_edge = (i == 0) | (i == n - 1)
    with enigma.if_(is_edge) as (edge, interior):
        with edge:
            y[i] = x[i]
        with interior:
            y[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


def reference(x):
    """The stencil in float64."""
    x = np.asarray(x, dtype=np.float64)
    y = x.copy()
    if x.size > 2:
        y[1:-1] = 0.25 * x[:-2] + 0.5 * x[1:-1] + 0.25 * x[2:]
    return y


def check_output(y, x):
    """f32 elementwise: each output is at most three products and two sums,
    all weights exact powers of two, so the error is a few ulps of the
    largest term; rtol 1e-5 plus an absolute floor for outputs that cancel
    towards zero."""
    ref = reference(x)
    scale = float(np.max(np.abs(x))) if x.size else 1.0
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6 * scale)


@functools.lru_cache(maxsize=None)
def compiled():
    return enigma.compile(stencil3)


def run(rt, x):
    """Runs the stencil on ``rt`` and returns the f32 output."""
    n = x.size
    raw = rt.execute(compiled(), [np.ascontiguousarray(x, np.float32)],
                     output_size=n * 4, grid=(n, 1, 1),
                     threads=(THREADS, 1, 1), scalars=[n])
    return np.frombuffer(raw, dtype=np.float32).copy()


def run_prepared(rt, x):
    """(prepared, grid, threads, check) for timing with repeated dispatches."""
    x = np.ascontiguousarray(x, np.float32)
    n = x.size
    prepared = rt.prepare(compiled(), [x], n * 4, scalars=[n])

    def check(out):
        check_output(np.asarray(out, np.float32).reshape(-1), x)

    return prepared, (n, 1, 1), (THREADS, 1, 1), check


def main(n: int = 1_000_003) -> int:
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}")
    y = run(rt, x)
    check_output(y, x)
    print("pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_003))
