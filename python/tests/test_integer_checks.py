"""Integer arithmetic in bounds-checked mode (docs/runtimes.md,
"Bounds-checked mode").

Thread positions are unsigned and a Python literal takes the other
operand's type, so ``x - 2`` is a ``uint`` subtraction that wraps at
``x < 2``. Metal's types and wrapping results stay, but a kernel compiled
with ``bounds_check=True`` reports an integer ``+``, ``-``, ``*`` or
negation whose exact result does not fit its type, as Rust's debug builds
do: the ``file:line``, the operands, the wrapped result and the thread.
Arithmetic whose result ``enigma.where`` throws away is not reported; the
``wrapping_*`` functions say that wrapping is meant.
"""

import re

import numpy as np
import pytest

import enigma
from conftest import BY_THREAD, assert_reported_at, checked_error, run_kernel

_OVERFLOW = re.compile(
    r"integer overflow at (?P<where>\S+): (?P<expr>.+?) in (?P<dtype>\w+) "
    r"(?P<how>exceeds -?\d+|is below -?\d+|is below zero) \(Metal wraps the "
    r"result to (?P<wrapped>-?\d+)\), " + BY_THREAD)


def _overflow(excinfo):
    fields = checked_error(_OVERFLOW, excinfo)
    fields["wrapped"] = int(fields["wrapped"])
    return fields


# ---------------------------------------------------------------------------
# The first-week trap: a clamp of an unsigned difference reads the far edge
# ---------------------------------------------------------------------------

@enigma.kernel
def left_neighbour(A: enigma.f32, w: enigma.Scalar(enigma.u32),
                   out: enigma.f32):
    x = enigma.thread_position_in_grid
    left = enigma.clamp(x - 2, 0, w - 1)  # x-minus-2
    out[x] = A[left]


def test_unchecked_mode_keeps_metals_wrapping_result(runtime, rng):
    """Without the mode the kernel runs as Metal runs it: x - 2 wraps at
    x < 2 and the clamp gives the last element (the trap itself)."""
    n = 37
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(left_neighbour)
    out = run_kernel(runtime, compiled, [a], np.float32, n, (n, 1, 1),
                     (16, 1, 1), scalars=[n])
    want = a[np.concatenate([[n - 1, n - 1], np.arange(n - 2)])]
    np.testing.assert_array_equal(out, want)


def test_unsigned_subtraction_below_zero_is_reported(runtime, rng):
    n = 37
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(left_neighbour, bounds_check=True)
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [a], output_size=4 * n, grid=(n, 1, 1),
                        threads=(16, 1, 1), scalars=[n])
    v = _overflow(excinfo)
    assert v["dtype"] == "u32" and v["how"] == "is below zero", v["message"]
    x = v["thread"][0]
    assert x in (0, 1) and v["thread"][1:] == (0, 0)
    assert v["expr"] == f"{x} - 2"
    assert v["wrapped"] == 2**32 - 2 + x
    assert "the first of 2 integer overflows" in v["message"]
    assert_reported_at(__file__, v, "x-minus-2")


# ---------------------------------------------------------------------------
# Each operation, signed and unsigned, at each width
# ---------------------------------------------------------------------------

def _binary_kernel(dtype, op):
    @enigma.kernel
    def arith(A: dtype, B: dtype, out: dtype):
        i = enigma.thread_position_in_grid
        a = A[i]
        b = B[i]
        if op == "+":
            out[i] = a + b  # binary-add
        elif op == "-":
            out[i] = a - b  # binary-sub
        else:
            out[i] = a * b  # binary-mul
    return arith


_PY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b,
       "*": lambda a, b: a * b}
_CASES = [
    # dtype, op, a row of operands that fits, the operands that do not
    ("u8", "+", (200, 55), (200, 56)),
    ("u16", "-", (7, 7), (7, 8)),
    ("u32", "*", (65535, 65537), (65536, 65536)),
    ("u64", "*", (2**32 - 1, 2**32 + 1), (2**32, 2**32)),
    ("u64", "+", (2**63, 2**63 - 1), (2**63, 2**63)),
    ("i8", "-", (-100, 28), (-100, 29)),
    ("i16", "*", (-128, 256), (-256, 256)),
    ("i32", "+", (2**31 - 2, 1), (2**31 - 1, 1)),
    ("i32", "-", (-2**31 + 1, 1), (-2**31, 1)),
    ("i32", "*", (-2**31, 1), (-2**31, -1)),
    ("i64", "*", (-2**62, 2), (-2**62, -2)),
    ("i64", "-", (0, -2**63 + 1), (0, -2**63)),
]


def _wrap(value, dtype):
    bits = dtype.itemsize * 8
    value %= 2**bits
    if dtype.is_signed and value >= 2**(bits - 1):
        value -= 2**bits
    return value


