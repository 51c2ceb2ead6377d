"""Simdgroup async copies end to end (docs/reference/async-copy.md): 1-D and
2-D copies in both directions on every backend under test, against numpy
with fresh random inputs, odd sizes, offsets, partial simdgroups, several
events waited together, copies inside traced loops, double buffering, a
GEMM in the original's async-copy pattern; the generated MSL; and the
mistakes that must be an EnigmaError naming the user's line.

The kernels run as one threadgroup where they check untouched elements:
threadgroup memory and outputs are first filled with a poison value, so an
element a copy should not have written keeps it and one it should have
written does not.
"""

import functools

import numpy as np
import pytest

import enigma

from conftest import compile_error, run_kernel

_NP = {"f32": np.float32, "f16": np.float16, "u8": np.uint8, "i32": np.int32,
       "u16": np.uint16}
_DT = {"f32": enigma.f32, "f16": enigma.f16, "u8": enigma.u8,
       "i32": enigma.i32, "u16": enigma.u16}
_POISON = {"f32": -7.5, "f16": -7.5, "u8": 0xA5, "i32": -123456789,
           "u16": 0xBEEF}


def _values(rng, name, n):
    """Random values of dtype ``name`` that never equal its poison."""
    if name in ("f32", "f16"):
        return rng.uniform(0.5, 4.0, n).astype(_NP[name])
    info = np.iinfo(_NP[name])
    v = rng.integers(0, min(info.max, 1 << 20), n).astype(_NP[name])
    v[v == _NP[name](_POISON[name])] += 1
    return v


def _fill(buf, count, threads, value):
    """Every thread of the (single) group stores ``value`` into its share
    of ``buf[0:count]``."""
    tid = enigma.thread_index_in_threadgroup()
    with enigma.for_range(tid, count, threads, dtype="uint") as i:
        buf[i] = value


# --------------------------------------------------------------------------
# 1-D, device -> threadgroup
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _d2t_1d(name, count, src_off, dst_off, threads, sg):
    dt, tile_n = _DT[name], dst_off + count + 6

    @enigma.kernel
    def d2t_1d(src: dt, out: dt):
        tile = enigma.threadgroup_alloc(dt, tile_n)
        _fill(tile, tile_n, threads, _POISON[name])
        enigma.barrier()
        # One simdgroup (a partial one for 48 threads, sg 1) copies.
        with enigma.if_(enigma.simdgroup_index_in_threadgroup() == sg):
            ev = enigma.async_copy_1d_d2t(tile, dst_off, src, src_off, count)
            enigma.async_copy_wait(ev)
        enigma.barrier()
        tid = enigma.thread_index_in_threadgroup()
        with enigma.for_range(tid, tile_n, threads, dtype="uint") as i:
            out[i] = tile[i]
    return enigma.compile(d2t_1d), tile_n


@pytest.mark.parametrize("name", ["f32", "f16", "u8", "i32"])
@pytest.mark.parametrize("count,src_off,dst_off,threads,sg", [
    (1, 0, 0, 32, 0), (31, 3, 5, 64, 1), (33, 1, 2, 48, 1),
    (100, 7, 0, 96, 2), (257, 0, 13, 128, 0), (1000, 5, 3, 256, 7)])
def test_1d_device_to_threadgroup(runtime, rng, name, count, src_off, dst_off,
                                  threads, sg):
    compiled, tile_n = _d2t_1d(name, count, src_off, dst_off, threads, sg)
    src = _values(rng, name, src_off + count + 4)
    out = run_kernel(runtime, compiled, [src], _NP[name], tile_n,
                     (threads, 1, 1), (threads, 1, 1))
    ref = np.full(tile_n, _POISON[name], dtype=_NP[name])
    ref[dst_off:dst_off + count] = src[src_off:src_off + count]
    np.testing.assert_array_equal(out, ref)


