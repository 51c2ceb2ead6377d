"""Sum of a float32 vector with a threadgroup tree reduction.

    python examples/python/reduction.py [n]

Each threadgroup of 256 threads loads 256 elements into threadgroup memory
(``load_if`` gives 0 past the end), then halves the number of active
threads eight times: thread ``t < stride`` adds element ``t + stride`` to
element ``t``, with a barrier between the steps. Thread 0 writes the
group's sum, one partial per group. The same kernel then runs on the
partials until one value is left (``reduce_sum``); ``run_prepared`` times a
single pass and lets the host add the partials.

The grid is rounded up to whole threadgroups, so every slot of the
threadgroup array is written before the barrier.
"""

import functools
import sys

import numpy as np

import enigma

THREADS = 256
LOG2_THREADS = 8


@enigma.kernel
def block_sum(x: enigma.f32, n: enigma.Scalar(enigma.u32),
              partials: enigma.f32):
    gid = enigma.thread_position_in_grid
    tid = enigma.thread_index_in_threadgroup()
    shared = enigma.threadgroup_alloc(enigma.f32, THREADS)
    shared[tid] = enigma.load_if(x, gid, gid < n, 0.0)
    enigma.barrier()
    for level in enigma.range_constexpr(LOG2_THREADS):
        stride = THREADS >> (level + 1)  # 128, 64, ..., 1: a Python int
        with enigma.if_(tid < stride):
            shared[tid] = shared[tid] + shared[tid + stride]
        enigma.barrier()
    with enigma.if_(tid == 0):
        partials[enigma.threadgroup_position_in_grid("x")] = shared[0]


def reference(x):
    """The sum in float64."""
    return float(np.sum(np.asarray(x, dtype=np.float64)))


def tolerance(x):
    """A tree sum of f32 values has an error below depth * 2**-24 *
    sum(|x|), where depth is the number of additions a term goes through:
    8 per pass of 256-wide trees, and ceil(log2(n) / 8) passes. Twice that
    bound (the host's final float64 additions only help)."""
    x = np.asarray(x, dtype=np.float64)
    passes = max(1, int(np.ceil(np.log2(max(x.size, 2)) / LOG2_THREADS)))
    depth = LOG2_THREADS * passes
    return 2 * depth * 2.0**-24 * float(np.sum(np.abs(x))) + 1e-30


def check_sum(total, x):
    ref = reference(x)
    assert abs(float(total) - ref) <= tolerance(x), (
        f"sum {total} differs from {ref} by {abs(float(total) - ref)} "
        f"(tolerance {tolerance(x)})")


@functools.lru_cache(maxsize=None)
def compiled():
    return enigma.compile(block_sum)


def _groups(n):
    return max(1, (n + THREADS - 1) // THREADS)


def one_pass(rt, x):
    """One kernel pass: the per-group partial sums (f32)."""
    x = np.ascontiguousarray(x, np.float32)
    groups = _groups(x.size)
    raw = rt.execute(compiled(), [x], output_size=groups * 4,
                     grid=(groups * THREADS, 1, 1), threads=(THREADS, 1, 1),
                     scalars=[x.size])
    return np.frombuffer(raw, dtype=np.float32).copy()


def reduce_sum(rt, x):
    """The whole sum on the device: passes of block_sum until one value."""
    x = np.ascontiguousarray(x, np.float32).reshape(-1)
    while True:
        x = one_pass(rt, x)
        if x.size == 1:
            return float(x[0])


def run_prepared(rt, x):
    """(prepared, grid, threads, check): one pass; check adds the partials
    on the host (in float64) and compares with the reference."""
    x = np.ascontiguousarray(x, np.float32).reshape(-1)
    groups = _groups(x.size)
    prepared = rt.prepare(compiled(), [x], groups * 4, scalars=[x.size])

    def check(out):
        partials = np.asarray(out, np.float32).reshape(-1)[:groups]
        check_sum(np.sum(partials, dtype=np.float64), x)

    return prepared, (groups * THREADS, 1, 1), (THREADS, 1, 1), check


def main(n: int = 1_000_003) -> int:
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}")
    total = reduce_sum(rt, x)
    check_sum(total, x)
    print(f"sum = {total} (float64 reference {reference(x)})")
    print("pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_003))
