"""Integer / // % where C and Metal leave them undefined (docs/language.md,
"Operators"): a zero divisor gives a quotient with every bit set (the
unsigned maximum, or -1 for a signed type) and the dividend as remainder,
and a signed MIN / -1 wraps to MIN with remainder 0 — RISC-V's definition,
and what NVIDIA GPUs give for 32-bit integers. Every backend computes these
values (metal_total_division.h) instead of trapping (SIGFPE on x86) or
leaving the optimiser free to assume they never happen.
"""

import numpy as np
import pytest

import enigma

TYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]


def _info(name):
    prefix = {"i": "int", "u": "uint"}[name[0]]
    dtype = np.dtype(getattr(np, prefix + name[1:]))
    return dtype, np.iinfo(dtype)


def _reference(a, b, name):
    """Quotient and remainder of every pair, from Python integers."""
    dtype, info = _info(name)
    signed = info.min < 0
    quotients, remainders = [], []
    for x, y in zip(a.tolist(), b.tolist()):
        if y == 0:
            q, r = (-1 if signed else info.max), x
        elif signed and y == -1:
            q, r = (info.min if x == info.min else -x), 0
        else:
            q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
            r = x - q * y
        quotients.append(q)
        remainders.append(r)
    return np.array(quotients, dtype), np.array(remainders, dtype)


def _operands(rng, name, n):
    dtype, info = _info(name)
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b[rng.random(n) < 0.3] = 0                        # zero divisors
    small = rng.integers(1, 9, n).astype(dtype)        # ordinary quotients
    b = np.where(rng.random(n) < 0.3, small, b)
    b[:4] = 0
    a[:4] = [0, 1, info.max, info.min]
    if info.min < 0:
        a[4:8] = info.min
        b[4:8] = [-1, 1, -1, 2]
        b[8:16] = -1
        a[16:20] = [-7, 7, -7, 7]
        b[16:20] = [2, -2, -2, 2]
    return a, b


def _divide_kernel(name):
    T = getattr(enigma, name)

    @enigma.kernel
    def divide(A: T, B: T, Q: T, R: T, F: T):
        t = enigma.thread_position_in_grid
        a = A[t]
        b = B[t]
        Q[t] = a / b
        R[t] = a % b
        F[t] = a // b

    return enigma.compile(divide)


@pytest.mark.parametrize("name", TYPES)
def test_division_and_remainder_of_every_width(runtime, rng, name):
    n = 1000  # not a multiple of the threadgroup
    a, b = _operands(rng, name, n)
    size = n * a.itemsize
    q, r, f = (np.frombuffer(raw, a.dtype) for raw in runtime.execute(
        _divide_kernel(name), [a, b], output_sizes=[size] * 3, grid=n,
        threads=64))
    want_q, want_r = _reference(a, b, name)
    assert np.array_equal(q, want_q), (a[q != want_q], b[q != want_q])
    assert np.array_equal(r, want_r), (a[r != want_r], b[r != want_r])
    assert np.array_equal(f, want_q), "// is / for integers"


@pytest.mark.parametrize("name", ["i32", "u32", "i16", "u64"])
def test_vector_division_lane_by_lane(runtime, rng, name):
    T = getattr(enigma, name)

    @enigma.kernel
    def divide4(A: T, B: T, Q: T, R: T):
        t = enigma.thread_position_in_grid
        i = t * 4
        va = enigma.make_vec(A[i], A[i + 1], A[i + 2], A[i + 3])
        vb = enigma.make_vec(B[i], B[i + 1], B[i + 2], B[i + 3])
        q = va / vb
        r = va % vb
        for lane in range(4):
            Q[i + lane] = enigma.vec_extract(q, lane)
            R[i + lane] = enigma.vec_extract(r, lane)

    groups = 257
    a, b = _operands(rng, name, 4 * groups)
    q, r = (np.frombuffer(raw, a.dtype) for raw in runtime.execute(
        enigma.compile(divide4), [a, b], output_sizes=[a.nbytes] * 2,
        grid=groups, threads=32))
    want_q, want_r = _reference(a, b, name)
    assert np.array_equal(q, want_q)
    assert np.array_equal(r, want_r)


def test_discarded_division_by_zero(runtime, rng):
    """The common GPU pattern: divide in every lane, keep the quotient
    only where the divisor is not zero."""
    @enigma.kernel
    def safe_ratio(A: enigma.i32, B: enigma.i32, C: enigma.i32):
        t = enigma.thread_position_in_grid
        C[t] = enigma.where(0, A[t] / B[t], B[t] != 0)

    n = 4099
    a = rng.integers(-1000, 1000, n, dtype=np.int32)
    b = rng.integers(-3, 4, n, dtype=np.int32)
    raw = runtime.execute(enigma.compile(safe_ratio), [a, b],
                          output_size=4 * n, grid=n, threads=128)
    want = np.where(b != 0, np.trunc(a / np.where(b == 0, 1, b)), 0)
    assert np.array_equal(np.frombuffer(raw, np.int32), want.astype(np.int32))


def test_division_by_a_zero_scalar(runtime, rng):
    """A divisor that is zero for every thread (a scalar parameter)."""

    @enigma.kernel
    def scaled(A: enigma.u16, d: enigma.Scalar(enigma.u16), C: enigma.u16,
               D: enigma.u16):
        t = enigma.thread_position_in_grid
        C[t] = A[t] / d
        D[t] = A[t] % d

    n = 100
    a = rng.integers(0, 2**16, n, dtype=np.uint16)
    c, r = (np.frombuffer(raw, np.uint16) for raw in runtime.execute(
        enigma.compile(scaled), [a], output_sizes=[2 * n] * 2, grid=n,
        threads=32, scalars=[0]))
    assert (c == 0xFFFF).all() and (r == a).all()
