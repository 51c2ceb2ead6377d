"""Float math (docs/reference/math.md) on every backend under test, against
numpy float64 references (Metal's definitions where they differ from C)."""

import numpy as np
import pytest

import enigma
from _math_helpers import SIZES, run_map

f32 = np.float32
NAN, INF = float("nan"), float("inf")
SPECIALS = np.array([0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 1.0, -1.0, INF, -INF,
                     NAN, 1e-40, -1e-40, 3.4e38], dtype=f32)


def inputs(rng, n, lo=-10.0, hi=10.0):
    x = rng.uniform(lo, hi, size=n).astype(f32)
    return x


def with_specials(x):
    k = min(len(x), len(SPECIALS))
    x = x.copy()
    x[:k] = SPECIALS[:k]
    return x


def _round_away(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _metal_sign(x):
    out = np.where(x > 0, 1.0, np.where(x < 0, -1.0, x))
    return np.where(np.isnan(x), 0.0, out)


def _fract(x):
    """Metal's fract with OpenCL's special values: NaN stays NaN, +-inf and
    +-0 give +-0."""
    out = np.minimum(x - np.floor(x), float(np.nextafter(f32(1), f32(0))))
    return np.where(np.isinf(x) | (x == 0), np.copysign(0.0, x), out)


# name, reference on float64, whether the result is exact, domain
UNARY = [
    ("sqrt", np.sqrt, False, (0.0, 100.0)),
    ("rsqrt", lambda x: 1.0 / np.sqrt(x), False, (0.01, 100.0)),
    ("abs", np.abs, True, None),
    ("ceil", np.ceil, True, None),
    ("floor", np.floor, True, None),
    ("round", _round_away, True, None),
    ("trunc", np.trunc, True, None),
    ("sign", _metal_sign, True, None),
    # fmin(fmax(x, 0), 1): NaN saturates to 0
    ("saturate", lambda x: np.fmin(np.fmax(x, 0.0), 1.0), True, None),
    ("fract", _fract, True, None),
    ("exp", np.exp, False, (-20.0, 20.0)),
    ("exp2", np.exp2, False, (-20.0, 20.0)),
    ("log", np.log, False, (0.001, 1000.0)),
    ("log2", np.log2, False, (0.001, 1000.0)),
    ("log10", np.log10, False, (0.001, 1000.0)),
    ("sin", np.sin, False, (-10.0, 10.0)),
    ("cos", np.cos, False, (-10.0, 10.0)),
    ("tan", np.tan, False, (-1.5, 1.5)),
    ("sinpi", lambda x: np.sin(np.pi * x), False, (-10.0, 10.0)),
    ("cospi", lambda x: np.cos(np.pi * x), False, (-10.0, 10.0)),
    ("tanpi", lambda x: np.tan(np.pi * x), False, (-0.45, 0.45)),
    ("asin", np.arcsin, False, (-1.0, 1.0)),
    ("acos", np.arccos, False, (-1.0, 1.0)),
    ("atan", np.arctan, False, (-10.0, 10.0)),
    ("sinh", np.sinh, False, (-5.0, 5.0)),
    ("cosh", np.cosh, False, (-5.0, 5.0)),
    ("tanh", np.tanh, False, (-5.0, 5.0)),
]


def check(out, ref, exact):
    ref = np.asarray(ref, dtype=np.float64).astype(f32)
    if exact:
        np.testing.assert_array_equal(out, ref)
        # -0.0 versus +0.0 matters for sign, trunc, ...
        np.testing.assert_array_equal(np.signbit(out), np.signbit(ref))
    else:
        np.testing.assert_allclose(out, ref, rtol=4e-6, atol=1e-6)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name,ref,exact,domain", UNARY,
                         ids=[u[0] for u in UNARY])
def test_unary(runtime, rng, name, ref, exact, domain, n):
    fn = getattr(enigma, name)
    x = inputs(rng, n, *(domain or (-10.0, 10.0)))
    if exact:
        x = with_specials(x)
    out = run_map(runtime, fn, [x], enigma.f32)
    with np.errstate(all="ignore"):
        check(out, ref(x.astype(np.float64)), exact)


@pytest.mark.parametrize("name,ref", [
    ("sqrt", np.sqrt), ("log", np.log), ("exp", np.exp), ("sin", np.sin),
    ("tanh", np.tanh), ("atan", np.arctan), ("log2", np.log2)])
def test_unary_special_values(runtime, name, ref):
    x = np.array([0.0, -0.0, -1.0, INF, -INF, NAN, 100.0, -100.0],
                 dtype=f32)
    out = run_map(runtime, getattr(enigma, name), [x], enigma.f32)
    with np.errstate(all="ignore"):
        expect = ref(x.astype(np.float64)).astype(f32)
    np.testing.assert_allclose(out, expect, rtol=4e-6, equal_nan=True)


