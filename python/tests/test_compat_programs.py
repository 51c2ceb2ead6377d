"""Whole programs written the way the original Enigma DSL's examples write
them (helper functions traced inline, @enigma.jit launchers over Tensors,
kernels that rebuild Tensors from their parameters, halos read through
`where`, scratch buffers passed as inputs), run on the ``runtime`` fixture
against numpy in float64."""

import numpy as np

import enigma
from enigma.tensor import Tensor

# ---------------------------------------------------------------------------
# A 2-D box blur with a threadgroup tile and a one-cell halo. Halo cells are
# read through `where`, so the thread at the edge of the grid computes an
# index that wraps around (uint) and discards the value.
# ---------------------------------------------------------------------------
TH, TW = 8, 8
GH, GW = 40, 24


@enigma.kernel
def blur_tile(src, dst):
    bx = enigma.threadgroup_position_in_grid("x")
    by = enigma.threadgroup_position_in_grid("y")
    tx = enigma.thread_position_in_threadgroup("x")
    ty = enigma.thread_position_in_threadgroup("y")
    x = bx * TW + tx
    y = by * TH + ty
    pitch = TW + 2
    tile = enigma.threadgroup_alloc("float", (TH + 2) * pitch)
    tile[(ty + 1) * pitch + tx + 1] = src[y * GW + x]
    zero = enigma.metal_cast(0.0, "float")
    with enigma.if_(enigma.cmp_eq(tx, 0)):
        tile[(ty + 1) * pitch] = enigma.where(
            zero, src[y * GW + x - 1], enigma.cmp_ugt(x, 0))
    with enigma.if_(enigma.cmp_eq(tx, TW - 1)):
        tile[(ty + 1) * pitch + TW + 1] = enigma.where(
            zero, src[y * GW + x + 1], enigma.cmp_ult(x + 1, GW))
    with enigma.if_(enigma.cmp_eq(ty, 0)):
        tile[tx + 1] = enigma.where(
            zero, src[(y - 1) * GW + x], enigma.cmp_ugt(y, 0))
    with enigma.if_(enigma.cmp_eq(ty, TH - 1)):
        tile[(TH + 1) * pitch + tx + 1] = enigma.where(
            zero, src[(y + 1) * GW + x], enigma.cmp_ult(y + 1, GH))
    enigma.barrier()
    c = (ty + 1) * pitch + tx + 1
    dst[y * GW + x] = (tile[c - pitch] + tile[c + pitch] + tile[c - 1]
                       + tile[c + 1] + tile[c]) * 0.2


@enigma.jit
def blur(m_src, m_dst):
    blur_tile(m_src, m_dst).launch(grid=(GW, GH, 1), block=(TW, TH, 1))


def test_tiled_blur_with_halo(runtime, rng):
    src = Tensor("src", 0, "float", enigma.Layout(GH * GW, 1))
    dst = Tensor("dst", 1, "float", enigma.Layout(GH * GW, 1))
    compiled = enigma.compile(blur, src, dst)
    assert compiled.grid == (GW, GH, 1) and compiled.block == (TW, TH, 1)
    a = rng.standard_normal((GH, GW)).astype(np.float32)
    raw = runtime.execute(compiled, [a.ravel()], GH * GW * 4,
                          grid=compiled.grid, threads=compiled.block)
    out = np.frombuffer(raw, np.float32).reshape(GH, GW)
    p = np.pad(a.astype(np.float64), 1)
    expected = (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]
                + p[1:-1, 1:-1]) * 0.2
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# A kernel whose parameters are Tensors handed over by @enigma.jit, rebuilt
# inside the body from their name, buffer index and dtype with the Tensor
# class that the original exposes from enigma._tracing.
# ---------------------------------------------------------------------------
ROWS, COLS = 48, 5


@enigma.kernel
def row_dot(X, W, Out):
    from enigma._tracing import Tensor as RawTensor
    x = RawTensor(X.name, X.buffer_index, X.metal_dtype)
    w = RawTensor(W.name, W.buffer_index, W.metal_dtype)
    out = RawTensor(Out.name, Out.buffer_index, Out.metal_dtype)
    tid, _, _ = enigma.arch.thread_idx()
    bid, _, _ = enigma.arch.block_idx()
    bdim, _, _ = enigma.arch.block_dim()
    row = bid * bdim + tid
    acc = enigma.metal_cast(0.0, "float")
    for k in range(COLS):
        acc = enigma.fma(x[row * COLS + k], w[k], acc)
    out[row] = acc


@enigma.jit
def row_dots(mX, mW, mOut):
    threads = 16
    row_dot(mX, mW, mOut).launch(grid=(ROWS, 1, 1), block=(threads, 1, 1))


