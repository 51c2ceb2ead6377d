"""The 8-bit floats enigma.f8e4m3 and enigma.f8e5m2 (docs/reference/fp8.md):
every bit pattern decoded, and encodings of every value, every tie and the
floats next to them, overflow and underflow, in both forms (plain and
saturating), from float, half and bfloat, through kernels on each backend
and through the host helpers, against a reference written here from the
formats' definitions (exact rational arithmetic, no library)."""

import bisect
import math
from fractions import Fraction

import numpy as np
import pytest

import enigma
from conftest import run_kernel

# --------------------------------------------------------------------------
# The reference, from the definition of the formats
# --------------------------------------------------------------------------

# (exponent bits, fraction bits, bias, has infinities)
FORMATS = {"f8e4m3": (4, 3, 7, False), "f8e5m2": (5, 2, 15, True)}
MAX_FINITE = {"f8e4m3": 448.0, "f8e5m2": 57344.0}
DTYPES = {"f8e4m3": enigma.f8e4m3, "f8e5m2": enigma.f8e5m2,
          "f32": enigma.f32, "f16": enigma.f16, "bf16": enigma.bf16}


def ref_decode(bits, fmt):
    """The value of pattern ``bits``: a Fraction, or "nan", "inf", "-inf"."""
    e_bits, m_bits, bias, has_inf = FORMATS[fmt]
    sign = -1 if bits & 0x80 else 1
    e = (bits >> m_bits) & ((1 << e_bits) - 1)
    m = bits & ((1 << m_bits) - 1)
    top = (1 << e_bits) - 1
    nan = "nan" if sign > 0 else "-nan"   # NaNs keep their sign
    if has_inf and e == top:
        if m:
            return nan
        return "inf" if sign > 0 else "-inf"
    if not has_inf and e == top and m == (1 << m_bits) - 1:
        return nan   # e4m3: S.1111.111 is the one NaN (per sign)
    if e == 0:
        if m == 0 and sign < 0:
            return "-0"   # a Fraction has no negative zero
        return sign * Fraction(m, 1 << m_bits) * Fraction(2) ** (1 - bias)
    return sign * (1 + Fraction(m, 1 << m_bits)) * Fraction(2) ** (e - bias)


def _finite_codes(fmt):
    """(value, code) of every finite non-negative pattern, ascending."""
    out = []
    for code in range(0x80):
        v = ref_decode(code, fmt)
        if not isinstance(v, str):
            out.append((v, code))
    return sorted(out)


_FINITE = {fmt: _finite_codes(fmt) for fmt in FORMATS}


def ref_encode(x, fmt, saturate=False):
    """The pattern of float ``x`` (a Python float, exact): round to nearest,
    ties to the even pattern, with the exponent range unbounded above (the
    value one unit past the largest finite is the overflow); an overflow is
    NaN (e4m3), infinity (e5m2), or with ``saturate`` the largest finite.
    NaN encodes with every low bit set and the input's sign."""
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | 0x7F
    codes = _FINITE[fmt]
    largest, largest_code = codes[-1]
    _, m_bits, _, has_inf = FORMATS[fmt]
    overflow = 0x7C if has_inf else 0x7F
    if math.isinf(x):
        return sign | (largest_code if saturate else overflow)
    a = abs(Fraction(x))
    unit = largest - codes[-2][0]   # the spacing of the top binade
    beyond = largest + unit          # "the next value", with the next code
    candidates = codes + [(beyond, largest_code + 1)]
    # The two neighbours of a (the candidates ascend).
    at = bisect.bisect_left([v for v, _ in candidates], min(a, beyond))
    best = None
    for value, code in candidates[max(at - 1, 0):at + 1]:
        d = abs(value - a)
        if best is None or d < best[0] or (d == best[0] and code % 2 == 0):
            best = (d, value, code)
    _, value, code = best
    if value == beyond:
        return sign | (largest_code if saturate else overflow)
    return sign | code


def as_float(v):
    if v == "nan":
        return math.nan
    if v == "-nan":
        return -math.nan
    if v == "inf":
        return math.inf
    if v == "-inf":
        return -math.inf
    if v == "-0":
        return -0.0
    return float(v)


