"""enigma.compile(..., vec_width=N): float-like buffers become N-lane vector
buffers (docs/reference/vectors.md), so a kernel body handles N elements per
thread with the same code; runtimes size those buffers in vectors."""

import numpy as np
import pytest

import enigma
from conftest import run_kernel


@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


@pytest.mark.parametrize("width", [2, 4])
@pytest.mark.parametrize("vectors", [1, 255, 257])
def test_vector_add(runtime, rng, width, vectors):
    n = width * vectors
    compiled = enigma.compile(vector_add, vec_width=width)
    assert f"device float{width}*" in compiled.metal_source
    assert [p.vec_width for p in compiled.params] == [width] * 3
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, compiled, [a, b], np.float32, n,
                     (vectors, 1, 1), (64, 1, 1))
    np.testing.assert_allclose(out, a.astype(np.float64) + b, rtol=1e-6)


def test_only_float_buffers_widen(runtime, rng):
    @enigma.kernel
    def scale(A: enigma.f32, K: enigma.u32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        v = A[t]
        assert v.lanes == 4
        k = K[t]
        assert k.lanes == 1
        C[t] = v * enigma.metal_cast(k, "float") + v.w

    compiled = enigma.compile(scale, vec_width=4)
    assert [p.vec_width for p in compiled.params] == [4, 1, 4]
    n = 33
    a = rng.standard_normal(4 * n).astype(np.float32)
    k = rng.integers(0, 10, n).astype(np.uint32)
    out = run_kernel(runtime, compiled, [a, k], np.float32, 4 * n,
                     (n, 1, 1), (32, 1, 1))
    A = a.astype(np.float64).reshape(n, 4)
    product, last = A * k[:, None], A[:, 3:4]
    # v * k + v.w may cancel: each float32 rounding (two, or one where the
    # backend contracts to fma) is bounded by the terms, not by the result.
    bound = 2.0 ** -23 * (np.abs(product) + np.abs(last))
    np.testing.assert_array_less(np.abs(out.reshape(n, 4) - (product + last)),
                                 bound + np.finfo(np.float32).tiny)


def test_scalar_store_fills_lanes(runtime):
    @enigma.kernel
    def fill(C: enigma.f32):
        C[enigma.thread_position_in_grid] = 1.5

    out = run_kernel(runtime, enigma.compile(fill, vec_width=2), [],
                     np.float32, 6, (3, 1, 1), (4, 1, 1))
    np.testing.assert_array_equal(out, [1.5] * 6)


@pytest.mark.parametrize("width", [3, 8, -1, 2.0, True, "4"])
def test_bad_width_is_an_error(width):
    with pytest.raises(enigma.EnigmaError, match="vec_width"):
        enigma.compile(vector_add, vec_width=width)


@pytest.mark.parametrize("width", [0, 1])
def test_width_off(width):
    compiled = enigma.compile(vector_add, vec_width=width)
    assert "device float*" in compiled.metal_source
    assert [p.vec_width for p in compiled.params] == [1, 1, 1]


def test_runtime_checks_vector_sizes(runtime):
    compiled = enigma.compile(vector_add, vec_width=4)
    a = np.zeros(8, np.float32)
    b = np.zeros(6, np.float32)   # not a whole number of float4
    with pytest.raises(Exception) as info:
        runtime.execute(compiled, [a, b], output_size=32, grid=(2, 1, 1),
                        threads=(2, 1, 1))
    assert "B" in str(info.value)
