"""Histogram of uint32 values into 256 bins (bin = value & 255) with atomics.

    python examples/python/histogram.py [n]

Two kernels:

* ``histogram_global``: every thread does one ``atomic_fetch_add`` on the
  output buffer (simple; all threads contend for 256 counters);
* ``histogram_shared``: each threadgroup of 256 threads first counts into a
  threadgroup histogram (``threadgroup_alloc`` + the tensor's
  ``atomic_fetch_add`` method), then thread ``t`` adds bin ``t`` of the
  group's histogram to the output with one device atomic, so the device
  sees at most 256 atomics per group.

Output buffers start zero-filled (docs/reference/runtimes.md), so the
kernels only accumulate. Repeated dispatches of one prepared kernel keep
accumulating: ``run_prepared``'s check accepts any whole multiple of the
histogram.
"""

import functools
import sys

import numpy as np

import enigma

BINS = 256
THREADS = 256  # histogram_shared needs exactly BINS threads per group


@enigma.kernel
def histogram_global(values: enigma.u32, n: enigma.Scalar(enigma.u32),
                     bins: enigma.u32):
    gid = enigma.thread_position_in_grid
    with enigma.if_(gid < n):
        enigma.atomic_fetch_add(bins, values[gid] & (BINS - 1), 1)


@enigma.kernel
def histogram_shared(values: enigma.u32, n: enigma.Scalar(enigma.u32),
                     bins: enigma.u32):
    gid = enigma.thread_position_in_grid
    tid = enigma.thread_index_in_threadgroup()
    local = enigma.threadgroup_alloc(enigma.u32, BINS)
    local[tid] = 0
    enigma.barrier()
    with enigma.if_(gid < n):
        local.atomic_fetch_add(values[gid] & (BINS - 1), 1)
    enigma.barrier()
    count = local[tid]
    with enigma.if_(count != 0):
        bins.atomic_fetch_add(tid, count)


KERNELS = {"global": histogram_global, "shared": histogram_shared}


def reference(values):
    """The 256 counts (int64)."""
    v = np.asarray(values, dtype=np.uint32)
    return np.bincount((v & (BINS - 1)).astype(np.int64), minlength=BINS)


def check_output(counts, values, repeats=None):
    """Integer counts must match exactly. With ``repeats=None`` the output
    may hold the histogram of k >= 1 dispatches (k * reference)."""
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    ref = reference(values)
    if repeats is None:
        repeats = int(counts.sum() // max(1, ref.sum())) if ref.sum() else 1
    np.testing.assert_array_equal(counts, repeats * ref)


@functools.lru_cache(maxsize=None)
def compiled(variant="shared"):
    return enigma.compile(KERNELS[variant])


def _grid(n):
    # Whole groups, so every thread of histogram_shared's groups exists to
    # clear and flush its bin.
    return max(1, (n + THREADS - 1) // THREADS) * THREADS


def run(rt, values, variant="shared"):
    """The 256 bin counts (uint32) of ``values``."""
    values = np.ascontiguousarray(values, np.uint32).reshape(-1)
    raw = rt.execute(compiled(variant), [values], output_size=BINS * 4,
                     grid=(_grid(values.size), 1, 1), threads=(THREADS, 1, 1),
                     scalars=[values.size])
    return np.frombuffer(raw, dtype=np.uint32).copy()


def run_prepared(rt, x, variant="shared"):
    """(prepared, grid, threads, check) for the uint32 array ``x``."""
    values = np.ascontiguousarray(x, np.uint32).reshape(-1)
    prepared = rt.prepare(compiled(variant), [values], BINS * 4,
                          scalars=[values.size])

    def check(out):
        check_output(out, values)

    return prepared, (_grid(values.size), 1, 1), (THREADS, 1, 1), check


def main(n: int = 1_000_003) -> int:
    rng = np.random.default_rng()
    values = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}")
    for variant in KERNELS:
        check_output(run(rt, values, variant), values, repeats=1)
    print("pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_003))
