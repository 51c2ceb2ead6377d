"""Tiled GEMM ``C = A @ B`` in float32 built from the tile helpers
(docs/reference/tile.md): ``enigma.pipeline``, ``enigma.copy`` and
``enigma.gemm``.

    python examples/python/tiled_gemm.py [M] [N] [K]

M, N and K must be multiples of 32 (default 256 x 192 x 320). Each
threadgroup of 128 threads (4 simdgroups) computes one 32 x 32 tile of C:

1. two double-buffered pipelines hold the current 32 x 32 tiles of A and B
   in threadgroup memory; the first pair is copied in before the loop;
2. each K step swaps the pipelines, starts copying the next pair of tiles
   into the back stages (row by row, all threads sharing each row with
   ``copy(..., cooperative=True)`` at traced offsets; N and K
   are declared ``multiple_of=32``, so every row starts 16-byte aligned and
   the copies move ``float4``s), and
   multiplies the front stages into a 32 x 32 threadgroup accumulator with
   ``gemm``, which takes the simdgroup path: 16 output tiles of 8 x 8, four
   per simdgroup, with ``simdgroup_multiply_accumulate``;
3. one barrier per step separates the step's reads of the front stages from
   the next step's copies into them (the back stages then become fronts);
4. the accumulator is copied out row by row.
"""

import functools
import sys

import numpy as np

import enigma

TILE = 32
THREADS = 128


def _copy_tile(src, ld, row0, col0, dst):
    """dst (a TILE x TILE stage) = src[row0:row0+TILE, col0:col0+TILE] of a
    row-major matrix with ``ld`` elements per row. A plain helper called at
    trace time, so its loop is written with for_range."""
    with enigma.for_range(0, TILE, dtype="uint") as r:
        enigma.copy(src, dst, TILE, src_offset=(row0 + r) * ld + col0,
                    dst_offset=r * TILE, coalesced_width=4, cooperative=True)


@enigma.kernel
def tiled_gemm(A: enigma.f32, B: enigma.f32,
               N: enigma.Scalar(enigma.u32, multiple_of=TILE),
               K: enigma.Scalar(enigma.u32, multiple_of=TILE), C: enigma.f32):
    a_tiles = enigma.pipeline(enigma.f32, TILE * TILE)    # 2 x 4 KiB
    b_tiles = enigma.pipeline(enigma.f32, TILE * TILE)    # 2 x 4 KiB
    acc = enigma.threadgroup_alloc(enigma.f32, TILE * TILE)
    group = enigma.threadgroup_position_in_grid("x")
    tiles_per_row = N // TILE
    row0 = (group // tiles_per_row) * TILE
    col0 = (group % tiles_per_row) * TILE

    t = enigma.thread_index_in_threadgroup()
    for i in enigma.range(t, TILE * TILE, enigma.threads_per_threadgroup(),
                          dtype="uint"):
        acc[i] = 0.0
    _copy_tile(A, K, row0, 0, a_tiles.back())
    _copy_tile(B, N, 0, col0, b_tiles.back())
    enigma.barrier()

    steps = K // TILE
    for s in enigma.range(steps, dtype="uint"):
        a_tiles.swap()                    # the tiles just copied are in front
        b_tiles.swap()
        with enigma.if_(s + 1 < steps):   # prefetch the next K step
            k0 = (s + 1) * TILE
            _copy_tile(A, K, row0, k0, a_tiles.back())
            _copy_tile(B, N, k0, col0, b_tiles.back())
        # The barrier ending the previous step completed the copies into
        # the front stages, so gemm needs no barrier of its own.
        enigma.gemm(a_tiles.front(), b_tiles.front(), acc,
                    M=TILE, N=TILE, K=TILE, barrier=False)
        enigma.barrier()

    for r in enigma.range(TILE, dtype="uint"):
        enigma.copy(acc, C, TILE, src_offset=r * TILE,
                    dst_offset=(row0 + r) * N + col0, coalesced_width=4,
                    cooperative=True)


def reference(a, b):
    """A @ B in float64."""
    return np.asarray(a, np.float64) @ np.asarray(b, np.float64)


def check_output(c, a, b):
    """Each element is a dot product of length K summed in float32 (in 8x8
    blocks, in some order): |error| <= K * 2**-24 * sum_k |a_ik b_kj|,
    checked element by element with a factor of 2 to spare."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    c = np.asarray(c, np.float64).reshape(a.shape[0], b.shape[1])
    bound = 2 * max(1, a.shape[1]) * 2.0**-24 * (np.abs(a) @ np.abs(b))
    err = np.abs(c - a @ b)
    bad = err > bound + 1e-30
    assert not bad.any(), (
        f"{int(bad.sum())} elements out of tolerance, worst error "
        f"{float(err.max())}")


@functools.lru_cache(maxsize=None)
def compiled():
    return enigma.compile(tiled_gemm)


def _shapes(a, b):
    """(a, b, m, n, k, grid, threads), checking the sizes."""
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    if m % TILE or n % TILE or k % TILE or 0 in (m, n, k):
        raise ValueError(f"M, N and K must be positive multiples of {TILE}, "
                         f"got {m} x {n} x {k}")
    groups = (m // TILE) * (n // TILE)
    return a, b, m, n, k, (groups * THREADS, 1, 1), (THREADS, 1, 1)


def run(rt, a, b):
    """C = A @ B for 2-D float32 arrays whose sides are multiples of 32;
    returns (M, N) float32."""
    a, b, m, n, k, grid, threads = _shapes(a, b)
    raw = rt.execute(compiled(), [a, b], output_size=m * n * 4, grid=grid,
                     threads=threads, scalars=[n, k])
    return np.frombuffer(raw, dtype=np.float32).reshape(m, n).copy()


def run_prepared(rt, x):
    """(prepared, grid, threads, check) for ``x = (A, B)``."""
    a, b, m, n, k, grid, threads = _shapes(*x)
    prepared = rt.prepare(compiled(), [a, b], m * n * 4, scalars=[n, k])

    def check(out):
        check_output(out, a, b)

    return prepared, grid, threads, check


def main(m: int = 256, n: int = 192, k: int = 320) -> int:
    rng = np.random.default_rng()
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}")
    check_output(run(rt, a, b), a, b)
    print("pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(v) for v in sys.argv[1:4])))
