"""Tile helpers written the way programs of the original Enigma DSL use
them: ``enigma.copy`` run by one thread (or by each thread for its own
row) copies every element, ``enigma.gemm`` accumulates into a per-thread
``register_tensor``, and ``enigma.Pipeline`` rotates with ``advance()``.
The threadgroup-wide forms stay available (``copy(..., cooperative=True)``,
gemm into memory). Every result is checked against numpy in float64.

Outputs start zero-filled and inputs are drawn away from zero, so an
element a helper failed to write reads 0 and stands out.
"""

import functools

import numpy as np
import pytest

import enigma

from conftest import run_kernel


def _nonzero(rng, n, dtype=np.float32):
    """Values in +-[1, 2): never 0, so unwritten outputs (0) stand out."""
    sign = rng.choice([-1.0, 1.0], n)
    return (sign * rng.uniform(1.0, 2.0, n)).astype(dtype)


# --------------------------------------------------------------------------
# copy: one call copies all `count` elements, whoever calls it
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _copy_by_thread_zero(count, width, src_offset, dst_offset):
    @enigma.kernel
    def copy_one_thread(A: enigma.f32, B: enigma.f32):
        tid = enigma.thread_position_in_grid
        with enigma.if_(enigma.cmp_eq(tid, 0)):
            # The original's signature: offsets positional.
            enigma.copy(A, B, count, src_offset, dst_offset,
                        coalesced_width=width)
    return enigma.compile(copy_one_thread)


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("count,src_off,dst_off", [
    (1, 0, 0), (64, 0, 0), (100, 3, 5), (257, 8, 4), (1000, 0, 0)])
def test_copy_called_by_one_thread_copies_all(runtime, rng, width, count,
                                              src_off, dst_off):
    a = _nonzero(rng, src_off + count + 7)
    total = dst_off + count + 9
    out = run_kernel(runtime,
                     _copy_by_thread_zero(count, width, src_off, dst_off),
                     [a], np.float32, total, (64, 1, 1), (64, 1, 1))
    ref = np.zeros(total, np.float32)
    ref[dst_off:dst_off + count] = a[src_off:src_off + count]
    np.testing.assert_array_equal(out, ref)


ROW = 37


@enigma.kernel
def copy_own_row(A: enigma.f32, B: enigma.f32):
    # Each thread copies its own row: offsets traced, rows of 37 elements.
    tid = enigma.thread_position_in_grid
    enigma.copy(A, B, ROW, src_offset=tid * ROW, dst_offset=tid * ROW + 1)


@pytest.mark.parametrize("threads", [1, 33, 64])
def test_copy_each_thread_its_own_row(runtime, rng, threads):
    a = _nonzero(rng, threads * ROW)
    total = threads * ROW + 1
    out = run_kernel(runtime, enigma.compile(copy_own_row), [a], np.float32,
                     total, (threads, 1, 1), (32, 1, 1))
    ref = np.zeros(total, np.float32)
    ref[1:] = a
    np.testing.assert_array_equal(out, ref)


def test_copy_every_thread_fills_the_shared_tile(runtime, rng):
    """The original's coalesced round trip: every thread copies the whole
    tile into threadgroup memory, then each reads its own element."""
    N = 256

    @enigma.kernel
    def round_trip(A: enigma.f32, B: enigma.f32):
        shared = enigma.threadgroup_alloc("float", N)
        enigma.copy(A, shared, count=N, coalesced_width=4)
        enigma.barrier("mem_threadgroup")
        tid = enigma.thread_position_in_grid
        B[tid] = shared[tid]

    a = _nonzero(rng, N)
    out = run_kernel(runtime, enigma.compile(round_trip), [a], np.float32, N,
                     (N, 1, 1), (N, 1, 1))
    np.testing.assert_array_equal(out, a)


