"""Quad-group functions (4 lanes: consecutive thread_index_in_threadgroup
values) end to end, against numpy float64 references computed per quad.
Odd threadgroup sizes leave partial quads whose missing lanes take no part."""

import numpy as np
import pytest

import enigma

from conftest import run_kernel
from test_simd import (DTYPES, _if, check, per_group, random_input,
                       shuffle_reference)

QUAD = 4
SHAPES = [(256, 64), (150, 70), (45, 13), (7, 3)]

REDUCTIONS = {
    "quad_sum": np.sum,
    "quad_product": np.prod,
    "quad_min": np.min,
    "quad_max": np.max,
    "quad_and": lambda v: np.bitwise_and.reduce(v.astype(np.int64)),
    "quad_or": lambda v: np.bitwise_or.reduce(v.astype(np.int64)),
    "quad_xor": lambda v: np.bitwise_xor.reduce(v.astype(np.int64)),
    "quad_prefix_inclusive_sum": np.cumsum,
    "quad_prefix_exclusive_sum": lambda v: np.concatenate([[0], np.cumsum(v)[:-1]]),
    "quad_prefix_inclusive_product": np.cumprod,
    "quad_prefix_exclusive_product": lambda v: np.concatenate([[1], np.cumprod(v)[:-1]]),
}


@pytest.mark.parametrize("grid,tg", SHAPES)
@pytest.mark.parametrize("np_dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_quad_reductions(runtime, rng, name, np_dtype, grid, tg):
    if name in ("quad_and", "quad_or", "quad_xor") and np_dtype == np.float32:
        pytest.skip("bitwise reductions take integers")
    fn = getattr(enigma, name)
    et = DTYPES[np_dtype]

    @enigma.kernel
    def quad_kernel(A: et, O: et):
        tid = enigma.thread_position_in_grid
        O[tid] = fn(A[tid])

    a = random_input(rng, np_dtype, grid, "product" if "product" in name else "sum")
    out = run_kernel(runtime, enigma.compile(quad_kernel), [a], np_dtype, grid,
                     (grid, 1, 1), (tg, 1, 1))
    src = a.astype(np.float64) if np_dtype == np.float32 else a.astype(np.int64)
    check(out, per_group(src, grid, tg, REDUCTIONS[name], width=QUAD), np_dtype)


@pytest.mark.parametrize("grid,tg", SHAPES)
@pytest.mark.parametrize("kind", ["shuffle", "shuffle_up", "shuffle_down",
                                  "shuffle_xor", "broadcast"])
def test_quad_shuffles(runtime, rng, kind, grid, tg):
    fn = getattr(enigma, "quad_" + kind)

    @enigma.kernel
    def quad_shuffle_kernel(A: enigma.f32, L: enigma.u32, O: enigma.f32, P: enigma.f32):
        tid = enigma.thread_position_in_grid
        x = A[tid]
        O[tid] = fn(x, L[tid])
        P[tid] = fn(x, 1)

    a = rng.standard_normal(grid).astype(np.float32)
    lanes = rng.integers(0, 7, grid).astype(np.uint32)
    raw = runtime.execute(enigma.compile(quad_shuffle_kernel), [a, lanes],
                          output_sizes=[grid * 4] * 2, grid=(grid, 1, 1),
                          threads=(tg, 1, 1))
    o, p = (np.frombuffer(r, dtype=np.float32) for r in raw)
    np.testing.assert_array_equal(
        o, shuffle_reference(a, lanes, grid, tg, kind, width=QUAD))
    np.testing.assert_array_equal(
        p, shuffle_reference(a, np.ones(grid), grid, tg, kind, width=QUAD))


def test_quad_signed_and_unsigned_min(runtime, rng):
    @enigma.kernel
    def minmax(A: enigma.i32, B: enigma.u32, O: enigma.i32, P: enigma.u32):
        tid = enigma.thread_position_in_grid
        O[tid] = enigma.quad_min(A[tid])
        P[tid] = enigma.quad_max(B[tid])

    grid, tg = 64, 30
    a = rng.integers(-2**31, 2**31, grid, dtype=np.int64).astype(np.int32)
    b = rng.integers(0, 2**32, grid, dtype=np.int64).astype(np.uint32)
    raw = runtime.execute(enigma.compile(minmax), [a, b],
                          output_sizes=[grid * 4] * 2, grid=(grid, 1, 1),
                          threads=(tg, 1, 1))
    o = np.frombuffer(raw[0], dtype=np.int32)
    p = np.frombuffer(raw[1], dtype=np.uint32)
    np.testing.assert_array_equal(o, per_group(a, grid, tg, np.min, QUAD, np.int32))
    np.testing.assert_array_equal(p, per_group(b, grid, tg, np.max, QUAD, np.uint32))


def test_quad_divergent_is_rejected():
    @enigma.kernel
    def divergent(A: enigma.f32, O: enigma.f32):
        tid = enigma.thread_position_in_grid
        with _if(enigma.thread_index_in_threadgroup() % 4 == 0):
            O[tid] = enigma.quad_sum(A[tid])

    with pytest.raises(enigma.EnigmaError, match="every lane of the simdgroup"):
        enigma.compile(divergent)


def test_quad_msl_names():
    @enigma.kernel
    def names(A: enigma.f32, O: enigma.f32):
        tid = enigma.thread_position_in_grid
        O[tid] = enigma.quad_sum(A[tid]) + enigma.quad_broadcast(A[tid], 2)

    src = enigma.compile(names).metal_source
    assert "quad_sum(" in src and "quad_broadcast(" in src


def test_quad_docstrings():
    for name in REDUCTIONS:
        assert name in getattr(enigma, name).__doc__
