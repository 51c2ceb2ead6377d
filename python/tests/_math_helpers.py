"""Kernels mapping 1-4 input buffers to one output through a traced body,
for the math/int/compare tests."""

import numpy as np

import enigma
from conftest import run_kernel

SIZES = [1, 100, 5000]  # one element, a partial threadgroup, a large grid
THREADS = 64


def map_kernel(body, in_types, out_type):
    """A kernel C[i] = body(A[i], B[i], ...) over len(in_types) inputs."""
    n = len(in_types)
    if n == 1:
        def mapped(A: in_types[0], C: out_type):
            i = enigma.thread_position_in_grid
            C[i] = body(A[i])
    elif n == 2:
        def mapped(A: in_types[0], B: in_types[1], C: out_type):
            i = enigma.thread_position_in_grid
            C[i] = body(A[i], B[i])
    elif n == 3:
        def mapped(A: in_types[0], B: in_types[1], D: in_types[2],
                   C: out_type):
            i = enigma.thread_position_in_grid
            C[i] = body(A[i], B[i], D[i])
    else:
        def mapped(A: in_types[0], B: in_types[1], D: in_types[2],
                   E: in_types[3], C: out_type):
            i = enigma.thread_position_in_grid
            C[i] = body(A[i], B[i], D[i], E[i])
    return enigma.kernel(mapped)


def run_map(runtime, body, inputs, out_type, in_types=None):
    """Runs body element-wise over numpy `inputs`; returns the output."""
    if in_types is None:
        in_types = [numpy_to_enigma(a.dtype) for a in inputs]
    compiled = enigma.compile(map_kernel(body, in_types, out_type))
    n = len(inputs[0])
    out_np = np.dtype(NUMPY_OF[out_type])
    return run_kernel(runtime, compiled, list(inputs), out_np, n,
                      grid=(n, 1, 1), threads=(THREADS, 1, 1))


NUMPY_OF = {
    enigma.f32: np.float32, enigma.f16: np.float16, enigma.i8: np.int8,
    enigma.u8: np.uint8, enigma.i16: np.int16, enigma.u16: np.uint16,
    enigma.i32: np.int32, enigma.u32: np.uint32, enigma.i64: np.int64,
    enigma.u64: np.uint64, enigma.b1: np.bool_,
}


def numpy_to_enigma(dtype):
    for k, v in NUMPY_OF.items():
        if np.dtype(v) == np.dtype(dtype):
            return k
    raise ValueError(dtype)


INT_TYPES = [enigma.i8, enigma.u8, enigma.i16, enigma.u16, enigma.i32,
             enigma.u32, enigma.i64, enigma.u64]


def int_range(t):
    info = np.iinfo(NUMPY_OF[t])
    return int(info.min), int(info.max), info.bits


def random_ints(rng, t, n):
    """Uniform over the whole range of t, with the extremes and 0 mixed in."""
    lo, hi, _ = int_range(t)
    x = rng.integers(lo, hi, size=n, endpoint=True, dtype=NUMPY_OF[t])
    edges = np.array([lo, hi, 0, 1, lo + 1, hi - 1], dtype=NUMPY_OF[t])
    k = min(n, len(edges))
    x[:k] = edges[:k] if n > 1 else x[:k]
    return x
