"""The matrix multiply-accumulate family end to end (docs/reference/mma.md):
fragments (fill, iota, load, store), products with operand tiles in
threadgroup memory and A in registers, row reductions and broadcasts,
element-wise arithmetic, fragments carried by loops and branches, the
threadgroup tile copy, gemm_block, autotune, and the mistakes that must be
an EnigmaError naming the user's line. Every result is checked against a
numpy float64 reference with fresh random inputs, on every backend under
test.

Products use inputs that are small multiples of 1/8, so every product and
every partial sum is exact in float and the comparison can be exact, in
whatever order a target sums.
"""

import functools
import os

import re

import numpy as np
import pytest

import enigma

from conftest import run_kernel

U32 = enigma.Scalar(enigma.u32)


def _eighths(rng, shape, lo=-8, hi=8):
    """Small multiples of 1/8: exact in half, bfloat and float, and so are
    their products and short sums."""
    return (rng.integers(lo, hi + 1, shape) / 8.0).astype(np.float32)


def _to_bits(x, dtype):
    x = np.ascontiguousarray(x, np.float32)
    if dtype == "f16":
        return x.astype(np.float16)
    if dtype == "bf16":
        u = x.view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return x


def _from_bits(b, dtype):
    if dtype == "f16":
        return np.asarray(b).view(np.float16).astype(np.float32)
    if dtype == "bf16":
        return (np.asarray(b, np.uint16).astype(np.uint32) << 16).view(
            np.float32)
    return np.asarray(b, np.float32)


# --------------------------------------------------------------------------
# fill, iota, load, store
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _fill_iota():
    @enigma.kernel
    def fill_iota(X: enigma.f32, O: enigma.f32):
        # Two simdgroups, each its own 32 x 48 block of O.
        sg = enigma.simdgroup_index_in_threadgroup()
        f = enigma.mma_fill(X[0], 32, 48)
        rows = enigma.mma_iota(0, 32, 48).cast(enigma.f32)
        cols = enigma.mma_iota(1, 32, 48).cast("float")
        row_vec = enigma.mma_fill(X[1], 32)
        out = f + rows * 100.0 + cols + row_vec
        enigma.mma_store(out, O, ld=48, offset=sg * (32 * 48))
    return enigma.compile(fill_iota)


def test_fill_iota_and_row_vector_broadcast(runtime, rng):
    x = rng.uniform(-2, 2, 2).astype(np.float32)
    out = run_kernel(runtime, _fill_iota(), [x], np.float32, 2 * 32 * 48,
                     (64, 1, 1), (64, 1, 1)).reshape(2, 32, 48)
    r, c = np.meshgrid(np.arange(32, dtype=np.float32),
                       np.arange(48, dtype=np.float32), indexing="ij")
    # Rounded to float after each operation, in the kernel's order.
    want = ((x[0] + r * np.float32(100)) + c) + x[1]
    np.testing.assert_array_equal(out[0], want)
    np.testing.assert_array_equal(out[1], want)


@functools.lru_cache(maxsize=None)
def _load_store(load_t, store_t, bounded):
    @enigma.kernel
    def load_store(A: enigma.f32, off: U32, ld: U32, R: U32, C: U32,
                   O: enigma.f32):
        bounds = (R, C) if bounded else None
        f = enigma.mma_load(A, 16, 32, ld=ld, offset=off, transpose=load_t,
                            bounds=bounds)
        enigma.mma_store(f * 2.0, O, ld=40, offset=3, transpose=store_t,
                         bounds=bounds)
    return enigma.compile(load_store)


@pytest.mark.parametrize("load_t", [False, True])
@pytest.mark.parametrize("store_t", [False, True])
@pytest.mark.parametrize("bounded", [False, True])
def test_load_store_transposed_and_bounded(runtime, rng, load_t, store_t,
                                           bounded):
    ld, off = 37, 5
    a = rng.uniform(1, 2, off + 40 * ld).astype(np.float32)
    R, C = (11, 23) if bounded else (16, 32)
    out = run_kernel(runtime, _load_store(load_t, store_t, bounded), [a],
                     np.float32, 3 + 40 * 40, (32, 1, 1), (32, 1, 1),
                     scalars=[off, ld, R, C])
    frag = np.zeros((16, 32), np.float32)
    for r in range(16):
        for c in range(32):
            if r < R and c < C:
                frag[r, c] = a[off + (c * ld + r if load_t else r * ld + c)]
    want = np.zeros(3 + 40 * 40, np.float32)
    for r in range(16):
        for c in range(32):
            if r < R and c < C:
                want[3 + (c * 40 + r if store_t else r * 40 + c)] = \
                    2 * frag[r, c]
    np.testing.assert_array_equal(out, want)


@functools.lru_cache(maxsize=None)
def _broadcast_column():
    @enigma.kernel
    def bias(Bias: enigma.f32, O: enigma.f32):
        # ld = 0: every row reads the same 32 elements (a bias per column).
        b = enigma.mma_load(Bias, 16, 32, ld=0)
        enigma.mma_store(b, O, ld=32)
    return enigma.compile(bias)


def test_load_with_zero_pitch_broadcasts_a_row(runtime, rng):
    bias = rng.uniform(-1, 1, 32).astype(np.float32)
    out = run_kernel(runtime, _broadcast_column(), [bias], np.float32,
                     16 * 32, (32, 1, 1), (32, 1, 1)).reshape(16, 32)
    np.testing.assert_array_equal(out, np.tile(bias, (16, 1)))


@functools.lru_cache(maxsize=None)
def _convert(dtype):
    elem = getattr(enigma, dtype)

    @enigma.kernel
    def convert(A: enigma.f32, O: elem, P: enigma.f32):
        t = enigma.threadgroup_alloc(elem, 16 * 16)
        tid = enigma.thread_index_in_threadgroup()
        for i in enigma.range(tid, 256, 32, dtype="uint"):
            t[i] = A[i]
        enigma.barrier()
        f = enigma.mma_load(t, 16, 16, ld=16)        # from threadgroup memory
        enigma.mma_store(enigma.mma_load(A, 16, 16, ld=16), O, ld=16)
        enigma.mma_store(f.cast(enigma.f32) + 1.0, P, ld=16)
    return enigma.compile(convert)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_store_converts_and_threadgroup_load(runtime, rng, dtype):
    a = rng.uniform(-3, 3, 256).astype(np.float32)
    raw = runtime.execute(_convert(dtype), [a], output_sizes=[512, 1024],
                          grid=(32, 1, 1), threads=(32, 1, 1))
    o = np.frombuffer(raw[0], np.uint16)
    p = np.frombuffer(raw[1], np.float32)
    np.testing.assert_array_equal(o, _to_bits(a, dtype).view(np.uint16))
    np.testing.assert_array_equal(p, _from_bits(_to_bits(a, dtype), dtype)
                                  + 1.0)


# --------------------------------------------------------------------------
# products
# --------------------------------------------------------------------------

M_, N_, K_ = 32, 48, 32


@functools.lru_cache(maxsize=None)
def _product(dtype, a_t, b_t, swizzled, tf32):
    elem = getattr(enigma, dtype)
    a_rows, a_cols = (K_, 2 * M_) if a_t else (2 * M_, K_)
    b_rows, b_cols = (N_, K_) if b_t else (K_, N_)
    sw_a = enigma.mma_swizzle(a_cols, elem) if swizzled else None
    sw_b = enigma.mma_swizzle(b_cols, elem) if swizzled else None

    @enigma.kernel
    def product(A: elem, B: elem, Cin: enigma.f32, O: enigma.f32):
        a_s = enigma.threadgroup_alloc(elem, a_rows * a_cols)
        b_s = enigma.threadgroup_alloc(elem, b_rows * b_cols)
        enigma.copy_tile(a_s, A, a_rows, a_cols, src_ld=a_cols, swizzle=sw_a)
        enigma.copy_tile(b_s, B, b_rows, b_cols, src_ld=b_cols, swizzle=sw_b)
        enigma.copy_commit()
        enigma.copy_wait(0)
        enigma.barrier()
        # Two simdgroups: rows 0..31 and 32..63 of A and O.
        sg = enigma.simdgroup_index_in_threadgroup()
        acc = enigma.mma_load(Cin, M_, N_, ld=N_, offset=sg * (M_ * N_))
        a = enigma.mma_operand(a_s, ld=a_cols,
                               offset=sg * M_ if a_t else sg * (M_ * K_),
                               transpose=a_t, swizzle=sw_a)
        b = enigma.mma_operand(b_s, ld=b_cols, transpose=b_t, swizzle=sw_b)
        acc = enigma.mma(acc, a, b, k=K_, allow_tf32=tf32)
        enigma.mma_store(acc, O, ld=N_, offset=sg * (M_ * N_))
    return enigma.compile(product)


