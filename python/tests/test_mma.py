"""The matrix multiply-accumulate family end to end (docs/reference/mma.md),
its fragments: fill, iota, load and store, row reductions and broadcasts,
element-wise arithmetic, fragments carried by loops and branches, and the
launches that are not whole simdgroups. Products are in
test_mma_products.py, the threadgroup tile copy in test_mma_copy_tile.py,
gemm_block, gemm_tile and autotune in test_gemm_block.py, and the mistakes
that must be an EnigmaError naming the user's line in test_mma_errors.py;
their shared helpers in _mma_helpers.py. Every result is checked against a
numpy float64 reference with fresh random inputs, on every backend under
test.
"""

import functools

import numpy as np
import pytest

import enigma

from conftest import run_kernel
from _mma_helpers import U32, eighths, from_bits, to_bits


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
    np.testing.assert_array_equal(o, to_bits(a, dtype).view(np.uint16))
    np.testing.assert_array_equal(p, from_bits(to_bits(a, dtype), dtype)
                                  + 1.0)


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
            from_bits(to_bits(a, "bf16"), "bf16"), x ** 3]
    for i, w in enumerate(want):
        np.testing.assert_allclose(out[i], w, rtol=2e-6, atol=1e-6,
                                   err_msg=f"expression {i}")


def test_numpy_scalars_combine_with_fragments(runtime, rng):
    # A scale computed with numpy on the host, on either side of a fragment.
    scale, shift = np.float32(rng.uniform(-2, 2)), np.float64(0.5)

    @enigma.kernel
    def scaled(A: enigma.f32, O: enigma.f32):
        f = enigma.mma_load(A, 16, 16, ld=16)
        enigma.mma_store(f * scale + shift, O, ld=16)
        enigma.mma_store(scale * f - np.int32(1), O, ld=16, offset=256)

    a = rng.uniform(-3, 3, (16, 16)).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(scaled), [a], np.float32, 512,
                     (32, 1, 1), (32, 1, 1)).reshape(2, 16, 16)
    x = a.astype(np.float64)
    np.testing.assert_allclose(out[0], x * float(scale) + 0.5, rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_allclose(out[1], x * float(scale) - 1, rtol=1e-6,
                               atol=1e-6)


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
    a = eighths(rng, (16, k))
    b = eighths(rng, (k, 32))
    out = run_kernel(runtime, _k_loop(), [to_bits(a, "bf16"),
                                          to_bits(b, "bf16")],
                     np.float32, 16 * 32, (32, 1, 1), (32, 1, 1),
                     scalars=[k, flag])
    want = (a.astype(np.float64) @ b) * (2 if flag else 1)
    np.testing.assert_array_equal(out.reshape(16, 32), want)


# --------------------------------------------------------------------------
# launches that are not whole simdgroups
# --------------------------------------------------------------------------

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
