"""A read that `where` discards never leaves its buffer: `where(0, A[i - 1],
i > 0)` computes A[i - 1] in every thread, and for thread 0 the unsigned
index wraps around to about 4 billion. On a GPU that read is discarded; the
optimiser keeps it inside the buffer, so the CPU (and CUDA) give the same
result instead of faulting."""

import re

import numpy as np

import enigma
from conftest import run_kernel


@enigma.kernel
def shift_right(A: enigma.f32, B: enigma.f32):
    i = enigma.thread_position_in_grid
    B[i] = enigma.where(0.0, A[i - 1] * 2.0, enigma.cmp_ugt(i, 0))


@enigma.kernel
def halo_rows(A: enigma.f32, W: enigma.Scalar(enigma.u32),
              H: enigma.Scalar(enigma.u32), B: enigma.f32):
    # The heat-equation halo: the row above and below, zero outside.
    x = enigma.thread_position_in_grid_xyz("x")
    y = enigma.thread_position_in_grid_xyz("y")
    up = enigma.where(0.0, A[(y - 1) * W + x], enigma.cmp_ugt(y, 0))
    down = enigma.where(0.0, A[(y + 1) * W + x], enigma.cmp_ult(y + 1, H))
    B[y * W + x] = up + down


def test_discarded_wrapped_read(runtime, rng):
    for n in (1, 37, 1000):
        a = rng.standard_normal(n).astype(np.float32)
        out = run_kernel(runtime, enigma.compile(shift_right), [a], np.float32,
                         n, grid=(n, 1, 1), threads=(64, 1, 1))
        expected = np.zeros(n, np.float64)
        expected[1:] = a[:-1].astype(np.float64) * 2.0
        np.testing.assert_array_equal(out, expected.astype(np.float32))


def test_halo_rows(runtime, rng):
    h, w = 13, 24
    a = rng.standard_normal((h, w)).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(halo_rows), [a.ravel()], np.float32,
                     h * w, grid=(w, h, 1), threads=(8, 4, 1),
                     scalars={"W": w, "H": h}).reshape(h, w)
    a64 = a.astype(np.float64)
    expected = np.zeros((h, w))
    expected[1:] += a64[:-1]
    expected[:-1] += a64[1:]
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_msl_selects_the_index():
    source = enigma.compile(shift_right).metal_source
    index = re.search(r"ulong (v\d+) = v\d+ \? v\d+ : 0ul;", source)
    assert index, source
    assert f"A[{index.group(1)}]" in source, source