@pytest.mark.parametrize("dtype,tf32", [("f32", False), ("f32", True),
                                        ("f16", False), ("bf16", False)])
@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, False),
                                     (False, True), (True, True)])
@pytest.mark.parametrize("swizzled", [False, True])
def test_mma_products(runtime, rng, dtype, tf32, a_t, b_t, swizzled):
    """acc + A @ B for two simdgroups (their own rows of A and acc), every
    operand layout, with and without swizzles; exact with these inputs."""
    a = _eighths(rng, (2 * M_, K_))
    b = _eighths(rng, (K_, N_))
    c = _eighths(rng, (2 * M_, N_))
    a_store = np.ascontiguousarray(a.T if a_t else a)
    b_store = np.ascontiguousarray(b.T if b_t else b)
    out = run_kernel(runtime, _product(dtype, a_t, b_t, swizzled, tf32),
                     [_to_bits(a_store, dtype), _to_bits(b_store, dtype), c],
                     np.float32, 2 * M_ * N_, (64, 1, 1), (64, 1, 1))
    want = a.astype(np.float64) @ b + c
    np.testing.assert_array_equal(out.reshape(2 * M_, N_), want)


@functools.lru_cache(maxsize=None)
def _offset_product(a_row, b_row, b_col):
    """A 32 x 32 fragment times tiles taken at offsets inside larger
    swizzled float tiles (k = 16): the CUDA FMA path addresses its loads
    per product where the offsets allow and per load where not."""
    sw_a = enigma.mma_swizzle(16, enigma.f32)
    sw_b = enigma.mma_swizzle(128, enigma.f32)

    @enigma.kernel
    def offsets(A: enigma.f32, B: enigma.f32, O: enigma.f32):
        a_s = enigma.threadgroup_alloc(enigma.f32, 48 * 16)
        b_s = enigma.threadgroup_alloc(enigma.f32, 32 * 128)
        enigma.copy_tile(a_s, A, 48, 16, src_ld=16, swizzle=sw_a)
        enigma.copy_tile(b_s, B, 32, 128, src_ld=128, swizzle=sw_b)
        enigma.copy_commit()
        enigma.copy_wait(0)
        enigma.barrier()
        a = enigma.mma_operand(a_s, ld=16, offset=a_row * 16, swizzle=sw_a)
        b = enigma.mma_operand(b_s, ld=128, offset=b_row * 128 + b_col,
                               swizzle=sw_b)
        acc = enigma.mma(enigma.mma_fill(0.0, 32, 32), a, b, k=16)
        enigma.mma_store(acc, O, ld=32)
    return enigma.compile(offsets)


@pytest.mark.parametrize("a_row,b_row,b_col", [
    (0, 0, 0), (3, 0, 32), (8, 8, 64), (5, 4, 32), (0, 0, 8), (16, 1, 2)])
def test_float_products_at_tile_offsets(runtime, rng, a_row, b_row, b_col):
    """Operands at row and column offsets inside swizzled tiles, exact."""
    a = _eighths(rng, (48, 16))
    b = _eighths(rng, (32, 128))
    out = run_kernel(runtime, _offset_product(a_row, b_row, b_col), [a, b],
                     np.float32, 32 * 32, (32, 1, 1), (32, 1, 1))
    want = (a[a_row:a_row + 32].astype(np.float64)
            @ b[b_row:b_row + 16, b_col:b_col + 32])
    np.testing.assert_array_equal(out.reshape(32, 32), want)


@functools.lru_cache(maxsize=None)
def _float_product_swizzled_b(bits, base, shift, dtype="f32"):
    """A 32 x 32 product whose B tile has an unusual but valid swizzle
    (wide, or shifting the other way): the CUDA FMA path must compile and
    fall back to per-load offsets."""
    sw = enigma.Swizzle(bits, base, shift)
    elem = getattr(enigma, dtype)

    @enigma.kernel
    def swizzled_b(A: elem, B: elem, O: enigma.f32):
        a_s = enigma.threadgroup_alloc(elem, 32 * 16)
        b_s = enigma.threadgroup_alloc(elem, 16 * 32)
        enigma.copy_tile(a_s, A, 32, 16, src_ld=16)
        enigma.copy_tile(b_s, B, 16, 32, src_ld=32, swizzle=sw)
        enigma.copy_commit()
        enigma.copy_wait(0)
        enigma.barrier()
        a = enigma.mma_operand(a_s, ld=16)
        b = enigma.mma_operand(b_s, ld=32, swizzle=sw)
        acc = enigma.mma(enigma.mma_fill(0.0, 32, 32), a, b, k=16)
        enigma.mma_store(acc, O, ld=32)
    return enigma.compile(swizzled_b)


@pytest.mark.parametrize("bits,base,shift,dtype", [
    (2, 4, -2, "f32"), (3, 20, 20, "f32"), (2, 2, 12, "f32"),
    (2, 5, -2, "bf16"), (3, 3, 3, "bf16")])