def test_two_dimensional_threadgroup(runtime, rng):
    """An 8 x 6 threadgroup: simdgroups are runs of 32 linear thread indices
    (the second has 16 lanes), whichever the group's shape."""
    compiled, tile_n = _d2t_1d("f32", 45, 3, 1, 48, 1)
    src = _values(rng, "f32", 52)
    out = run_kernel(runtime, compiled, [src], np.float32, tile_n,
                     (8, 6, 1), (8, 6, 1))
    ref = np.full(tile_n, _POISON["f32"], dtype=np.float32)
    ref[1:46] = src[3:48]
    np.testing.assert_array_equal(out, ref)


# --------------------------------------------------------------------------
# 1-D, threadgroup -> device
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _t2d_1d(name, count, src_off, dst_off, threads, sg):
    dt = _DT[name]
    tile_n, out_n = src_off + count, dst_off + count + 5

    @enigma.kernel
    def t2d_1d(src: dt, out: dt):
        tile = enigma.threadgroup_alloc(dt, tile_n)
        tid = enigma.thread_index_in_threadgroup()
        with enigma.for_range(tid, tile_n, threads, dtype="uint") as i:
            tile[i] = src[i]
        _fill(out, out_n, threads, _POISON[name])
        enigma.barrier("mem_device_and_threadgroup")
        with enigma.if_(enigma.simdgroup_index_in_threadgroup() == sg):
            ev = enigma.async_copy_1d_t2d(out, dst_off, tile, src_off, count)
            enigma.async_copy_wait(ev)
    return enigma.compile(t2d_1d), tile_n, out_n


@pytest.mark.parametrize("name", ["f32", "f16", "u8", "i32"])
@pytest.mark.parametrize("count,src_off,dst_off,threads,sg", [
    (1, 0, 0, 32, 0), (31, 3, 5, 64, 1), (33, 1, 2, 48, 1),
    (257, 0, 13, 128, 3), (1000, 4, 8, 256, 5)])
def test_1d_threadgroup_to_device(runtime, rng, name, count, src_off, dst_off,
                                  threads, sg):
    compiled, tile_n, out_n = _t2d_1d(name, count, src_off, dst_off, threads,
                                      sg)
    src = _values(rng, name, tile_n)
    out = run_kernel(runtime, compiled, [src], _NP[name], out_n,
                     (threads, 1, 1), (threads, 1, 1))
    ref = np.full(out_n, _POISON[name], dtype=_NP[name])
    ref[dst_off:dst_off + count] = src[src_off:src_off + count]
    np.testing.assert_array_equal(out, ref)


# --------------------------------------------------------------------------
# Traced offsets and counts, many groups, every simdgroup issuing the copy
# --------------------------------------------------------------------------

TILE = 256


@functools.lru_cache(maxsize=None)
def _staged(threads):
    @enigma.kernel
    def staged(src: enigma.f32, n: enigma.Scalar(enigma.u32),
               dst: enigma.f32):
        # Per group: a traced count (the last group is short) at a traced
        # offset; reversed and doubled through a second tile on the way out.
        tile = enigma.threadgroup_alloc(enigma.f32, TILE)
        rev = enigma.threadgroup_alloc(enigma.f32, TILE)
        base = enigma.threadgroup_position_in_grid("x") * TILE
        count = enigma.imin(n - base, TILE)
        # No condition: every simdgroup issues the same copy.
        ev = enigma.async_copy_1d_d2t(tile, 0, src, base, count)
        enigma.async_copy_wait(ev)
        enigma.barrier()
        tid = enigma.thread_index_in_threadgroup()
        with enigma.for_range(tid, count, threads, dtype="uint") as i:
            rev[i] = tile[count - 1 - i] * 2.0
        enigma.barrier()
        with enigma.if_(enigma.simdgroup_index_in_threadgroup() == 0):
            out = enigma.async_copy_1d_t2d(dst, base, rev, 0, count)
            enigma.async_copy_wait(out)
    return enigma.compile(staged)