def test_kernel_rebuilds_tensors_from_parameters(runtime, rng):
    mX = Tensor("X", 0, "float", enigma.Layout((ROWS, COLS), (COLS, 1)))
    mW = Tensor("W", 1, "float", enigma.Layout((COLS,), (1,)))
    mOut = Tensor("Out", 2, "float", enigma.Layout((ROWS,), (1,)))
    compiled = enigma.compile(row_dots, mX, mW, mOut)
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    w = rng.standard_normal(COLS).astype(np.float32)
    raw = runtime.execute(compiled, [x.ravel(), w], ROWS * 4,
                          grid=compiled.grid, threads=compiled.block)
    np.testing.assert_allclose(np.frombuffer(raw, np.float32),
                               x.astype(np.float64) @ w, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# One threadgroup runs two phases through helper functions traced inline:
# a mean of squares with simd_sum and a threadgroup scratch array, then a
# scaled copy into a scratch buffer the caller passed as an input, then a
# matrix-vector product reading that scratch buffer.
# ---------------------------------------------------------------------------
TG = 128
DIM = 256
OUT_ROWS = 70


def _mean_square_scale(X, Y, tid):
    lane = enigma.thread_index_in_simdgroup()
    group = enigma.simdgroup_index_in_threadgroup()
    groups = enigma.simdgroups_per_threadgroup()
    zero = enigma.metal_cast(0, "float")
    with enigma.for_range(0, DIM // TG, init=[zero]) as (j, c):
        v = X[tid + enigma.metal_cast(j, "uint") * TG]
        c[0] = c[0] + v * v
    part = enigma.simd_sum(c[0])
    scratch = enigma.threadgroup_alloc("float", 32)
    enigma.store_if(scratch, group, part, enigma.cmp_eq(lane, 0))
    enigma.barrier()
    total = enigma.simd_sum(enigma.load_if(scratch, lane,
                                           enigma.cmp_ult(lane, groups),
                                           default=0.0))
    scale = enigma.rsqrt(total / float(DIM) + 1e-6)
    with enigma.for_range(0, DIM // TG) as j:
        idx = tid + enigma.metal_cast(j, "uint") * TG
        Y[idx] = X[idx] * scale


def _matvec(W, X, Out, tid):
    with enigma.for_range(0, (OUT_ROWS + TG - 1) // TG) as chunk:
        row = tid + enigma.metal_cast(chunk, "uint") * TG
        with enigma.if_(enigma.cmp_ult(row, OUT_ROWS)) as (then_b, else_b):
            with then_b:
                zero = enigma.metal_cast(0, "float")
                with enigma.for_range(0, DIM, init=[zero]) as (i, c):
                    ui = enigma.metal_cast(i, "uint")
                    c[0] = enigma.fma(W[row * DIM + ui], X[ui], c[0])
                Out[row] = c[0]


@enigma.kernel
def fused(X: enigma.f32, W: enigma.f32, scratch: enigma.f32, Out: enigma.f32):
    tid = enigma.thread_position_in_threadgroup()
    _mean_square_scale(X, scratch, tid)
    enigma.barrier("mem_device_and_threadgroup")
    _matvec(W, scratch, Out, tid)


def test_single_threadgroup_phases(runtime, rng):
    x = rng.standard_normal(DIM).astype(np.float32)
    w = (rng.standard_normal((OUT_ROWS, DIM)) / 16).astype(np.float32)
    scratch = np.full(DIM, np.nan, np.float32)  # the kernel overwrites it
    raw = runtime.execute(enigma.compile(fused), [x, w.ravel(), scratch],
                          OUT_ROWS * 4, grid=(TG, 1, 1), threads=(TG, 1, 1))
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt(np.mean(x64 * x64) + 1e-6)
    np.testing.assert_allclose(np.frombuffer(raw, np.float32),
                               w.astype(np.float64) @ y, rtol=1e-4, atol=1e-5)
    assert np.isnan(scratch).all()  # the caller's array is never modified


@enigma.kernel
def row_of_squares(A: enigma.f32, B: enigma.f32):
    # The original's class constructor: RegisterTensor(shape, dtype, fill).
    t = enigma.thread_position_in_grid
    acc = enigma.RegisterTensor((2, 3), "float", 1.0)
    for j in range(3):
        acc[0, j] = A[t * 3 + j] * A[t * 3 + j]
    B[t] = acc[0, 0] + acc[0, 1] + acc[0, 2] + acc[1, 2]


def test_register_tensor_class_constructor(runtime, rng):
    n = 37
    a = rng.standard_normal(3 * n).astype(np.float32)
    raw = runtime.execute(enigma.compile(row_of_squares), [a], n * 4,
                          grid=(n, 1, 1), threads=(16, 1, 1))
    a64 = a.astype(np.float64).reshape(n, 3)
    np.testing.assert_allclose(np.frombuffer(raw, np.float32),
                               (a64 * a64).sum(axis=1) + 1.0, rtol=1e-5)