def test_float_products_with_unusual_swizzles(runtime, rng, bits, base,
                                              shift, dtype):
    a = _eighths(rng, (32, 16))
    b = _eighths(rng, (16, 32))
    out = run_kernel(runtime,
                     _float_product_swizzled_b(bits, base, shift, dtype),
                     [_to_bits(a, dtype), _to_bits(b, dtype)], np.float32,
                     32 * 32, (32, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out.reshape(32, 32),
                                  a.astype(np.float64) @ b)


@functools.lru_cache(maxsize=None)
def _register_a():
    @enigma.kernel
    def pv(P: enigma.f32, V: enigma.bf16, O: enigma.f32):
        v_s = enigma.threadgroup_alloc(enigma.bf16, 32 * 64)
        sw = enigma.mma_swizzle(64, enigma.bf16)
        enigma.copy_tile(v_s, V, 32, 64, src_ld=64, swizzle=sw)
        enigma.copy_commit()
        enigma.copy_wait(0)
        enigma.barrier()
        p = enigma.mma_load(P, 16, 32, ld=32)          # float, rounded below
        acc = enigma.mma(enigma.mma_zeros(16, 64), p.cast(enigma.bf16),
                         enigma.mma_operand(v_s, ld=64, swizzle=sw))
        enigma.mma_store(acc, O, ld=64)
    return enigma.compile(pv)


@functools.lru_cache(maxsize=None)
def _warpgroup_register_a(b_t, k, n):
    """Eight simdgroups (two warpgroups) each multiply their own 16 x k A
    fragment by one B tile stored in 64-column blocks (``b_t``: stored
    n x k, K-major) with warpgroup products: wgmma reading A from registers
    on Hopper."""
    stored_rows, stored_cols = (n, k) if b_t else (k, n)
    stride = stored_rows * 64
    sw = enigma.mma_swizzle(64, enigma.bf16)

    @enigma.kernel
    def wg_reg(A: enigma.bf16, Bm: enigma.bf16, O: enigma.f32):
        b_s = enigma.threadgroup_alloc(enigma.bf16, stride * (stored_cols // 64))
        for blk in range(stored_cols // 64):
            enigma.copy_tile(b_s, Bm, stored_rows, 64, src_ld=stored_cols,
                             src_offset=64 * blk, dst_offset=blk * stride,
                             swizzle=sw)
        enigma.copy_commit()
        enigma.copy_wait(0)
        enigma.barrier()
        sg = enigma.simdgroup_index_in_threadgroup()
        a = enigma.mma_load(A, 16, k, ld=k, offset=sg * (16 * k))
        acc = enigma.mma(enigma.mma_fill(1.0, 16, n), a,
                         enigma.mma_operand(b_s, ld=64, transpose=b_t,
                                            swizzle=sw, block_stride=stride),
                         warpgroup=True)
        enigma.mma_store(acc, O, ld=n, offset=sg * (16 * n))
    return enigma.compile(wg_reg)


@pytest.mark.parametrize("b_t", [True, False])
@pytest.mark.parametrize("k,n", [(64, 64), (128, 64), (64, 128), (128, 128)])
def test_warpgroup_products_with_a_in_registers(runtime, rng, b_t, k, n):
    """Flash attention's two products on Hopper: S = Q K^T (K stored
    N x K) and O = P V (V stored K x N), B in 64-column blocks."""
    a = _eighths(rng, (128, k))
    b = _eighths(rng, (k, n))
    b_stored = b.T if b_t else b
    out = run_kernel(runtime, _warpgroup_register_a(b_t, k, n),
                     [_to_bits(a, "bf16"), _to_bits(b_stored, "bf16")],
                     np.float32, 128 * n, (256, 1, 1), (256, 1, 1))
    np.testing.assert_array_equal(out.reshape(128, n),
                                  a.astype(np.float64) @ b + 1.0)


@functools.lru_cache(maxsize=None)
def _loop_invariant_register_a():
    """Flash attention's pattern: an A fragment loaded before the loop
    (Q), S = A K_j^T, then O += S V_j with S as the A of a product of the
    same shape, over three blocks."""
    sw = enigma.mma_swizzle(64, enigma.bf16)

    @enigma.kernel
    def invariant_a(A: enigma.bf16, Kt: enigma.bf16, V: enigma.bf16,
                    O: enigma.f32):
        k_s = enigma.threadgroup_alloc(enigma.bf16, 64 * 64)
        v_s = enigma.threadgroup_alloc(enigma.bf16, 64 * 64)
        sg = enigma.simdgroup_index_in_threadgroup()
        a = enigma.mma_load(A, 16, 64, ld=64, offset=sg * (16 * 64))
        o = enigma.mma_zeros(16, 64)
        for j in enigma.range(3, dtype="uint"):
            enigma.copy_tile(k_s, Kt, 64, 64, src_ld=64, src_offset=j * 4096,
                             swizzle=sw)
            enigma.copy_tile(v_s, V, 64, 64, src_ld=64, src_offset=j * 4096,
                             swizzle=sw)
            enigma.copy_commit()
            enigma.copy_wait(0)
            enigma.barrier()
            s = enigma.mma(enigma.mma_zeros(16, 64), a,
                           enigma.mma_operand(k_s, ld=64, transpose=True,
                                              swizzle=sw), warpgroup=True)
            o = enigma.mma(o, s.cast(enigma.bf16),
                           enigma.mma_operand(v_s, ld=64, swizzle=sw),
                           warpgroup=True)
            enigma.barrier()
        enigma.mma_store(o, O, ld=64, offset=sg * (16 * 64))
    return enigma.compile(invariant_a)


def test_warpgroup_product_with_a_from_before_the_loop(runtime, rng):
    """Every block multiplies the same A (on Hopper ptxas once gave that A
    and the next product's A the same registers: the second block used
    the wrong one). Halves keep every value exact in bfloat and float."""
    a = rng.integers(-1, 2, (64, 64)) / 2.0
    kt = rng.integers(-1, 2, (3, 64, 64)) / 2.0
    v = rng.integers(-1, 2, (3, 64, 64)) / 2.0
    compiled = _loop_invariant_register_a()
    # A from before the loop: not a wgmma reading registers (mma.sync);
    # the product on S, computed in the loop, is.
    assert "enigma_mma_reg<64, true, 3, 3, 3, 0, false, false>" in \
        compiled.cuda_source
    assert "enigma_mma_reg<64, false, 3, 3, 3, 0, true, false>" in \
        compiled.cuda_source
    out = run_kernel(runtime, compiled,
                     [_to_bits(x, "bf16") for x in (a, kt, v)],
                     np.float32, 64 * 64, (128, 1, 1), (128, 1, 1))
    want = sum((a @ kt[j].T) @ v[j] for j in range(3))
    np.testing.assert_array_equal(out.reshape(64, 64), want)


def test_mma_with_a_fragment_in_registers(runtime, rng):
    """P @ V with P a fragment converted to bfloat (flash attention)."""
    p = rng.uniform(0, 1, (16, 32)).astype(np.float32)
    v = _eighths(rng, (32, 64))
    out = run_kernel(runtime, _register_a(), [p, _to_bits(v, "bf16")],
                     np.float32, 16 * 64, (32, 1, 1), (32, 1, 1))
    p_bf = _from_bits(_to_bits(p, "bf16"), "bf16").astype(np.float64)
    want = p_bf @ v
    err = np.abs(out.reshape(16, 64) - want)
    bound = 1e-5 * (np.abs(p_bf) @ np.abs(v)) + 1e-6
    assert (err <= bound).all(), float(err.max())


# --------------------------------------------------------------------------
# reductions and element-wise arithmetic
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _reductions():
    @enigma.kernel
    def reductions(A: enigma.f32, O: enigma.f32):
        f = enigma.mma_load(A, 32, 32, ld=32)
        for i, r in enumerate((f.row_max(), f.row_min(), f.row_sum())):
            enigma.mma_store(r.broadcast(16), O, ld=48, offset=16 * i)
    return enigma.compile(reductions)


def test_row_reductions_nan_and_infinity(runtime, rng):
    a = rng.uniform(-4, 4, (32, 32)).astype(np.float32)
    a[3, 5] = np.nan          # ignored by max and min
    a[7, :] = np.nan          # all NaN: NaN everywhere
    a[9, 2] = -np.inf
    a[10, :] = -np.inf
    out = run_kernel(runtime, _reductions(), [a], np.float32, 32 * 48,
                     (32, 1, 1), (32, 1, 1)).reshape(32, 48)
    with np.errstate(invalid="ignore"):
        nan_row = np.isnan(a).all(axis=1)
        mx = np.where(nan_row, np.nan, np.nanmax(np.where(nan_row[:, None], 0,
                                                          a), axis=1))
        mn = np.where(nan_row, np.nan, np.nanmin(np.where(nan_row[:, None], 0,
                                                          a), axis=1))
        sm = a.astype(np.float64).sum(axis=1)
    for c in range(16):
        np.testing.assert_array_equal(out[:, c], mx)
        np.testing.assert_array_equal(out[:, 16 + c], mn)
        np.testing.assert_allclose(out[:, 32 + c], sm, rtol=1e-5, atol=1e-4)


@functools.lru_cache(maxsize=None)
def _elementwise():
    @enigma.kernel
    def elementwise(A: enigma.f32, s: enigma.Scalar(enigma.f32),
                    O: enigma.f32):
        x = enigma.mma_load(A, 16, 16, ld=16)
        rows = enigma.mma_iota(0, 16, 16)
        cols = enigma.mma_iota(1, 16, 16)
        outs = [
            x * 2.0 + 1.0, 3.0 - x, x / 4.0, -x, abs(x), x * s, s - x,
            enigma.exp(x), enigma.exp2(x), enigma.log(abs(x) + 1.0),
            enigma.sqrt(abs(x)), enigma.tanh(x), enigma.rsqrt(abs(x) + 1.0),
            enigma.fmax(x, 0.5), enigma.fmin(0.25, x),
            enigma.where(x, 0.0, x > 1.0),
            enigma.where(-1.0, 1.0, cols >= rows),
            ((rows * 16 + cols) // 3 % 5).cast(enigma.f32),
            ((cols << 1) ^ rows).cast(enigma.f32),
            (x > 0.0).cast(enigma.f32) + (x <= -1.0).cast(enigma.f32),
            x.cast(enigma.bf16).cast(enigma.f32), x ** 3,
        ]
        for i, o in enumerate(outs):
            enigma.mma_store(o, O, ld=16, offset=i * 256)
    return enigma.compile(elementwise)


def test_elementwise_arithmetic(runtime, rng):
    a = rng.uniform(-3, 3, (16, 16)).astype(np.float32)
    s = np.float32(rng.uniform(-2, 2))
    out = run_kernel(runtime, _elementwise(), [a], np.float32, 22 * 256,
                     (32, 1, 1), (32, 1, 1), scalars=[float(s)])
    out = out.reshape(22, 16, 16)
    x = a.astype(np.float64)
    r, c = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    want = [x * 2 + 1, 3 - x, x / 4, -x, np.abs(x), x * s, s - x, np.exp(x),
            np.exp2(x), np.log(np.abs(x) + 1), np.sqrt(np.abs(x)), np.tanh(x),
            1 / np.sqrt(np.abs(x) + 1), np.maximum(x, 0.5),
            np.minimum(0.25, x), np.where(x > 1, 0.0, x),
            np.where(c >= r, 1.0, -1.0), (r * 16 + c) // 3 % 5,
            (c << 1) ^ r, (x > 0) + (x <= -1.0),
            _from_bits(_to_bits(a, "bf16"), "bf16"), x ** 3]
    for i, w in enumerate(want):
        np.testing.assert_allclose(out[i], w, rtol=2e-6, atol=1e-6,
                                   err_msg=f"expression {i}")


# --------------------------------------------------------------------------
# fragments carried by loops and branches
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _k_loop():
    @enigma.kernel
    def k_loop(A: enigma.bf16, B: enigma.bf16, K: U32, flag: U32,
               O: enigma.f32):
        # acc += A[:, 16j:16j+16] @ B[16j:16j+16, :] step by step, the tiles
        # copied into two stages; then doubled under a uniform branch.
        a_s = enigma.pipeline(enigma.bf16, 16 * 16, 2)
        b_s = enigma.pipeline(enigma.bf16, 16 * 32, 2)
        acc = enigma.mma_zeros(16, 32)
        for j in enigma.range(K // 16, dtype="uint"):
            enigma.copy_tile(a_s.front(), A, 16, 16, src_ld=K,
                             src_offset=j * 16)
            enigma.copy_tile(b_s.front(), B, 16, 32, src_ld=32,
                             src_offset=j * 16 * 32)
            enigma.copy_commit()
            enigma.copy_wait(0)
            enigma.barrier()
            acc = enigma.mma(acc, enigma.mma_operand(a_s.front(), ld=16),
                             enigma.mma_operand(b_s.front(), ld=32), k=16)
            a_s.advance()
            b_s.advance()
        with enigma.if_(flag == 1):
            acc = acc * 2.0
        enigma.mma_store(acc, O, ld=32)
    return enigma.compile(k_loop)


@pytest.mark.parametrize("k,flag", [(16, 0), (64, 1), (96, 0)])
def test_accumulator_carried_by_loop_and_branch(runtime, rng, k, flag):
    a = _eighths(rng, (16, k))
    b = _eighths(rng, (k, 32))
    out = run_kernel(runtime, _k_loop(), [_to_bits(a, "bf16"),
                                          _to_bits(b, "bf16")],
                     np.float32, 16 * 32, (32, 1, 1), (32, 1, 1),
                     scalars=[k, flag])
    want = (a.astype(np.float64) @ b) * (2 if flag else 1)
    np.testing.assert_array_equal(out.reshape(16, 32), want)


# --------------------------------------------------------------------------
# copy_tile
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _copy_tile(dtype, swizzled, threads=96, dst_offset=0):
    elem = getattr(enigma, dtype)
    rows, cols, ld = 24, 32, 40
    sw = enigma.mma_swizzle(ld, elem) if swizzled else None
    if sw is None and swizzled:
        sw = enigma.Swizzle(2, 3 if elem.itemsize == 2 else 2, 3)

    @enigma.kernel
    def copy_tile(A: elem, off: U32, src_ld: U32, VR: U32, VC: U32, O: elem):
        t = enigma.threadgroup_alloc(elem, 64 + rows * ld)
        enigma.copy_tile(t, A, rows, cols, src_ld=src_ld, src_offset=off,
                         dst_ld=ld, valid_rows=VR, valid_cols=VC,
                         swizzle=sw, dst_offset=dst_offset)
        enigma.copy_commit()
        enigma.copy_wait(0)
        enigma.barrier()
        tid = enigma.thread_index_in_threadgroup()
        for i in enigma.range(tid, rows * cols, threads, dtype="uint"):
            at = (i // cols) * ld + i % cols
            O[i] = t[dst_offset + (sw(at) if sw is not None else at)]
    return enigma.compile(copy_tile), rows, cols


# 96 threads: the generic copy loop; 128 (with a destination offset): on
# CUDA whole tiles take the unrolled path.
@pytest.mark.parametrize("threads,dst_offset", [(96, 0), (128, 64)])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("swizzled", [False, True])
@pytest.mark.parametrize("off,src_ld,vr,vc", [
    (0, 32, 24, 32),       # whole tile, aligned rows
    (16, 48, 19, 27),      # edges inside chunks
    (3, 37, 24, 32),       # unaligned rows: element copies
    (8, 40, 0, 32),        # nothing valid: all zero
])
def test_copy_tile_edges_and_alignment(runtime, rng, dtype, swizzled, off,
                                       src_ld, vr, vc, threads, dst_offset):
    kernel, rows, cols = _copy_tile(dtype, swizzled, threads, dst_offset)
    a = rng.uniform(1, 2, off + rows * src_ld + 8).astype(np.float32)
    bits = _to_bits(a, dtype)
    out = run_kernel(runtime, kernel, [bits], bits.dtype, rows * cols,
                     (threads, 1, 1), (threads, 1, 1),
                     scalars=[off, src_ld, vr, vc])
    want = np.zeros((rows, cols), bits.dtype)
    for r in range(min(rows, vr)):
        want[r, :min(cols, vc)] = bits[off + r * src_ld:
                                       off + r * src_ld + min(cols, vc)]
    np.testing.assert_array_equal(out.reshape(rows, cols), want)


# (rows, cols, block width, block stride, destination offset): blocks 776
# elements apart (not a multiple of the swizzle's period), and a tile that
# 128 threads copy whole (CUDA's unrolled path when nothing is cut).
_BLOCK_SHAPES = {"odd": (24, 96, 32, 776, 16), "whole": (32, 128, 64, 2048, 0)}


@functools.lru_cache(maxsize=None)
def _copy_tile_blocks(dtype, swizzled, shape="odd"):
    """A rows x cols tile into blocks of `width` columns, `stride` elements
    apart, from element `offset` on."""
    elem = getattr(enigma, dtype)
    rows, cols, width, stride, offset = _BLOCK_SHAPES[shape]
    sw = enigma.mma_swizzle(width, elem) if swizzled else None

    @enigma.kernel
    def copy_blocks(A: elem, src_ld: U32, VR: U32, VC: U32, O: elem):
        t = enigma.threadgroup_alloc(elem, offset + (cols // width) * stride)
        enigma.copy_tile(t, A, rows, cols, src_ld=src_ld, dst_ld=width,
                         valid_rows=VR, valid_cols=VC, swizzle=sw,
                         dst_offset=offset, block_stride=stride)
        enigma.copy_commit()
        enigma.copy_wait(0)
        enigma.barrier()
        tid = enigma.thread_index_in_threadgroup()
        for i in enigma.range(tid, rows * cols, 128, dtype="uint"):
            r, c = i // cols, i % cols
            inside = r * width + c % width
            O[i] = t[offset + (c // width) * stride +
                     (sw(inside) if sw is not None else inside)]
    return enigma.compile(copy_blocks), rows, cols


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("swizzled", [False, True])
@pytest.mark.parametrize("shape,src_ld,vr,vc", [
    ("odd", 96, 24, 96), ("odd", 100, 19, 70), ("odd", 96, 24, 20),
    ("whole", 128, 32, 128), ("whole", 136, 32, 128), ("whole", 128, 31, 100)])
def test_copy_tile_into_column_blocks(runtime, rng, dtype, swizzled, shape,
                                      src_ld, vr, vc):
    """block_stride: each block of columns lands block_stride apart,
    swizzled inside itself, edges zero-filled block by block."""
    kernel, rows, cols = _copy_tile_blocks(dtype, swizzled, shape)
    a = rng.uniform(1, 2, rows * src_ld).astype(np.float32)
    bits = _to_bits(a, dtype)
    out = run_kernel(runtime, kernel, [bits], bits.dtype, rows * cols,
                     (128, 1, 1), (128, 1, 1), scalars=[src_ld, vr, vc])
    want = np.zeros((rows, cols), bits.dtype)
    for r in range(vr):
        want[r, :vc] = bits[r * src_ld:r * src_ld + vc]
    np.testing.assert_array_equal(out.reshape(rows, cols), want)


def test_copy_tile_block_mistakes():
    def uneven(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 4096)
        enigma.copy_tile(t, A, 8, 96, src_ld=96, dst_ld=64,
                         block_stride=1024)
    msg = _compile_error(uneven)
    assert "blocks of dst_ld = 64" in msg, msg

    def overlapping(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 4096)
        enigma.copy_tile(t, A, 8, 64, src_ld=64, dst_ld=32, block_stride=128)
    msg = _compile_error(overlapping)
    assert "would overlap" in msg, msg


# --------------------------------------------------------------------------
# gemm_block
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _gemm(dtype, a_t, b_t, config):
    elem = getattr(enigma, dtype)

    @enigma.kernel
    def gemm(A: elem, B: elem, M: U32, N: U32, K: U32, C: enigma.f32):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                          a_transposed=a_t, b_transposed=b_t,
                          epilogue=lambda acc, row, col: acc + 1.0)
    return enigma.compile(gemm)


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, True)])
@pytest.mark.parametrize("m,n,k", [(32, 32, 16), (70, 45, 40), (33, 96, 24)])
def test_gemm_block_any_shape(runtime, rng, dtype, a_t, b_t, m, n, k):
    config = enigma.MmaConfig(32, 32, 16, 2, 1, 2, group_m=2)
    a = _eighths(rng, (m, k), -4, 4)
    b = _eighths(rng, (k, n), -4, 4)
    out = run_kernel(runtime, _gemm(dtype, a_t, b_t, config),
                     [_to_bits(a.T if a_t else a, dtype),
                      _to_bits(b.T if b_t else b, dtype)],
                     np.float32, m * n, *config.launch(m, n),
                     scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n),
                                  a.astype(np.float64) @ b + 1.0)


# Warpgroup shapes (enigma.warpgroup_shape: wgmma on Hopper, the same
# products elsewhere): B in 64-column blocks, or stored N x K.
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("b_t", [False, True])
@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (64, 64, 64), (70, 130, 100),
                                   (130, 64, 200)])
def test_gemm_block_warpgroup_shape(runtime, rng, dtype, b_t, stages, m, n,
                                    k):
    """2 stages: each product complete before the next copy; 3 stages:
    asynchronous products (one in flight across the barrier), 48 KiB."""
    if stages == 3 and runtime.name == "metal-host":
        pytest.skip("48 KiB of threadgroup memory: beyond Metal's 32 KiB")
    config = enigma.MmaConfig(64, 64, 64, 4, 1, stages, group_m=2)
    assert enigma.warpgroup_shape(config, dtype)
    a = _eighths(rng, (m, k), -4, 4)
    b = _eighths(rng, (k, n), -4, 4)
    out = run_kernel(runtime, _gemm(dtype, False, b_t, config),
                     [_to_bits(a, dtype), _to_bits(b.T if b_t else b, dtype)],
                     np.float32, m * n, *config.launch(m, n),
                     scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n),
                                  a.astype(np.float64) @ b + 1.0)


@pytest.mark.parametrize("b_t", [False, True])
def test_gemm_block_large_warpgroup_tiles(runtime, rng, b_t):
    """The CUDA list's 128 x 256 configuration: 8 simdgroups of 16 x 256,
    three stages (144 KiB: beyond Metal's threadgroup memory)."""
    if runtime.name == "metal-host":
        pytest.skip("needs more than Metal's 32 KiB of threadgroup memory")
    config = enigma.MmaConfig(128, 256, 64, 8, 1, 3)
    assert config in enigma.gemm_configs("cuda", "bf16")
    assert enigma.warpgroup_shape(config, "bf16")
    m, n, k = 150, 300, 200
    a = _eighths(rng, (m, k), -4, 4)
    b = _eighths(rng, (k, n), -4, 4)
    out = run_kernel(runtime, _gemm("bf16", False, b_t, config),
                     [_to_bits(a, "bf16"), _to_bits(b.T if b_t else b, "bf16")],
                     np.float32, m * n, *config.launch(m, n),
                     scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n),
                                  a.astype(np.float64) @ b + 1.0)


def _async_product(elements=8192):
    """A warpgroup product left in flight, of a tile in threadgroup
    memory by itself."""
    t = enigma.threadgroup_alloc(enigma.bf16, elements)
    return enigma.mma(enigma.mma_zeros(16, 64), enigma.mma_operand(t, ld=64),
                      enigma.mma_operand(t, ld=64), k=64, warpgroup=True,
                      asynchronous=True)


def test_asynchronous_products_must_be_waited_for():
    def body(A, B):
        enigma.mma_store(_async_product(), B, ld=64)
    msg = _compile_error(body)
    assert "is asynchronous" in msg and "mma_wait" in msg, msg

    def not_warpgroup(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma(enigma.mma_zeros(16, 64), enigma.mma_operand(t, ld=64),
                   enigma.mma_operand(t, ld=64), k=64, asynchronous=True)
    msg = _compile_error(not_warpgroup)
    assert "warpgroup products" in msg, msg

    def waited(A, B):
        enigma.mma_store(enigma.mma_wait(_async_product()), B, ld=64)

    @enigma.kernel
    def fine(A: enigma.bf16, B: enigma.f32):
        waited(A, B)
    assert "enigma_mma_wait(" in enigma.compile(fine).cuda_source


@functools.lru_cache(maxsize=None)
def _promoting_loop():
    """FP8 GEMM's promotion pattern: each K tile's product into zeros,
    asynchronous, while the previous tile's product (waited for with one
    product left in flight) is added into the sum. Two tile buffers: a
    product may read its tiles until the next one is issued."""
    sw = enigma.mma_swizzle(64, enigma.bf16)

    @enigma.kernel
    def promoting(A: enigma.bf16, B: enigma.bf16, O: enigma.f32,
                  tiles: enigma.Scalar(enigma.u32)):
        a_s = enigma.threadgroup_alloc(enigma.bf16, 2 * 64 * 64)
        b_s = enigma.threadgroup_alloc(enigma.bf16, 2 * 64 * 64)
        sg = enigma.simdgroup_index_in_threadgroup()
        total = enigma.mma_zeros(16, 64)
        last = enigma.mma_zeros(16, 64)
        for j in enigma.range(tiles, dtype="uint"):
            half = (j % 2) * 4096
            enigma.copy_tile(a_s, A, 64, 64, src_ld=64, src_offset=j * 4096,
                             swizzle=sw, dst_offset=half)
            enigma.copy_tile(b_s, B, 64, 64, src_ld=64, src_offset=j * 4096,
                             swizzle=sw, dst_offset=half)
            enigma.copy_commit()
            enigma.copy_wait(0)
            enigma.barrier()
            part = enigma.mma(enigma.mma_zeros(16, 64),
                              enigma.mma_operand(a_s, ld=64, offset=half,
                                                 swizzle=sw),
                              enigma.mma_operand(b_s, ld=64, offset=half,
                                                 swizzle=sw),
                              k=64, warpgroup=True, asynchronous=True)
            total = total + enigma.mma_wait(last, pending=1)
            last = part
        total = total + enigma.mma_wait(last)
        enigma.mma_store(total, O, ld=64, offset=sg * (16 * 64))
    return enigma.compile(promoting)


@pytest.mark.parametrize("tiles", [1, 2, 5])
def test_wait_leaving_the_newest_product_in_flight(runtime, rng, tiles):
    """mma_wait(..., pending=1) completes the older product while the
    newest runs (Hopper: wgmma.wait_group 1); the sum is every tile's."""
    a = rng.integers(-2, 3, (tiles, 64, 64)) / 2.0
    b = rng.integers(-2, 3, (tiles, 64, 64)) / 2.0
    compiled = _promoting_loop()
    assert "enigma_mma_wait_pending<1>(" in compiled.cuda_source
    out = run_kernel(runtime, compiled,
                     [_to_bits(a, "bf16"), _to_bits(b, "bf16")],
                     np.float32, 64 * 64, (128, 1, 1), (128, 1, 1),
                     scalars=[tiles])
    want = sum(a[j].astype(np.float64) @ b[j] for j in range(tiles))
    np.testing.assert_array_equal(out.reshape(64, 64), want)


def test_an_asynchronous_product_that_runs_as_mma_sync_keeps_the_contract(
        monkeypatch):
    """Tiles whose alignment wgmma needs is known only at run time: the
    asynchronous product is compiled both as wgmma and as mma.sync. The
    mma.sync path must still complete the group's earlier products before
    it starts (their tiles may be refilled) and count as a group for
    mma_wait(..., pending=N): its SASS waits for the wgmma groups before
    its first HMMA."""
    from conftest import pipeline_sass
    sass_tool = pipeline_sass()
    tool = sass_tool.cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump is not installed here")

    @enigma.kernel
    def fallback(A: enigma.bf16, B: enigma.f32):
        enigma.mma_store(enigma.mma_wait(_async_product()), B, ld=64)
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    try:
        sass, _, _ = sass_tool.sass_of(enigma.compile(fallback).cuda_source,
                                       tool)
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed here")
    ops = [m.group(1) for m in re.finditer(
        r"\b(WARPGROUP\.DEPBAR|HMMA|HGMMA)\b", sass)]
    assert "HMMA" in ops, sorted(set(ops))
    assert "WARPGROUP.DEPBAR" in ops[:ops.index("HMMA")], ops


def test_pending_waits_the_compiler_cannot_prove_are_refused():
    def newest(A, B):
        enigma.mma_store(enigma.mma_wait(_async_product(), pending=1), B,
                         ld=64)
    msg = _compile_error(newest)
    assert "leaves 1 asynchronous product in flight, but only 0" in msg, msg
    assert "pending = 0" in msg, msg
    for bad in (-1, 8, True, 1.0):
        def out_of_range(A, B, bad=bad):
            enigma.mma_wait(enigma.mma_zeros(16, 64), pending=bad)
        msg = _compile_error(out_of_range)
        assert "pending must be an int from 0 to 7" in msg, msg


def test_warpgroup_kernels_need_whole_groups_of_four_simdgroups(runtime):
    """Four simdgroups multiply together: a threadgroup of 96 threads, or an
    edge threadgroup that the grid cuts, is refused before the launch."""
    @enigma.kernel
    def product(A: enigma.bf16, C: enigma.f32):
        t = enigma.threadgroup_alloc(enigma.bf16, 64 * 64)
        acc = enigma.mma(enigma.mma_zeros(16, 64),
                         enigma.mma_operand(t, ld=64),
                         enigma.mma_operand(t, ld=64), k=64, warpgroup=True)
        enigma.mma_store(acc, C, ld=64)
    compiled = enigma.compile(product)
    a = np.zeros(64 * 64, np.uint16)
    for grid, threads, why in (((96, 1, 1), (96, 1, 1), "multiple of 128"),
                               ((192, 1, 1), (128, 1, 1), "does not divide")):
        with pytest.raises(enigma.DispatchError,
                           match="whole groups of four simdgroups.*" + why):
            runtime.execute(compiled, [a], output_size=64 * 64 * 4,
                            grid=grid, threads=threads)


def test_gemm_block_runs_only_in_its_configurations_threadgroups(runtime, rng):
    """gemm_block's simdgroups split the block: the kernel is compiled for
    config.threads (a constant on CUDA and Metal) and any other launch is
    refused before it runs, instead of computing a wrong block."""
    config = enigma.MmaConfig(32, 32, 16, 2, 1, 2, group_m=2)
    compiled = _gemm("f32", False, False, config)
    assert "__launch_bounds__(64)" in compiled.cuda_source
    assert "[[max_total_threads_per_threadgroup(64)]]" in \
        compiled.metal_source
    m = n = k = 32
    a = _eighths(rng, (m, k), -4, 4)
    b = _eighths(rng, (k, n), -4, 4)
    inputs = [_to_bits(a, "f32"), _to_bits(b, "f32")]
    for grid, threads, why in (((128, 1, 1), (128, 1, 1), "is 128 threads"),
                               ((32, 1, 1), (32, 1, 1), "is 32 threads"),
                               ((96, 1, 1), (64, 1, 1), "does not divide")):
        with pytest.raises(enigma.DispatchError,
                           match="runs only in threadgroups of 64 threads.*"
                           + why):
            runtime.execute(compiled, inputs, output_size=m * n * 4,
                            grid=grid, threads=threads, scalars=[m, n, k])
    out = run_kernel(runtime, compiled, inputs, np.float32, m * n,
                     *config.launch(m, n), scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n),
                                  a.astype(np.float64) @ b + 1.0)


@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, True)])
def test_gemm_block_buffers_too_small_are_dispatch_errors(runtime, rng, a_t,
                                                          b_t):
    """A buffer smaller than the matrix gemm_block reads or writes in it
    (sides from the scalars m, n, k) is refused before the launch, with
    the sizes in the message, instead of running past its end (on the CPU
    that corrupted the heap and killed the process); buffers large enough
    run, larger ones too."""
    config = enigma.MmaConfig(32, 32, 16, 2, 1, 2, group_m=2)
    compiled = _gemm("f32", a_t, b_t, config)
    m, n, k = 40, 24, 20
    a = _eighths(rng, (m, k), -4, 4)
    b = _eighths(rng, (k, n), -4, 4)
    inputs = [_to_bits(a.T if a_t else a, "f32").ravel(),
              _to_bits(b.T if b_t else b, "f32").ravel()]
    grid, threads = config.launch(m, n)
    shape_a = "a k x m" if a_t else "an m x k"
    shape_b = "an n x k" if b_t else "a k x n"
    cases = (
        ([inputs[0][:-1], inputs[1]], m * n * 4,
         f"reads A as {shape_a} matrix.*{m * k - 1} \\(", m * k * 4),
        ([inputs[0], inputs[1][:k]], m * n * 4,
         f"reads B as {shape_b} matrix.*{k} \\(", k * n * 4),
        (inputs, m * n * 4 - 4,
         f"writes C as an m x n matrix \\(pitch ldc\\), {m} x {n} with "
         f"pitch {n}: {m * n} elements, but C \\(f32\\) has {m * n - 1}",
         m * n * 4))
    for ins, out_bytes, message, least in cases:
        with pytest.raises(enigma.DispatchError,
                           match=message + f".*at least {least} bytes"):
            runtime.execute(compiled, ins, output_size=out_bytes, grid=grid,
                            threads=threads, scalars=[m, n, k])
    want = a.astype(np.float64) @ b + 1.0
    out = run_kernel(runtime, compiled, inputs, np.float32, m * n, grid,
                     threads, scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n), want)
    # Larger buffers than the matrices: fine, the extra is left alone.
    extra = [np.concatenate([x, np.zeros(7, x.dtype)]) for x in inputs]
    raw = runtime.execute(compiled, extra, output_size=(m * n + 5) * 4,
                          grid=grid, threads=threads, scalars=[m, n, k])
    np.testing.assert_array_equal(
        np.frombuffer(raw, np.float32)[:m * n].reshape(m, n), want)


