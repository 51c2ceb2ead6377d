"""Element-wise ``C = A + B`` of two row-major float32 matrices, written the
CuTe way: an ``@enigma.jit`` host function divides the matrices into tiles
with a thread-value (TV) layout and launches one threadgroup per tile.

    python examples/python/tv_add.py [rows] [cols]

The thread layout arranges 256 threads as 4 rows of 64 (row-major) and the
value layout gives each thread 4 consecutive floats of one row, so a tile
is 4 x 256 elements. ``make_layout_tv`` turns the two into the tile shape
and the layout (thread, value) -> element of the tile. In the kernel each
thread slices out its 4 values; ``load()`` reads them as one ``float4``
(the offsets are contiguous and provably multiples of 4), and ``store()``
writes them back the same way.

Why this shape: on an H200 it moves data as fast as the plain
``vec_width=4`` kernel (bench/tv_add_variants.py compares layouts); giving
each thread 4 x 4 values (128 threads of 4 x 32) was 1.5% slower there
(docs/benchmarks.md).

Rows must be a multiple of 4 and columns of 256 (one tile each).
"""

import sys

import numpy as np

import enigma

THREADS = (4, 64)  # threads per tile: rows x columns, row-major
VALUES = (1, 4)    # values per thread: rows x columns, row-major


@enigma.kernel
def tv_add_kernel(gA, gB, gC, tv_layout):
    """One threadgroup per tile: thread ``tid`` adds its values of tile
    ``bid``."""
    tid, _, _ = enigma.arch.thread_idx()
    bid, _, _ = enigma.arch.block_idx()
    # This threadgroup's tile, visited row by row: the matrices are
    # row-major, so consecutive threadgroups read neighbouring memory (a
    # plain g[None, bid] would walk the tile grid column-major).
    tiles_n = gA.shape[1][1]
    tile = (bid // tiles_n, bid % tiles_n)
    tiles = [g[None, tile] for g in (gA, gB, gC)]
    frgA, frgB, frgC = (enigma.tensor_composition(t, tv_layout)[tid, None]
                        for t in tiles)
    frgC.store(frgA.load() + frgB.load())


def matrix_layout(rows, cols):
    """Row-major ``rows x cols``: (rows, cols) with strides (cols, 1)."""
    return enigma.make_layout((rows, cols), stride=(cols, 1))


@enigma.jit
def tv_add(A, B, C):
    """Divides A, B, C into TV tiles and launches one threadgroup per tile."""
    thr = enigma.make_layout(THREADS, stride=(THREADS[1], 1))
    val = enigma.make_layout(VALUES, stride=(VALUES[1], 1))
    tiler, tv_layout = enigma.make_layout_tv(thr, val)
    gA, gB, gC = (enigma.tensor_zipped_divide(t, tiler) for t in (A, B, C))
    tiles, threads = gA.size(1), enigma.size(thr)
    # The grid counts threads: one threadgroup of `threads` per tile.
    tv_add_kernel(gA, gB, gC, tv_layout).launch(
        grid=[tiles * threads, 1, 1], block=[threads, 1, 1])


def tile_shape():
    """(rows, cols) of one tile."""
    return THREADS[0] * VALUES[0], THREADS[1] * VALUES[1]


def compile_for(rows, cols):
    """The kernel compiled for ``rows x cols`` matrices."""
    tr, tc = tile_shape()
    if rows % tr or cols % tc:
        raise ValueError(f"tv_add needs rows % {tr} == 0 and cols % {tc} == "
                         f"0, got {rows} x {cols}")
    layout = matrix_layout(rows, cols)
    tensors = [enigma.Tensor(name, i, enigma.f32, layout)
               for i, name in enumerate("ABC")]
    return enigma.compile(tv_add, *tensors)


def run(rt, a, b):
    """``a + b`` for two (rows, cols) float32 arrays on runtime ``rt``."""
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    compiled = compile_for(*a.shape)
    grid, threads = enigma.dispatch_shape(compiled)
    raw = rt.execute(compiled, [a, b], output_size=a.nbytes, grid=grid,
                     threads=threads)
    return np.frombuffer(raw, np.float32).reshape(a.shape).copy()


def check_output(c, a, b):
    """One float32 addition per element: exact against the float64 sum
    rounded to float32."""
    expected = (np.asarray(a, np.float64) + b).astype(np.float32)
    np.testing.assert_array_equal(c, expected)


def main(rows: int = 256, cols: int = 512) -> int:
    rng = np.random.default_rng()
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    b = rng.standard_normal((rows, cols)).astype(np.float32)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}")
    check_output(run(rt, a, b), a, b)
    print("pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:3])))
