"""Tiled matrix multiply ``C = A @ B`` in float32, for any M, N, K.

    python examples/python/matmul.py [M] [N] [K]

A 2-D grid: thread (x, y) computes C[y, x]; threadgroups are TILE x TILE.
The K dimension is walked one tile at a time. In each step every thread
loads one element of the A tile (rows of this group, columns k0..k0+TILE)
and one of the B tile into threadgroup memory, with ``load_if`` giving 0
outside the matrices; a barrier; each thread then does TILE multiply-adds
from threadgroup memory (an unrolled ``range_constexpr`` loop); a second
barrier keeps the next step's loads from overwriting tiles still in use.

The grid is rounded up to whole tiles: every tile slot must be written by
some thread before the barrier, so the edge groups may not be partial;
threads outside C compute on zeros and store nothing.
"""

import functools
import sys

import numpy as np

import enigma

TILE = 16


@enigma.kernel
def matmul(A: enigma.f32, B: enigma.f32,
           M: enigma.Scalar(enigma.u32), N: enigma.Scalar(enigma.u32),
           K: enigma.Scalar(enigma.u32), C: enigma.f32):
    col = enigma.thread_position_in_grid_xyz("x")
    row = enigma.thread_position_in_grid_xyz("y")
    tx = enigma.thread_position_in_threadgroup("x")
    ty = enigma.thread_position_in_threadgroup("y")
    a_tile = enigma.threadgroup_alloc(enigma.f32, TILE * TILE)
    b_tile = enigma.threadgroup_alloc(enigma.f32, TILE * TILE)
    steps = (K + (TILE - 1)) // TILE

    with enigma.for_range(0, steps, dtype="uint", init=[0.0]) as (t, acc):
        k0 = t * TILE
        a_col = k0 + tx
        b_row = k0 + ty
        a_tile[ty * TILE + tx] = enigma.load_if(
            A, row * K + a_col, (row < M) & (a_col < K), 0.0)
        b_tile[ty * TILE + tx] = enigma.load_if(
            B, b_row * N + col, (b_row < K) & (col < N), 0.0)
        enigma.barrier()
        for kk in enigma.range_constexpr(TILE):
            acc[0] = enigma.fma(a_tile[ty * TILE + kk], b_tile[kk * TILE + tx],
                                acc[0])
        enigma.barrier()

    with enigma.if_((row < M) & (col < N)):
        C[row * N + col] = acc[0]


def reference(a, b):
    """A @ B in float64."""
    return np.asarray(a, np.float64) @ np.asarray(b, np.float64)


def check_output(c, a, b):
    """A dot product of length K accumulated in f32 in order: error below
    K * 2**-24 * sum_k |a_ik b_kj| (fma rounds once per step). The bound is
    checked element by element against |A| @ |B| in float64, with a factor
    of 2 to spare."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    c = np.asarray(c, np.float64).reshape(a.shape[0], b.shape[1])
    bound = 2 * max(1, a.shape[1]) * 2.0**-24 * (np.abs(a) @ np.abs(b))
    err = np.abs(c - a @ b)
    bad = err > bound + 1e-30
    assert not bad.any(), (
        f"{int(bad.sum())} elements out of tolerance, worst error "
        f"{float(err.max())} at {np.unravel_index(np.argmax(err - bound), err.shape)}")


@functools.lru_cache(maxsize=None)
def compiled():
    return enigma.compile(matmul)


def _launch(m, n):
    grid = (-(-n // TILE) * TILE, -(-m // TILE) * TILE, 1)
    return grid, (TILE, TILE, 1)


def run(rt, a, b):
    """C = A @ B for 2-D float32 arrays; returns (M, N) f32."""
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    (m, k), (k2, n) = a.shape, b.shape
    assert k == k2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    grid, threads = _launch(m, n)
    raw = rt.execute(compiled(), [a, b], output_size=m * n * 4, grid=grid,
                     threads=threads, scalars=[m, n, k])
    return np.frombuffer(raw, dtype=np.float32).reshape(m, n).copy()


def run_prepared(rt, x):
    """(prepared, grid, threads, check) for ``x = (A, B)``."""
    a, b = (np.ascontiguousarray(v, np.float32) for v in x)
    (m, k), n = a.shape, b.shape[1]
    grid, threads = _launch(m, n)
    prepared = rt.prepare(compiled(), [a, b], m * n * 4, scalars=[m, n, k])

    def check(out):
        check_output(out, a, b)

    return prepared, grid, threads, check


def main(m: int = 257, n: int = 131, k: int = 300) -> int:
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