@pytest.mark.parametrize("threads", [40, 64, 256])
@pytest.mark.parametrize("n", [1, 255, 256, 257, 1000, 5003])
def test_traced_offsets_many_groups(runtime, rng, threads, n):
    src = rng.standard_normal(n).astype(np.float32)
    groups = -(-n // TILE)
    out = run_kernel(runtime, _staged(threads), [src], np.float32, n,
                     (groups * threads, 1, 1), (threads, 1, 1), scalars=[n])
    ref = np.concatenate([src[s:s + TILE][::-1] * 2
                          for s in range(0, n, TILE)])
    np.testing.assert_array_equal(out, ref)


# --------------------------------------------------------------------------
# 2-D tiles
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _d2t_2d(name, R, C, r0, c0, rows, cols, pad, dst_off, threads):
    dt = _DT[name]
    epr = cols + pad
    tile_n = dst_off + rows * epr + 3

    @enigma.kernel
    def d2t_2d(src: dt, out: dt):
        tile = enigma.threadgroup_alloc(dt, tile_n)
        _fill(tile, tile_n, threads, _POISON[name])
        enigma.barrier()
        with enigma.if_(enigma.simdgroup_index_in_threadgroup() == 0):
            ev = enigma.async_copy_2d_d2t(tile, dst_off, epr, src,
                                          r0 * C + c0, C, cols, rows)
            enigma.async_copy_wait(ev)
        enigma.barrier()
        tid = enigma.thread_index_in_threadgroup()
        with enigma.for_range(tid, tile_n, threads, dtype="uint") as i:
            out[i] = tile[i]
    return enigma.compile(d2t_2d), tile_n


_TILES = [  # R, C, r0, c0, rows, cols, pad, dst_off
    (1, 1, 0, 0, 1, 1, 0, 0),
    (9, 17, 1, 2, 7, 13, 3, 1),
    (16, 16, 8, 8, 8, 8, 0, 0),
    (40, 64, 5, 16, 16, 32, 4, 4),
    (12, 50, 0, 7, 5, 33, 2, 3),
]


@pytest.mark.parametrize("name", ["f32", "f16", "u8"])
@pytest.mark.parametrize("shape", _TILES)
def test_2d_device_to_threadgroup(runtime, rng, name, shape):
    R, C, r0, c0, rows, cols, pad, dst_off = shape
    threads = 64
    compiled, tile_n = _d2t_2d(name, R, C, r0, c0, rows, cols, pad, dst_off,
                               threads)
    src = _values(rng, name, R * C)
    out = run_kernel(runtime, compiled, [src], _NP[name], tile_n,
                     (threads, 1, 1), (threads, 1, 1))
    ref = np.full(tile_n, _POISON[name], dtype=_NP[name])
    block = src.reshape(R, C)[r0:r0 + rows, c0:c0 + cols]
    for r in range(rows):
        start = dst_off + r * (cols + pad)
        ref[start:start + cols] = block[r]
    np.testing.assert_array_equal(out, ref)


@functools.lru_cache(maxsize=None)
def _t2d_2d(name, R, C, r0, c0, rows, cols, pad, src_off, threads):
    dt = _DT[name]
    epr = cols + pad
    tile_n = src_off + rows * epr

    @enigma.kernel
    def t2d_2d(src: dt, out: dt):
        tile = enigma.threadgroup_alloc(dt, tile_n)
        tid = enigma.thread_index_in_threadgroup()
        with enigma.for_range(tid, tile_n, threads, dtype="uint") as i:
            tile[i] = src[i]
        _fill(out, R * C, threads, _POISON[name])
        enigma.barrier("mem_device_and_threadgroup")
        with enigma.if_(enigma.simdgroup_index_in_threadgroup() == 1):
            ev = enigma.async_copy_2d_t2d(out, r0 * C + c0, C, tile, src_off,
                                          epr, cols, rows)
            enigma.async_copy_wait(ev)
    return enigma.compile(t2d_2d), tile_n


@pytest.mark.parametrize("name", ["f32", "f16", "u8"])
@pytest.mark.parametrize("shape", _TILES)
def test_2d_threadgroup_to_device(runtime, rng, name, shape):
    R, C, r0, c0, rows, cols, pad, src_off = shape
    threads = 64
    compiled, tile_n = _t2d_2d(name, R, C, r0, c0, rows, cols, pad, src_off,
                               threads)
    src = _values(rng, name, tile_n)
    out = run_kernel(runtime, compiled, [src], _NP[name], R * C,
                     (threads, 1, 1), (threads, 1, 1))
    ref = np.full((R, C), _POISON[name], dtype=_NP[name])
    for r in range(rows):
        start = src_off + r * (cols + pad)
        ref[r0 + r, c0:c0 + cols] = src[start:start + cols]
    np.testing.assert_array_equal(out.reshape(R, C), ref)


# --------------------------------------------------------------------------
# Several events, traced loops, double buffering
# --------------------------------------------------------------------------

@enigma.kernel
def three_copies(A: enigma.f32, B: enigma.f32, out: enigma.f32):
    # Three copies into two tiles, waited for together (a list and a loose
    # event, as the original accepts), then both tiles summed.
    t0 = enigma.threadgroup_alloc(enigma.f32, 96)
    t1 = enigma.threadgroup_alloc(enigma.f32, 96)
    with enigma.if_(enigma.simdgroup_index_in_threadgroup() == 0):
        e0 = enigma.async_copy_1d_d2t(t0, 0, A, 0, 50)
        e1 = enigma.async_copy_1d_d2t(t0, 50, B, 10, 46)
        e2 = enigma.async_copy_2d_d2t(t1, 0, 8, A, 100, 12, 8, 12)
        enigma.async_copy_wait([e0, e1], e2)
    enigma.barrier()
    tid = enigma.thread_index_in_threadgroup()
    with enigma.for_range(tid, 96, 64, dtype="uint") as i:
        out[i] = t0[i] + t1[i]


def test_several_events_waited_together(runtime, rng):
    a = rng.standard_normal(300).astype(np.float32)
    b = rng.standard_normal(60).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(three_copies), [a, b],
                     np.float32, 96, (64, 1, 1), (64, 1, 1))
    t0 = np.concatenate([a[:50], b[10:56]])
    t1 = a[100:100 + 12 * 12].reshape(12, 12)[:, :8].ravel()
    np.testing.assert_array_equal(out, t0 + t1)


