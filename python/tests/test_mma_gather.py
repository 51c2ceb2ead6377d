"""Fragments read at per-element indices (``enigma.mma_gather``), their
bits reinterpreted (``enigma.as_type`` on a fragment) and fused
multiply-adds of fragments (``enigma.fma``), on every backend under test,
against numpy: gathered elements are copies (exact), reinterpreted bits
are numpy's ``view``, and ``fma`` is the float64 ``a * b + c`` (exact for
float32 operands whose product fits 48 bits) rounded once to float32.
Also the mistakes that must be an EnigmaError.
"""

import functools

import numpy as np
import pytest

import enigma
from conftest import run_kernel


@functools.lru_cache(maxsize=None)
def _gather(dtype):
    T = getattr(enigma, dtype)

    @enigma.kernel
    def gather(A: T, O: T):
        # Each of two simdgroups gathers a 16 x 48 fragment: element (r, c)
        # at 5 + 7 r + (47 - c) (columns reversed), plus 1000 for the
        # second simdgroup (its gather's offset).
        sg = enigma.simdgroup_index_in_threadgroup()
        rows = enigma.mma_iota(0, 16, 48)
        cols = enigma.mma_iota(1, 16, 48)
        f = enigma.mma_gather(A, rows * 7 + (47 - cols), offset=5 + sg * 1000)
        enigma.mma_store(f, O, ld=48, offset=sg * 16 * 48)
    return enigma.compile(gather)


@pytest.mark.parametrize("dtype", ["f32", "f16", "u32", "i32"])
def test_gather_reads_each_element_at_its_index(runtime, rng, dtype):
    np_type = {"f32": np.float32, "f16": np.float16, "u32": np.uint32,
               "i32": np.int32}[dtype]
    if dtype in ("u32", "i32"):
        a = rng.integers(-2**31 if dtype == "i32" else 0, 2**31, 1200)
    else:
        a = rng.uniform(-4, 4, 1200)
    a = a.astype(np_type)
    out = run_kernel(runtime, _gather(dtype), [a], np_type, 2 * 16 * 48,
                     (64, 1, 1), (64, 1, 1)).reshape(2, 16, 48)
    r, c = np.meshgrid(np.arange(16), np.arange(48), indexing="ij")
    for sg in range(2):
        np.testing.assert_array_equal(out[sg], a[5 + sg * 1000 + 7 * r +
                                                 (47 - c)])


@functools.lru_cache(maxsize=None)
def _gather_threadgroup():
    @enigma.kernel
    def gather_tg(A: enigma.f32, O: enigma.f32):
        # Threadgroup memory as the source: A staged, then read transposed
        # through indices (element (r, c) = A[c * 16 + r]).
        t = enigma.thread_index_in_threadgroup()
        stage = enigma.threadgroup_alloc("float", 256)
        for i in enigma.range_constexpr(8):
            stage[t + 32 * i] = A[t + 32 * i]
        enigma.barrier()
        rows = enigma.mma_iota(0, 16, 16)
        cols = enigma.mma_iota(1, 16, 16)
        f = enigma.mma_gather(stage, cols * 16 + rows)
        enigma.mma_store(f, O, ld=16)
    return enigma.compile(gather_tg)


def test_gather_from_threadgroup_memory(runtime, rng):
    a = rng.uniform(-1, 1, 256).astype(np.float32)
    out = run_kernel(runtime, _gather_threadgroup(), [a], np.float32, 256,
                     (32, 1, 1), (32, 1, 1)).reshape(16, 16)
    np.testing.assert_array_equal(out, a.reshape(16, 16).T)


@functools.lru_cache(maxsize=None)
def _bits_and_fma():
    @enigma.kernel
    def bits_fma(A: enigma.f32, B: enigma.f32, C: enigma.f32,
                 W: enigma.u32, Bits: enigma.u32, Codes: enigma.f32,
                 F: enigma.f32):
        a = enigma.mma_load(A, 16, 32, ld=32)
        b = enigma.mma_load(B, 16, 32, ld=32)
        c = enigma.mma_load(C, 16, 32, ld=32)
        # The bits of a float fragment, and back (a round trip).
        bits = enigma.as_type(a, "uint")
        enigma.mma_store(bits, Bits, ld=32)
        # Nibble (c % 4) of each word as float via 2^23's exponent:
        # ((w >> 4 j) & 0xF) | 0x4B000000 read as a float is 2^23 + code.
        w = enigma.mma_load(W, 16, 32, ld=32)
        shift = ((enigma.mma_iota(1, 16, 32) & 3) * 4).cast("uint")
        code = enigma.as_type(((w >> shift) & 15) | 0x4B000000, "float")
        enigma.mma_store(code - 8388608.0, Codes, ld=32)
        back = enigma.as_type(bits, "float")
        enigma.mma_store(enigma.fma(back, b, c), F, ld=32)
    return enigma.compile(bits_fma)


