"""Tensors, @enigma.jit launches and fragments with the original Enigma DSL's
meaning, written the way its programs are: a single index is a raw element
index into the buffer, slices with fewer coordinates drop the trailing
modes, Tensor(name, index, dtype) needs no layout, tensor_composition takes
(tensor, tv_layout, tiler), launch(grid=...) counts threads, load() of 2-4
contiguous elements is a float2/3/4, and simd reductions of a fragment
reduce within the thread first. Every kernel runs on the ``runtime``
fixture against numpy; outputs are zero-filled by the runtime, so elements
a kernel must not touch are checked to stay zero."""

import numpy as np
import pytest

import enigma
from enigma.tensor import Tensor, tensor_composition, tensor_zipped_divide


def row_major(m, n):
    return enigma.Layout((m, n), (n, 1))


def run(runtime, compiled, inputs, out_dtype, count, grid=None, threads=None,
        **kwargs):
    raw = runtime.execute(compiled, inputs,
                          output_size=count * np.dtype(out_dtype).itemsize,
                          grid=grid, threads=threads, **kwargs)
    return np.frombuffer(raw, out_dtype).copy()


# --------------------------------------------------------------------------
# A thread/value-layout kernel in the original's style: an @enigma.jit host
# function divides the tensors into tiles, the kernel picks its tile by
# block index and its values by thread index (C = 2A + B)
# --------------------------------------------------------------------------

@enigma.kernel
def axpy_tile(x_tiles, y_tiles, out_tiles, thread_values, tile_shape):
    thread, _, _ = enigma.arch.thread_idx()
    block, _, _ = enigma.arch.block_idx()
    views = []
    for tiles in (x_tiles, y_tiles, out_tiles):
        tile = tiles[((None, None), block)]
        per_thread = tensor_composition(tile, thread_values, tile_shape)
        views.append(per_thread[(thread, None)])
    x, y, out = views
    out.store(x.load() * 2.0 + y.load())


@enigma.jit
def axpy(mX, mY, mOut):
    threads_mn = enigma.make_ordered_layout((8, 32), order=(1, 0))
    values_mn = enigma.make_ordered_layout((2, 8), order=(1, 0))
    tile_shape, thread_values = enigma.make_layout_tv(threads_mn, values_mn)
    tiled = [tensor_zipped_divide(t, tile_shape) for t in (mX, mY, mOut)]
    blocks = enigma.size(tiled[0], mode=[1])
    per_block = enigma.size(thread_values, mode=[0])
    axpy_tile(*tiled, thread_values, tile_shape).launch(
        grid=(blocks * per_block, 1, 1), block=(per_block, 1, 1))


def _tv_tensors(M, N):
    return [Tensor(n, i, "float", enigma.Layout((M, N), (N, 1)))
            for i, n in enumerate("ABC")]