@enigma.kernel
def copy_masked_one_thread(A: enigma.f32, n: enigma.Scalar(enigma.i32),
                           B: enigma.f32):
    tid = enigma.thread_position_in_grid
    with enigma.if_(enigma.cmp_eq(tid, 0)):
        # mask_fn gets the element index as an int (the original's loop
        # counter): i - 3 is negative for the first three elements.
        enigma.copy(A, B, 200, src_offset=2,
                    mask_fn=lambda i: enigma.cmp_ge(i - 3, 0) & (i < n),
                    coalesced_width=2)


@pytest.mark.parametrize("n", [0, 1, 77, 200])
def test_copy_mask_from_one_thread(runtime, rng, n):
    a = _nonzero(rng, 202)
    out = run_kernel(runtime, enigma.compile(copy_masked_one_thread), [a],
                     np.float32, 200, (32, 1, 1), (32, 1, 1), scalars=[n])
    i = np.arange(200)
    keep = (i >= 3) & (i < n)
    ref = np.where(keep, a[2:], 0).astype(np.float32)
    np.testing.assert_array_equal(out, ref)


def test_copy_one_thread_vector_accesses(runtime, rng):
    """Aligned starts and a count that is a multiple of the width: the
    per-thread copy moves float4s."""
    @enigma.kernel
    def copy_vec(A: enigma.f32, B: enigma.f32):
        tid = enigma.thread_position_in_grid
        with enigma.if_(enigma.cmp_eq(tid, 0)):
            enigma.copy(A, B, 512, src_offset=8, coalesced_width=4)

    compiled = enigma.compile(copy_vec)
    assert "*(device float4*)(A + " in compiled.metal_source
    a = _nonzero(rng, 520)
    out = run_kernel(runtime, compiled, [a], np.float32, 512, (64, 1, 1),
                     (64, 1, 1))
    np.testing.assert_array_equal(out, a[8:])


@functools.lru_cache(maxsize=None)
def _cooperative_copy(count, width):
    @enigma.kernel
    def copy_together(A: enigma.f32, B: enigma.f32):
        enigma.copy(A, B, count, coalesced_width=width, cooperative=True)
    return enigma.compile(copy_together)


@pytest.mark.parametrize("width", [1, 4, 8])
@pytest.mark.parametrize("count", [1, 63, 1001])
def test_copy_cooperative_keyword(runtime, rng, count, width):
    """cooperative=True splits the elements over the threadgroup: every
    thread must call it, and together they copy everything."""
    a = _nonzero(rng, count)
    compiled = _cooperative_copy(count, width)
    assert "thread_index_in_threadgroup" in compiled.metal_source
    out = run_kernel(runtime, compiled, [a], np.float32, count, (48, 1, 1),
                     (48, 1, 1))
    np.testing.assert_array_equal(out, a)


def test_copy_cooperative_must_be_a_bool():
    @enigma.kernel
    def bad(A: enigma.f32, B: enigma.f32):
        enigma.copy(A, B, 4, cooperative=1)
    with pytest.raises(enigma.EnigmaError, match="cooperative must be True "
                                                 "or False") as info:
        enigma.compile(bad)
    assert "test_compat_tile.py:" in str(info.value)


# --------------------------------------------------------------------------
# gemm into a register tensor (each thread its own tile)
# --------------------------------------------------------------------------

def test_gemm_register_tensor_single_thread(runtime):
    """The original's scalar-gemm runtime test, unchanged but for the
    runtime: one thread, A and B staged through threadgroup memory."""
    M, N, K = 3, 4, 2

    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32, Out: enigma.f32):
        A_s = enigma.threadgroup_alloc("float", M * K)
        B_s = enigma.threadgroup_alloc("float", K * N)
        for i in range(M * K):
            A_s[i] = A[i]
        for i in range(K * N):
            B_s[i] = B[i]
        enigma.barrier("mem_threadgroup")
        C = enigma.register_tensor((M, N), dtype="float", fill=0.0)
        enigma.gemm(A_s, B_s, C, M=M, N=N, K=K)
        for m in range(M):
            for n in range(N):
                Out[m * N + n] = C[m, n]

    a = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32)
    b = np.array([[7, 8, 9, 10], [11, 12, 13, 14]], dtype=np.float32)
    out = run_kernel(runtime, enigma.compile(k), [a.ravel(), b.ravel()],
                     np.float32, M * N, (1, 1, 1), (1, 1, 1))
    np.testing.assert_array_equal(out.reshape(M, N), a @ b)


