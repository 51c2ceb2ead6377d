"""Math builtins and comparisons applied to vector values, lane by lane."""

import numpy as np

import enigma


@enigma.kernel
def _vmax(A: enigma.f32, B: enigma.f32, C: enigma.f32, D: enigma.f32):
    i = enigma.thread_position_in_grid
    C[i] = enigma.fmax(A[i], B[i])
    D[i] = enigma.fmin(A[i], B[i])


def test_fmax_fmin_on_float4_with_nans(runtime, rng):
    # fmax/fmin ignore a NaN operand (Metal and numpy agree), lane by lane.
    n = 257  # float4 elements: not a multiple of the group size
    a = rng.standard_normal(4 * n).astype(np.float32)
    b = rng.standard_normal(4 * n).astype(np.float32)
    a[::7] = np.nan
    b[::5] = np.nan
    compiled = enigma.compile(_vmax, vec_width=4)
    c, d = (np.frombuffer(x, np.float32) for x in runtime.execute(
        compiled, [a, b], output_sizes=[16 * n, 16 * n], grid=n, threads=64))
    np.testing.assert_array_equal(c, np.fmax(a, b))
    np.testing.assert_array_equal(d, np.fmin(a, b))


@enigma.kernel
def _vwhere(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    i = enigma.thread_position_in_grid
    C[i] = enigma.where(B[i], A[i], A[i] > B[i])


def test_where_with_a_bool4_condition(runtime, rng):
    n = 33
    a = rng.standard_normal(4 * n).astype(np.float32)
    b = rng.standard_normal(4 * n).astype(np.float32)
    compiled = enigma.compile(_vwhere, vec_width=4)
    out = np.frombuffer(runtime.execute(compiled, [a, b], 16 * n, grid=n,
                                        threads=32), np.float32)
    np.testing.assert_array_equal(out, np.where(a > b, a, b))
