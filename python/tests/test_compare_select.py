"""cmp_*, where and as_type (docs/reference/math.md)."""

import re

import numpy as np
import pytest

import enigma
from _math_helpers import NUMPY_OF, SIZES, random_ints, run_map

NAN = float("nan")
SIGNED = [("cmp_eq", np.equal), ("cmp_ne", np.not_equal),
          ("cmp_lt", np.less), ("cmp_le", np.less_equal),
          ("cmp_gt", np.greater), ("cmp_ge", np.greater_equal)]
UNSIGNED = [("cmp_ult", np.less), ("cmp_ule", np.less_equal),
            ("cmp_ugt", np.greater), ("cmp_uge", np.greater_equal)]
PAIRS = {enigma.i8: enigma.u8, enigma.u8: enigma.i8, enigma.i32: enigma.u32,
         enigma.u32: enigma.i32, enigma.i64: enigma.u64,
         enigma.u64: enigma.i64, enigma.u16: enigma.i16}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", list(PAIRS), ids=[t.name for t in PAIRS])
def test_integer_comparisons(runtime, rng, t, n):
    a, b = random_ints(rng, t, n), random_ints(rng, t, n)
    b[: n // 3] = a[: n // 3]  # some equal pairs
    signed_view = NUMPY_OF[t if NUMPY_OF[t]().dtype.kind == "i" else PAIRS[t]]
    unsigned_view = NUMPY_OF[t if NUMPY_OF[t]().dtype.kind == "u" else PAIRS[t]]
    for name, ref in SIGNED:
        out = run_map(runtime, getattr(enigma, name), [a, b], enigma.b1)
        # the plain comparisons read integers as signed whatever the dtype
        np.testing.assert_array_equal(
            out, ref(a.view(signed_view), b.view(signed_view)), err_msg=name)
    for name, ref in UNSIGNED:
        out = run_map(runtime, getattr(enigma, name), [a, b], enigma.b1)
        np.testing.assert_array_equal(
            out, ref(a.view(unsigned_view), b.view(unsigned_view)),
            err_msg=name)


def test_float_comparisons_ordered_and_unordered(runtime, rng):
    a = rng.uniform(-5, 5, size=200).astype(np.float32)
    b = rng.uniform(-5, 5, size=200).astype(np.float32)
    b[:50] = a[:50]
    a[60:70] = NAN
    b[65:75] = NAN
    nan = np.isnan(a) | np.isnan(b)
    for name, ref in SIGNED:
        out = run_map(runtime, getattr(enigma, name), [a, b], enigma.b1)
        expect = ref(a, b) & ~nan  # ordered: false with a NaN, even for ne
        np.testing.assert_array_equal(out, expect, err_msg=name)
    for name, ref in UNSIGNED:
        out = run_map(runtime, getattr(enigma, name), [a, b], enigma.b1)
        np.testing.assert_array_equal(out, ref(a, b) | nan, err_msg=name)


def test_compare_with_numbers(runtime):
    a = np.array([-3, 0, 5], dtype=np.int32)
    out = run_map(runtime, lambda v: enigma.cmp_ult(v, 4), [a], enigma.b1)
    np.testing.assert_array_equal(out, [False, True, False])
    out = run_map(runtime, lambda v: enigma.cmp_lt(v, 4), [a], enigma.b1)
    np.testing.assert_array_equal(out, [True, True, False])


@pytest.mark.parametrize("n", SIZES)
def test_where(runtime, rng, n):
    f = rng.uniform(-1, 1, size=n).astype(np.float32)
    t = rng.uniform(-1, 1, size=n).astype(np.float32)
    c = rng.integers(0, 2, size=n).astype(np.bool_)
    out = run_map(runtime, enigma.where, [f, t, c], enigma.f32)
    np.testing.assert_array_equal(out, np.where(c, t, f))


def test_where_numbers_and_promotion(runtime, rng):
    x = rng.integers(-100, 100, size=300).astype(np.int32)
    out = run_map(runtime, lambda v: enigma.where(-1, v, v > 0), [x],
                  enigma.i32)
    np.testing.assert_array_equal(out, np.where(x > 0, x, -1))
    out = run_map(runtime, lambda v: enigma.where(0.5, v, v > 0), [x],
                  enigma.f32)
    np.testing.assert_array_equal(out, np.where(x > 0, x, 0.5)
                                  .astype(np.float32))


def test_as_type(runtime, rng):
    x = rng.standard_normal(300).astype(np.float32)
    x[:3] = [np.inf, -0.0, NAN]
    bits = run_map(runtime, lambda v: enigma.as_type(v, "uint"), [x],
                   enigma.u32)
    np.testing.assert_array_equal(bits, x.view(np.uint32))
    back = run_map(runtime, lambda v: enigma.as_type(v, enigma.f32),
                   [x.view(np.uint32)], enigma.f32)
    np.testing.assert_array_equal(back.view(np.uint32), x.view(np.uint32))
    i = random_ints(rng, enigma.i16, 300)
    h = run_map(runtime, lambda v: enigma.as_type(v, "half"), [i],
                enigma.f16)
    np.testing.assert_array_equal(h.view(np.int16), i)
    s = run_map(runtime, lambda v: enigma.as_type(v, enigma.u64) >> 63,
                [random_ints(rng, enigma.i64, 300)], enigma.u64)
    assert set(np.unique(s)) <= {0, 1}


def _compile(body, t=enigma.f32):
    @enigma.kernel
    def k(A: t, C: t):
        i = enigma.thread_position_in_grid
        C[i] = body(A[i])
    return enigma.compile(k, emit_only=True)


def test_errors():
    with pytest.raises(enigma.EnigmaError,
                       match=r"test_compare_select.py:\d+.*equal widths"):
        _compile(lambda v: enigma.as_type(v, enigma.f16))
    with pytest.raises(enigma.EnigmaError,
                       match=r"test_compare_select.py:\d+.*bool"):
        _compile(lambda v: enigma.where(v, v, v))
    with pytest.raises(enigma.EnigmaError, match="bool"):
        _compile(lambda v: enigma.as_type(v > 0, enigma.u8))


def test_where_order_mistakes_name_the_order():
    """where takes Metal's select order (false value, true value,
    condition). numpy's order, where(condition, x, y), is caught when the
    condition it leaves last is not a bool or is a Python constant next to
    a traced bool: the error names the order and the rewrite."""
    order = r"where\(false_value, true_value, condition\) takes Metal's " \
        r"select order"
    swapped = r"where\(condition, x, y\).*is written where\(y, x, " \
        r"condition\) here"
    cases = [
        # numpy's relu: where(v > 0, v, 0.0): the condition given is f32.
        (lambda v: enigma.where(v > 0.0, v, 0.0), enigma.f32,
         [order, r"the condition must be a bool, got a float \(0\.0\)",
          swapped]),
        (lambda v: enigma.where(v > 0, v, 0), enigma.i32,
         [order, r"got an int \(0\)", swapped]),
        (lambda v: enigma.where(v > 0, v, -v), enigma.i32,
         [order, r"got i32", swapped]),
        # A float condition and no bool anywhere: the order, no swap hint.
        (lambda v: enigma.where(v, v, v), enigma.f32,
         [order, r"got f32 \(.*\); compare first"]),
        # where(mask, True, False): the condition is a Python constant.
        (lambda v: enigma.metal_cast(
            enigma.where(v > 0.0, True, False), "float"), enigma.f32,
         [order, r"the condition is the constant False while the first "
                 r"argument \(the false value\) is a traced bool", swapped]),
    ]
    for body, dtype, patterns in cases:
        with pytest.raises(enigma.EnigmaError) as info:
            _compile(body, dtype)
        message = str(info.value)
        assert re.match(r".*test_compare_select\.py:\d+: ", message), message
        for pattern in patterns:
            assert re.search(pattern, message), (pattern, message)


def test_where_orders_that_cannot_be_checked_still_compile(runtime, rng):
    """Three traced bools, or a constant condition with non-bool values,
    are valid selections: they compile and run as written."""
    n = 301
    a = rng.integers(0, 2, n).astype(np.bool_)
    b = rng.integers(0, 2, n).astype(np.bool_)
    c = rng.integers(0, 2, n).astype(np.bool_)
    out = run_map(runtime, enigma.where, [a, b, c], enigma.b1)
    np.testing.assert_array_equal(out, np.where(c, b, a))
    x = rng.standard_normal(n).astype(np.float32)
    out = run_map(runtime, lambda v: enigma.where(-1.0, v, True), [x],
                  enigma.f32)
    np.testing.assert_array_equal(out, x)


def test_msl():
    src = _compile(lambda v: enigma.where(v, -v, enigma.cmp_ne(v, 1.0)) +
                   (enigma.as_type(v, enigma.u32) >> 1)).metal_source
    assert "as_type<uint>(" in src and "?" in src