def test_gemm_block_with_computed_sides_is_not_judged_before_launch(rng):
    """A side computed in the kernel (here m = M + N - N) cannot be read
    before the launch: nothing is recorded for the matrices it sizes, so
    correct launches still run."""
    config = enigma.MmaConfig(32, 32, 16, 2, 1, 2, group_m=2)

    @enigma.kernel
    def gemm(A: enigma.f32, B: enigma.f32, M: U32, N: U32, K: U32,
             C: enigma.f32):
        enigma.gemm_block(A, B, C, m=M + N - N, n=N, k=K, config=config)
    compiled = enigma.compile(gemm)
    assert "enigma.matrix_extents" in compiled.mlir_source
    assert compiled.mlir_source.count("reads A") == 0
    m, n, k = 20, 16, 8
    a = _eighths(rng, (m, k), -4, 4)
    b = _eighths(rng, (k, n), -4, 4)
    out = run_kernel(enigma.CpuRuntime(), compiled,
                     [_to_bits(a, "f32"), _to_bits(b, "f32")], np.float32,
                     m * n, *config.launch(m, n), scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n), a.astype(np.float64) @ b)


def test_one_kernel_cannot_need_two_threadgroup_sizes():
    small = enigma.MmaConfig(32, 32, 16, 2, 1, 2)
    large = enigma.MmaConfig(64, 64, 16, 2, 2, 2)

    @enigma.kernel
    def two(A: enigma.f32, B: enigma.f32, C: enigma.f32, D: enigma.f32):
        enigma.gemm_block(A, B, C, m=32, n=32, k=16, config=small)
        enigma.gemm_block(A, B, D, m=64, n=64, k=16, config=large)
    with pytest.raises(enigma.EnigmaError,
                       match="threadgroups of 64 threads; this part needs "
                             "128"):
        enigma.compile(two)