def test_as_type_and_fma_on_fragments(runtime, rng):
    a = rng.uniform(-8, 8, 512).astype(np.float32)
    b = rng.uniform(-8, 8, 512).astype(np.float32)
    c = rng.uniform(-1e-3, 1e-3, 512).astype(np.float32)
    w = rng.integers(0, 2**32, 512, dtype=np.uint64).astype(np.uint32)
    bits, codes, f = runtime.execute(
        _bits_and_fma(), [a, b, c, w],
        output_sizes=[512 * 4] * 3, grid=(32, 1, 1), threads=(32, 1, 1))
    np.testing.assert_array_equal(np.frombuffer(bits, np.uint32),
                                  a.view(np.uint32))
    j = np.arange(512) % 32 % 4
    want = ((w >> (4 * j).astype(np.uint32)) & 15).astype(np.float32)
    np.testing.assert_array_equal(np.frombuffer(codes, np.float32), want)
    exact = (a.astype(np.float64) * b + c).astype(np.float32)
    np.testing.assert_array_equal(np.frombuffer(f, np.float32), exact)


@functools.lru_cache(maxsize=None)
def _constant_across_barrier():
    @enigma.kernel
    def constant_barrier(O: enigma.f32):
        # Python's floor division and remainder of int fragments compare
        # with 0 and add -1; both division expansions share those constant
        # fragments, made before the barrier and read after it. The CPU
        # runtime keeps such values in per-thread arrays across barriers,
        # and a constant fragment must be stored there as a fill.
        cols = enigma.mma_iota(1, 16, 32)
        before = (cols % 8) // 2
        enigma.barrier()
        after = (cols % 4) // 3 + before
        enigma.mma_store(after.cast("float"), O, ld=32)
    return enigma.compile(constant_barrier)


def test_fragment_constant_across_a_barrier(runtime):
    out = run_kernel(runtime, _constant_across_barrier(), [], np.float32,
                     512, (32, 1, 1), (32, 1, 1)).reshape(16, 32)
    c = np.arange(32)
    np.testing.assert_array_equal(
        out, np.broadcast_to((c % 4) // 3 + (c % 8) // 2, (16, 32)))


def _error(fn):
    with pytest.raises(enigma.EnigmaError) as e:
        enigma.compile(enigma.kernel(fn))
    return str(e.value)


def test_gather_mistakes():
    def float_index(A: enigma.f32, O: enigma.f32):
        f = enigma.mma_gather(A, enigma.mma_fill(1.0, 16, 16))
        enigma.mma_store(f, O, ld=16)
    assert "index must be an int fragment" in _error(float_index)

    def scalar_index(A: enigma.f32, O: enigma.f32):
        f = enigma.mma_gather(A, enigma.thread_index_in_simdgroup())
        enigma.mma_store(f, O, ld=16)
    assert "index must be an int fragment" in _error(scalar_index)

    def byte_memory(A: enigma.u8, O: enigma.f32):
        f = enigma.mma_gather(A, enigma.mma_iota(1, 16, 16))
        enigma.mma_store(f, O, ld=16)
    assert "mma_gather reads float, half" in _error(byte_memory)

    def lane_offset(A: enigma.f32, O: enigma.f32):
        lane = enigma.thread_index_in_simdgroup()
        f = enigma.mma_gather(A, enigma.mma_iota(1, 16, 16), offset=lane)
        enigma.mma_store(f, O, ld=16)
    assert "offset must be the same in every lane" in _error(lane_offset)

    def widths(A: enigma.f32, O: enigma.f32):
        f = enigma.as_type(enigma.mma_load(A, 16, 16, ld=16), "half")
        enigma.mma_store(f, O, ld=16)
    assert "equal widths" in _error(widths)

    def int_fma(A: enigma.f32, O: enigma.f32):
        i = enigma.mma_iota(1, 16, 16)
        enigma.mma_store(enigma.fma(i, i, i).cast("float"), O, ld=16)
    assert "fma takes float" in _error(int_fma)


def test_fragment_integer_arithmetic_in_bounds_checked_mode(runtime, rng):
    """Bounds-checked mode checks scalar integer arithmetic for overflow;
    integer fragment arithmetic (indices for a gather) is not checked, like
    the fragment ops themselves. Both used to fail to compile: the
    overflow check of scalar arithmetic that reaches a fragment select
    and-ed a scalar with the select's fragment condition ("integer-check
    insertion failed ... arith.andi requires the same type"), and the
    bounds check took the gather for a scalar access at its offset.
    n = 20 gives row 11 (n - 9) for rows 12 and up."""
    @enigma.kernel
    def indices(A: enigma.f32, O: enigma.f32, n: enigma.Scalar(enigma.u32)):
        rows = enigma.mma_iota(0, 16, 16)
        cols = enigma.mma_iota(1, 16, 16)
        # Scalar arithmetic (checked) reaching a fragment select: rows
        # from 12 on read row 11.
        last = enigma.mma_fill(0, 16, 16, dtype="int") + (n - 9).cast("int")
        rows = enigma.where(rows, last, rows >= 12)
        index = rows * n.cast("int") + (cols + 1) - 1
        enigma.mma_store(enigma.mma_gather(A, index), O, ld=16)

    a = rng.uniform(-1, 1, 20 * 16).astype(np.float32)
    compiled = enigma.compile(indices, bounds_check=True)
    out = run_kernel(runtime, compiled, [a], np.float32, 256, (32, 1, 1),
                     (32, 1, 1), scalars=[20]).reshape(16, 16)
    want = a.reshape(16, 20)[np.minimum(np.arange(16), 11), :16]
    np.testing.assert_array_equal(out, want)