@functools.lru_cache(maxsize=None)
def _register_gemm(m, n, k, ta, tb, in_dtype="f32", accum="float"):
    """Thread t: C_t = fill_t + op(A) @ op(B), where A is a device buffer,
    B a threadgroup tile, and fill_t = C0[t] (so every thread's tile
    differs); thread t writes its tile to Out[t]."""
    A_t = getattr(enigma, in_dtype)

    @enigma.kernel
    def register_gemm(A: A_t, B: A_t, C0: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        B_s = enigma.threadgroup_alloc(A_t, k * n)
        enigma.copy(B, B_s, k * n, cooperative=True)
        enigma.barrier()
        C = enigma.register_tensor((m, n), dtype="float", fill=C0[tid])
        enigma.gemm(A, B_s, C, M=m, N=n, K=k, transpose_A=ta,
                    transpose_B=tb, accum_dtype=accum)
        for i in range(m):
            for j in range(n):
                Out[tid * (m * n) + i * n + j] = C[i, j]
    return enigma.compile(register_gemm)


REGISTER_SHAPES = [(1, 1, 1), (3, 4, 2), (5, 7, 3), (8, 8, 8), (4, 6, 40),
                   (2, 3, 100)]


def _operands(rng, m, n, k, ta, tb, np_dtype=np.float32):
    a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(np_dtype)
    b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(np_dtype)
    oa = a.astype(np.float64).T if ta else a.astype(np.float64)
    ob = b.astype(np.float64).T if tb else b.astype(np.float64)
    return a, b, oa @ ob, np.abs(oa) @ np.abs(ob)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False),
                                   (False, True), (True, True)])
@pytest.mark.parametrize("mnk", REGISTER_SHAPES)
def test_gemm_register_tensor_per_thread(runtime, rng, mnk, ta, tb):
    """40 threads (not whole simdgroups), each with its own tile; K = 40
    and 100 run a traced K loop."""
    m, n, k = mnk
    threads = 40
    a, b, prod, mag = _operands(rng, m, n, k, ta, tb)
    c0 = _nonzero(rng, threads)
    out = run_kernel(runtime, _register_gemm(m, n, k, ta, tb),
                     [a.ravel(), b.ravel(), c0], np.float32,
                     threads * m * n, (threads, 1, 1), (threads, 1, 1))
    ref = c0.astype(np.float64)[:, None, None] + prod[None]
    err = np.abs(out.reshape(threads, m, n) - ref)
    bound = 2 * (k + 1) * 2.0**-24 * (mag[None] + np.abs(ref)) + 1e-30
    assert (err <= bound).all(), float(err.max())


def test_gemm_register_tensor_half_inputs_float_accumulation(runtime, rng):
    m, n, k = 4, 4, 64
    threads = 32
    a, b, prod, mag = _operands(rng, m, n, k, False, False, np.float16)
    c0 = _nonzero(rng, threads)
    out = run_kernel(runtime, _register_gemm(m, n, k, False, False, "f16"),
                     [a.ravel(), b.ravel(), c0], np.float32,
                     threads * m * n, (threads, 1, 1), (threads, 1, 1))
    ref = c0.astype(np.float64)[:, None, None] + prod[None]
    bound = 2 * (k + 1) * 2.0**-24 * (mag[None] + np.abs(ref))
    assert (np.abs(out.reshape(threads, m, n) - ref) <= bound).all()


