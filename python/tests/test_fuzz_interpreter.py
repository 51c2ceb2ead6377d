"""The fuzzer's numpy interpreter (tools/fuzz/interpret.py) is the reference
every fuzzed kernel is judged by: its own conversions are checked here
against hand-derived, correctly rounded values."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "..", "tools", "fuzz"))

import interpret  # noqa: E402

_BITS = {"f32": 24, "f16": 11, "bf16": 8}


def _nearest_even(value, bits):
    """|value| rounded to `bits` significant bits, ties to even (exact ints)."""
    sign, mag = (-1 if value < 0 else 1), abs(value)
    drop = max(mag.bit_length() - bits, 0)
    if drop == 0:
        return value
    q, r = divmod(mag, 1 << drop)
    half = 1 << (drop - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return sign * (q << drop)


@pytest.mark.parametrize("to", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("src", ["u64", "i64"])
def test_wide_int_to_float_rounds_once(src, to, rng):
    """u64 0xfffffb7fffffffff lies just below the f32 tie between two
    neighbours 2^40 apart; rounding it first to float64 lands on the tie and
    then rounds up (fuzz seed 900023). The conversion must round once."""
    hard = [0xFFFFFB7FFFFFFFFF, (1 << 63) - 1, (1 << 53) + 1, (1 << 24) + 1,
            65519, 65520]
    # the same trap in every width: an odd kept part, a 0, then all ones
    for bits in _BITS.values():
        for top in (63, 62):
            drop = top + 1 - bits
            hard.append(((1 << bits) - 1 - 4 << drop) + (1 << drop - 1) - 1)
    lo, hi = (0, (1 << 64) - 1) if src == "u64" else (-(1 << 63), (1 << 63) - 1)
    values = [v for v in hard if lo <= v <= hi]
    values += [int(v) for v in rng.integers(lo, hi, 200, dtype=np.uint64 if src == "u64"
                                            else np.int64, endpoint=True)]
    if src == "i64":
        values += [-v for v in values if -v >= lo]
    got = interpret.convert(interpret.Val(src, np.array(values, dtype=object)), to).v
    for v, g in zip(values, got):
        expected = float(_nearest_even(v, _BITS[to]))
        if to == "f16" and abs(expected) > 65504:
            expected = float("inf") * np.sign(v)
        elif to == "bf16" and abs(expected) > 3.3895313892515355e38:
            expected = float("inf") * np.sign(v)
        assert g == expected, f"{src} {v} -> {to}: {g!r}, expected {expected!r}"


def test_tan_of_an_uncertain_huge_value_is_undetermined():
    """tan(cosh(x)) for x near -89 (fuzz seed 900235): cosh is ~2e38 with an
    ulp of ~2e31, so its allowed error spans many periods of tan and any
    result is right; evaluating tan at the interval's two ends suggested a
    bound of 0.28."""
    x = interpret.Val("f32", np.array([2.1765545e38, 1.0]), np.array([2.0e31, 1e-6]))
    r = interpret.float_call("tan", [x])
    assert np.isinf(r.e[0])
    assert np.isfinite(r.e[1]) and r.e[1] < 1e-4


def test_sin_bound_covers_a_peak_inside_the_interval():
    """sin(pi/2 +- 0.1): both ends give the same value, the peak between them
    is 1; the bound must cover the input's error (slope at most 1)."""
    x = interpret.Val("f32", np.array([np.pi / 2 + 0.05]), np.array([0.1]))
    r = interpret.float_call("sin", [x])
    assert r.e[0] >= 0.1


def _exact(t, values):
    return interpret.Val(t, np.array(values, np.float64))


