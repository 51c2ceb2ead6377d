"""Tile helpers end to end (docs/reference/tile.md): enigma.copy and
enigma.pipeline on every backend under test, against numpy float64
references with fresh random inputs; the generated MSL of each helper; and
the mistakes that must be an EnigmaError naming the user's line (of
enigma.gemm too). enigma.gemm's own runs are in test_tile_gemm.py.

Outputs start zero-filled and the inputs are drawn away from zero, so an
element a helper should not have written reads 0 and one it should have
written does not.
"""

import functools

import numpy as np
import pytest

import enigma

from conftest import run_kernel
from _tile_gemm_helpers import check_gemm, gemm_buffers


def _nonzero(rng, n, dtype=np.float32):
    """Values in +-[1, 2): never 0, so unwritten outputs (0) stand out."""
    sign = rng.choice([-1.0, 1.0], n)
    return (sign * rng.uniform(1.0, 2.0, n)).astype(dtype)


# --------------------------------------------------------------------------
# copy
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _copy_device(width, count, src_off, dst_off):
    @enigma.kernel
    def copy_device(src: enigma.f32, dst: enigma.f32):
        enigma.copy(src, dst, count, src_offset=src_off, dst_offset=dst_off,
                    coalesced_width=width, cooperative=True)
    return enigma.compile(copy_device)


@pytest.mark.parametrize("width", [1, 2, 4, 8])
@pytest.mark.parametrize("count,src_off,dst_off", [
    (1, 0, 0), (37, 3, 5), (64, 0, 1), (300, 7, 0), (1001, 0, 13)])
def test_copy_buffer_to_buffer(runtime, rng, width, count, src_off, dst_off):
    """One threadgroup of 64 threads; counts below, at and far above the
    group size, and not multiples of the width."""
    src = _nonzero(rng, src_off + count + 9)
    total = dst_off + count + 11
    out = run_kernel(runtime, _copy_device(width, count, src_off, dst_off),
                     [src], np.float32, total, (64, 1, 1), (64, 1, 1))
    ref = np.zeros(total, np.float32)
    ref[dst_off:dst_off + count] = src[src_off:src_off + count]
    np.testing.assert_array_equal(out, ref)


TG_COUNT = 200


@functools.lru_cache(maxsize=None)
def _copy_staged(width_in, width_out):
    @enigma.kernel
    def copy_staged(src: enigma.f32, n: enigma.Scalar(enigma.u32),
                    dst: enigma.f32):
        # Per group: a traced count (the last group is short) and traced
        # offsets; through threadgroup memory, reversed on the way out.
        tile = enigma.threadgroup_alloc(enigma.f32, TG_COUNT)
        rev = enigma.threadgroup_alloc(enigma.f32, TG_COUNT)
        g = enigma.threadgroup_position_in_grid("x")
        base = g * TG_COUNT
        count = enigma.imin(n - base, TG_COUNT)
        enigma.copy(src, tile, count, src_offset=base,
                    coalesced_width=width_in, cooperative=True)
        enigma.barrier()
        with enigma.for_range(enigma.thread_index_in_threadgroup(), count,
                              enigma.threads_per_threadgroup(),
                              dtype="uint") as i:
            rev[i] = tile[count - 1 - i]
        enigma.barrier()
        enigma.copy(rev, dst, count, dst_offset=base,
                    coalesced_width=width_out, cooperative=True)
    return enigma.compile(copy_staged)


@pytest.mark.parametrize("width_in,width_out", [(1, 1), (2, 4), (4, 2),
                                                (8, 1)])