def test_warpgroup_shape_rules():
    ok = enigma.MmaConfig(128, 256, 64, 8, 1, 3)
    assert enigma.warpgroup_shape(ok, "bf16")
    assert enigma.warpgroup_shape(ok, "f16")
    assert not enigma.warpgroup_shape(ok, "f32")
    assert not enigma.warpgroup_shape(ok, "bf16", a_transposed=True)
    assert not enigma.warpgroup_shape(enigma.MmaConfig(128, 256, 32, 8, 1, 3),
                                      "bf16")
    assert not enigma.warpgroup_shape(enigma.MmaConfig(128, 256, 64, 4, 2, 3),
                                      "bf16")
    assert not enigma.warpgroup_shape(enigma.MmaConfig(128, 96, 64, 8, 1, 3),
                                      "bf16")


def test_swizzle_choice():
    sw = enigma.mma_swizzle(64, enigma.bf16)
    assert (sw.bits, sw.base, sw.shift) == (3, 3, 3)
    sw = enigma.mma_swizzle(32, enigma.bf16)
    assert (sw.bits, sw.base, sw.shift) == (2, 3, 3)
    sw = enigma.mma_swizzle(128, enigma.bf16)
    assert (sw.bits, sw.base, sw.shift) == (3, 3, 4)
    sw = enigma.mma_swizzle(32, enigma.f32)
    assert (sw.bits, sw.base, sw.shift) == (3, 2, 3)
    assert enigma.mma_swizzle(40, enigma.bf16) is None
    # 8 rows read by one ldmatrix land in 8 different 16-byte chunks of
    # every 128 bytes: no bank conflicts.
    for ld, dt in ((32, enigma.bf16), (64, enigma.bf16), (128, enigma.bf16),
                   (32, enigma.f32), (64, enigma.f32)):
        sw = enigma.mma_swizzle(ld, dt)
        per_chunk = 16 // dt.itemsize
        for col in range(0, ld, per_chunk):
            banks = {(sw(r * ld + col) * dt.itemsize // 16) % 8
                     for r in range(8)}
            assert len(banks) == 8, (ld, dt, col, banks)


def test_gemm_configs_fit_threadgroup_memory():
    limits = {"cuda": 227 * 1024, "metal": 32 * 1024, "cpu": 227 * 1024}
    for target, limit in limits.items():
        for dtype in ("bf16", "f16", "f32"):
            configs = enigma.gemm_configs(target, dtype)
            assert configs
            for c in configs:
                assert c.smem_bytes(dtype) <= limit
                assert (c.bm // c.wm) % 16 == 0 and (c.bn // c.wn) % 16 == 0
    # Hopper: the 16-bit list leads with warpgroup shapes of deep pipelines.
    first = enigma.gemm_configs("cuda", "bf16")[0]
    assert enigma.warpgroup_shape(first, "bf16") and first.stages >= 3
    with pytest.raises(enigma.EnigmaError, match="target must be one of"):
        enigma.gemm_configs("rocm", "bf16")
    # TF32 tensor cores have tiles of their own on CUDA, where they fit;
    # the other targets compute fp32 either way.
    tf32 = enigma.gemm_configs("cuda", "f32", allow_tf32=True)
    assert tf32 and tf32 != enigma.gemm_configs("cuda", "f32")
    assert all(c.smem_bytes("f32") <= 227 * 1024 for c in tf32)
    assert enigma.default_gemm_config("cuda", "f32", allow_tf32=True) == \
        tf32[0]
    assert enigma.gemm_configs("cpu", "f32", allow_tf32=True) == \
        enigma.gemm_configs("cpu", "f32")
    with pytest.raises(enigma.EnigmaError, match="allow_tf32 must be a bool"):
        enigma.gemm_configs("cuda", "f32", allow_tf32="yes")
    # Operands gemm_block cannot multiply have no tiles (not float ones).
    for target in ("cuda", "metal", "cpu"):
        with pytest.raises(enigma.EnigmaError, match="half, bfloat or float"):
            enigma.gemm_configs(target, "i8")
        with pytest.raises(enigma.EnigmaError, match="half, bfloat or float"):
            enigma.default_gemm_config(target, "u16")


# --------------------------------------------------------------------------
# autotune
# --------------------------------------------------------------------------

def test_autotune_times_caches_and_skips_failures(tmp_path, monkeypatch, rng,
                                                   capsys):
    monkeypatch.setenv("ENIGMA_CACHE_DIR", str(tmp_path))
    rt = enigma.CpuRuntime()
    good = enigma.MmaConfig(32, 32, 16, 2, 1, 2)
    bad = enigma.MmaConfig(24, 32, 16, 1, 1, 2)     # 24 rows: an EnigmaError
    built = []

    @enigma.autotune(configs=[bad, good], key=["m", "n", "k"], repeat=2,
                     batch=3)
    def tuned(config, m, n, k):
        built.append(config)
        return enigma.Launch(_gemm("f32", False, False, config),
                             *config.launch(m, n), scalars=[m, n, k])

    a = _eighths(rng, (40, 24))
    b = _eighths(rng, (24, 40))
    checked = []

    def check(prepared):
        out = np.frombuffer(prepared.read_output(), np.float32)
        np.testing.assert_array_equal(out.reshape(40, 40),
                                      a.astype(np.float64) @ b + 1.0)
        checked.append(True)

    launch = tuned.best(rt, [a, b], output_size=40 * 40 * 4, check=check,
                        m=40, n=40, k=24)
    assert launch.compiled is _gemm("f32", False, False, good)
    assert checked == [True]
    results = tuned.timings[(40, 40, 24)]
    assert isinstance(results[0][1], str) and "failed" in results[0][1]
    assert isinstance(results[1][1], float) and results[1][1] > 0
    files = list((tmp_path / "autotune").glob("tuned-*.json"))
    assert len(files) == 1
    # Not a terminal: no progress line.
    assert "autotune" not in capsys.readouterr().err
    out = np.frombuffer(launch.execute(rt, [a, b], output_size=40 * 40 * 4),
                        np.float32)
    np.testing.assert_array_equal(out.reshape(40, 40),
                                  a.astype(np.float64) @ b + 1.0)

    # A new process (a fresh tuner) reads the winner and builds only it.
    built.clear()
    again = enigma.autotune(configs=[bad, good], key=["m", "n", "k"])(
        tuned.fn)
    again.__name__ = "tuned"
    assert again.best(rt, [a, b], output_size=40 * 40 * 4, m=40, n=40,
                      k=24).compiled is launch.compiled
    assert built == [good]


# --------------------------------------------------------------------------
# mistakes
# --------------------------------------------------------------------------

def _compile_error(body, *params):
    """Compiles a kernel whose body is `body(*buffers)` and returns the
    EnigmaError message."""
    @enigma.kernel
    def broken(A: enigma.bf16, B: enigma.f32):
        body(A, B)
    with pytest.raises(enigma.EnigmaError) as e:
        enigma.compile(broken)
    return str(e.value)


def test_fragment_side_not_a_multiple_of_16():
    msg = _compile_error(lambda A, B: enigma.mma_zeros(24, 32))
    assert "24x32" in msg or "24 x 32" in msg, msg
    assert "multiples of 16" in msg and "test_mma.py" in msg, msg


def test_mma_operands_must_be_threadgroup_tiles_of_one_dtype():
    def body(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 256)
        u = enigma.threadgroup_alloc(enigma.f32, 256)
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(t, ld=16),
                   enigma.mma_operand(u, ld=16), k=16)
    msg = _compile_error(body)
    assert "one dtype" in msg and "test_mma.py" in msg, msg

    def body2(A, B):
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(A, ld=16),
                   None, k=16)
    msg = _compile_error(body2)
    assert "threadgroup" in msg, msg