@pytest.mark.parametrize("name,op,fits,overflows", _CASES)
def test_each_operation_is_checked_in_its_type(runtime, name, op, fits,
                                               overflows):
    dtype = getattr(enigma, name)
    np_type = dtype.numpy_dtype
    compiled = enigma.compile(_binary_kernel(dtype, op), bounds_check=True)
    n = 3  # the overflowing operands in the middle thread
    a = np.array([fits[0], overflows[0], fits[0]], dtype=np_type)
    b = np.array([fits[1], overflows[1], fits[1]], dtype=np_type)
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [a, b], output_size=n * dtype.itemsize,
                        grid=(n, 1, 1), threads=(n, 1, 1))
    v = _overflow(excinfo)
    exact = _PY[op](int(overflows[0]), int(overflows[1]))
    assert v["dtype"] == name, v["message"]
    assert v["expr"] == f"{overflows[0]} {op} {overflows[1]}", v["message"]
    assert v["wrapped"] == _wrap(exact, dtype), v["message"]
    assert v["thread"] == (1, 0, 0), v["message"]
    bits = dtype.itemsize * 8
    high = 2**(bits - 1) - 1 if dtype.is_signed else 2**bits - 1
    low = -2**(bits - 1) if dtype.is_signed else 0
    want = f"exceeds {high}" if exact > high else \
        ("is below zero" if low == 0 else f"is below {low}")
    assert v["how"] == want, v["message"]
    assert "the first of" not in v["message"]
    assert_reported_at(__file__, v, {"+": "binary-add", "-": "binary-sub",
                                     "*": "binary-mul"}[op])
    # The operands that fit run through without a report, and give the
    # exact result.
    a[1], b[1] = fits
    out = run_kernel(runtime, compiled, [a, b], np_type, n, (n, 1, 1),
                     (n, 1, 1))
    np.testing.assert_array_equal(
        out.astype(object), [_PY[op](int(fits[0]), int(fits[1]))] * n)


@enigma.kernel
def negate(A: enigma.i32, U: enigma.u32, out: enigma.i32, uout: enigma.u32):
    i = enigma.thread_position_in_grid
    out[i] = -A[i]  # negate-int
    uout[i] = -U[i]  # negate-uint


def test_negation(runtime):
    compiled = enigma.compile(negate, bounds_check=True)
    ok_a = np.array([5, -2**31 + 1], np.int32)
    zero_u = np.zeros(2, np.uint32)
    outs = runtime.execute(compiled, [ok_a, zero_u], output_sizes=[8, 8],
                           grid=(2, 1, 1), threads=(2, 1, 1))
    np.testing.assert_array_equal(np.frombuffer(outs[0], np.int32),
                                  [-5, 2**31 - 1])
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [np.array([1, -2**31], np.int32), zero_u],
                        output_sizes=[8, 8], grid=(2, 1, 1),
                        threads=(2, 1, 1))
    v = _overflow(excinfo)
    assert (v["expr"], v["dtype"], v["how"], v["wrapped"]) == \
        ("-(-2147483648)", "i32", "exceeds 2147483647", -2**31), v["message"]
    assert_reported_at(__file__, v, "negate-int")
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [ok_a, np.array([0, 3], np.uint32)],
                        output_sizes=[8, 8], grid=(2, 1, 1),
                        threads=(2, 1, 1))
    v = _overflow(excinfo)
    assert (v["expr"], v["dtype"], v["how"], v["wrapped"]) == \
        ("-(3)", "u32", "is below zero", 2**32 - 3), v["message"]
    assert v["thread"] == (1, 0, 0)
    assert_reported_at(__file__, v, "negate-uint")


# ---------------------------------------------------------------------------
# Index arithmetic
# ---------------------------------------------------------------------------

@enigma.kernel
def strided(A: enigma.f32, stride: enigma.Scalar(enigma.u32),
            n: enigma.Scalar(enigma.u32), out: enigma.f32):
    i = enigma.thread_position_in_grid
    out[i] = A[(i * stride) % n]  # index-product


def test_index_arithmetic_overflow_names_the_values(runtime, rng):
    n = 64
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(strided, bounds_check=True)
    out = run_kernel(runtime, compiled, [a], np.float32, n, (n, 1, 1),
                     (32, 1, 1), scalars=[3, n])
    np.testing.assert_array_equal(out, a[(np.arange(n) * 3) % n])
    stride = 2**27  # 32 * 2**27 = 2**32 wraps
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [a], output_size=4 * n, grid=(n, 1, 1),
                        threads=(32, 1, 1), scalars=[stride, n])
    v = _overflow(excinfo)
    x = v["thread"][0]
    assert x >= 32 and v["expr"] == f"{x} * {stride}", v["message"]
    assert v["how"] == "exceeds 4294967295"
    assert v["wrapped"] == (x * stride) % 2**32
    assert "the first of 32 integer overflows" in v["message"]
    assert_reported_at(__file__, v, "index-product")