def test_pi_functions_exact_at_integers_and_halves(runtime):
    # OpenCL's special values, which Metal's sinpi / cospi / tanpi follow:
    # exact zeros and ones, sinpi(n) signed like n, tanpi(n) = copysign(0, n)
    # for even n and copysign(0, -n) for odd n, tanpi(n + 0.5) = +inf for
    # even n and -inf for odd n (n = floor), NaN for +-inf and NaN.
    x = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -3.0, 0.5, 1.5, -0.5, -1.5,
                  0.25, 1e9, INF, -INF, NAN], dtype=f32)
    sinpi = run_map(runtime, enigma.sinpi, [x], enigma.f32)
    cospi = run_map(runtime, enigma.cospi, [x], enigma.f32)
    tanpi = run_map(runtime, enigma.tanpi, [x], enigma.f32)
    half = float(np.sqrt(f32(0.5)))
    expect_sin = [0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 1.0, -1.0, -1.0, 1.0,
                  half, 0.0, NAN, NAN, NAN]
    expect_cos = [1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 0.0, 0.0, 0.0, 0.0,
                  half, 1.0, NAN, NAN, NAN]
    expect_tan = [0.0, -0.0, -0.0, 0.0, 0.0, 0.0, INF, -INF, -INF, INF,
                  1.0, 0.0, NAN, NAN, NAN]
    for out, expect in ((sinpi, expect_sin), (cospi, expect_cos),
                        (tanpi, expect_tan)):
        expect = np.array(expect, dtype=f32)
        np.testing.assert_allclose(out, expect, rtol=1e-6, atol=0,
                                   equal_nan=True)
        zeros = expect == 0
        np.testing.assert_array_equal(np.signbit(out[zeros]),
                                      np.signbit(expect[zeros]))


def test_fract_edges(runtime):
    tiny = -2.0 ** -30
    x = np.array([tiny, -1.0, 2.75, -2.75, 1e20, NAN, INF, -INF, -0.0],
                 dtype=f32)
    out = run_map(runtime, enigma.fract, [x], enigma.f32)
    below_one = np.nextafter(f32(1), f32(0))
    np.testing.assert_array_equal(
        out, [below_one, 0.0, 0.75, 0.25, 0.0, NAN, 0.0, -0.0, -0.0])
    np.testing.assert_array_equal(np.signbit(out)[6:], [False, True, True])
    assert (out[:5] < 1.0).all()


def test_sign_of_zeros_and_nan(runtime):
    x = np.array([0.0, -0.0, NAN, -INF, 3.0], dtype=f32)
    out = run_map(runtime, enigma.sign, [x], enigma.f32)
    np.testing.assert_array_equal(out, [0.0, -0.0, 0.0, -1.0, 1.0])
    np.testing.assert_array_equal(np.signbit(out),
                                  [False, True, False, True, False])


def test_round_half_away_from_zero(runtime):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997], dtype=f32)
    out = run_map(runtime, enigma.round, [x], enigma.f32)
    np.testing.assert_array_equal(out, [1, 2, 3, -1, -2, -3, 0])


BINARY = [
    ("fmin", np.fmin, True),
    ("fmax", np.fmax, True),
    ("pow", np.power, False),
    ("fmod", np.fmod, True),
    ("atan2", np.arctan2, False),
    ("step", lambda e, x: np.where(x < e, 0.0, 1.0), True),
    ("copysign", np.copysign, True),
]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name,ref,exact", BINARY, ids=[b[0] for b in BINARY])
def test_binary(runtime, rng, name, ref, exact, n):
    a, b = inputs(rng, n), inputs(rng, n)
    if name == "pow":
        a = np.abs(a) + f32(0.01)
        b = (b / 4).astype(f32)
    out = run_map(runtime, getattr(enigma, name), [a, b], enigma.f32)
    check(out, ref(a.astype(np.float64), b.astype(np.float64)), exact)


def test_fmin_fmax_nan(runtime):
    a = np.array([NAN, 1.0, NAN, -0.0], dtype=f32)
    b = np.array([2.0, NAN, NAN, 5.0], dtype=f32)
    lo = run_map(runtime, enigma.fmin, [a, b], enigma.f32)
    hi = run_map(runtime, enigma.fmax, [a, b], enigma.f32)
    np.testing.assert_array_equal(lo, [2.0, 1.0, NAN, -0.0])
    np.testing.assert_array_equal(hi, [2.0, 1.0, NAN, 5.0])