def test_mma_k_and_pitch_rules():
    def body(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 1024)
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(t, ld=32),
                   enigma.mma_operand(t, ld=16), k=24)
    msg = _compile_error(body)
    assert "K = 24 must be a multiple of 16" in msg, msg

    def body2(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 1024)
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(t, ld=20),
                   enigma.mma_operand(t, ld=16), k=16)
    msg = _compile_error(body2)
    assert "pitch 20" in msg and "16 bytes" in msg, msg

    def body3(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 256)
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(t, ld=16),
                   enigma.mma_operand(t, ld=16, offset=192), k=16)
    msg = _compile_error(body3)
    assert "threadgroup array of 256" in msg, msg


def test_swizzle_that_splits_chunks():
    def body(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 1024)
        enigma.mma(enigma.mma_zeros(16, 16),
                   enigma.mma_operand(t, ld=32, swizzle=enigma.Swizzle(2, 1, 4)),
                   enigma.mma_operand(t, ld=16), k=16)
    msg = _compile_error(body)
    assert "splits 16-byte chunks" in msg, msg


def test_fragment_ops_need_every_lane():
    def body(A, B):
        lane = enigma.thread_index_in_simdgroup()
        acc = enigma.mma_zeros(16, 16)
        with enigma.if_(lane < 4):
            enigma.mma_store(acc, B, ld=16)
    msg = _compile_error(body)
    assert "every lane" in msg and "test_mma.py" in msg, msg


