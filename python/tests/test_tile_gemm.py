"""The tile helper enigma.gemm end to end (docs/reference/tile.md): the
scalar and simdgroup paths, transposed operands, half, float and integer
types, operands in buffers and in threadgroup memory, and
examples/python/tiled_gemm.py, on every backend under test against numpy
float64 references with fresh random inputs. Its mistakes are with the
other helpers' in test_tile_helpers.py.
"""

import functools

import numpy as np
import pytest

import enigma

from conftest import load_example, run_kernel
from _tile_gemm_helpers import check_gemm, gemm_buffers


# --------------------------------------------------------------------------
# gemm
# --------------------------------------------------------------------------

_NP = {"f32": np.float32, "f16": np.float16, "i8": np.int8, "i32": np.int32}


def _operands(rng, m, n, k, ta, tb, in_dtype, c_dtype):
    shape_a = (k, m) if ta else (m, k)
    shape_b = (n, k) if tb else (k, n)
    if in_dtype.startswith("i"):
        a = rng.integers(-20, 20, shape_a).astype(_NP[in_dtype])
        b = rng.integers(-20, 20, shape_b).astype(_NP[in_dtype])
        c0 = rng.integers(-1000, 1000, (m, n)).astype(_NP[c_dtype])
    else:
        a = rng.uniform(-1, 1, shape_a).astype(_NP[in_dtype])
        b = rng.uniform(-1, 1, shape_b).astype(_NP[in_dtype])
        c0 = rng.uniform(-1, 1, (m, n)).astype(_NP[c_dtype])
    oa = a.astype(np.float64).T if ta else a.astype(np.float64)
    ob = b.astype(np.float64).T if tb else b.astype(np.float64)
    return a, b, c0, oa @ ob + c0.astype(np.float64), np.abs(oa) @ np.abs(ob)


SCALAR_SHAPES = [(1, 1, 1), (5, 7, 3), (13, 17, 40), (16, 24, 8),
                 (33, 2, 31)]


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("mnk", SCALAR_SHAPES)
def test_gemm_scalar_path(runtime, rng, mnk, ta, tb):
    """48 threads: not a divisor of M*N, so threads own unequal shares."""
    m, n, k = mnk
    a, b, c0, ref, mag = _operands(rng, m, n, k, ta, tb, "f32", "f32")
    compiled = gemm_buffers(m, n, k, ta, tb, False)
    out = run_kernel(runtime, compiled, [a.ravel(), b.ravel(), c0.ravel()],
                     np.float32, m * n, (48, 1, 1), (48, 1, 1))
    check_gemm(out.reshape(m, n), ref, mag, k, 2.0**-24)
    assert "simdgroup_multiply_accumulate" not in compiled.metal_source


SIMD_SHAPES = [(8, 8, 8), (16, 24, 32), (32, 32, 80), (24, 8, 136)]


@pytest.mark.parametrize("simd", [True, None])
@pytest.mark.parametrize("mnk", SIMD_SHAPES)
@pytest.mark.parametrize("threads", [32, 128])
def test_gemm_simdgroup_path(runtime, rng, mnk, simd, threads):
    """K = 80 and 136 take the traced K loop (10 and 17 steps of 8)."""
    m, n, k = mnk
    a, b, c0, ref, mag = _operands(rng, m, n, k, False, False, "f32", "f32")
    compiled = gemm_buffers(m, n, k, False, False, simd)
    assert "simdgroup_multiply_accumulate" in compiled.metal_source
    out = run_kernel(runtime, compiled, [a.ravel(), b.ravel(), c0.ravel()],
                     np.float32, m * n, (threads, 1, 1), (threads, 1, 1))
    check_gemm(out.reshape(m, n), ref, mag, k, 2.0**-24)


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True),
                                   (True, True)])
@pytest.mark.parametrize("mnk", [(8, 8, 8), (16, 24, 32), (24, 8, 136)])
def test_gemm_simdgroup_path_transposed(runtime, rng, mnk, ta, tb):
    """Transposed operands go through transposed 8x8 tile loads
    (simdgroup_load(..., transpose_matrix = true) in MSL)."""
    m, n, k = mnk
    a, b, c0, ref, mag = _operands(rng, m, n, k, ta, tb, "f32", "f32")
    compiled = gemm_buffers(m, n, k, ta, tb, None)
    assert "simdgroup_multiply_accumulate" in compiled.metal_source
    assert "ulong2(0, 0), true);" in compiled.metal_source
    out = run_kernel(runtime, compiled, [a.ravel(), b.ravel(), c0.ravel()],
                     np.float32, m * n, (64, 1, 1), (64, 1, 1))
    check_gemm(out.reshape(m, n), ref, mag, k, 2.0**-24)


def test_gemm_simdgroup_partial_group_falls_back(runtime, rng):
    """A 40-thread group is not whole simdgroups: the scalar path runs."""
    m, n, k = 16, 16, 16
    a, b, c0, ref, mag = _operands(rng, m, n, k, False, False, "f32", "f32")
    out = run_kernel(runtime, gemm_buffers(m, n, k, False, False, True),
                     [a.ravel(), b.ravel(), c0.ravel()], np.float32, m * n,
                     (40, 1, 1), (40, 1, 1))
    check_gemm(out.reshape(m, n), ref, mag, k, 2.0**-24)