TERNARY = [
    ("clamp", lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)),
    ("fma", lambda a, b, c: a * b + c),
    ("mix", lambda a, b, t: a + (b - a) * t),
    ("smoothstep", lambda e0, e1, x: (lambda t: t * t * (3 - 2 * t))(
        np.clip((x - e0) / (e1 - e0), 0.0, 1.0))),
]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name,ref", TERNARY, ids=[t[0] for t in TERNARY])
def test_ternary(runtime, rng, name, ref, n):
    a, b, c = inputs(rng, n), inputs(rng, n), inputs(rng, n)
    if name == "clamp":
        a, b = np.minimum(a, b), np.maximum(a, b)
        a, b, c = c, a, b  # x, lo, hi with lo <= hi
    if name == "smoothstep":
        a, b = np.minimum(a, b), np.maximum(a, b) + f32(0.5)
    if name == "mix":
        c = rng.uniform(0, 1, size=n).astype(f32)
    out = run_map(runtime, getattr(enigma, name), [a, b, c], enigma.f32)
    ref64 = ref(*(v.astype(np.float64) for v in (a, b, c)))
    np.testing.assert_allclose(out, ref64.astype(f32), rtol=1e-5, atol=2e-6)


PREDICATES = [
    ("isnan", np.isnan),
    ("isinf", np.isinf),
    ("isfinite", np.isfinite),
    ("signbit", np.signbit),
    ("isnormal", lambda x: np.isfinite(x) & (np.abs(x) >= 2.0 ** -126)),
]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name,ref", PREDICATES,
                         ids=[p[0] for p in PREDICATES])
def test_predicates(runtime, rng, name, ref, n):
    x = with_specials(inputs(rng, n))
    out = run_map(runtime, getattr(enigma, name), [x], enigma.b1)
    np.testing.assert_array_equal(out, ref(x))


def test_isnormal_half(runtime):
    x = np.array([1e-6, 1e-4, 1.0, 0.0, 65504.0, np.inf], dtype=np.float16)
    out = run_map(runtime, enigma.isnormal, [x], enigma.b1)
    np.testing.assert_array_equal(out, [False, True, True, False, True,
                                        False])


def test_half_math(runtime, rng):
    x = rng.uniform(0.0, 50.0, size=300).astype(np.float16)
    out = run_map(runtime, enigma.sqrt, [x], enigma.f16)
    np.testing.assert_allclose(out, np.sqrt(x.astype(np.float64)),
                               rtol=1e-3)
    fr = run_map(runtime, enigma.fract,
                 [np.array([-2.0 ** -20, 1.25], dtype=np.float16)],
                 enigma.f16)
    np.testing.assert_array_equal(fr, np.array([0.99951171875, 0.25],
                                               dtype=np.float16))


def test_python_numbers_and_promotion(runtime, rng):
    x = inputs(rng, 100)
    out = run_map(runtime, lambda v: enigma.clamp(v, -1, 2.5), [x],
                  enigma.f32)
    np.testing.assert_array_equal(out, np.clip(x, -1, 2.5))
    out = run_map(runtime, lambda v: enigma.pow(2.0, v * 0.1), [x],
                  enigma.f32)
    np.testing.assert_allclose(out, 2.0 ** (x.astype(np.float64) * 0.1),
                               rtol=1e-5)


def test_float_function_of_integer_uses_f32(runtime):
    x = np.arange(50, dtype=np.uint32)
    out = run_map(runtime, enigma.sqrt, [x], enigma.f32)
    np.testing.assert_allclose(out, np.sqrt(x.astype(np.float64)), rtol=1e-6)


def test_msl_names():
    @enigma.kernel
    def names(A: enigma.f32, C: enigma.f32):
        i = enigma.thread_position_in_grid
        x = A[i]
        C[i] = enigma.fract(x) + enigma.sign(x) + enigma.smoothstep(
            0.0, 1.0, x) + enigma.step(0.5, x) + enigma.mix(x, 1.0, 0.5)

    msl = enigma.compile(names, emit_only=True).metal_source
    for call in ("fract(", "sign(", "smoothstep(", "step(", "mix("):
        assert call in msl


def test_errors_name_the_users_line():
    @enigma.kernel
    def bad(A: enigma.f32, C: enigma.f32):
        i = enigma.thread_position_in_grid
        C[i] = enigma.mix(A[i], A[i], True)  # bool promotes; fine
        C[i] = enigma.add_sat(A[i], 1.0)

    with pytest.raises(enigma.EnigmaError, match=r"test_math.py:\d+.*integer"):
        enigma.compile(bad, emit_only=True)


def test_outside_a_kernel():
    with pytest.raises(enigma.EnigmaError, match="inside an @enigma.kernel"):
        enigma.sqrt(2.0)
