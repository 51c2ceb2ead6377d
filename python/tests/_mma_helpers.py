"""Helpers of the matrix multiply-accumulate tests (test_mma.py and the
files it names): inputs exact in every float type and their bits, the
error of a kernel body, and the gemm_block kernel that several of them
run."""

import functools

import numpy as np

import enigma

from conftest import compile_error

U32 = enigma.Scalar(enigma.u32)


def eighths(rng, shape, lo=-8, hi=8):
    """Small multiples of 1/8: exact in half, bfloat and float, and so are
    their products and short sums."""
    return (rng.integers(lo, hi + 1, shape) / 8.0).astype(np.float32)


def to_bits(x, dtype):
    x = np.ascontiguousarray(x, np.float32)
    if dtype == "f16":
        return x.astype(np.float16)
    if dtype == "bf16":
        u = x.view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return x


def from_bits(b, dtype):
    if dtype == "f16":
        return np.asarray(b).view(np.float16).astype(np.float32)
    if dtype == "bf16":
        return (np.asarray(b, np.uint16).astype(np.uint32) << 16).view(
            np.float32)
    return np.asarray(b, np.float32)


def body_error(body):
    """Compiles a kernel whose body is `body(A, B)` (A bfloat, B float)
    and returns the EnigmaError message."""
    @enigma.kernel
    def broken(A: enigma.bf16, B: enigma.f32):
        body(A, B)
    return compile_error(broken)


@functools.lru_cache(maxsize=None)
def gemm_kernel(dtype, a_t, b_t, config):
    """C = A @ B + 1 by gemm_block (A k x m with ``a_t``, B n x k with
    ``b_t``), its sides the scalars M, N, K."""
    elem = getattr(enigma, dtype)

    @enigma.kernel
    def gemm(A: elem, B: elem, M: U32, N: U32, K: U32, C: enigma.f32):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                          a_transposed=a_t, b_transposed=b_t,
                          epilogue=lambda acc, row, col: acc + 1.0)
    return enigma.compile(gemm)