CHUNK = 128


@functools.lru_cache(maxsize=None)
def _chunk_sums():
    @enigma.kernel
    def chunk_sums(x: enigma.f32, chunks: enigma.Scalar(enigma.u32),
                   out: enigma.f32):
        # Thread t sums x[c * CHUNK + t] over the chunks, each chunk brought
        # in by an async copy inside a traced loop.
        tile = enigma.threadgroup_alloc(enigma.f32, CHUNK)
        tid = enigma.thread_index_in_threadgroup()
        acc = 0.0
        for c in enigma.range(chunks):
            with enigma.if_(enigma.simdgroup_index_in_threadgroup() == 1):
                ev = enigma.async_copy_1d_d2t(tile, 0, x, c * CHUNK, CHUNK)
                enigma.async_copy_wait(ev)
            enigma.barrier()
            acc = acc + tile[tid]
            enigma.barrier()
        out[tid] = acc
    return enigma.compile(chunk_sums)


@pytest.mark.parametrize("chunks", [1, 2, 7])
def test_copies_in_a_traced_loop(runtime, rng, chunks):
    x = rng.standard_normal(chunks * CHUNK).astype(np.float32)
    out = run_kernel(runtime, _chunk_sums(), [x], np.float32, CHUNK,
                     (CHUNK, 1, 1), (CHUNK, 1, 1), scalars=[chunks])
    ref = x.reshape(chunks, CHUNK).astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


STAGES = 5


@enigma.kernel
def double_buffered(x: enigma.f32, out: enigma.f32):
    # The copy of chunk t + 1 is in flight while chunk t is waited for and
    # used: the wait must not need the later copy (CUDA waits for groups).
    bufs = [enigma.threadgroup_alloc(enigma.f32, 64) for _ in range(2)]
    tid = enigma.thread_index_in_threadgroup()
    events = [enigma.async_copy_1d_d2t(bufs[0], 0, x, 0, 64)]
    acc = 0.0
    for t in range(STAGES):
        if t + 1 < STAGES:
            events.append(enigma.async_copy_1d_d2t(bufs[(t + 1) % 2], 0, x,
                                                   (t + 1) * 64, 64))
        enigma.async_copy_wait(events[t])
        enigma.barrier()
        acc = acc + bufs[t % 2][tid] * float(t + 1)
        enigma.barrier()
    out[tid] = acc