def test_two_dimensional_index_overflow(runtime):
    @enigma.kernel
    def rows(W: enigma.Scalar(enigma.u32), out: enigma.u32):
        x = enigma.thread_position_in_grid_xyz("x")
        y = enigma.thread_position_in_grid_xyz("y")
        out[(y * W + x) % 16] = x  # rows-index

    compiled = enigma.compile(rows, bounds_check=True)
    width = 2**31
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [], output_size=16 * 4, grid=(4, 3, 1),
                        threads=(4, 1, 1), scalars=[width])
    v = _overflow(excinfo)
    x, y, _ = v["thread"]
    # y = 1: 2**31 + x fits; y = 2: the product overflows
    assert y == 2 and v["expr"] == f"2 * {width}", v["message"]
    assert_reported_at(__file__, v, "rows-index")


# ---------------------------------------------------------------------------
# What is not reported
# ---------------------------------------------------------------------------

@enigma.kernel
def neighbour_difference(A: enigma.f32, out: enigma.f32):
    x = enigma.thread_position_in_grid
    prev = enigma.where(0.0, A[x - 1], x > 0)  # selected-away
    out[x] = A[x] - prev


def test_arithmetic_that_where_discards_is_not_reported(runtime, rng):
    """`where(0.0, A[x - 1], x > 0)` is the usual neighbour read: x - 1
    wraps in thread 0, whose value the select throws away."""
    n = 45
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(neighbour_difference, bounds_check=True)
    out = run_kernel(runtime, compiled, [a], np.float32, n, (n, 1, 1),
                     (16, 1, 1))
    want = a.astype(np.float64) - np.concatenate([[0.0], a[:-1]])
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


@enigma.kernel
def hashes(seed: enigma.Scalar(enigma.u32), out: enigma.u32):
    i = enigma.thread_position_in_grid
    h = enigma.wrapping_mul(enigma.wrapping_add(i, seed), 2654435761)
    h = enigma.wrapping_add(h, 0x9E3779B9)
    out[i] = enigma.wrapping_sub(h ^ (h >> 15), 7)


def test_wrapping_functions_are_not_reported(runtime):
    n = 100
    seed = 2**32 - 10
    compiled = enigma.compile(hashes, bounds_check=True)
    out = run_kernel(runtime, compiled, [], np.uint32, n, (n, 1, 1),
                     (32, 1, 1), scalars=[seed])
    i = np.arange(n, dtype=np.uint64)
    h = ((i + seed) % 2**32 * 2654435761) % 2**32
    h = (h + 0x9E3779B9) % 2**32
    want = ((h ^ (h >> 15)) - 7) % 2**32
    np.testing.assert_array_equal(out, want.astype(np.uint32))
    # The same functions without the mode give the same values.
    plain = run_kernel(runtime, enigma.compile(hashes), [], np.uint32, n,
                       (n, 1, 1), (32, 1, 1), scalars=[seed])
    np.testing.assert_array_equal(plain, out)


def test_wrapping_functions_keep_the_type():
    seen = {}

    @enigma.kernel
    def types(A: enigma.i16, out: enigma.i16):
        i = enigma.thread_position_in_grid
        v = enigma.wrapping_sub(0, A[i])
        seen["dtype"] = v.dtype
        out[i] = v

    enigma.compile(types)
    assert seen["dtype"] == enigma.i16
    with pytest.raises(enigma.EnigmaError, match="wrapping_add"):
        @enigma.kernel
        def floats(A: enigma.f32, out: enigma.f32):
            i = enigma.thread_position_in_grid
            out[i] = enigma.wrapping_add(A[i], 1.0)
        enigma.compile(floats)


def test_unchecked_sources_are_unchanged():
    """Without the mode nothing of the checks is printed."""
    compiled = enigma.compile(left_neighbour)
    for source in (compiled.metal_source, compiled.cuda_source,
                   compiled.cpp_source):
        assert "enigma_bounds_record" not in source
    assert "overflow" not in compiled.mlir_source


def test_checked_cuda_source_compiles_with_nvrtc():
    try:
        enigma._core.Runtime.nvrtc_check(
            'extern "C" __global__ void k() {}', "sm_90", [])
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed on this machine")
    kernels = [left_neighbour, strided, negate, neighbour_difference,
               hashes] + [_binary_kernel(getattr(enigma, name), op)
                          for name, op, _, _ in _CASES]
    for kernel in kernels:
        compiled = enigma.compile(kernel, bounds_check=True)
        enigma._core.Runtime.nvrtc_check(compiled.cuda_source, "sm_90", [])
