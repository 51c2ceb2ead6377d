"""Simdgroup 8x8 matrices end to end (docs/reference/simd.md): matmuls
against numpy float64 references, fill + store, threadgroup memory, and the
mistakes that must be an EnigmaError naming the user's line."""

import numpy as np
import pytest

import enigma

from conftest import run_kernel


@enigma.kernel
def mm8(A: enigma.f32, B: enigma.f32, C0: enigma.f32, O: enigma.f32):
    a = enigma.simdgroup_matrix_load(A, 8)
    b = enigma.simdgroup_matrix_load(B, 8)
    c = enigma.simdgroup_matrix_load(C0, 8, elem="float", rows=8, cols=8)
    d = enigma.simdgroup_multiply_accumulate(a, b, c)
    enigma.simdgroup_matrix_store(d, O, 8)


def test_matmul_8x8x8(runtime, rng):
    a, b, c = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(3))
    out = run_kernel(runtime, enigma.compile(mm8), [a.ravel(), b.ravel(), c.ravel()],
                     np.float32, 64, (32, 1, 1), (32, 1, 1))
    ref = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_allclose(out.reshape(8, 8), ref, rtol=1e-5, atol=1e-5)


@enigma.kernel
def mm8_half(A: enigma.f16, B: enigma.f16, C0: enigma.f16, O: enigma.f16):
    a = enigma.simdgroup_matrix_load(A, 8, elem="half")
    b = enigma.simdgroup_matrix_load(B, 8, elem="half")
    c = enigma.simdgroup_matrix_load(C0, 8, elem="half")
    enigma.simdgroup_matrix_store(enigma.simdgroup_multiply_accumulate(a, b, c), O, 8)


def test_matmul_8x8x8_half(runtime, rng):
    a, b, c = (rng.uniform(-1, 1, (8, 8)).astype(np.float16) for _ in range(3))
    out = run_kernel(runtime, enigma.compile(mm8_half),
                     [a.ravel(), b.ravel(), c.ravel()], np.float16, 64,
                     (32, 1, 1), (32, 1, 1))
    ref = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_allclose(out.reshape(8, 8).astype(np.float64), ref,
                               rtol=1e-2, atol=1e-2)


@enigma.kernel
def load_transposed(A: enigma.f32, O: enigma.f32):
    # The 8x8 block at row 3, column 5 of a 12 x 16 row-major A, transposed
    # on load, stored plainly: O = A[3:11, 5:13].T
    t = enigma.simdgroup_matrix_load(A, 16, offset=3 * 16 + 5, transpose=True)
    enigma.simdgroup_matrix_store(t, O, 8)


def test_transposed_load(runtime, rng):
    a = rng.standard_normal((12, 16)).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(load_transposed), [a.ravel()],
                     np.float32, 64, (32, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out.reshape(8, 8), a[3:11, 5:13].T)


N16 = 16


@enigma.kernel
def mm16(A: enigma.f32, B: enigma.f32, C0: enigma.f32, O: enigma.f32):
    # 4 simdgroups, one 8x8 tile of the 16x16 output each; the accumulator
    # lives in O between the K steps.
    sg = enigma.simdgroup_index_in_threadgroup()
    ti = sg // 2
    tj = sg % 2
    out_off = ti * (8 * N16) + tj * 8
    c = enigma.simdgroup_matrix_load(C0, N16, offset=out_off)
    enigma.simdgroup_matrix_store(c, O, N16, offset=out_off)
    for kt in enigma.range(N16 // 8):
        acc = enigma.simdgroup_matrix_load(O, N16, offset=out_off)
        a = enigma.simdgroup_matrix_load(A, N16, offset=ti * (8 * N16) + kt * 8)
        b = enigma.simdgroup_matrix_load(B, N16, offset=kt * (8 * N16) + tj * 8)
        d = enigma.simdgroup_multiply_accumulate(a, b, acc)
        enigma.simdgroup_matrix_store(d, O, N16, offset=out_off)


def test_matmul_16x16x16_four_simdgroups(runtime, rng):
    a, b, c = (rng.standard_normal((N16, N16)).astype(np.float32) for _ in range(3))
    out = run_kernel(runtime, enigma.compile(mm16), [a.ravel(), b.ravel(), c.ravel()],
                     np.float32, N16 * N16, (128, 1, 1), (128, 1, 1))
    ref = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_allclose(out.reshape(N16, N16), ref, rtol=1e-5, atol=1e-5)


@enigma.kernel
def fill_store(V: enigma.f32, O: enigma.f32):
    # Two threadgroups of 2 simdgroups: each simdgroup fills its own tile.
    sg = enigma.simdgroup_index_in_threadgroup()
    g = enigma.threadgroup_position_in_grid()
    m = enigma.make_filled_simdgroup_matrix(V[0] + enigma.metal_cast(g, "float"))
    enigma.simdgroup_matrix_store(m, O, 16, offset=g * 128 + sg * 8)


def test_fill_and_store(runtime):
    out = run_kernel(runtime, enigma.compile(fill_store),
                     [np.array([2.5], dtype=np.float32)], np.float32, 256,
                     (128, 1, 1), (64, 1, 1))
    ref = np.repeat([2.5, 3.5], 128).astype(np.float32)
    np.testing.assert_array_equal(out, ref)


@enigma.kernel
def from_threadgroup(A: enigma.f32, O: enigma.f32):
    tid = enigma.thread_index_in_threadgroup()
    t = enigma.threadgroup_alloc("float", 64)
    t[tid] = A[tid] * 2.0
    t[tid + 32] = A[tid + 32] * 2.0
    enigma.barrier()
    m = enigma.simdgroup_matrix_load(t, 8)
    one = enigma.make_filled_simdgroup_matrix(1.0)
    enigma.simdgroup_matrix_store(enigma.simdgroup_multiply_accumulate(m, m, one), O, 8)


def test_load_from_threadgroup_memory(runtime, rng):
    a = rng.standard_normal((8, 8)).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(from_threadgroup), [a.ravel()],
                     np.float32, 64, (32, 1, 1), (32, 1, 1))
    t = 2.0 * a.astype(np.float64)
    np.testing.assert_allclose(out.reshape(8, 8), t @ t + 1.0, rtol=1e-5, atol=1e-5)