def test_double_buffered_pipeline(runtime, rng):
    x = rng.standard_normal(STAGES * 64).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(double_buffered), [x],
                     np.float32, 64, (64, 1, 1), (64, 1, 1))
    weights = np.arange(1, STAGES + 1, dtype=np.float64)[:, None]
    ref = (x.reshape(STAGES, 64).astype(np.float64) * weights).sum(axis=0)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# A GEMM in the original's pattern: simdgroup 0 brings the A and B tiles in
# with 2-D async copies, the four simdgroups multiply them with 8x8
# simdgroup matrices.
# --------------------------------------------------------------------------

TM, TN, TK = 32, 32, 16


@functools.lru_cache(maxsize=None)
def _gemm(M, N, K):
    assert M % TM == 0 and N % TN == 0 and K % TK == 0

    @enigma.kernel
    def gemm_async(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        g = enigma.threadgroup_position_in_grid("x")
        blocks_n = enigma.metal_cast(N // TN, "uint")
        bm, bn = g / blocks_n, g % blocks_n
        sg = enigma.simdgroup_index_in_threadgroup()
        sm, sn = sg / 2, sg % 2          # 2 x 2 simdgroups of 16 x 16
        a_tile = enigma.threadgroup_alloc("float", TM * TK)
        b_tile = enigma.threadgroup_alloc("float", TK * TN)
        zero = enigma.make_filled_simdgroup_matrix(enigma.metal_cast(0.0, "float"))
        acc = [[zero, zero], [zero, zero]]
        for kt in range(K // TK):
            with enigma.if_(enigma.cmp_eq(sg, 0)):
                ea = enigma.async_copy_2d_d2t(a_tile, 0, TK, A,
                                              bm * (TM * K) + kt * TK, K,
                                              TK, TM)
                eb = enigma.async_copy_2d_d2t(b_tile, 0, TN, B,
                                              kt * (TK * N) + bn * TN, N,
                                              TN, TK)
                enigma.async_copy_wait(ea, eb)
            enigma.barrier()
            for kk in range(TK // 8):
                for i in range(2):
                    a = enigma.simdgroup_matrix_load(
                        a_tile, TK, offset=(sm * 16 + i * 8) * TK + kk * 8)
                    for j in range(2):
                        b = enigma.simdgroup_matrix_load(
                            b_tile, TN, offset=kk * 8 * TN + sn * 16 + j * 8)
                        acc[i][j] = enigma.simdgroup_multiply_accumulate(
                            a, b, acc[i][j])
            enigma.barrier()
        for i in range(2):
            for j in range(2):
                row = bm * TM + sm * 16 + i * 8
                col = bn * TN + sn * 16 + j * 8
                enigma.simdgroup_matrix_store(acc[i][j], C, N,
                                              offset=row * N + col)
    return enigma.compile(gemm_async)


@pytest.mark.parametrize("M,N,K", [(64, 64, 64), (32, 96, 48), (96, 32, 16)])
def test_gemm_with_async_tile_loads(runtime, rng, M, N, K):
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    groups = (M // TM) * (N // TN)
    out = run_kernel(runtime, _gemm(M, N, K), [a.ravel(), b.ravel()],
                     np.float32, M * N, (groups * 128, 1, 1), (128, 1, 1))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = 2 * K * 2.0**-24 * (np.abs(a64) @ np.abs(b64))
    assert np.all(np.abs(out.reshape(M, N) - a64 @ b64) <= bound + 1e-30)


# --------------------------------------------------------------------------
# The original's other spellings: the legacy pair, buffer names, Tensors,
# pipeline stages
# --------------------------------------------------------------------------

@enigma.kernel
def legacy_forms(A: enigma.f32, out: enigma.f32):
    tile = enigma.threadgroup_alloc(enigma.f32, 64)
    pipe = enigma.pipeline(enigma.f32, 16, stages=2)
    view = enigma.Tensor("A", 0, enigma.f32, enigma.Layout(16, 1),
                         base_offset=40)
    with enigma.if_(enigma.simdgroup_index_in_threadgroup() == 0):
        ev = enigma.async_copy_to_threadgroup(A, tile, 30, src_offset=2,
                                              dst_offset=1)
        enigma.async_copy_commit(ev)
        by_name = enigma.async_copy_1d_d2t(tile, 31, "A", 100, 33)
        # A Tensor is its buffer from its base offset on; a stage is its
        # part of the pipeline's allocation.
        staged = enigma.async_copy_1d_d2t(pipe.stage(1), 0, view, 3, 16)
        enigma.async_copy_wait(ev, by_name, staged)
    enigma.barrier()
    tid = enigma.thread_index_in_threadgroup()
    out[tid] = tile[tid]
    with enigma.if_(tid < 16):
        out[64 + tid] = pipe.stage(1)[tid]


def test_original_spellings(runtime, rng):
    a = rng.standard_normal(200).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(legacy_forms), [a], np.float32,
                     80, (64, 1, 1), (64, 1, 1))
    ref = np.zeros(80, np.float32)
    ref[1:31] = a[2:32]
    ref[31:64] = a[100:133]
    ref[64:80] = a[43:59]
    np.testing.assert_array_equal(out[1:], ref[1:])


# --------------------------------------------------------------------------
# MSL
# --------------------------------------------------------------------------

def test_msl_declares_the_air_intrinsics_it_uses():
    msl = enigma.compile(three_copies).metal_source
    kernel_at = msl.index("kernel void enigma_kernel_three_copies")
    for name in ("air.simdgroup_async_copy_1d.p3i8.p1i8",
                 "air.simdgroup_async_copy_2d.p3i8.p1i8",
                 "air.wait_simdgroup_events"):
        assert 0 <= msl.index(name) < kernel_at, name
    assert "p1i8.p3i8" not in msl  # no threadgroup -> device copy here
    assert "sizeof(float), alignof(float)" in msl
    plain = enigma.compile(no_copies).metal_source
    assert "air." not in plain and "enigma_async" not in plain


@enigma.kernel
def no_copies(A: enigma.f32, B: enigma.f32):
    tid = enigma.thread_position_in_grid
    B[tid] = A[tid]


# --------------------------------------------------------------------------
# Mistakes
# --------------------------------------------------------------------------

def _line_of(fn, needle: str) -> int:
    import inspect
    lines, first = inspect.getsourcelines(fn.__wrapped__)
    for k, text in enumerate(lines):
        if needle in text:
            return first + k
    raise AssertionError(needle)


@enigma.kernel
def lane_dependent(A: enigma.f32, B: enigma.f32):
    tile = enigma.threadgroup_alloc(enigma.f32, 32)
    with enigma.if_(enigma.thread_index_in_simdgroup() < 16):
        ev = enigma.async_copy_1d_d2t(tile, 0, A, 0, 32)  # COPY
        enigma.async_copy_wait(ev)
    B[0] = tile[0]


def test_copy_under_lane_dependent_condition_is_an_error():
    message = compile_error(lane_dependent)
    assert f":{_line_of(lane_dependent, '# COPY')}:" in message
    assert "lane" in message and "simdgroup" in message


@enigma.kernel
def wrong_direction(A: enigma.f32, B: enigma.f32):
    tile = enigma.threadgroup_alloc(enigma.f32, 32)
    enigma.async_copy_1d_d2t(A, 0, tile, 0, 32)  # BAD


@enigma.kernel
def mixed_types(A: enigma.f16, B: enigma.f32):
    tile = enigma.threadgroup_alloc(enigma.f32, 32)
    enigma.async_copy_1d_d2t(tile, 0, A, 0, 32)  # BAD


@enigma.kernel
def too_long(A: enigma.f32, B: enigma.f32):
    tile = enigma.threadgroup_alloc(enigma.f32, 32)
    enigma.async_copy_2d_d2t(tile, 4, 8, A, 0, 8, 8, 4)  # BAD


@enigma.kernel
def register_operand(A: enigma.f32, B: enigma.f32):
    regs = enigma.register_tensor((4,), "float")
    enigma.async_copy_1d_d2t(regs, 0, A, 0, 4)  # BAD


@enigma.kernel
def float_count(A: enigma.f32, B: enigma.f32):
    tile = enigma.threadgroup_alloc(enigma.f32, 32)
    enigma.async_copy_1d_d2t(tile, 0, A, 0, A[0])  # BAD


@enigma.kernel
def wait_for_a_number(A: enigma.f32, B: enigma.f32):
    enigma.async_copy_wait(3)  # BAD


@enigma.kernel
def unknown_buffer_name(A: enigma.f32, B: enigma.f32):
    tile = enigma.threadgroup_alloc(enigma.f32, 32)
    enigma.async_copy_1d_d2t(tile, 0, "C", 0, 4)  # BAD


@pytest.mark.parametrize("fn,words", [
    (wrong_direction, ["into threadgroup memory", "buffer 'A'"]),
    (mixed_types, ["f16", "f32", "one element type"]),
    (too_long, ["element 35", "32 elements"]),
    (register_operand, ["register tensor"]),
    (float_count, ["count", "integer"]),
    (wait_for_a_number, ["events", "int"]),
    (unknown_buffer_name, ["'C'"]),
])
def test_mistakes_name_the_line(fn, words):
    message = compile_error(fn)
    assert f":{_line_of(fn, '# BAD')}:" in message, message
    for w in words:
        assert w in message, message


@enigma.kernel
def escaped_event(A: enigma.f32, B: enigma.f32):
    tile = enigma.threadgroup_alloc(enigma.f32, 32)
    events = []
    with enigma.if_(enigma.simdgroup_index_in_threadgroup() == 0):
        events.append(enigma.async_copy_1d_d2t(tile, 0, A, 0, 32))
    enigma.async_copy_wait(events)  # BAD


def test_event_waited_outside_its_branch_is_an_error():
    message = compile_error(escaped_event)
    assert f":{_line_of(escaped_event, '# BAD')}:" in message, message
    assert "branch" in message


def test_outside_a_kernel_is_an_error():
    with pytest.raises(enigma.EnigmaError):
        enigma.async_copy_wait()


# --------------------------------------------------------------------------
# Tensors in an @enigma.jit launch: a slice is its buffer from the slice's
# (traced) base offset on
# --------------------------------------------------------------------------

JIT_TILE = 64


@enigma.kernel
def scale_tiles_async(gX, gY, factor):
    tile = enigma.threadgroup_alloc(enigma.f32, JIT_TILE)
    tid, _, _ = enigma.arch.thread_idx()
    bid, _, _ = enigma.arch.block_idx()
    with enigma.if_(enigma.simdgroup_index_in_threadgroup() == 1):
        ev = enigma.async_copy_1d_d2t(tile, 0, gX[None, bid], 0, JIT_TILE)
        enigma.async_copy_wait(ev)
    enigma.barrier()
    tile[tid] = tile[tid] * factor
    enigma.barrier()
    with enigma.if_(enigma.simdgroup_index_in_threadgroup() == 0):
        ev = enigma.async_copy_1d_t2d(gY[None, bid], 0, tile, 0, JIT_TILE)
        enigma.async_copy_wait(ev)


@enigma.jit
def scale_async(X, Y):
    gX = enigma.tensor_zipped_divide(X, enigma.make_layout(JIT_TILE))
    gY = enigma.tensor_zipped_divide(Y, enigma.make_layout(JIT_TILE))
    scale_tiles_async(gX, gY, 1.5).launch(
        grid=[gX.size(1) * JIT_TILE, 1, 1], block=[JIT_TILE, 1, 1])


@pytest.mark.parametrize("tiles", [1, 5])
def test_tensor_slices_in_a_jit_launch(runtime, rng, tiles):
    n = tiles * JIT_TILE
    compiled = enigma.compile(scale_async,
                              enigma.Tensor("X", 0, enigma.f32,
                                            enigma.make_layout(n)),
                              enigma.Tensor("Y", 1, enigma.f32,
                                            enigma.make_layout(n)))
    x = rng.standard_normal(n).astype(np.float32)
    raw = runtime.execute(compiled, [x], output_size=4 * n)
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32),
                                  x * np.float32(1.5))