@pytest.mark.parametrize("n", [1, 199, 200, 201, 777])
def test_copy_through_threadgroup_traced_count(runtime, rng, width_in,
                                               width_out, n):
    src = _nonzero(rng, n)
    groups = -(-n // TG_COUNT)
    out = run_kernel(runtime, _copy_staged(width_in, width_out), [src],
                     np.float32, n, (groups * 48, 1, 1), (48, 1, 1),
                     scalars=[n])
    ref = np.concatenate([src[s:s + TG_COUNT][::-1]
                          for s in range(0, n, TG_COUNT)])
    np.testing.assert_array_equal(out, ref)


VECTOR_TILE = 512


@functools.lru_cache(maxsize=None)
def _copy_vectorised(dtype, width, src_off, dst_off):
    @enigma.kernel
    def copy_vectorised(src: dtype, chunks: enigma.Scalar(enigma.u32),
                        dst: dtype):
        # A traced count that is provably a multiple of 64, into threadgroup
        # memory and back out.
        tile = enigma.threadgroup_alloc(dtype, VECTOR_TILE)
        count = chunks * 64
        enigma.copy(src, tile, count, src_offset=src_off,
                    coalesced_width=width, cooperative=True)
        enigma.barrier()
        enigma.copy(tile, dst, count, dst_offset=dst_off,
                    coalesced_width=width, cooperative=True)
    return enigma.compile(copy_vectorised)


# (dtype, vector type printed, width, src_offset, dst_offset, lanes of the
# copy in, lanes of the copy out): a start that is a multiple of 2 but not
# of 4 gets 2-lane vectors, an odd one element accesses; 8-byte elements at
# most 2 lanes (16 bytes).
VECTOR_CASES = [
    (enigma.f32, "float", 4, 0, 8, 4, 4), (enigma.f32, "float", 8, 4, 0, 4, 4),
    (enigma.f32, "float", 2, 6, 2, 2, 2), (enigma.f32, "float", 4, 2, 0, 2, 4),
    (enigma.f32, "float", 4, 3, 5, 1, 1), (enigma.f16, "half", 8, 0, 4, 4, 4),
    (enigma.u8, "uchar", 8, 8, 0, 4, 4), (enigma.i64, "ulong", 4, 2, 0, 2, 2)]


@pytest.mark.parametrize("dtype,vector,width,src_off,dst_off,lanes_in,"
                         "lanes_out", VECTOR_CASES)
def test_copy_vectorises_aligned_chunks(runtime, rng, dtype, vector, width,
                                        src_off, dst_off, lanes_in,
                                        lanes_out):
    """Chunks whose starts are provably multiples of the vector width move
    as vector accesses (on the device side and in threadgroup memory);
    a start that is not falls back to narrower vectors or elements."""
    compiled = _copy_vectorised(dtype, width, src_off, dst_off)
    msl = compiled.metal_source
    expected = sum(width // lanes for lanes in (lanes_in, lanes_out)
                   if lanes > 1)
    assert compiled.cpp_source.count("enigma_vector_load<") == expected
    if lanes_in > 1:
        assert f"*(device {vector}{lanes_in}*)(src + " in msl
        assert f"*(threadgroup {vector}{lanes_in}*)(" in msl
    if lanes_out > 1:
        assert f"*(device {vector}{lanes_out}*)(dst + " in msl
    chunks = int(rng.integers(1, VECTOR_TILE // 64 + 1))
    count = chunks * 64
    np_dtype = np.dtype(dtype.numpy_dtype)
    if np_dtype.kind == "f":
        src = _nonzero(rng, src_off + count + 5, np_dtype)
    else:
        src = rng.integers(1, 100, src_off + count + 5).astype(np_dtype)
    total = dst_off + VECTOR_TILE + 3
    out = run_kernel(runtime, compiled, [src], np_dtype, total,
                     (96, 1, 1), (96, 1, 1), scalars=[chunks])
    ref = np.zeros(total, np_dtype)
    ref[dst_off:dst_off + count] = src[src_off:src_off + count]
    np.testing.assert_array_equal(out, ref)


@functools.lru_cache(maxsize=None)
def _copy_masked(width):
    @enigma.kernel
    def copy_masked(src: enigma.f32, lo: enigma.Scalar(enigma.u32),
                    dst: enigma.f32):
        # Keep elements i >= lo that are not multiples of 3.
        enigma.copy(src, dst, 500, src_offset=4, dst_offset=2,
                    mask_fn=lambda i: (i % 3 != 0) & (i >= lo),
                    coalesced_width=width, cooperative=True)
    return enigma.compile(copy_masked)


@pytest.mark.parametrize("width", [1, 2, 4])
def test_copy_mask_skips_elements(runtime, rng, width):
    src = _nonzero(rng, 510)
    lo = int(rng.integers(0, 100))
    out = run_kernel(runtime, _copy_masked(width), [src], np.float32, 505,
                     (96, 1, 1), (96, 1, 1), scalars=[lo])
    ref = np.zeros(505, np.float32)
    i = np.arange(500)
    keep = (i % 3 != 0) & (i >= lo)
    ref[2 + i[keep]] = src[4 + i[keep]]
    np.testing.assert_array_equal(out, ref)


@enigma.kernel
def copy_masked_src_bounds(src: enigma.f32, n: enigma.Scalar(enigma.u32),
                           dst: enigma.f32):
    # src holds only n elements: the mask keeps the copy from reading past
    # them (the CPU backend would read freed memory otherwise).
    enigma.copy(src, dst, 256, mask_fn=lambda i: i < n, coalesced_width=4,
                cooperative=True)


def test_copy_mask_guards_reads(runtime, rng):
    n = 77
    src = _nonzero(rng, n)
    out = run_kernel(runtime, enigma.compile(copy_masked_src_bounds), [src],
                     np.float32, 256, (64, 1, 1), (64, 1, 1), scalars=[n])
    ref = np.zeros(256, np.float32)
    ref[:n] = src
    np.testing.assert_array_equal(out, ref)


@enigma.kernel
def copy_convert(src: enigma.f16, dst: enigma.f32):
    enigma.copy(src, dst, 100, mask_fn=lambda i: True, coalesced_width=2,
                cooperative=True)


def test_copy_converts_element_type(runtime, rng):
    src = _nonzero(rng, 100, np.float16)
    out = run_kernel(runtime, enigma.compile(copy_convert), [src],
                     np.float32, 100, (32, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out, src.astype(np.float32))


@enigma.kernel
def copy_convert_vectors(src: enigma.f16, dst: enigma.f32):
    enigma.copy(src, dst, 256, src_offset=4, coalesced_width=4,
                cooperative=True)


def test_copy_converts_vectors(runtime, rng):
    # Without a mask the half4 chunks convert to float4 on the way.
    compiled = enigma.compile(copy_convert_vectors)
    assert "enigma_vector_load<half4>" in compiled.cpp_source
    src = _nonzero(rng, 260, np.float16)
    out = run_kernel(runtime, compiled, [src], np.float32, 256,
                     (32, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out, src[4:].astype(np.float32))


@enigma.kernel
def copy_empty(src: enigma.f32, dst: enigma.f32):
    enigma.copy(src, dst, 0, cooperative=True)
    enigma.copy(src, dst, 4, mask_fn=lambda i: False, cooperative=True)


def test_copy_nothing(runtime, rng):
    out = run_kernel(runtime, enigma.compile(copy_empty), [_nonzero(rng, 8)],
                     np.float32, 8, (32, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out, np.zeros(8, np.float32))


# --------------------------------------------------------------------------
# pipeline
# --------------------------------------------------------------------------

CHUNK = 64


@functools.lru_cache(maxsize=None)
def _staged_reverse(stages):
    """Chunk c of the group's input, reversed, times 2 plus 1: chunk c + 1
    is prefetched into the back stage while the front is read (by other
    threads than the ones that wrote it), inside a traced loop."""
    @enigma.kernel
    def staged_reverse(X: enigma.f32, chunks: enigma.Scalar(enigma.u32),
                       Y: enigma.f32):
        p = enigma.pipeline(enigma.f32, CHUNK, stages=stages)
        t = enigma.thread_index_in_threadgroup()
        for s in enigma.range_constexpr(stages - 1):
            with enigma.if_(s < chunks):
                enigma.copy(X, p.stage(s), CHUNK, src_offset=s * CHUNK,
                            cooperative=True)
        enigma.barrier()
        for c in enigma.range(chunks, dtype="uint"):
            with enigma.if_(c + (stages - 1) < chunks):
                enigma.copy(X, p.back(), CHUNK,
                            src_offset=(c + (stages - 1)) * CHUNK,
                            cooperative=True)
            front = p.front()
            Y[c * CHUNK + t] = front[CHUNK - 1 - t] * 2.0 + 1.0
            enigma.barrier()
            p.rotate()
    return enigma.compile(staged_reverse)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_pipeline_in_traced_loop(runtime, rng, stages, chunks):
    x = _nonzero(rng, chunks * CHUNK)
    out = run_kernel(runtime, _staged_reverse(stages), [x], np.float32,
                     chunks * CHUNK, (CHUNK, 1, 1), (CHUNK, 1, 1),
                     scalars=[chunks])
    ref = x.astype(np.float64).reshape(chunks, CHUNK)[:, ::-1] * 2 + 1
    np.testing.assert_allclose(out.reshape(chunks, CHUNK), ref, rtol=1e-7)


UNROLLED_CHUNKS = 5


@functools.lru_cache(maxsize=None)
def _double_buffered_sum(stages, use_swap):
    """out[t] = sum over chunks of chunk[(t * 5) % CHUNK], multi-buffered
    (stages - 1 chunks ahead) with the loop unrolled in Python: every stage
    offset is a constant."""
    @enigma.kernel
    def double_buffered_sum(X: enigma.f32, out: enigma.f32):
        p = enigma.pipeline("float", CHUNK, stages)
        t = enigma.thread_index_in_threadgroup()
        ahead = stages - 1                # chunks in flight before step 0
        for s in range(ahead):
            enigma.copy(X, p.stage(s), CHUNK, src_offset=s * CHUNK,
                        cooperative=True)
        enigma.barrier()
        acc = 0.0
        for c in enigma.range_constexpr(UNROLLED_CHUNKS):
            if c + ahead < UNROLLED_CHUNKS:
                enigma.copy(X, p.back(), CHUNK,
                            src_offset=(c + ahead) * CHUNK, cooperative=True)
            acc = acc + p.front()[(t * 5) % CHUNK]
            enigma.barrier()
            if use_swap:
                p.swap()
            else:
                p.advance()
        out[t] = acc
    return enigma.compile(double_buffered_sum)


@pytest.mark.parametrize("stages,use_swap", [(2, True), (2, False),
                                             (3, False), (4, False)])
def test_pipeline_unrolled_reduction(runtime, rng, stages, use_swap):
    x = _nonzero(rng, UNROLLED_CHUNKS * CHUNK)
    out = run_kernel(runtime, _double_buffered_sum(stages, use_swap), [x],
                     np.float32, CHUNK, (CHUNK, 1, 1), (CHUNK, 1, 1))
    chunks = x.astype(np.float64).reshape(UNROLLED_CHUNKS, CHUNK)
    terms = chunks[:, (np.arange(CHUNK) * 5) % CHUNK]
    # UNROLLED_CHUNKS float32 additions: |error| <= n * 2**-24 * sum |x|.
    bound = 2 * UNROLLED_CHUNKS * 2.0**-24 * np.abs(terms).sum(axis=0)
    assert (np.abs(out - terms.sum(axis=0)) <= bound).all()


TILE = 16


@enigma.kernel
def pipelined_gemm(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    """C[16, 16] = A[16, 64] @ B[64, 16], K walked in tiles of 16 through
    two double-buffered pipelines; gemm reads the front stages."""
    pa = enigma.pipeline(enigma.f32, TILE * TILE)
    pb = enigma.pipeline(enigma.f32, TILE * TILE)
    acc = enigma.threadgroup_alloc(enigma.f32, TILE * TILE)
    t = enigma.thread_index_in_threadgroup()
    with enigma.for_range(t, TILE * TILE, enigma.threads_per_threadgroup(),
                          dtype="uint") as i:
        acc[i] = 0.0
    for r in enigma.range(TILE, dtype="uint"):     # first K tile, row by row
        enigma.copy(A, pa.back(), TILE, src_offset=r * 64,
                    dst_offset=r * TILE, cooperative=True)
    enigma.copy(B, pb.back(), TILE * TILE, cooperative=True)
    enigma.barrier()
    for kt in enigma.range(4, dtype="uint"):
        pa.swap()
        pb.swap()
        with enigma.if_(kt + 1 < 4):
            for r in enigma.range(TILE, dtype="uint"):
                enigma.copy(A, pa.back(), TILE,
                            src_offset=r * 64 + (kt + 1) * TILE,
                            dst_offset=r * TILE, cooperative=True)
            enigma.copy(B, pb.back(), TILE * TILE,
                        src_offset=(kt + 1) * TILE * TILE, cooperative=True)
        enigma.gemm(pa.front(), pb.front(), acc, M=TILE, N=TILE, K=TILE)
        enigma.barrier()
    enigma.copy(acc, C, TILE * TILE, cooperative=True)


def test_pipeline_feeds_gemm(runtime, rng):
    a = rng.uniform(-1, 1, (TILE, 64)).astype(np.float32)
    b = rng.uniform(-1, 1, (64, TILE)).astype(np.float32)
    compiled = enigma.compile(pipelined_gemm)
    assert "simdgroup_multiply_accumulate" in compiled.metal_source
    out = run_kernel(runtime, compiled, [a.ravel(), b.ravel()], np.float32,
                     TILE * TILE, (64, 1, 1), (64, 1, 1))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    check_gemm(out.reshape(TILE, TILE), ref, np.abs(a) @ np.abs(b), 64,
                2.0**-24)


# --------------------------------------------------------------------------
# Generated source
# --------------------------------------------------------------------------

def test_msl_of_each_helper():
    gemm_simd = gemm_buffers(16, 16, 16, False, False, True).metal_source
    assert "simdgroup_float8x8" in gemm_simd
    assert "simdgroup_load(" in gemm_simd and "simdgroup_store(" in gemm_simd
    # The run-time fallback for groups that are not whole simdgroups.
    assert ("% 32" in gemm_simd.replace("%32", "% 32") or "& 31" in gemm_simd
            or "enigma_urem<uint>(" in gemm_simd and "32u)" in gemm_simd)
    gemm_scalar = gemm_buffers(5, 7, 3, False, False, None).metal_source
    assert "simdgroup" not in gemm_scalar
    assert "fma(" in gemm_scalar
    staged = _copy_staged(1, 1).metal_source
    assert "threadgroup float" in staged
    assert "threadgroup_barrier(mem_flags::mem_threadgroup)" in staged
    piped = _staged_reverse(2).metal_source
    assert "threadgroup float" in piped and f"[{2 * CHUNK}]" in piped


# --------------------------------------------------------------------------
# Mistakes
# --------------------------------------------------------------------------

def _fails(kernel, match):
    with pytest.raises(enigma.EnigmaError, match=match) as info:
        enigma.compile(kernel)
    assert "test_tile_helpers.py:" in str(info.value), str(info.value)
    return str(info.value)


def test_copy_errors():
    def kernel_with(**kw):
        @enigma.kernel
        def k(src: enigma.f32, dst: enigma.f32):
            enigma.copy(src, dst, kw.get("count", 8),
                        coalesced_width=kw.get("width", 1),
                        mask_fn=kw.get("mask_fn"),
                        src_offset=kw.get("src_offset", 0))
        return k

    _fails(kernel_with(width=3), "coalesced_width must be one of 1, 2, 4, 8")
    _fails(kernel_with(width=0), "coalesced_width")
    _fails(kernel_with(count=-1), "count must not be negative")
    _fails(kernel_with(count=2.5), "count must be a Python int")
    _fails(kernel_with(src_offset=-3), "src_offset must be in")
    _fails(kernel_with(src_offset=1.0), "src_offset must be an integer")
    _fails(kernel_with(mask_fn=lambda i: i * 2.0), "mask_fn must return a bool")
    _fails(kernel_with(mask_fn=3), "mask_fn must be a function")

    @enigma.kernel
    def not_memory(src: enigma.f32, dst: enigma.f32):
        enigma.copy([1, 2], dst, 2)
    _fails(not_memory, "src must be a buffer parameter")

    @enigma.kernel
    def overflow(src: enigma.f32, dst: enigma.f32):
        t = enigma.threadgroup_alloc(enigma.f32, 16)
        enigma.copy(src, t, 10, dst_offset=7)
    _fails(overflow, r"dst .* has 16 elements but dst_offset 7 \+ count 10 "
                     "needs 17")

    @enigma.kernel
    def float_count(src: enigma.f32, n: enigma.Scalar(enigma.f32),
                    dst: enigma.f32):
        enigma.copy(src, dst, n)
    _fails(float_count, "count must be an integer")


def test_gemm_errors():
    def kernel_with(m=8, n=8, k=8, a_dtype=enigma.f32, c_dtype=enigma.f32,
                    **kw):
        @enigma.kernel
        def k_(A: a_dtype, B: a_dtype, C: c_dtype):
            enigma.gemm(A, B, C, M=m, N=n, K=k, **kw)
        return k_

    msg = _fails(kernel_with(m=12, use_simdgroup=True),
                 "use_simdgroup=True but M, N and K must be multiples of 8")
    assert "M=12" in msg
    _fails(kernel_with(a_dtype=enigma.f16, use_simdgroup=True),
           "must all hold accum_dtype")
    _fails(kernel_with(a_dtype=enigma.i32, c_dtype=enigma.i32,
                       accum_dtype="int", use_simdgroup=True),
           "accum_dtype must be float or half")
    _fails(kernel_with(accum_dtype="bool"), "accum_dtype must be float")
    _fails(kernel_with(accum_dtype="nonsense"), "accum_dtype")
    _fails(kernel_with(accum_dtype="int"), "accum_dtype i32 is an integer "
                                           "type but A")
    _fails(kernel_with(c_dtype=enigma.i32), "C .* holds i32 but accum_dtype")
    _fails(kernel_with(a_dtype=enigma.b1), "holds bool")
    _fails(kernel_with(m=0), "M must be positive")
    _fails(kernel_with(k=4.0), "K must be a Python int")
    _fails(kernel_with(use_simdgroup="yes"), "use_simdgroup must be")
    _fails(kernel_with(transpose_B=1), "transpose_B must be True or False")
    _fails(kernel_with(m=70000, n=70000), "too large")

    @enigma.kernel
    def traced_size(A: enigma.f32, B: enigma.f32,
                    n: enigma.Scalar(enigma.u32), C: enigma.f32):
        enigma.gemm(A, B, C, M=8, N=n, K=8)
    _fails(traced_size, "N must be a Python int: the tile shape is fixed")

    @enigma.kernel
    def small_tile(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        a = enigma.threadgroup_alloc(enigma.f32, 8 * 16)
        enigma.gemm(a, B, C, M=8, N=8, K=32)
    _fails(small_tile, r"A .* has 128 elements but an M x K tile "
                       r"\(M=8, K=32\) needs 256")

    @enigma.kernel
    def small_stage(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        p = enigma.pipeline(enigma.f32, 32)
        enigma.gemm(A, B, p.front(), M=8, N=8, K=8)
    _fails(small_stage, "C .*pipeline stage 0.* has 32 elements but an M x "
                        "N tile")


@pytest.mark.parametrize("transpose_A", [False, True])
def test_gemm_buffer_operands_too_small_are_dispatch_errors(runtime, rng,
                                                            transpose_A):
    """Buffer operands have no size until the launch: one smaller than its
    tile is a DispatchError then, before anything runs."""
    @enigma.kernel
    def product(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        enigma.gemm(A, B, C, M=16, N=8, K=4, transpose_A=transpose_A)
    compiled = enigma.compile(product)
    a = rng.standard_normal((16, 4)).astype(np.float32)
    b = rng.standard_normal((4, 8)).astype(np.float32)
    a_in = np.ascontiguousarray(a.T if transpose_A else a).ravel()
    shape = "a K x M" if transpose_A else "an M x K"
    for inputs, out_bytes, message in (
            ([a_in[:-1], b.ravel()], 512,
             f"gemm uses A as {shape} tile \\(M=16, K=4\\): 64 elements, "
             "but A \\(f32\\) has 63"),
            ([a_in, b.ravel()[:31]], 512, "gemm uses B as a K x N tile"),
            ([a_in, b.ravel()], 508, "gemm uses C as an M x N tile.*"
                                     "at least 512 bytes")):
        with pytest.raises(enigma.DispatchError, match=message):
            runtime.execute(compiled, inputs, output_size=out_bytes,
                            grid=32, threads=32)
    out = runtime.execute(compiled, [a_in, b.ravel()], output_size=512,
                          grid=32, threads=32)
    np.testing.assert_allclose(np.frombuffer(out, np.float32).reshape(16, 8),
                               a.astype(np.float64) @ b, rtol=1e-5,
                               atol=1e-5)


def test_gemm_that_may_not_run_is_not_judged_before_launch(runtime):
    """Under an if (or in a loop) the product may never run: a kernel that
    is correct for its buffers must not be refused."""
    @enigma.kernel
    def maybe(A: enigma.f32, B: enigma.f32, n: enigma.Scalar(enigma.u32),
              C: enigma.f32):
        with enigma.if_(n > 100):
            enigma.gemm(A, B, C, M=16, N=8, K=4)
    small = np.ones(4, np.float32)
    out = runtime.execute(enigma.compile(maybe), [small, small],
                          output_size=16, grid=32, threads=32, scalars=[0])
    np.testing.assert_array_equal(np.frombuffer(out, np.float32), 0)


def test_pipeline_errors():
    def kernel_with(body):
        @enigma.kernel
        def k(X: enigma.f32):
            body()
        return k

    _fails(kernel_with(lambda: enigma.pipeline("float", 16, stages=0)),
           "stages must be >= 2, got 0")
    _fails(kernel_with(lambda: enigma.pipeline("float", 0)),
           "size must be at least 1")
    _fails(kernel_with(lambda: enigma.pipeline("float", 16.0)),
           "size must be a Python int")
    _fails(kernel_with(lambda: enigma.pipeline("float", 16, 3).swap()),
           "this one has 3 stages; use advance")
    _fails(kernel_with(lambda: enigma.pipeline("float", 16).stage(2)),
           r"k must be in 0\.\.1 for a 2-stage pipeline, got 2")
    _fails(kernel_with(lambda: enigma.pipeline("float", 16).stage(-1)),
           "k must be in")
    _fails(kernel_with(lambda: enigma.pipeline("float", 16).front()[16]),
           "index 16 is out of range for pipeline stage 0")
    _fails(kernel_with(lambda: enigma.pipeline("float", 30000, 2)),
           "227 KiB|232448")

    @enigma.kernel
    def in_loop(X: enigma.f32):
        for i in enigma.range(4):
            p = enigma.pipeline("float", 16)
    _fails(in_loop, "top level of the kernel body")


def test_helpers_outside_a_kernel():
    with pytest.raises(enigma.EnigmaError, match="inside an @enigma.kernel"):
        enigma.pipeline("float", 16)
    with pytest.raises(enigma.EnigmaError, match="inside an @enigma.kernel"):
        enigma.copy(None, None, 1)
    with pytest.raises(enigma.EnigmaError, match="inside an @enigma.kernel"):
        enigma.gemm(None, None, None, M=1, N=1, K=1)