def test_msl_uses_metal_api():
    src = enigma.compile(mm8).metal_source
    assert "simdgroup_float8x8 " in src
    assert "simdgroup_load(" in src
    assert "simdgroup_multiply_accumulate(" in src
    assert "simdgroup_store(" in src
    src = enigma.compile(fill_store).metal_source
    assert "make_filled_simdgroup_matrix<float, 8, 8>(" in src
    assert "simdgroup_half8x8 " in enigma.compile(mm8_half).metal_source


# --- Mistakes -----------------------------------------------------------------

def _compile_error(kernel, match):
    with pytest.raises(enigma.EnigmaError, match=match) as info:
        enigma.compile(kernel)
    assert "test_simdgroup_matrix.py:" in str(info.value)
    return str(info.value)


def test_wrong_shape_is_rejected():
    @enigma.kernel
    def bad(A: enigma.f32, O: enigma.f32):
        enigma.simdgroup_matrix_load(A, 16, rows=16, cols=16)

    _compile_error(bad, "8x8")


def test_wrong_shape_of_fill_is_rejected():
    @enigma.kernel
    def bad(O: enigma.f32):
        enigma.make_filled_simdgroup_matrix(1.0, cols=4)

    _compile_error(bad, "8x8")


@pytest.mark.parametrize("elem", ["int", "bfloat", "uint"])
def test_wrong_element_type_is_rejected(elem):
    @enigma.kernel
    def bad(A: enigma.f32, O: enigma.f32):
        enigma.make_filled_simdgroup_matrix(1, elem=elem)

    _compile_error(bad, "float or half")


def test_buffer_dtype_must_match():
    @enigma.kernel
    def bad(A: enigma.f32, O: enigma.f32):
        enigma.simdgroup_matrix_load(A, 8, elem="half")

    _compile_error(bad, "holds f32 but the matrix is f16")


def test_mixed_element_types_are_rejected():
    @enigma.kernel
    def bad(A: enigma.f32, H: enigma.f16, O: enigma.f32):
        a = enigma.simdgroup_matrix_load(A, 8)
        h = enigma.simdgroup_matrix_load(H, 8, elem="half")
        enigma.simdgroup_multiply_accumulate(a, h, a)

    _compile_error(bad, "share one element type")


def test_non_matrix_operand_is_rejected():
    @enigma.kernel
    def bad(A: enigma.f32, O: enigma.f32):
        a = enigma.simdgroup_matrix_load(A, 8)
        enigma.simdgroup_multiply_accumulate(a, A[0], a)

    _compile_error(bad, "must be a simdgroup matrix")


def test_bad_memory_is_rejected():
    @enigma.kernel
    def bad(A: enigma.f32, O: enigma.f32):
        enigma.simdgroup_matrix_load(A[0], 8)

    _compile_error(bad, "buffer parameter or a threadgroup_alloc tensor")


def test_divergent_matrix_op_is_rejected():
    @enigma.kernel
    def bad(A: enigma.f32, O: enigma.f32):
        with enigma.if_(enigma.thread_index_in_simdgroup() < 16):
            m = enigma.simdgroup_matrix_load(A, 8)
            enigma.simdgroup_matrix_store(m, O, 8)

    with pytest.raises(enigma.EnigmaError, match="every lane of the simdgroup"):
        enigma.compile(bad)