@pytest.mark.parametrize("M,N", [(16, 256), (64, 512), (48, 768)])
def test_tv_axpy(runtime, rng, M, N):
    compiled = enigma.compile(axpy, *_tv_tensors(M, N))
    blocks = (M // 16) * (N // 256)
    # The grid counts threads, as launched.
    assert compiled.grid == (blocks * 256, 1, 1)
    assert compiled.block == (256, 1, 1)
    A = rng.standard_normal((M, N)).astype(np.float32)
    B = rng.standard_normal((M, N)).astype(np.float32)
    out = run(runtime, compiled, [A.ravel(), B.ravel()], np.float32, M * N,
              grid=compiled.grid, threads=compiled.block)
    expected = (A.astype(np.float64) * 2 + B).astype(np.float32)
    np.testing.assert_array_equal(out.reshape(M, N), expected)
    # execute() without a grid and dispatch_shape agree with the launch.
    assert enigma.dispatch_shape(compiled) == (compiled.grid, compiled.block)
    again = run(runtime, compiled, [A.ravel(), B.ravel()], np.float32, M * N)
    np.testing.assert_array_equal(again, out)


def test_tv_axpy_prepared(runtime, rng):
    # Prepared once, dispatched with the compiled grid and block.
    M, N = 32, 512
    compiled = enigma.compile(axpy, *_tv_tensors(M, N))
    A = rng.standard_normal(M * N).astype(np.float32)
    B = rng.standard_normal(M * N).astype(np.float32)
    prep = runtime.prepare(compiled, [A, B], M * N * 4)
    try:
        prep.dispatch(grid=compiled.grid, threads=compiled.block)
        out = np.frombuffer(prep.read_output(), np.float32)
        np.testing.assert_array_equal(out, A * np.float32(2) + B)
        assert prep.dispatch_timed(grid=compiled.grid,
                                   threads=compiled.block) >= 0
    finally:
        prep.release()


def test_launch_in_threadgroups_by_keyword(runtime, rng):
    @enigma.kernel
    def twice(gX, gY):
        t, _, _ = enigma.arch.thread_idx()
        b, _, _ = enigma.arch.block_idx()
        gY[(t, b)] = gX[(t, b)] * 2.0

    @enigma.jit
    def host(X, Y):
        gX = tensor_zipped_divide(X, 32)
        gY = tensor_zipped_divide(Y, 32)
        twice(gX, gY).launch(threadgroups=(gX.size(1), 1, 1),
                             block=(32, 1, 1))

    n = 32 * int(rng.integers(1, 9))
    compiled = enigma.compile(host, *(Tensor(c, i, enigma.f32,
                                             enigma.Layout(n))
                                      for i, c in enumerate("XY")))
    assert compiled.grid == (n, 1, 1) and compiled.block == (32, 1, 1)
    x = rng.standard_normal(n).astype(np.float32)
    np.testing.assert_array_equal(run(runtime, compiled, [x], np.float32, n),
                                  x * np.float32(2))


@pytest.mark.parametrize("grid,block,match", [
    (None, (32, 1, 1), "grid"),
    ((64, 1, 1), None, "block"),
])
def test_launch_needs_a_grid_and_a_block(grid, block, match):
    @enigma.kernel
    def k(X):
        X[0] = 1.0

    @enigma.jit
    def host(X):
        k(X).launch(grid=grid, block=block)

    with pytest.raises(enigma.EnigmaError, match=match):
        enigma.compile(host, Tensor("X", 0, enigma.f32, enigma.Layout(4)))


def test_launch_grid_and_threadgroups_together_is_an_error():
    @enigma.kernel
    def k(X):
        X[0] = 1.0

    @enigma.jit
    def host(X):
        k(X).launch(grid=(64, 1, 1), block=(32, 1, 1), threadgroups=(2, 1, 1))

    with pytest.raises(enigma.EnigmaError, match="threadgroups"):
        enigma.compile(host, Tensor("X", 0, enigma.f32, enigma.Layout(4)))


def test_partial_last_threadgroup(runtime, rng):
    # 100 threads in groups of 32: the last group is partial, as with
    # Metal's dispatchThreads.
    @enigma.kernel
    def copy(X, Y):
        t = enigma.thread_position_in_grid
        Y[t] = X[t] + 1.0

    @enigma.jit
    def host(X, Y):
        copy(X, Y).launch(grid=(100, 1, 1), block=(32, 1, 1))

    compiled = enigma.compile(host, *(Tensor(c, i, enigma.f32,
                                             enigma.Layout(128))
                                      for i, c in enumerate("XY")))
    x = rng.standard_normal(128).astype(np.float32)
    out = run(runtime, compiled, [x], np.float32, 128)
    np.testing.assert_array_equal(out[:100], x[:100] + np.float32(1))
    assert not out[100:].any()


# --------------------------------------------------------------------------
# The original's naive kernel and its vec_width=4 form
# (benchmark_naive_vs_tv.py)
# --------------------------------------------------------------------------

@enigma.kernel
def vector_add_naive(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


@pytest.mark.parametrize("vec_width", [0, 4])
def test_original_naive_and_float4_add(runtime, rng, vec_width):
    total = 4 * int(rng.integers(1, 600))
    compiled = enigma.compile(vector_add_naive, vec_width=vec_width)
    a = rng.standard_normal(total).astype(np.float32)
    b = rng.standard_normal(total).astype(np.float32)
    threads = total // 4 if vec_width else total
    out = run(runtime, compiled, [a, b], np.float32, total,
              grid=(threads, 1, 1), threads=(256, 1, 1))
    np.testing.assert_array_equal(out, a + b)


# --------------------------------------------------------------------------
# A single scalar index is a raw element index into the buffer
# --------------------------------------------------------------------------

@pytest.mark.parametrize("M,N", [(1, 1), (3, 5), (16, 33)])
def test_scalar_index_is_a_raw_element_index(runtime, rng, M, N):
    @enigma.kernel
    def copy(A: enigma.f32, B: enigma.f32):
        tid = enigma.thread_position_in_grid
        tA = Tensor("A", 0, "float", row_major(M, N))
        tB = Tensor("B", 1, "float", row_major(M, N))
        tB[tid] = tA[tid] * 2.0

    a = rng.standard_normal((M, N)).astype(np.float32)
    out = run(runtime, enigma.compile(copy), [a.ravel()], np.float32, M * N,
              grid=(M * N, 1, 1), threads=(32, 1, 1))
    np.testing.assert_array_equal(out, a.ravel() * np.float32(2))


def test_scalar_index_starts_at_a_slice_base(runtime, rng):
    # Row r of a row-major matrix: a raw index from the row's first element.
    @enigma.kernel
    def rows(A: enigma.f32, B: enigma.f32):
        r = enigma.threadgroup_position_in_grid("x")
        c = enigma.thread_position_in_threadgroup("x")
        src = Tensor("A", 0, "float", row_major(5, 7))[(r, None)]
        dst = Tensor("B", 1, "float", row_major(5, 7))[(r, None)]
        dst[6 - c] = src[c]

    a = rng.standard_normal((5, 7)).astype(np.float32)
    out = run(runtime, enigma.compile(rows), [a], np.float32, 35,
              grid=(35, 1, 1), threads=(7, 1, 1))
    np.testing.assert_array_equal(out.reshape(5, 7), a[:, ::-1])


def test_tuple_index_still_applies_the_layout(runtime, rng):
    @enigma.kernel
    def transpose(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid_xyz("x")
        j = enigma.thread_position_in_grid_xyz("y")
        a = Tensor("A", 0, "float", row_major(4, 6))
        b = Tensor("B", 1, "float", row_major(6, 4))
        b[(j, i)] = a[(i, j)]

    a = rng.standard_normal((4, 6)).astype(np.float32)
    out = run(runtime, enigma.compile(transpose), [a], np.float32, 24,
              grid=(4, 6, 1), threads=(4, 2, 1))
    np.testing.assert_array_equal(out.reshape(6, 4), a.T)


# --------------------------------------------------------------------------
# Tensor(name, index, dtype) without a layout; address_space / shape
# --------------------------------------------------------------------------

def test_tensor_without_a_layout(runtime, rng):
    @enigma.kernel
    def copy(A: enigma.f32, Out: enigma.f32):
        A_t = Tensor("A", 0, "float")
        Out_t = Tensor("Out", 1, "float")
        tid = enigma.thread_position_in_grid
        with enigma.for_range(0, 3):
            Out_t[tid] = A_t[tid] + 1.0

    n = int(rng.integers(1, 200))
    a = rng.standard_normal(n).astype(np.float32)
    out = run(runtime, enigma.compile(copy), [a], np.float32, n,
              grid=(n, 1, 1), threads=(32, 1, 1))
    np.testing.assert_array_equal(out, a + np.float32(1))


def test_tensor_description_without_a_layout():
    t = Tensor("A", 0, "float")
    assert t.layout is None and t.size() == 0
    assert t.address_space == "device" and t.element_type == "float"
    s = Tensor("S", -1, "float", address_space="threadgroup", shape=64)
    assert s.size() == 64 and s.address_space == "threadgroup"
    assert s.shape == 64
    with pytest.raises(enigma.EnigmaError, match="address_space"):
        Tensor("A", 0, "float", address_space="constant")
    with pytest.raises(enigma.EnigmaError, match="buffer_index"):
        Tensor("A", -2, "float")
    # -1 marks a tensor without a buffer (the original's convention): it
    # can be described and divided, not read in a kernel.
    assert Tensor("A", -1, "float", enigma.Layout(4)).buffer_index == -1


def test_reading_a_tensor_without_a_buffer_is_an_error():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = Tensor("X", -1, "float")[0]

    with pytest.raises(enigma.EnigmaError, match="no buffer"):
        enigma.compile(k)


def test_slicing_without_a_layout_is_an_error():
    @enigma.kernel
    def k(A: enigma.f32):
        Tensor("A", 0, "float")[(None,)].load()

    with pytest.raises(enigma.EnigmaError, match="layout"):
        enigma.compile(k)


def test_threadgroup_tensor(runtime, rng):
    # Each threadgroup reverses its 64 elements through threadgroup memory.
    @enigma.kernel
    def reverse(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_threadgroup("x")
        g = enigma.threadgroup_position_in_grid("x")
        shared = Tensor("tile", -1, "float", address_space="threadgroup",
                        shape=64)
        shared[t] = Tensor("A", 0, "float")[g * 64 + t]
        enigma.barrier()
        Tensor("B", 1, "float")[g * 64 + t] = shared[63 - t]

    groups = int(rng.integers(1, 5))
    a = rng.standard_normal(64 * groups).astype(np.float32)
    compiled = enigma.compile(reverse)
    assert "threadgroup float" in compiled.metal_source
    out = run(runtime, compiled, [a], np.float32, 64 * groups,
              grid=(64 * groups, 1, 1), threads=(64, 1, 1))
    np.testing.assert_array_equal(out, a.reshape(groups, 64)[:, ::-1].ravel())


# --------------------------------------------------------------------------
# Slices with fewer coordinates drop the trailing modes
# --------------------------------------------------------------------------

def test_fewer_coordinates_drop_trailing_modes():
    W = Tensor("W", 0, "float", enigma.Layout((1024,), (1,)))
    gW = tensor_zipped_divide(W, (256,))
    assert enigma.size(gW, mode=[1]) == 4
    tile = gW[(None,)]
    assert tile.size() == 256 and tile.base_offset == 0
    assert [tile.layout(i) for i in range(4)] == [0, 1, 2, 3]
    X = Tensor("X", 1, "float", row_major(8, 512))
    gX = tensor_zipped_divide(X, (1, 512))
    row = gX[((None, None), 3)][(0, None)]
    assert row.size() == 512 and row.base_offset == 3 * 512
    assert [row.layout(i) for i in range(3)] == [0, 1, 2]
    # A bare None is (None,), as in the original.
    assert X[None].shape == 8 and X[None].stride == 512
    # Nested: ((None,), k) keeps the first sub-mode of mode 0 only.
    Y = Tensor("Y", 2, "float", enigma.Layout(((4, 8), 3)))
    part = Y[((None,), 2)]
    assert part.size() == 4 and part.base_offset == 2 * 32


def test_dropped_modes_in_a_kernel(runtime, rng):
    # The original's rmsnorm slicing: gX[((None, None), row)][(0, None)].
    rows, cols = 6, 256

    @enigma.kernel
    def scale_rows(gX, gW, gOut):
        t, _, _ = enigma.arch.thread_idx()
        r, _, _ = enigma.arch.block_idx()
        x = gX[((None, None), r)][(0, None)]
        w = gW[(None,)]
        out = gOut[((None, None), r)][(0, None)]
        out[(t,)] = x[(t,)] * w[(t,)]

    @enigma.jit
    def host(X, W, Out):
        gX = tensor_zipped_divide(X, (1, cols))
        gOut = tensor_zipped_divide(Out, (1, cols))
        gW = tensor_zipped_divide(W, (cols,))
        scale_rows(gX, gW, gOut).launch(grid=(rows * cols, 1, 1),
                                        block=(cols, 1, 1))

    compiled = enigma.compile(
        host, Tensor("X", 0, "float", row_major(rows, cols)),
        Tensor("W", 1, "float", enigma.Layout((cols,), (1,))),
        Tensor("Out", 2, "float", row_major(rows, cols)))
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    out = run(runtime, compiled, [x, w], np.float32, rows * cols)
    np.testing.assert_array_equal(out.reshape(rows, cols), x * w)


# --------------------------------------------------------------------------
# tensor_composition with and without the tiler
# --------------------------------------------------------------------------

def test_tensor_composition_with_a_tiler_matches_two_arguments():
    thr = enigma.make_ordered_layout((4, 64), order=(1, 0))
    val = enigma.make_ordered_layout((4, 4), order=(1, 0))
    tiler, tv = enigma.make_layout_tv(thr, val)
    A = Tensor("A", 0, "float", row_major(64, 512))
    blk = tensor_zipped_divide(A, tiler)[((None, None), 5)]
    three = tensor_composition(blk, tv, tiler)
    two = tensor_composition(blk, tv)
    assert three.base_offset == two.base_offset == blk.base_offset
    # Element (t, v): tile index tv(t, v), column-major in the tile, at
    # row-major memory offset row * 512 + col from the tile's corner.
    for t in (0, 1, 63, 64, 255):
        for v in range(16):
            i = tv((t, v))
            offset = (i % tiler[0]) * 512 + i // tiler[0]
            assert three.layout((t, v)) == two.layout((t, v)) == offset


def test_tensor_composition_tiler_must_match_the_tensor():
    A = Tensor("A", 0, "float", row_major(16, 256))
    tv = enigma.Layout((256, 16))
    with pytest.raises(enigma.EnigmaError, match="tiler"):
        tensor_composition(A, tv, (16, 128))


# --------------------------------------------------------------------------
# load(): 2-4 contiguous elements are a float2/3/4
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 4])
def test_contiguous_load_is_a_vector_for_dot(runtime, rng, n):
    @enigma.kernel
    def dots(A: enigma.f32, B: enigma.f32, Out: enigma.f32):
        t = enigma.thread_position_in_grid
        a = Tensor("A", 0, "float", enigma.Layout(n), base_offset=t * n).load()
        b = Tensor("B", 1, "float", enigma.Layout(n), base_offset=t * n).load()
        assert a.lanes == n and len(a) == n
        Out[t] = enigma.dot(a, b)

    threads = int(rng.integers(1, 100))
    a = rng.standard_normal(threads * n).astype(np.float32)
    b = rng.standard_normal(threads * n).astype(np.float32)
    out = run(runtime, enigma.compile(dots), [a, b], np.float32, threads,
              grid=(threads, 1, 1), threads=(32, 1, 1))
    expected = (a.reshape(-1, n).astype(np.float64) * b.reshape(-1, n)).sum(1)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_vector_fragment_indexes_iterates_and_stores(runtime, rng):
    @enigma.kernel
    def k(A: enigma.f32, Out: enigma.f32):
        t = enigma.thread_position_in_grid
        v = Tensor("A", 0, "float", enigma.Layout(4), base_offset=t * 4).load()
        dst = Tensor("Out", 1, "float", enigma.Layout(4), base_offset=t * 4)
        total = v[0]
        for x in list(v)[1:]:
            total = total + x
        dst.store((v * 2.0 + total).astype("float"))

    a = rng.standard_normal(4 * 10).astype(np.float32)
    out = run(runtime, enigma.compile(k), [a], np.float32, 40,
              grid=(10, 1, 1), threads=(10, 1, 1))
    frag = a.reshape(10, 4)
    sums = frag[:, 0] + frag[:, 1] + frag[:, 2] + frag[:, 3]
    np.testing.assert_allclose(out.reshape(10, 4),
                               frag * 2 + sums[:, None], rtol=1e-6)


def test_load_shapes_by_count():
    seen = {}

    @enigma.kernel
    def k(A: enigma.f32):
        t = enigma.thread_position_in_grid
        seen["one"] = Tensor("A", 0, "float", enigma.Layout(1),
                             base_offset=t).load()
        seen["five"] = Tensor("A", 0, "float", enigma.Layout(5)).load()
        seen["strided"] = Tensor("A", 0, "float",
                                 enigma.Layout(4, 2)).load()

    enigma.compile(k, emit_only=True)
    # One element: a scalar; non-contiguous or more than 4: a Fragment.
    assert isinstance(seen["one"], enigma.IRValue) and seen["one"].lanes == 1
    assert isinstance(seen["five"], enigma.Fragment) and len(seen["five"]) == 5
    assert isinstance(seen["strided"], enigma.Fragment)


def test_mixed_vector_and_fragment_arithmetic(runtime, rng):
    # A contiguous float4 plus a strided fragment of 4: element-wise.
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32, Out: enigma.f32):
        t = enigma.thread_position_in_grid
        a = Tensor("A", 0, "float", enigma.Layout(4), base_offset=t * 4).load()
        b = Tensor("B", 1, "float", enigma.Layout(4, 8),
                   base_offset=t).load()
        Tensor("Out", 2, "float", enigma.Layout(4),
               base_offset=t * 4).store(a + b)

    a = rng.standard_normal(32).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    out = run(runtime, enigma.compile(k), [a, b], np.float32, 32,
              grid=(8, 1, 1), threads=(8, 1, 1))
    expected = a.reshape(8, 4) + b.reshape(4, 8).T
    np.testing.assert_array_equal(out.reshape(8, 4), expected)


# --------------------------------------------------------------------------
# simd reductions of a fragment: within the thread, then the simdgroup
# --------------------------------------------------------------------------

@pytest.mark.parametrize("per_thread,stride", [(4, 1), (3, 1), (8, 1),
                                               (4, 2)])
@pytest.mark.parametrize("threads", [32, 50])
def test_simd_sum_of_a_load(runtime, rng, per_thread, stride, threads):
    @enigma.kernel
    def k(A: enigma.f32, Out: enigma.f32):
        t = enigma.thread_position_in_grid
        frag = Tensor("A", 0, "float", enigma.Layout(per_thread, stride),
                      base_offset=t * per_thread * stride).load()
        Out[t] = enigma.simd_sum(frag)

    n = threads * per_thread * stride
    a = rng.standard_normal(n).astype(np.float32)
    out = run(runtime, enigma.compile(k), [a], np.float32, threads,
              grid=(threads, 1, 1), threads=(threads, 1, 1))
    per = a.reshape(threads, per_thread, stride)[:, :, 0].astype(np.float64)
    per = per.sum(1)
    expected = np.concatenate([np.full(len(g), g.sum())
                               for g in np.split(per, range(32, threads, 32))])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("name,combine", [
    ("simd_max", np.max), ("simd_min", np.min), ("simd_product", np.prod)])
def test_other_simd_reductions_of_a_load(runtime, rng, name, combine):
    @enigma.kernel
    def k(A: enigma.f32, Out: enigma.f32):
        t = enigma.thread_position_in_grid
        frag = Tensor("A", 0, "float", enigma.Layout(4),
                      base_offset=t * 4).load()
        Out[t] = getattr(enigma, name)(frag)

    a = rng.uniform(0.5, 1.5, 4 * 64).astype(np.float32)
    out = run(runtime, enigma.compile(k), [a], np.float32, 64,
              grid=(64, 1, 1), threads=(64, 1, 1))
    groups = a.reshape(2, 32 * 4).astype(np.float64)
    expected = np.repeat([combine(g) for g in groups], 32)
    np.testing.assert_allclose(out, expected, rtol=2e-5)


def test_simd_bitwise_reduction_of_an_integer_fragment(runtime, rng):
    @enigma.kernel
    def k(A: enigma.u32, Out: enigma.u32):
        t = enigma.thread_position_in_grid
        frag = Tensor("A", 0, "uint", enigma.Layout(8),
                      base_offset=t * 8).load()
        Out[t] = enigma.simd_xor(frag)

    a = rng.integers(0, 2**32, 8 * 32, dtype=np.uint32)
    out = run(runtime, enigma.compile(k), [a], np.uint32, 32,
              grid=(32, 1, 1), threads=(32, 1, 1))
    np.testing.assert_array_equal(out, np.full(32, np.bitwise_xor.reduce(a)))


def test_simd_prefix_of_a_fragment_is_element_wise(runtime, rng):
    @enigma.kernel
    def k(A: enigma.f32, Out: enigma.f32):
        t = enigma.thread_position_in_grid
        src = Tensor("A", 0, "float", enigma.Layout(4), base_offset=t * 4)
        dst = Tensor("Out", 1, "float", enigma.Layout(4), base_offset=t * 4)
        dst.store(enigma.simd_prefix_inclusive_sum(src.load()))

    a = rng.integers(-8, 8, 4 * 32).astype(np.float32)
    out = run(runtime, enigma.compile(k), [a], np.float32, 128,
              grid=(32, 1, 1), threads=(32, 1, 1))
    np.testing.assert_array_equal(out.reshape(32, 4),
                                  np.cumsum(a.reshape(32, 4), axis=0))


# --------------------------------------------------------------------------
# Atomic methods of a Tensor (raw element index, as the original's)
# --------------------------------------------------------------------------

def test_tensor_atomic_methods(runtime, rng):
    @enigma.kernel
    def histogram(A: enigma.u32, H: enigma.u32):
        t = enigma.thread_position_in_grid
        bins = Tensor("H", 1, "uint")
        bins.atomic_fetch_add(Tensor("A", 0, "uint")[t] % 8, 1)

    n = int(rng.integers(1, 500))
    a = rng.integers(0, 1000, n, dtype=np.uint32)
    out = run(runtime, enigma.compile(histogram), [a], np.uint32, 8,
              grid=(n, 1, 1), threads=(64, 1, 1))
    np.testing.assert_array_equal(out, np.bincount(a % 8, minlength=8))


# --------------------------------------------------------------------------
# The MSL these produce
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [3, 4])
def test_msl_of_vector_loads_and_fragment_reductions(n):
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32, Out: enigma.f32):
        t = enigma.thread_position_in_grid
        a = Tensor("A", 0, "float", enigma.Layout(n), base_offset=t * n).load()
        b = Tensor("B", 1, "float", enigma.Layout(n), base_offset=t * n).load()
        Out[t] = enigma.dot(a, b) + enigma.simd_sum(a)

    msl = enigma.compile(k, emit_only=True).metal_source
    # One simdgroup reduction of the thread's combined values.
    assert msl.count("simd_sum(") == 1
    if n == 4:  # one aligned float4 load per tensor is the value itself
        assert msl.count("*(device float4*)(A + ") == 1
        assert msl.count("*(device float4*)(B + ") == 1
    else:  # three scalars assembled into a float3
        assert msl.count("= float3(") == 2