def test_gemm_register_operands(runtime, rng):
    """A and B may be register tensors too (their elements are read at
    constant indices, so the K loop is unrolled)."""
    M, N, K = 2, 3, 4

    @enigma.kernel
    def frag(A: enigma.f32, B: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        a = enigma.register_tensor((M, K), dtype="float")
        b = enigma.register_tensor((N, K), dtype="float")
        for i in range(M):
            for kk in range(K):
                a[i, kk] = A[tid * (M * K) + i * K + kk]
        for j in range(N):
            for kk in range(K):
                b[j, kk] = B[j * K + kk]
        c = enigma.register_tensor((M, N), dtype="float", fill=1.0)
        enigma.gemm(a, b, c, M=M, N=N, K=K, transpose_B=True)
        for i in range(M):
            for j in range(N):
                Out[tid * (M * N) + i * N + j] = c[i, j]

    threads = 5
    a = rng.uniform(-1, 1, (threads, M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (N, K)).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(frag), [a.ravel(), b.ravel()],
                     np.float32, threads * M * N, (threads, 1, 1),
                     (threads, 1, 1))
    ref = 1.0 + a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(out.reshape(threads, M, N), ref, rtol=1e-6,
                               atol=1e-6)


def test_gemm_register_tensor_integers(runtime, rng):
    M, N, K = 3, 2, 5

    @enigma.kernel
    def igemm(A: enigma.i8, B: enigma.i8, Out: enigma.i32):
        tid = enigma.thread_position_in_grid
        C = enigma.register_tensor((M, N), dtype="int", fill=tid)
        enigma.gemm(A, B, C, M=M, N=N, K=K, accum_dtype="int")
        for i in range(M):
            for j in range(N):
                Out[tid * (M * N) + i * N + j] = C[i, j]

    threads = 3
    a = rng.integers(-100, 100, (M, K)).astype(np.int8)
    b = rng.integers(-100, 100, (K, N)).astype(np.int8)
    out = run_kernel(runtime, enigma.compile(igemm), [a.ravel(), b.ravel()],
                     np.int32, threads * M * N, (threads, 1, 1),
                     (threads, 1, 1))
    ref = np.arange(threads)[:, None, None] + \
        (a.astype(np.int64) @ b.astype(np.int64))[None]
    np.testing.assert_array_equal(out.reshape(threads, M, N), ref)


@pytest.mark.parametrize("simd", [None, False])
def test_gemm_into_memory_waits_for_the_tiles(runtime, rng, simd):
    """The original's gemm into threadgroup memory starts with a barrier:
    each thread writes one element of A and B and calls gemm right away;
    64 threads (two simdgroups), C += A @ B with C zeroed first. (The CPU
    runs the threads of a simdgroup path in order up to the first
    simdgroup op, so there only the scalar path can show a missing
    barrier; a GPU shows both.)"""
    @enigma.kernel
    def tile8(A: enigma.f32, B: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        A_s = enigma.threadgroup_alloc("float", 64)
        B_s = enigma.threadgroup_alloc("float", 64)
        C_s = enigma.threadgroup_alloc("float", 64)
        A_s[tid] = A[tid]
        B_s[tid] = B[tid]
        C_s[tid] = 0.0
        enigma.gemm(A_s, B_s, C_s, M=8, N=8, K=8, use_simdgroup=simd)
        enigma.barrier()
        Out[tid] = C_s[tid]

    a = rng.uniform(-1, 1, (8, 8)).astype(np.float32)
    b = rng.uniform(-1, 1, (8, 8)).astype(np.float32)
    compiled = enigma.compile(tile8)
    msl = compiled.metal_source
    assert msl.count("threadgroup_barrier(mem_flags::mem_threadgroup)") == 2
    out = run_kernel(runtime, compiled, [a.ravel(), b.ravel()],
                     np.float32, 64, (64, 1, 1), (64, 1, 1))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out.reshape(8, 8), ref, rtol=1e-5, atol=1e-6)


def _error(kernel, match):
    with pytest.raises(enigma.EnigmaError, match=match) as info:
        enigma.compile(kernel)
    assert "test_compat_tile.py:" in str(info.value), str(info.value)
    return str(info.value)


def test_gemm_register_tensor_errors():
    def kernel_with(shape=(3, 4), **kw):
        @enigma.kernel
        def k(A: enigma.f32, B: enigma.f32):
            C = enigma.register_tensor(shape, dtype="float")
            enigma.gemm(A, B, C, M=3, N=4, K=2, **kw)
        return k

    _error(kernel_with(shape=(4, 3)), r"register tensor C has shape "
                                      r"\(4, 3\) but the tile is \(3, 4\)")
    _error(kernel_with(use_simdgroup=True),
           "use_simdgroup=True but C is a register tensor")

    @enigma.kernel
    def register_a_memory_c(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        a = enigma.register_tensor((3, 2), dtype="float")
        enigma.gemm(a, B, C, M=3, N=4, K=2)
    _error(register_a_memory_c, "A is a register tensor, so C must be one")

    @enigma.kernel
    def small_register_a(A: enigma.f32, B: enigma.f32):
        a = enigma.register_tensor((3, 3), dtype="float")
        c = enigma.register_tensor((3, 4), dtype="float")
        enigma.gemm(a, B, c, M=3, N=4, K=2)
    _error(small_register_a, r"register tensor A has shape \(3, 3\) but "
                             r"the tile is \(3, 2\)")


# --------------------------------------------------------------------------
# Pipeline
# --------------------------------------------------------------------------

STAGE = 32


@functools.lru_cache(maxsize=None)
def _advance_unrolled(stages, construct):
    """Chunk c of X lands in the stage at distance stages-1 from the front
    (the back); after stages-1 advances it is the front, where it is read.
    Unrolled in Python, as the original's examples do."""
    @enigma.kernel
    def ring(X: enigma.f32, Y: enigma.f32):
        t = enigma.thread_index_in_threadgroup()
        if construct:
            pipe = enigma.Pipeline("float", STAGE, stages=stages)
        else:
            pipe = enigma.pipeline("float", STAGE, stages)
        chunks = 6
        for c in range(chunks + stages - 1):
            if c < chunks:
                back = pipe.back()
                back[t] = X[c * STAGE + t] * 2.0
            enigma.barrier()
            if c >= stages - 1:
                front = pipe.front()
                Y[(c - stages + 1) * STAGE + t] = front[STAGE - 1 - t]
            enigma.barrier()
            pipe.advance()
    return enigma.compile(ring)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("construct", [False, True])
def test_pipeline_advance(runtime, rng, stages, construct):
    x = _nonzero(rng, 6 * STAGE)
    out = run_kernel(runtime, _advance_unrolled(stages, construct), [x],
                     np.float32, 6 * STAGE, (STAGE, 1, 1), (STAGE, 1, 1))
    ref = (x.astype(np.float64).reshape(6, STAGE)[:, ::-1] * 2).ravel()
    np.testing.assert_array_equal(out, ref.astype(np.float32))


@enigma.kernel
def advance_traced(X: enigma.f32, n: enigma.Scalar(enigma.u32),
                   Y: enigma.f32):
    # advance() inside a traced loop: stage(k) is k places after the front.
    t = enigma.thread_index_in_threadgroup()
    pipe = enigma.pipeline("float", STAGE, stages=3)
    for s in range(3):
        stage = pipe.stage(s)
        stage[t] = enigma.metal_cast(s, "float")
    enigma.barrier()
    for i in enigma.range(n):
        front = pipe.front()
        front[t] = front[t] + 10.0
        enigma.barrier()
        pipe.advance()
    for s in range(3):
        stage = pipe.stage(s)
        Y[s * STAGE + t] = stage[t] + X[t] * 0.0


@pytest.mark.parametrize("n", [0, 1, 2, 5, 7])
def test_pipeline_advance_in_traced_loop(runtime, n):
    x = np.ones(STAGE, np.float32)
    out = run_kernel(runtime, enigma.compile(advance_traced), [x],
                     np.float32, 3 * STAGE, (STAGE, 1, 1), (STAGE, 1, 1),
                     scalars=[n]).reshape(3, STAGE)
    # Buffer b starts at b and gets +10 each time it is the front (steps
    # i with i % 3 == b); stage s after n advances is buffer (n + s) % 3.
    visits = [len([i for i in range(n) if i % 3 == b]) for b in range(3)]
    for s in range(3):
        b = (n + s) % 3
        assert (out[s] == b + 10.0 * visits[b]).all(), (s, out[s])


def test_pipeline_stage_is_a_threadgroup_tensor(runtime, rng):
    """A stage works where a threadgroup tensor does: load_if/store_if,
    atomics and simdgroup matrix loads and stores (at the stage's place)."""
    @enigma.kernel
    def stage_ops(A: enigma.f32, B: enigma.f32, Out: enigma.f32,
                  Hist: enigma.u32):
        t = enigma.thread_index_in_threadgroup()
        pipe = enigma.pipeline("float", 64, stages=2)
        counts = enigma.pipeline("uint", 4, stages=2)
        pipe.advance()
        front, back = pipe.front(), pipe.back()
        front[t] = A[t]
        back[t] = B[t]
        with enigma.if_(t < 8):
            counts.front()[t % 4] = 0
            counts.back()[t % 4] = 0
        enigma.barrier()
        enigma.atomic_fetch_add(counts.back(), t % 4, 1)
        ma = enigma.simdgroup_matrix_load(front, 8)
        mb = enigma.simdgroup_matrix_load(back, 8)
        zero = enigma.make_filled_simdgroup_matrix(0.0)
        enigma.barrier()
        enigma.simdgroup_matrix_store(
            enigma.simdgroup_multiply_accumulate(ma, mb, zero), back, 8)
        enigma.barrier()
        Out[t] = enigma.load_if(back, t, t < 64, 0.0)
        enigma.store_if(front, t, -1.0, t >= 32)
        enigma.barrier()
        Out[64 + t] = front[t]
        with enigma.if_(t < 4):
            Hist[t] = counts.back()[t]
            Hist[4 + t] = counts.front()[t]

    a = _nonzero(rng, 64)
    b = _nonzero(rng, 64)
    out, hist = runtime.execute(enigma.compile(stage_ops), [a, b],
                                output_sizes=[128 * 4, 8 * 4],
                                grid=(64, 1, 1), threads=(64, 1, 1))
    out = np.frombuffer(out, np.float32)
    hist = np.frombuffer(hist, np.uint32)
    ref = a.astype(np.float64).reshape(8, 8) @ \
        b.astype(np.float64).reshape(8, 8)
    np.testing.assert_allclose(out[:64].reshape(8, 8), ref, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(out[64:96], a[:32])
    np.testing.assert_array_equal(out[96:], -1.0)
    np.testing.assert_array_equal(hist, [16, 16, 16, 16, 0, 0, 0, 0])


def test_pipeline_errors():
    @enigma.kernel
    def one_stage(X: enigma.f32):
        enigma.pipeline("float", 16, stages=1)
    _error(one_stage, "stages must be >= 2, got 1")

    @enigma.kernel
    def one_stage_class(X: enigma.f32):
        enigma.Pipeline("float", 16, 1)
    _error(one_stage_class, "stages must be >= 2, got 1")

    @enigma.kernel
    def swap_three(X: enigma.f32):
        enigma.pipeline("float", 16, stages=3).swap()
    _error(swap_three, "swap.* 2-stage .* use advance")

    @enigma.kernel
    def bad_stage(X: enigma.f32):
        enigma.pipeline("float", 16, stages=3).stage(3)
    _error(bad_stage, r"k must be in 0\.\.2")


# --------------------------------------------------------------------------
# enigma.Tensor operands (the original's copy and gemm take its Tensors)
# --------------------------------------------------------------------------

@enigma.kernel
def tensor_views(A: enigma.f32, B: enigma.f32, Out: enigma.f32):
    tid = enigma.thread_position_in_grid
    A_s = enigma.Tensor("A_s", -1, "float", address_space="threadgroup",
                        shape=64)
    B_s = enigma.Tensor("B_s", -1, "float", address_space="threadgroup",
                        shape=64)
    C_s = enigma.Tensor("C_s", -1, "float", address_space="threadgroup",
                        shape=64)
    A_view = enigma.Tensor("A", 0, "float", base_offset=8)  # A from 8 on
    with enigma.if_(enigma.cmp_eq(tid, 0)):
        enigma.copy(A_view, A_s, 64)
        enigma.copy(B, B_s, 64)
    C_s[tid] = 1.0
    enigma.barrier()
    C = enigma.register_tensor((8, 8), dtype="float", fill=0.0)
    enigma.gemm(A_s, B_s, C, M=8, N=8, K=8)
    enigma.gemm(A_s, B_s, C_s, M=8, N=8, K=8)
    enigma.barrier()
    for i in range(8):
        for j in range(8):
            Out[tid * 65 + i * 8 + j] = C[i, j]
    Out[tid * 65 + 64] = C_s[tid]


def test_copy_and_gemm_take_tensor_views(runtime, rng):
    a = rng.uniform(-1, 1, 72).astype(np.float32)
    b = rng.uniform(-1, 1, 64).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(tensor_views), [a, b],
                     np.float32, 64 * 65, (64, 1, 1), (64, 1, 1))
    out = out.reshape(64, 65)
    ref = a[8:].astype(np.float64).reshape(8, 8) @ \
        b.astype(np.float64).reshape(8, 8)
    np.testing.assert_allclose(out[:, :64], np.tile(ref.ravel(), (64, 1)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[:, 64], 1.0 + ref.ravel(), rtol=1e-5,
                               atol=1e-6)


def test_copy_between_vec_width_buffers(runtime, rng):
    """The original pairs copy with compile(..., vec_width=k): its buffers
    then hold float4s, and copy moves count of them."""
    @enigma.kernel
    def copy_vectors(A: enigma.f32, B: enigma.f32):
        tid = enigma.thread_position_in_grid
        with enigma.if_(enigma.cmp_eq(tid, 0)):
            enigma.copy(A, B, 25, src_offset=3, coalesced_width=2)

    compiled = enigma.compile(copy_vectors, vec_width=4)
    assert "device float4*" in compiled.metal_source
    a = _nonzero(rng, 4 * 28)
    out = run_kernel(runtime, compiled, [a], np.float32, 4 * 25, (8, 1, 1),
                     (8, 1, 1))
    np.testing.assert_array_equal(out, a[12:])


def test_gemm_rejects_vec_width_buffers():
    @enigma.kernel
    def gemm_vectors(A: enigma.f32, B: enigma.f32):
        C = enigma.register_tensor((2, 2), dtype="float")
        enigma.gemm(A, B, C, M=2, N=2, K=2)
    with pytest.raises(enigma.EnigmaError, match="vec_width") as info:
        enigma.compile(gemm_vectors, vec_width=4)
    assert "test_compat_tile.py:" in str(info.value)


@enigma.kernel
def prefetch_three_stages(A: enigma.f32, n: enigma.Scalar(enigma.u32),
                          Out: enigma.f32):
    """The pattern of the original's Pipeline docstring: three stages, two
    tiles prefetched, then consume the front, prefetch two ahead and
    advance, in a traced loop; tiles come from enigma.Tensor views."""
    t = enigma.thread_index_in_threadgroup()

    def tile_loader(i):
        return enigma.Tensor("A", 0, "float", base_offset=i * STAGE)

    pipe = enigma.pipeline("float", STAGE, stages=3)
    for stage_id in range(2):
        enigma.copy(tile_loader(stage_id), pipe.stage(stage_id), count=STAGE)
    enigma.barrier()
    with enigma.for_range(0, n, dtype="uint") as it:
        enigma.barrier()
        front = pipe.front()
        Out[it * STAGE + t] = front[t] * 3.0
        with enigma.if_(it + 2 < n):
            enigma.copy(tile_loader(it + 2), pipe.stage(2), count=STAGE)
        pipe.advance()


@pytest.mark.parametrize("n", [2, 3, 7])
def test_pipeline_docstring_pattern(runtime, rng, n):
    a = _nonzero(rng, n * STAGE)
    out = run_kernel(runtime, enigma.compile(prefetch_three_stages), [a],
                     np.float32, n * STAGE, (STAGE, 1, 1), (STAGE, 1, 1),
                     scalars=[n])
    np.testing.assert_array_equal(out, a * np.float32(3.0))