@pytest.mark.parametrize("mnk", [(8, 16, 24), (7, 9, 33)])
@pytest.mark.parametrize("tb", [False, True])
def test_gemm_half_inputs_float_accumulation(runtime, rng, mnk, tb):
    """half A, B and float C: auto picks the scalar path (the 8x8 tiles
    would accumulate in half); products of halves are exact in float."""
    m, n, k = mnk
    a, b, c0, ref, mag = _operands(rng, m, n, k, False, tb, "f16", "f32")
    compiled = gemm_buffers(m, n, k, False, tb, None, "f16", "f32")
    assert "simdgroup_multiply_accumulate" not in compiled.metal_source
    out = run_kernel(runtime, compiled, [a.ravel(), b.ravel(), c0.ravel()],
                     np.float32, m * n, (64, 1, 1), (64, 1, 1))
    check_gemm(out.reshape(m, n), ref, mag, k, 2.0**-24)


@pytest.mark.parametrize("simd", [True, False])
def test_gemm_half_accumulation(runtime, rng, simd):
    m, n, k = 16, 8, 16
    a, b, c0, ref, mag = _operands(rng, m, n, k, False, False, "f16", "f16")
    compiled = gemm_buffers(m, n, k, False, False, simd, "f16", "f16",
                             "half")
    out = run_kernel(runtime, compiled, [a.ravel(), b.ravel(), c0.ravel()],
                     np.float16, m * n, (64, 1, 1), (64, 1, 1))
    check_gemm(out.reshape(m, n), ref, mag, k, 2.0**-11)


def test_gemm_integer(runtime, rng):
    m, n, k = 9, 11, 50
    a, b, c0, ref, _ = _operands(rng, m, n, k, True, False, "i8", "i32")
    compiled = gemm_buffers(m, n, k, True, False, None, "i8", "i32", "int")
    out = run_kernel(runtime, compiled, [a.ravel(), b.ravel(), c0.ravel()],
                     np.int32, m * n, (32, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out.reshape(m, n), ref.astype(np.int64))


@functools.lru_cache(maxsize=None)
def _gemm_threadgroup(m, n, k, simd):
    """A and B staged into threadgroup memory with copy, C accumulated in
    threadgroup memory over two gemm calls (C = A @ B + A @ B)."""
    @enigma.kernel
    def gemm_threadgroup(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        a = enigma.threadgroup_alloc(enigma.f32, m * k)
        b = enigma.threadgroup_alloc(enigma.f32, k * n)
        c = enigma.threadgroup_alloc(enigma.f32, m * n)
        with enigma.for_range(enigma.thread_index_in_threadgroup(), m * n,
                              enigma.threads_per_threadgroup(),
                              dtype="uint") as i:
            c[i] = 0.0
        enigma.copy(A, a, m * k, coalesced_width=4, cooperative=True)
        enigma.copy(B, b, k * n, coalesced_width=2, cooperative=True)
        enigma.barrier()
        enigma.gemm(a, b, c, M=m, N=n, K=k, use_simdgroup=simd)
        enigma.gemm(a, b, c, M=m, N=n, K=k, use_simdgroup=simd)
        enigma.barrier()
        enigma.copy(c, C, m * n, cooperative=True)
    return enigma.compile(gemm_threadgroup)


@pytest.mark.parametrize("mnk,simd", [((24, 16, 32), True),
                                      ((24, 16, 32), False),
                                      ((10, 6, 12), None)])
def test_gemm_on_threadgroup_memory(runtime, rng, mnk, simd):
    m, n, k = mnk
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    compiled = _gemm_threadgroup(m, n, k, simd)
    assert "threadgroup float" in compiled.metal_source
    out = run_kernel(runtime, compiled, [a.ravel(), b.ravel()], np.float32,
                     m * n, (64, 1, 1), (64, 1, 1))
    ref = 2 * (a.astype(np.float64) @ b.astype(np.float64))
    check_gemm(out.reshape(m, n), ref, 2 * np.abs(a) @ np.abs(b), 2 * k,
                2.0**-24)


# --------------------------------------------------------------------------
# examples/python/tiled_gemm.py
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
@pytest.mark.parametrize("mnk", [(32, 32, 32), (64, 96, 32), (96, 32, 160),
                                 (256, 192, 320)])
def test_tiled_gemm_example(runtime, rng, mnk):
    ex = load_example("tiled_gemm")
    m, n, k = mnk
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    ex.check_output(ex.run(runtime, a, b), a, b)
    assert "simdgroup_multiply_accumulate" in ex.compiled().metal_source


def test_tiled_gemm_example_prepared(runtime, rng):
    ex = load_example("tiled_gemm")
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 32)).astype(np.float32)
    prepared, grid, threads, check = ex.run_prepared(runtime, (a, b))
    try:
        prepared.dispatch(grid, threads)
        check(np.frombuffer(prepared.read_output(), np.float32))
    finally:
        prepared.release()


def test_tiled_gemm_example_rejects_ragged_sizes(runtime):
    ex = load_example("tiled_gemm")
    with pytest.raises(ValueError, match="multiples of 32"):
        ex.run(runtime, np.zeros((32, 40), np.float32),
               np.zeros((40, 32), np.float32))