def encode_inputs(fmt):
    """float32 values to encode: every value of the format, the ties between
    neighbours and the floats on either side of each tie, the overflow
    threshold and beyond, the underflow range, specials; both signs."""
    f32 = np.float32
    values = []
    codes = _FINITE[fmt]
    vals = [v for v, _ in codes]
    unit = vals[-1] - vals[-2]
    points = vals + [vals[-1] + unit / 2, vals[-1] + unit,
                     vals[-1] + 3 * unit / 2]
    for lo, hi in zip(vals, vals[1:]):
        points.append((lo + hi) / 2)
    points.append(vals[1] / 4)  # below half the smallest subnormal
    for p in points:
        x = f32(float(p))
        values += [x, np.nextafter(x, f32(np.inf)), np.nextafter(x, f32(0))]
    values += [f32(1e30), f32(3.4e38), f32(np.inf), f32(np.nan), f32(0.0),
               f32(1e-40), f32(1e-45)]
    values = np.array(values, dtype=np.float32)
    return np.concatenate([values, -values])


def ref_bits(xs, fmt, saturate=False):
    """ref_encode of every float32 in ``xs``, vectorised: the same rule in
    float64, where it is exact (an input has 24 significant bits, a value
    of the format at most 4, so the distances to the two neighbours are
    exact for every input below the overflow; larger ones overflow)."""
    with np.errstate(invalid="ignore"):
        xs = np.asarray(xs, dtype=np.float32).astype(np.float64)
    codes = _FINITE[fmt]
    vals = np.array([float(v) for v, _ in codes])
    code = np.array([c for _, c in codes])
    unit = vals[-1] - vals[-2]
    vals = np.append(vals, vals[-1] + unit)       # the overflow "value"
    code = np.append(code, code[-1] + 1)
    a = np.abs(xs)
    big = np.where(np.isfinite(a), a, np.inf)
    hi = np.clip(np.searchsorted(vals, np.minimum(big, vals[-1]),
                                 side="left"), 1, len(vals) - 1)
    lo = hi - 1
    d_lo, d_hi = a - vals[lo], vals[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (code[hi] % 2 == 0))
    idx = np.where(pick_hi, hi, lo)
    idx = np.where(a >= vals[-1], len(vals) - 1, idx)
    out = code[idx]
    _, _, _, has_inf = FORMATS[fmt]
    overflow = code[-2] if saturate else (0x7C if has_inf else 0x7F)
    out = np.where(idx == len(vals) - 1, overflow, out)
    out = np.where(np.isnan(xs), 0x7F, out)
    sign = np.where(np.signbit(xs), 0x80, 0)
    return (out | sign).astype(np.uint8)


def test_vectorised_reference_is_the_definition():
    xs = np.concatenate([encode_inputs(fmt) for fmt in FORMATS])
    for fmt in FORMATS:
        for sat in (False, True):
            want = [ref_encode(float(x), fmt, sat) for x in xs]
            np.testing.assert_array_equal(ref_bits(xs, fmt, sat), want)


