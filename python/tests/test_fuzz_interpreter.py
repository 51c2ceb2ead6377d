"""The fuzzer's numpy interpreter (tools/fuzz/interpret.py, its values in
interpret_values.py) is the reference every fuzzed kernel is judged by:
its own conversions are checked here against hand-derived, correctly
rounded values."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "..", "tools", "fuzz"))

import interpret  # noqa: E402
import interpret_values  # noqa: E402

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


# --- 8-bit floats ------------------------------------------------------------

def test_fp8_patterns_decode_by_their_fields():
    """Hand-derived values of the OCP formats (docs/reference/fp8.md)."""
    e4m3 = {0x00: 0.0, 0x38: 1.0, 0x7E: 448.0, 0x01: 2.0**-9,
            0x08: 2.0**-6, 0xC0: -2.0, 0x77: 240.0}
    e5m2 = {0x00: 0.0, 0x3C: 1.0, 0x7B: 57344.0, 0x01: 2.0**-16,
            0x7C: np.inf, 0xFC: -np.inf, 0xC2: -3.0}
    for fmt, table in (("f8e4m3", e4m3), ("f8e5m2", e5m2)):
        for bits, value in table.items():
            assert interpret.fp8_value(fmt, bits) == value, (fmt, hex(bits))
    assert np.isnan(interpret.fp8_value("f8e4m3", 0x7F))
    assert np.isnan(interpret.fp8_value("f8e4m3", 0xFF))
    assert not np.isnan(interpret.fp8_value("f8e4m3", 0x7C))   # 256
    for bits in (0x7D, 0x7E, 0x7F, 0xFD):
        assert np.isnan(interpret.fp8_value("f8e5m2", bits))


@pytest.mark.parametrize("saturate", [False, True])
def test_fp8_rounding_ties_overflow_and_subnormals(saturate):
    """Ties to even at the top (464 between 448 and the NaN pattern of
    e4m3; 61440 between 57344 and e5m2's infinity), among subnormals, and
    the overflow of each mode."""
    nan, inf = np.nan, np.inf
    cases = {
        "f8e4m3": [(464.0, 448.0, 448.0), (464.01, nan, 448.0),
                   (2.0**-10, 0.0, 0.0), (3 * 2.0**-10, 2.0**-8, 2.0**-8),
                   (-inf, nan, -448.0), (1.0625, 1.0, 1.0),
                   (1.1875, 1.25, 1.25), (-17.0, -16.0, -16.0)],
        "f8e5m2": [(61439.0, 57344.0, 57344.0), (61440.0, inf, 57344.0),
                   (-1e9, -inf, -57344.0), (inf, inf, 57344.0),
                   (2.0**-17, 0.0, 0.0), (3 * 2.0**-17, 2.0**-15, 2.0**-15),
                   (1.125, 1.0, 1.0), (1.375, 1.5, 1.5)],
    }
    for fmt, rows in cases.items():
        x = np.array([r[0] for r in rows])
        want = np.array([r[2] if saturate else r[1] for r in rows])
        got = interpret_values.round_fp8(fmt, x, saturate)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        assert same.all(), (fmt, x[~same], got[~same], want[~same])
    assert np.isnan(interpret_values.round_fp8("f8e5m2", np.array([np.nan]),
                                               saturate))[0]


def test_fp8_rounding_matches_enigmas_encoder(rng):
    """The interpreter's rounding against enigma.fp8_encode (the kernels'
    conversion on the host) over random float32 values of every size."""
    import enigma
    x = (rng.standard_normal(4000) *
         np.exp2(rng.integers(-20, 20, 4000))).astype(np.float32)
    x[:6] = [464.0, 61440.0, -np.inf, np.nan, 2.0**-10, 0.0]
    for fmt in ("f8e4m3", "f8e5m2"):
        for saturate in (False, True):
            bits = enigma.fp8_encode(x, fmt, saturate=saturate)
            want = np.array([interpret.fp8_value(fmt, int(b)) for b in bits])
            got = interpret_values.round_fp8(fmt, x.astype(np.float64), saturate)
            same = (got == want) | (np.isnan(got) & np.isnan(want))
            assert same.all(), (fmt, saturate, x[~same][:5])


def test_fp8_conversion_of_an_uncertain_value_is_bounded_by_its_ends():
    """3.0 +- 0.2 rounds to 3.0 in e4m3 but may reach 3.25 (spacing 0.25):
    the bound is the distance to the far end's rounding; 448 +- 20 may be
    NaN (plain e4m3): undetermined; saturating: at most 448."""
    x = interpret.Val("f32", np.array([3.0, 448.0, 448.0]),
                      np.array([0.2, 20.0, 20.0]))
    r = interpret.to_fp8(x, "f8e4m3")
    assert r.v[0] == 3.0 and r.e[0] == 0.25
    assert np.isinf(r.e[1])
    s = interpret.to_fp8(x, "f8e4m3", saturate=True)
    assert s.v[2] == 448.0 and s.e[2] == 32.0   # 416 .. 448