def test_tensor_from_a_buffer_parameter(runtime, rng):
    # The original's kernel parameters carry name, buffer_index and
    # metal_dtype, so a kernel can view one through a layout.
    M, N = 3, 5

    @enigma.kernel
    def transpose(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid_xyz("x")
        j = enigma.thread_position_in_grid_xyz("y")
        assert (A.name, A.buffer_index, A.metal_dtype) == ("A", 0, "float")
        assert B.buffer_index == 1 and B.element_type == "float"
        a = Tensor(A.name, A.buffer_index, A.metal_dtype, row_major(M, N))
        b = Tensor(B.name, B.buffer_index, B.metal_dtype, row_major(N, M))
        b[(j, i)] = a[(i, j)]

    a = rng.standard_normal((M, N)).astype(np.float32)
    out = run(runtime, enigma.compile(transpose), [a], np.float32, M * N,
              grid=(M, N, 1), threads=(M, N, 1))
    np.testing.assert_array_equal(out.reshape(N, M), a.T)


def test_threadgroup_tensor_first_used_under_an_if(runtime, rng):
    # Made at the top level, first written under if_: allocated where made.
    # A counter (atomics) and a float4 read of threadgroup memory.
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_threadgroup("x")
        stage = Tensor("stage", -1, "float", enigma.Layout(256),
                       address_space="threadgroup")
        count = Tensor("count", -1, "uint", address_space="threadgroup",
                       shape=1)
        with enigma.if_(t == 0):
            count[0] = 0
        for i in range(4):
            stage[t * 4 + i] = Tensor("A", 0, "float")[t * 4 + i]
        enigma.barrier()
        count.atomic_fetch_add(0, 1)
        enigma.barrier()
        mine = Tensor("stage", -1, "float", enigma.Layout(4),
                      address_space="threadgroup",
                      base_offset=((t + 1) % 64) * 4).load()
        scale = enigma.metal_cast(count[0], "float")
        Tensor("B", 1, "float", enigma.Layout(4),
               base_offset=t * 4).store(mine * scale)

    compiled = enigma.compile(k)
    assert compiled.metal_source.count("threadgroup float4*") == 1
    a = rng.standard_normal(256).astype(np.float32)
    out = run(runtime, compiled, [a], np.float32, 256, grid=(64, 1, 1),
              threads=(64, 1, 1))
    expected = np.roll(a.reshape(64, 4), -1, axis=0).ravel() * np.float32(64)
    np.testing.assert_array_equal(out, expected)


def test_threadgroup_tensor_larger_than_its_array_is_an_error():
    @enigma.kernel
    def k(A: enigma.f32):
        Tensor("s", -1, "float", address_space="threadgroup", shape=4)
        Tensor("s", -1, "float", address_space="threadgroup", shape=8)

    with pytest.raises(enigma.EnigmaError, match="needs 8 elements.*has 4"):
        enigma.compile(k)


def test_threadgroup_tensor_made_under_an_if_is_an_error():
    @enigma.kernel
    def k(A: enigma.f32):
        with enigma.if_(enigma.thread_position_in_grid == 0):
            Tensor("s", -1, "float", address_space="threadgroup",
                   shape=4)[0] = 1.0

    with pytest.raises(enigma.EnigmaError, match="top level") as info:
        enigma.compile(k)
    assert "test_compat_tensor.py:" in str(info.value)


def test_threadgroup_tensor_passed_to_a_jit_kernel(runtime, rng):
    @enigma.kernel
    def reverse(gX, gY, shared):
        t, _, _ = enigma.arch.thread_idx()
        b, _, _ = enigma.arch.block_idx()
        with enigma.if_(t < 32):
            shared[t] = gX[(t, b)]
        enigma.barrier()
        gY[(t, b)] = shared[31 - t]

    @enigma.jit
    def host(X, Y):
        shared = Tensor("shared", -1, "float", address_space="threadgroup",
                        shape=32)
        gX, gY = tensor_zipped_divide(X, 32), tensor_zipped_divide(Y, 32)
        reverse(gX, gY, shared).launch(grid=(X.size(), 1, 1),
                                       block=(32, 1, 1))

    n = 32 * int(rng.integers(1, 6))
    compiled = enigma.compile(host, *(Tensor(c, i, "float", enigma.Layout(n))
                                      for i, c in enumerate("XY")))
    assert compiled.num_params == 2  # the threadgroup tensor is no buffer
    x = rng.standard_normal(n).astype(np.float32)
    out = run(runtime, compiled, [x], np.float32, n)
    np.testing.assert_array_equal(out, x.reshape(-1, 32)[:, ::-1].ravel())


def test_threadgroup_tensor_as_an_async_copy_destination(runtime, rng):
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_index_in_threadgroup()
        tile = Tensor("tile", -1, "float", address_space="threadgroup",
                      shape=64)
        with enigma.if_(enigma.simdgroup_index_in_threadgroup() == 0):
            ev = enigma.async_copy_1d_d2t(tile, 0, Tensor("A", 0, "float"),
                                          0, 64)
            enigma.async_copy_wait(ev)
        enigma.barrier()
        B[t] = tile[63 - t]

    a = rng.standard_normal(64).astype(np.float32)
    out = run(runtime, enigma.compile(k), [a], np.float32, 64,
              grid=(64, 1, 1), threads=(64, 1, 1))
    np.testing.assert_array_equal(out, a[::-1])
