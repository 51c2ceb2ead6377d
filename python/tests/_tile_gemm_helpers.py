"""The enigma.gemm tile-helper kernel on buffers and the tolerance of its
results, shared by test_tile_gemm.py and test_tile_helpers.py."""

import functools

import numpy as np

import enigma


def check_gemm(out, ref, mag, k, unit):
    """Each output is C0 plus a dot product of length k summed in a type of
    unit roundoff ``unit``: |error| <= (k + 1) * unit * (|A| @ |B| + |C0|),
    with a factor of 2 to spare."""
    bound = 2 * (k + 1) * unit * (mag + np.abs(ref)) + 1e-30
    err = np.abs(out.astype(np.float64) - ref)
    assert (err <= bound).all(), (
        f"{int((err > bound).sum())} elements out of tolerance, worst "
        f"{float(err.max())}")


@functools.lru_cache(maxsize=None)
def gemm_buffers(m, n, k, ta, tb, simd, in_dtype="f32", c_dtype="f32",
                 accum="float"):
    """C0 copied into C, then C += op(A) @ op(B) straight on buffers."""
    A_t, C_t = getattr(enigma, in_dtype), getattr(enigma, c_dtype)

    @enigma.kernel
    def gemm_buffers(A: A_t, B: A_t, C0: C_t, C: C_t):
        enigma.copy(C0, C, m * n, cooperative=True)
        enigma.barrier("mem_device")
        enigma.gemm(A, B, C, M=m, N=n, K=k, transpose_A=ta, transpose_B=tb,
                    accum_dtype=accum, use_simdgroup=simd)
    return enigma.compile(gemm_buffers)
