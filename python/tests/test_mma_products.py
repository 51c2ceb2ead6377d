"""Matrix multiply-accumulate products end to end (docs/reference/mma.md):
operand tiles in threadgroup memory in every layout, swizzled or not and at
offsets, A in registers, warpgroup products, asynchronous products and
their waits, and the sources generated for them. Every result is checked
against a numpy float64 reference with fresh random inputs, on every
backend under test.

Products use inputs that are small multiples of 1/8, so every product and
every partial sum is exact in float and the comparison can be exact, in
whatever order a target sums.
"""

import functools
import re

import numpy as np
import pytest

import enigma

from conftest import run_kernel
from _mma_helpers import (body_error, eighths, from_bits, gemm_kernel,
                          to_bits)


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
    a = eighths(rng, (2 * M_, K_))
    b = eighths(rng, (K_, N_))
    c = eighths(rng, (2 * M_, N_))
    a_store = np.ascontiguousarray(a.T if a_t else a)
    b_store = np.ascontiguousarray(b.T if b_t else b)
    out = run_kernel(runtime, _product(dtype, a_t, b_t, swizzled, tf32),
                     [to_bits(a_store, dtype), to_bits(b_store, dtype), c],
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
    a = eighths(rng, (48, 16))
    b = eighths(rng, (32, 128))
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
    a = eighths(rng, (32, 16))
    b = eighths(rng, (16, 32))
    out = run_kernel(runtime,
                     _float_product_swizzled_b(bits, base, shift, dtype),
                     [to_bits(a, dtype), to_bits(b, dtype)], np.float32,
                     32 * 32, (32, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out.reshape(32, 32),
                                  a.astype(np.float64) @ b)


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
    a = eighths(rng, (128, k))
    b = eighths(rng, (k, n))
    b_stored = b.T if b_t else b
    out = run_kernel(runtime, _warpgroup_register_a(b_t, k, n),
                     [to_bits(a, "bf16"), to_bits(b_stored, "bf16")],
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
                     [to_bits(x, "bf16") for x in (a, kt, v)],
                     np.float32, 64 * 64, (128, 1, 1), (128, 1, 1))
    want = sum((a @ kt[j].T) @ v[j] for j in range(3))
    np.testing.assert_array_equal(out.reshape(64, 64), want)


def test_mma_with_a_fragment_in_registers(runtime, rng):
    """P @ V with P a fragment converted to bfloat (flash attention)."""
    p = rng.uniform(0, 1, (16, 32)).astype(np.float32)
    v = eighths(rng, (32, 64))
    out = run_kernel(runtime, _register_a(), [p, to_bits(v, "bf16")],
                     np.float32, 16 * 64, (32, 1, 1), (32, 1, 1))
    p_bf = from_bits(to_bits(p, "bf16"), "bf16").astype(np.float64)
    want = p_bf @ v
    err = np.abs(out.reshape(16, 64) - want)
    bound = 1e-5 * (np.abs(p_bf) @ np.abs(v)) + 1e-6
    assert (err <= bound).all(), float(err.max())


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


# --------------------------------------------------------------------------
# asynchronous warpgroup products
# --------------------------------------------------------------------------

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
    msg = body_error(body)
    assert "is asynchronous" in msg and "mma_wait" in msg, msg

    def not_warpgroup(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma(enigma.mma_zeros(16, 64), enigma.mma_operand(t, ld=64),
                   enigma.mma_operand(t, ld=64), k=64, asynchronous=True)
    msg = body_error(not_warpgroup)
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
                     [to_bits(a, "bf16"), to_bits(b, "bf16")],
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
    msg = body_error(newest)
    assert "leaves 1 asynchronous product in flight, but only 0" in msg, msg
    assert "pending = 0" in msg, msg
    for bad in (-1, 8, True, 1.0):
        def out_of_range(A, B, bad=bad):
            enigma.mma_wait(enigma.mma_zeros(16, 64), pending=bad)
        msg = body_error(out_of_range)
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
        source = gemm_kernel("bf16", False, b_t,
                       enigma.gemm_configs("cuda", "bf16")[0]).cuda_source
        # 3 stages or more: asynchronous products, completed by mma_wait
        assert "4096, false, true, true>(" in source or b_t
        assert "enigma_mma_wait(" in source
        for arch in ("sm_90a", "sm_90", "sm_80"):
            enigma._core.Runtime.nvrtc_check(source, arch, [])