def test_zero_from_fmax_of_both_zeros_has_a_free_sign():
    """fmax(+0, -0) may be either zero (docs/reference/math.md): the
    H200 gave +0 where numpy gives -0 (fuzz seed 905269), so signbit of it
    must be undetermined, while other zeros keep theirs."""
    a = _exact("f32", [0.0, -0.0, -0.0])
    b = _exact("f32", [-0.0, -0.0, 1.0])
    r = interpret.float_call("fmax", [a, b])
    assert r.e[0] > 0 and r.e[1] == 0 and r.e[2] == 0
    assert np.isinf(interpret.predicate("signbit", r).e[0])


def test_atan2_across_its_branch_cut_is_undetermined():
    """atan2(y, x<0) jumps from pi to -pi as y's sign flips (fuzz seed
    900871: a zero of free sign gave +pi on the GPU, -pi in numpy)."""
    y = interpret.Val("f32", np.array([0.0, 0.5, -0.0]), np.array([1e-45, 1e-6, np.inf]))
    x = _exact("f32", [-2.0, -2.0, -0.0])   # atan2(+-0, -0) is +-pi too (seed 932450)
    r = interpret.float_call("atan2", [y, x])
    assert np.isinf(r.e[0]) and np.isfinite(r.e[1]) and np.isinf(r.e[2])


def test_division_by_a_value_that_may_be_zero_is_undetermined():
    """a / b where b's tolerance reaches 0: the quotient is unbounded; the
    bound from the interval's ends (fuzz seed 903596, b = 12.2 +- inf gave
    +-4.9) was wrong."""
    m = interpret.Machine({"grid": 2, "threads": 2, "inputs": [], "outputs": []}, False)
    a = _exact("f32", [38.0, 38.0])
    b = interpret.Val("f32", np.array([12.2, 12.2]), np.array([np.inf, 0.1]))
    r = m.binary("/", a, b)
    assert np.isinf(r.e[0]) and r.e[1] < 1.0


def test_smoothstep_with_unbounded_edges_is_anywhere_in_0_1():
    """smoothstep(e0 +- inf, e1 +- inf, x): the corners' NaN was clamped
    away and the bound stayed 0.25 (fuzz seed 934039 gave 1.0)."""
    e0 = interpret.Val("f16", np.array([0.0]), np.array([np.inf]))
    e1 = interpret.Val("f16", np.array([3.140625]), np.array([np.inf]))
    x = _exact("f16", [1.0])
    r = interpret.float_call("smoothstep", [e0, e1, x])
    assert r.v[0] - r.e[0] <= 0.0 and r.v[0] + r.e[0] >= 1.0


def test_pow_with_a_base_that_may_be_zero_is_undetermined():
    """pow(x, -4) where x's tolerance reaches 0: the pole is inside the box
    and its corners miss it (fuzz seed 944554: |0.094 +- 1.2| ** -4 was
    bounded by 13073 around 12928; the CPU gave 65536)."""
    x = interpret.Val("bf16", np.array([0.0943, 0.0943, 2.0]),
                      np.array([1.2, 0.01, 0.5]))
    y = _exact("bf16", [-4.0, -4.0, 3.0])
    r = interpret.float_call("pow", [x, y])
    assert np.isinf(r.e[0]) and np.isfinite(r.e[1]) and np.isfinite(r.e[2])


def test_half_sum_whose_partial_sums_may_overflow_is_undetermined():
    """A half reduction adds in an order the target picks: when the terms'
    magnitudes add up past 65504 some partial sum may be inf even if the
    total is not (fuzz seed 945802: 64992 +- 3404 expected, inf on the
    CPU)."""
    m = interpret.Machine({"grid": 2, "threads": 2, "inputs": [], "outputs": []}, False)
    res, err = m._reduce("prefix_inclusive_sum", "f16",
                         [60000.0, 10000.0, -30000.0], [0.0, 0.0, 0.0])
    assert np.isfinite(err[0]) and np.isinf(err[1]) and np.isinf(err[2])
    res, err = m._reduce("sum", "f32", [60000.0, 10000.0, -30000.0],
                         [0.0, 0.0, 0.0])
    assert all(np.isfinite(err))