def test_copy_tile_needs_every_thread():
    def body(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 256)
        with enigma.if_(enigma.thread_index_in_threadgroup() < 64):
            enigma.copy_tile(t, A, 16, 16, src_ld=16)
    msg = _compile_error(body)
    assert "every thread" in msg, msg


def test_fragments_of_different_shapes_or_dtypes():
    msg = _compile_error(lambda A, B: enigma.mma_zeros(16, 16) +
                         enigma.mma_zeros(16, 32))
    assert "different shapes" in msg, msg
    msg = _compile_error(lambda A, B: enigma.mma_zeros(16, 16) +
                         enigma.mma_zeros(16, 16, "bf16"))
    assert "different types" in msg and ".cast()" in msg, msg


def test_gemm_config_too_large_for_threadgroup_memory():
    def body(A, B):
        enigma.gemm_block(A, A, B, m=64, n=64, k=64,
                          config=enigma.MmaConfig(256, 256, 128, 2, 2, 2))
    msg = _compile_error(body)
    assert "262144 bytes of threadgroup memory" in msg, msg
    assert "Metal: 32 KiB" in msg, msg


def test_warpgroup_product_mistakes():
    def rows32(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma(enigma.mma_zeros(32, 64), enigma.mma_operand(t, ld=64),
                   enigma.mma_operand(t, ld=64), k=64, warpgroup=True)
    msg = _compile_error(rows32)
    assert "16 rows" in msg and "32 x 64" in msg, msg

    def fragment_a_in_flight_alone(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma(enigma.mma_zeros(16, 64), enigma.mma_zeros(16, 64, "bf16"),
                   enigma.mma_operand(t, ld=64), asynchronous=True)
    msg = _compile_error(fragment_a_in_flight_alone)
    assert "asynchronous=True applies to warpgroup products only" in msg, msg

    def fragment_a_in_flight_read(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        o = enigma.mma(enigma.mma_zeros(16, 64),
                       enigma.mma_zeros(16, 64, "bf16"),
                       enigma.mma_operand(t, ld=64), warpgroup=True,
                       asynchronous=True)
        enigma.mma_store(o, B, ld=64)
    msg = _compile_error(fragment_a_in_flight_read)
    assert "is asynchronous" in msg and "enigma.mma_wait" in msg, msg

    def fragment_a_rows32(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma(enigma.mma_zeros(32, 64), enigma.mma_zeros(32, 64, "bf16"),
                   enigma.mma_operand(t, ld=64), warpgroup=True)
    msg = _compile_error(fragment_a_rows32)
    assert "16 rows" in msg and "32 x 64" in msg, msg

    # One wgmma reads one B for the four simdgroups of a group.
    for a_in_memory in (True, False):
        def varying_b(A, B, a_in_memory=a_in_memory):
            t = enigma.threadgroup_alloc(enigma.bf16, 8192)
            b = enigma.mma_operand(
                t, ld=64, offset=enigma.simdgroup_index_in_threadgroup() * 64)
            a = (enigma.mma_operand(t, ld=64) if a_in_memory
                 else enigma.mma_zeros(16, 64, "bf16"))
            enigma.mma(enigma.mma_zeros(16, 64), a, b, k=64, warpgroup=True)
        msg = _compile_error(varying_b)
        assert "operand B's offsets must be the same in every thread" in msg, \
            msg

    def overlapping(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma(enigma.mma_zeros(16, 128), enigma.mma_operand(t, ld=64),
                   enigma.mma_operand(t, ld=64, block_stride=1024), k=64)
    msg = _compile_error(overlapping)
    assert "would overlap" in msg, msg

    def negative(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma_operand(t, ld=64, block_stride=-1)
    msg = _compile_error(negative)
    assert "block_stride must be at least 0" in msg, msg


@pytest.mark.parametrize("bits,base,shift,dtype", [
    (3, 2, -3, "f32"), (2, 1, 5, "f32"), (2, 4, -2, "bf16")])
def test_swizzles_that_split_chunks_are_refused(bits, base, shift, dtype):
    """A swizzle reading or writing address bits inside a 16-byte chunk
    (a base below the chunk's bits, or a negative shift reaching below
    them) would split the chunks copies and vector loads move whole: an
    error naming it, not a wrong product on CUDA."""
    with pytest.raises(enigma.EnigmaError) as info:
        _float_product_swizzled_b(bits, base, shift, dtype)
    msg = str(info.value)
    assert f"Swizzle({bits}, {base}, {shift}) splits 16-byte chunks" in msg, \
        msg


def test_copy_wait_and_mma_arguments():
    msg = _compile_error(lambda A, B: enigma.copy_wait(9))
    assert "0 to 7" in msg, msg

    def body(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 1024)
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(t, ld=32),
                   enigma.mma_operand(t, ld=16))
    msg = _compile_error(body)
    assert "give k=" in msg, msg


# --------------------------------------------------------------------------
# generated sources
# --------------------------------------------------------------------------

def test_generated_sources_name_the_helpers():
    k = _product("bf16", False, True, True, False)
    assert "enigma_mma_sync<32, 32, false, 2, 3, 3, 0, 32, true, 2, 3, 3, " \
           "0, false, false, false>" in k.cuda_source
    assert "enigma_copy_tile_async<64, 32, 32, 2, 3, 3, 0>" in k.cuda_source
    assert "enigma_frag<float, 32, 48>" in k.cuda_source
    assert "simdgroup_multiply_accumulate" in k.metal_source
    assert "[[thread_index_in_simdgroup]]" in k.metal_source
    assert "enigma_mma_sync<" in k.cpp_source


def test_cuda_source_compiles_to_tensor_core_instructions():
    try:
        enigma._core.Runtime.nvrtc_check('extern "C" __global__ void k() {}',
                                         "sm_90", [])
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed here")
    for key in (("bf16", False, True, True, False),
                ("f32", True, False, False, True),
                ("f32", False, False, True, False)):
        enigma._core.Runtime.nvrtc_check(_product(*key).cuda_source,
                                         "sm_90", [])
    # Warpgroup products: wgmma in the Hopper-specific target sm_90a, the
    # mma.sync path elsewhere.
    for b_t in (False, True):
        source = _gemm("bf16", False, b_t,
                       enigma.gemm_configs("cuda", "bf16")[0]).cuda_source
        # 3 stages or more: asynchronous products, completed by mma_wait
        assert "4096, false, true, true>(" in source or b_t
        assert "enigma_mma_wait(" in source
        for arch in ("sm_90a", "sm_90", "sm_80"):
            enigma._core.Runtime.nvrtc_check(source, arch, [])


def test_partial_simdgroups_are_a_dispatch_error(rng):
    """A fragment is held by 32 lanes: a threadgroup that is not whole
    simdgroups (threads, or an edge group the grid cuts) is refused before
    the launch, on every backend."""
    k = _fill_iota()
    x = np.ones(2, np.float32)
    rt = enigma.CpuRuntime()
    for grid, threads in (((48, 1, 1), (48, 1, 1)), ((96, 1, 1), (64, 1, 1)),
                          ((64, 3, 1), (32, 2, 1))):
        with pytest.raises(enigma.DispatchError, match="whole simdgroups"):
            rt.execute(k, [x], output_size=2 * 32 * 48 * 4, grid=grid,
                       threads=threads)
    prepared = rt.prepare(k, [x], 2 * 32 * 48 * 4)
    with pytest.raises(enigma.DispatchError, match="whole simdgroups"):
        prepared.dispatch((40, 1, 1), (40, 1, 1))
    prepared.dispatch((64, 1, 1), (64, 1, 1))      # fine
    prepared.release()


def test_partial_groups_are_a_dispatch_error_in_the_call_form():
    """The function-call form refuses the same launches as execute():
    threadgroups that are not whole simdgroups (fragments), or not the
    threadgroup size that gemm_block's configuration needs, before
    running."""
    @enigma.kernel
    def fill(O: enigma.f32):
        enigma.mma_store(enigma.mma_fill(1.0, 16, 16), O, ld=16)

    out = np.zeros(16 * 16, np.float32)
    with pytest.raises(enigma.DispatchError, match="whole simdgroups"):
        fill.launch(grid=(48, 1, 1), threads=(48, 1, 1))(out)
    config = enigma.MmaConfig(64, 64, 64, 4, 1, 2, group_m=2)

    @enigma.kernel
    def gemm(A: enigma.bf16, B: enigma.bf16, M: U32, N: U32, K: U32,
             C: enigma.f32):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config)

    a = np.zeros(64 * 64, np.uint16)
    c = np.full(64 * 64, -1.0, np.float32)
    for grid, threads in (((96, 1, 1), (96, 1, 1)),
                          ((192, 1, 1), (128, 1, 1))):
        with pytest.raises(enigma.DispatchError,
                           match="runs only in threadgroups of 128 threads"):
            gemm.launch(grid=grid, threads=threads)(a, a, 64, 64, 64, c)
    assert (c == -1.0).all()            # nothing ran
    grid, threads = config.launch(64, 64)
    gemm.launch(grid=grid, threads=threads)(a, a, 64, 64, 64, c)
    assert (c == 0.0).all()


@functools.lru_cache(maxsize=None)
def _gemm_tile(dtype, a_t, b_t, accumulate):
    elem = getattr(enigma, dtype)
    m, n, k = 48, 64, 32

    @enigma.kernel
    def tile_product(A: elem, B: elem, C: enigma.f32):
        a = enigma.threadgroup_alloc(elem, m * k)
        b = enigma.threadgroup_alloc(elem, k * n)
        enigma.copy_tile(a, A, k if a_t else m, m if a_t else k,
                         src_ld=m if a_t else k)
        enigma.copy_tile(b, B, n if b_t else k, k if b_t else n,
                         src_ld=k if b_t else n)
        enigma.copy_commit()
        enigma.copy_wait(0)
        enigma.barrier()
        enigma.gemm_tile(a, b, C, m=m, n=n, k=k, a_transposed=a_t,
                         b_transposed=b_t, accumulate=accumulate)
    return enigma.compile(tile_product), m, n, k


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, True)])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("threads", [32, 96])
def test_gemm_tile_threadgroup_product(runtime, rng, dtype, a_t, b_t,
                                       accumulate, threads):
    """The product enigma.gemm can lower to: 48 x 64 output tiles (16 x 32
    where 32 does not divide) dealt to 1 or 3 simdgroups."""
    kernel, m, n, k = _gemm_tile(dtype, a_t, b_t, accumulate)
    a = _eighths(rng, (m, k))
    b = _eighths(rng, (k, n))
    c = _eighths(rng, (m, n))
    raw = runtime.execute(kernel, [_to_bits(a.T if a_t else a, dtype),
                                   _to_bits(b.T if b_t else b, dtype)],
                          outputs=None, output_size=m * n * 4,
                          grid=(threads, 1, 1), threads=(threads, 1, 1)) \
        if not accumulate else None
    if accumulate:   # C is read and written: bind an initial C
        prepared = runtime.prepare(kernel, [_to_bits(a.T if a_t else a, dtype),
                                            _to_bits(b.T if b_t else b, dtype)],
                                   m * n * 4)
        prepared.dispatch((threads, 1, 1), (threads, 1, 1))   # C = 0 + AB
        prepared.dispatch((threads, 1, 1), (threads, 1, 1))   # C = AB + AB
        raw = prepared.read_output()
        prepared.release()
        want = 2 * (a.astype(np.float64) @ b)
    else:
        want = a.astype(np.float64) @ b
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32)
                                  .reshape(m, n), want)