def assert_same_floats(got, want):
    """Equal values (bit-for-bit for zeros: the sign counts), NaN where
    the reference is NaN."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), np.nonzero(np.isnan(got) != nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))


def test_reference_knows_the_formats():
    # The definition's landmarks, derived by hand.
    assert ref_decode(0x7E, "f8e4m3") == 448
    assert ref_decode(0x01, "f8e4m3") == Fraction(1, 512)
    assert ref_decode(0x08, "f8e4m3") == Fraction(1, 64)
    assert ref_decode(0x7F, "f8e4m3") == "nan"
    assert ref_decode(0x78, "f8e4m3") == 256      # e = 15 is finite
    assert ref_decode(0x7B, "f8e5m2") == 57344
    assert ref_decode(0x7C, "f8e5m2") == "inf"
    assert ref_decode(0x01, "f8e5m2") == Fraction(1, 65536)
    assert ref_encode(464.0, "f8e4m3") == 0x7E    # tie: to even (448)
    assert ref_encode(464.5, "f8e4m3") == 0x7F    # overflow: NaN
    assert ref_encode(464.5, "f8e4m3", True) == 0x7E
    assert ref_encode(61440.0, "f8e5m2") == 0x7C  # tie: to even (inf)
    assert ref_encode(61439.0, "f8e5m2") == 0x7B
    assert ref_encode(-1e9, "f8e5m2", True) == 0xFB
    assert ref_encode(1 / 1024, "f8e4m3") == 0x00  # half the smallest: even
    assert ref_encode(3 / 2048, "f8e4m3") == 0x01
    assert ref_encode(-0.0, "f8e4m3") == 0x80


# --------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------

ALL_BITS = np.arange(256, dtype=np.uint8)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("to", ["f32", "f16", "bf16"])
def test_decode_every_pattern(runtime, fmt, to):
    dt, out = DTYPES[fmt], DTYPES[to]

    @enigma.kernel
    def decode(X: dt, Y: out):
        i = enigma.thread_position_in_grid
        Y[i] = X[i]   # the store converts (exactly)

    out_dtype = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}[to]
    out = run_kernel(runtime, enigma.compile(decode), [ALL_BITS], out_dtype,
                     256, (256, 1, 1), (64, 1, 1))
    if to == "bf16":
        out = (out.astype(np.uint32) << 16).view(np.float32)
    want = [as_float(ref_decode(b, fmt)) for b in range(256)]
    assert_same_floats(out, want)


@pytest.mark.parametrize("fmt", FORMATS)
def test_encode_from_float(runtime, fmt):
    dt = DTYPES[fmt]

    @enigma.kernel
    def encode(X: enigma.f32, P: dt, S: dt):
        i = enigma.thread_position_in_grid
        P[i] = X[i]                                  # plain: a store
        S[i] = enigma.saturating_cast(X[i], dt)

    xs = encode_inputs(fmt)
    n = len(xs)
    compiled = enigma.compile(encode)
    raw = runtime.execute(compiled, [xs], output_sizes=[n, n], grid=(n, 1, 1),
                          threads=(32, 1, 1))
    plain = np.frombuffer(raw[0], np.uint8)
    sat = np.frombuffer(raw[1], np.uint8)
    np.testing.assert_array_equal(plain, ref_bits(xs, fmt))
    np.testing.assert_array_equal(sat, ref_bits(xs, fmt, saturate=True))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("src", ["f16", "bf16"])
def test_encode_every_half_and_bfloat(runtime, fmt, src):
    """All 65536 half / bfloat patterns, each rounded once to 8 bits."""
    dt, inp = DTYPES[fmt], DTYPES[src]

    @enigma.kernel
    def encode(X: inp, P: dt, S: dt):
        i = enigma.thread_position_in_grid
        P[i] = enigma.metal_cast(X[i], dt)
        S[i] = enigma.saturating_cast(X[i], dt)

    bits = np.arange(65536, dtype=np.uint16)
    if src == "f16":
        xs, values = bits.view(np.float16), bits.view(np.float16)
    else:
        xs, values = bits, (bits.astype(np.uint32) << 16).view(np.float32)
    raw = runtime.execute(enigma.compile(encode), [xs],
                          output_sizes=[65536, 65536], grid=(65536, 1, 1),
                          threads=(256, 1, 1))
    floats = values.astype(np.float32)
    np.testing.assert_array_equal(np.frombuffer(raw[0], np.uint8),
                                  ref_bits(floats, fmt))
    np.testing.assert_array_equal(np.frombuffer(raw[1], np.uint8),
                                  ref_bits(floats, fmt, saturate=True))


@pytest.mark.parametrize("fmt", FORMATS)
def test_vectors_convert_lane_by_lane(runtime, rng, fmt):
    dt = DTYPES[fmt]
    other = enigma.f8e5m2 if fmt == "f8e4m3" else enigma.f8e4m3

    @enigma.kernel
    def vec(X: enigma.f32, P: dt, S: dt, B: other, Y: enigma.f32):
        i = enigma.thread_position_in_grid * 4
        v = enigma.make_float4(X[i], X[i + 1], X[i + 2], X[i + 3])
        p = enigma.metal_cast(v, dt)                 # a 4-lane 8-bit vector
        s = enigma.saturating_cast(v * 2.0, dt)
        b = enigma.metal_cast(p, other)              # format to format
        back = enigma.metal_cast(p, "float") + 1.0   # computes in f32
        for k, lane in enumerate((p.x, p.y, p.z, p.w)):
            P[i + k] = lane
        for k, lane in enumerate((s.x, s.y, s.z, s.w)):
            S[i + k] = lane
        for k, lane in enumerate((b.x, b.y, b.z, b.w)):
            B[i + k] = lane
        for k, lane in enumerate((back.x, back.y, back.z, back.w)):
            Y[i + k] = lane

    n = 4 * 37
    xs = (rng.standard_normal(n) * rng.choice([1.0, 100.0, 1e4], n)) \
        .astype(np.float32)
    raw = runtime.execute(enigma.compile(vec), [xs],
                          output_sizes=[n, n, n, 4 * n], grid=(n // 4, 1, 1),
                          threads=(32, 1, 1))
    plain = ref_bits(xs, fmt)
    np.testing.assert_array_equal(np.frombuffer(raw[0], np.uint8), plain)
    np.testing.assert_array_equal(np.frombuffer(raw[1], np.uint8),
                                  ref_bits(xs * np.float32(2), fmt, True))
    other_name = "f8e5m2" if fmt == "f8e4m3" else "f8e4m3"
    decoded = np.array([as_float(ref_decode(int(b), fmt)) for b in plain])
    np.testing.assert_array_equal(
        np.frombuffer(raw[2], np.uint8),
        ref_bits(decoded.astype(np.float32), other_name))
    assert_same_floats(np.frombuffer(raw[3], np.float32),
                       (decoded + 1.0).astype(np.float32))


def test_arithmetic_computes_in_float(runtime, rng):
    """f8 op f8 is f32 (as CUDA's __nv_fp8 types); a Python number next to
    an 8-bit float is an f32, not rounded to 8 bits; comparisons, integer
    and bool conversions go through f32."""
    seen = {}

    @enigma.kernel
    def arith(A: enigma.f8e4m3, B: enigma.f8e5m2, Y: enigma.f32,
              Q: enigma.i32, C: enigma.u32):
        i = enigma.thread_position_in_grid
        a, b = A[i], B[i]
        s = a * b + a * 0.1
        seen["dtype"] = s.dtype
        Y[i] = s
        Q[i] = enigma.metal_cast(enigma.fmin(enigma.fmax(a, -100.0), 100.0),
                                 "int")
        C[i] = enigma.metal_cast(a < b, "uint") + \
            2 * enigma.metal_cast(enigma.metal_cast(a, "bool"), "uint")

    n = 300
    a_bits = rng.integers(0, 256, n).astype(np.uint8)
    b_bits = rng.integers(0, 256, n).astype(np.uint8)
    a_bits[:4] = [0x00, 0x80, 0x7F, 0x38]   # +0, -0 (false), NaN, 1.0
    compiled = enigma.compile(arith)
    assert seen["dtype"] == enigma.f32
    raw = runtime.execute(compiled, [a_bits, b_bits],
                          output_sizes=[4 * n, 4 * n, 4 * n],
                          grid=(n, 1, 1), threads=(64, 1, 1))
    a = np.array([as_float(ref_decode(int(x), "f8e4m3")) for x in a_bits],
                 np.float32)
    b = np.array([as_float(ref_decode(int(x), "f8e5m2")) for x in b_bits],
                 np.float32)
    with np.errstate(all="ignore"):
        want = a * b + a * np.float32(0.1)
        got = np.frombuffer(raw[0], np.float32)
        fin = np.isfinite(want)
        np.testing.assert_allclose(got[fin], want[fin], rtol=1e-6, atol=0)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        q = np.frombuffer(raw[1], np.int32)
        ok = ~np.isnan(a)
        np.testing.assert_array_equal(q[ok],
                                      np.clip(a[ok], -100, 100).astype(np.int32))
        c = np.frombuffer(raw[2], np.uint32)
        np.testing.assert_array_equal(
            c, (a < b).astype(np.uint32) + 2 * (a != 0).astype(np.uint32))


def test_constants_and_scalars(runtime):
    """Python numbers stored into 8-bit buffers round once from the exact
    number; a scalar parameter of an 8-bit type takes numbers too."""

    @enigma.kernel
    def consts(P: enigma.f8e4m3, s: enigma.Scalar(enigma.f8e5m2),
               Y: enigma.f32):
        P[0] = 0.1
        P[1] = 463.99
        P[2] = -1e-30
        P[3] = 3.0000001
        Y[0] = s

    raw = runtime.execute(enigma.compile(consts), [], output_sizes=[4, 4],
                          grid=(1, 1, 1), threads=(1, 1, 1), scalars=[-1.3])
    np.testing.assert_array_equal(
        np.frombuffer(raw[0], np.uint8),
        [ref_encode(0.1, "f8e4m3"), 0x7E, 0x80, ref_encode(3.0, "f8e4m3")])
    assert np.frombuffer(raw[1], np.float32)[0] == \
        as_float(ref_decode(ref_encode(-1.3, "f8e5m2"), "f8e5m2"))
    with pytest.raises(enigma.DispatchError, match="out of range"):
        runtime.execute(enigma.compile(consts), [], output_sizes=[4, 4],
                        grid=(1, 1, 1), threads=(1, 1, 1), scalars=[1e6])


def test_call_form_takes_bits(runtime):
    """The function-call form binds uint8 arrays of bits to 8-bit float
    parameters, and refuses float32 arrays with a clear message."""
    if runtime.name not in ("cpu", "metal-host"):
        pytest.skip("host arrays")

    @enigma.kernel
    def widen(X: enigma.f8e4m3, Y: enigma.f32):
        i = enigma.thread_position_in_grid
        Y[i] = X[i]

    x = enigma.fp8_encode(np.array([1.5, -2.0, 448.0, 0.015625]),
                          enigma.f8e4m3)
    y = np.zeros(4, np.float32)
    widen[4](x, y, runtime=runtime)
    np.testing.assert_array_equal(y, [1.5, -2.0, 448.0, 0.015625])
    with pytest.raises(enigma.DispatchError, match="uint8 arrays of its bits"):
        widen[4](np.zeros(4, np.float32), y, runtime=runtime)


def test_saturating_cast_needs_an_8bit_type():
    @enigma.kernel
    def bad(X: enigma.f32, Y: enigma.f16):
        i = enigma.thread_position_in_grid
        Y[i] = enigma.saturating_cast(X[i], enigma.f16)

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_fp8\.py:\d+: saturating_cast.*not an "
                             r"8-bit float"):
        enigma.compile(bad)


# --------------------------------------------------------------------------
# The host helpers and interop
# --------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_host_helpers(fmt):
    want = [as_float(ref_decode(b, fmt)) for b in range(256)]
    assert_same_floats(enigma.fp8_decode(ALL_BITS, DTYPES[fmt]), want)
    xs = encode_inputs(fmt)
    np.testing.assert_array_equal(enigma.fp8_encode(xs, fmt), ref_bits(xs, fmt))
    np.testing.assert_array_equal(enigma.fp8_encode(xs, fmt, saturate=True),
                                  ref_bits(xs, fmt, True))
    assert enigma.fp8_encode(np.zeros((2, 3)), fmt).shape == (2, 3)
    with pytest.raises(enigma.EnigmaError, match="not an 8-bit float"):
        enigma.fp8_encode(xs, "f16")
    # A misspelt format: the function's name and the two formats.
    for call in (enigma.fp8_encode, enigma.fp8_decode):
        with pytest.raises(enigma.EnigmaError,
                           match=f"{call.__name__}: 'f8e3m4' is not an "
                                 r"8-bit float; use enigma\.f8e4m3"):
            call(ALL_BITS if call is enigma.fp8_decode else xs, "f8e3m4")


def test_dtype_objects():
    assert enigma.f8e4m3.is_float and enigma.f8e4m3.is_float8
    assert enigma.f8e4m3.itemsize == 1 and enigma.f8e5m2.width == 8
    assert enigma.f8e4m3.metal_name == "uchar"   # Metal stores them as bytes
    assert enigma.f8e5m2 == "float8_e5m2" and enigma.f8e4m3 == "Float8E4M3"
    assert enigma.f8e4m3 != enigma.u8 and enigma.f8e4m3 != "uchar"
    assert repr(enigma.f8e5m2) == "enigma.f8e5m2"
    assert enigma.f8e4m3.numpy_dtype.itemsize == 1
    assert enigma.FP8_MAX == {"f8e4m3": 448.0, "f8e5m2": 57344.0}


@pytest.mark.parametrize("fmt", FORMATS)
def test_torch_float8_matches_plain_conversion(fmt):
    """PyTorch's float8 conversion is the plain form (OCP's non-saturating
    mode): equal bits on every finite input; tensors bind in place."""
    torch = pytest.importorskip("torch")
    tdtype = {"f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}[fmt]
    xs = encode_inputs(fmt)
    finite = np.isfinite(xs) & (np.abs(xs) < MAX_FINITE[fmt])
    theirs = torch.from_numpy(xs[finite]).to(tdtype).view(torch.uint8).numpy()
    np.testing.assert_array_equal(enigma.fp8_encode(xs[finite], fmt), theirs)
    tensor = torch.from_numpy(ALL_BITS.copy()).view(tdtype)
    assert_same_floats(enigma.fp8_decode(tensor, fmt),
                       tensor.to(torch.float32).numpy())

    @enigma.kernel
    def widen(X: DTYPES[fmt], Y: enigma.f32):
        i = enigma.thread_position_in_grid
        Y[i] = X[i]

    y = torch.zeros(256, dtype=torch.float32)
    widen[256](tensor, y, runtime=enigma.CpuRuntime())
    assert_same_floats(y.numpy(), tensor.to(torch.float32).numpy())
