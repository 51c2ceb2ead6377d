"""Float -> integer conversions of every float type (f32, f16, bf16) to
every integer type, with NaN, infinities, values past either end of the
range and the boundaries themselves. Metal defines only the rounding
(toward zero); Enigma defines the rest the same on every runtime
(docs/language.md): NaN gives 0, a value below the range the minimum, above
it the maximum. Checked on scalars, on vectors, on the conversion of a
store into an integer buffer, and on constants the compiler may fold,
against a reference computed exactly in Python integers."""

import math

import numpy as np
import pytest

import enigma

INTS = ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"]
FLOATS = ["f32", "f16", "bf16"]
NP_INT = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
          "i32": np.int32, "u32": np.uint32, "i64": np.int64,
          "u64": np.uint64}


def int_range(t):
    bits = int(t[1:])
    if t[0] == "u":
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def reference(x: float, t: str) -> int:
    """Enigma's conversion, exactly: NaN -> 0, truncation toward zero,
    saturation at the ends of the range."""
    lo, hi = int_range(t)
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return hi if x > 0 else lo
    return min(max(math.trunc(x), lo), hi)


# Boundaries of every integer type, the float values next to them, the
# special values, and NaNs with payloads (quiet, signalling, negative).
SPECIAL = [0.0, -0.0, 0.5, -0.5, 0.999, -0.999, 1.0, -1.0, 1.5, -1.5, 2.5,
           -2.5, 1e-30, -1e-30, 1e30, -1e30, 3.4e38, -3.4e38, 65504.0,
           -65504.0, math.inf, -math.inf]
for _t in INTS:
    _lo, _hi = int_range(_t)
    for _v in (_lo, _hi, _hi + 1, _lo - 1):
        for _nudge in (-1.0, -0.5, 0.0, 0.5, 1.0):
            SPECIAL.append(float(_v) + _nudge)
        _f = np.float32(_v)
        SPECIAL += [float(np.nextafter(_f, np.float32(-np.inf))),
                    float(_f),
                    float(np.nextafter(_f, np.float32(np.inf)))]
NAN_BITS_F32 = [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0xFFBFFFFF,
                0x7FC12345]
NAN_BITS_F16 = [0x7E00, 0xFE00, 0x7C01, 0x7FFF, 0xFD55]
NAN_BITS_BF16 = [0x7FC0, 0xFFC0, 0x7F81, 0x7FFF, 0xFFA1]


def inputs(src, rng, count=256):
    """(array to pass, the exact float value of each element)."""
    with np.errstate(invalid="ignore", over="ignore"):  # signalling NaNs
        return _inputs(src, rng, count)


def _inputs(src, rng, count):
    random = rng.standard_normal(count) * np.exp2(rng.integers(-4, 72, count))
    values = np.concatenate([np.array(SPECIAL), random])
    if src == "f32":
        a = values.astype(np.float32)
        a = np.concatenate([a, np.array(NAN_BITS_F32, np.uint32).view(np.float32)])
        return a, a.astype(np.float64)
    if src == "f16":
        a = values.astype(np.float16)
        a = np.concatenate([a, np.array(NAN_BITS_F16, np.uint16).view(np.float16)])
        return a, a.astype(np.float64)
    # bf16: the float32 value truncated to its upper 16 bits, which is then
    # the exact bfloat16 value.
    bits = (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    bits = np.concatenate([bits, np.array(NAN_BITS_BF16, np.uint16)])
    exact = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits, exact


def expected(exact, t):
    return np.array([reference(float(x), t) for x in exact],
                    dtype=NP_INT[t])


def _kernel(src, path):
    S = getattr(enigma, src)
    i8, u8, i16, u16 = enigma.i8, enigma.u8, enigma.i16, enigma.u16
    i32, u32, i64, u64 = enigma.i32, enigma.u32, enigma.i64, enigma.u64

    @enigma.kernel
    def convert_all(A: S, O0: i8, O1: u8, O2: i16, O3: u16, O4: i32, O5: u32,
                    O6: i64, O7: u64):
        t = enigma.thread_position_in_grid
        outs = [O0, O1, O2, O3, O4, O5, O6, O7]
        if path == "scalar":
            x = A[t]
            for out, name in zip(outs, INTS):
                out[t] = enigma.metal_cast(x, name)
        elif path == "store":
            x = A[t]
            for out in outs:
                out[t] = x  # converted as assignment converts
        else:  # four lanes per thread, converted as one vector
            base = t * 4
            v = enigma.make_vec(A[base], A[base + 1], A[base + 2], A[base + 3])
            for out, name in zip(outs, INTS):
                w = enigma.metal_cast(v, name)
                for lane in range(4):
                    out[base + lane] = enigma.vec_extract(w, lane)
    return convert_all


@pytest.mark.parametrize("path", ["scalar", "vector", "store"])
@pytest.mark.parametrize("src", FLOATS)
def test_every_float_to_int_conversion_saturates(runtime, rng, src, path):
    a, exact = inputs(src, rng)
    n = len(a) - len(a) % 4 if path == "vector" else len(a)
    a, exact = a[:n], exact[:n]
    compiled = enigma.compile(_kernel(src, path))
    threads = n // 4 if path == "vector" else n
    sizes = [n * np.dtype(NP_INT[t]).itemsize for t in INTS]
    outs = runtime.execute(compiled, [a], output_sizes=sizes, grid=threads,
                           threads=min(threads, 64))
    for raw, t in zip(outs, INTS):
        got = np.frombuffer(raw, dtype=NP_INT[t])
        want = expected(exact, t)
        bad = np.nonzero(got != want)[0]
        assert len(bad) == 0, (
            f"{src} -> {t} ({path}): " + ", ".join(
                f"{exact[i]!r} gave {got[i]}, expected {want[i]}"
                for i in bad[:8]))


CONSTANTS = [math.nan, -math.nan, math.inf, -math.inf, 1e10, -1e10, 300.0,
             -300.0, 70000.0, -70000.0, 3.7, -3.7, 4294967296.0, 1e19, -1e19,
             1e20]


def _constant_kernel(src):
    S = getattr(enigma, src)

    @enigma.kernel
    def constants(O0: enigma.i8, O1: enigma.u8, O2: enigma.i16,
                  O3: enigma.u16, O4: enigma.i32, O5: enigma.u32,
                  O6: enigma.i64, O7: enigma.u64):
        outs = [O0, O1, O2, O3, O4, O5, O6, O7]
        for out, name in zip(outs, INTS):
            for i, c in enumerate(CONSTANTS):
                out[i] = enigma.metal_cast(enigma.metal_cast(c, S), name)
    return constants


@pytest.mark.parametrize("src", FLOATS)
def test_folded_constants_convert_the_same(runtime, src):
    """Conversions of constants may be folded by the compiler; they must
    give what the conversion at run time gives."""
    exact = np.array(CONSTANTS, dtype=np.float64)
    if src == "f16":
        with np.errstate(over="ignore"):
            exact = exact.astype(np.float16).astype(np.float64)
    elif src == "bf16":
        # Round to nearest even as metal_cast(c, bf16) does.
        f = exact.astype(np.float32)
        bits = f.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        rounded = np.where(np.isnan(f), bits, rounded).astype(np.uint32)
        exact = rounded.view(np.float32).astype(np.float64)
    else:
        exact = exact.astype(np.float32).astype(np.float64)
    n = len(CONSTANTS)
    sizes = [n * np.dtype(NP_INT[t]).itemsize for t in INTS]
    outs = runtime.execute(enigma.compile(_constant_kernel(src)), [],
                           output_sizes=sizes, grid=1, threads=1)
    for raw, t in zip(outs, INTS):
        got = np.frombuffer(raw, dtype=NP_INT[t])
        np.testing.assert_array_equal(got, expected(exact, t),
                                      err_msg=f"{src} -> {t}")


def test_the_msl_spells_the_conversion():
    """The Metal source converts through the function that defines the
    special cases, printed into the source (Metal leaves them undefined)."""
    msl = enigma.compile(_kernel("f32", "scalar")).metal_source
    assert "enigma_float_to_int<uint, uint>(v0)" in msl
    assert "enigma_float_to_int<int, int>(v0)" in msl
    assert "METAL_FUNC" not in msl


def test_the_fuzzer_interprets_conversions_the_same(rng):
    """tools/fuzz's numpy interpreter, the fuzzer's reference, converts by
    the same definition (and leaves no such element undetermined)."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "tools", "fuzz"))
    import interpret

    for src in FLOATS:
        _, exact = inputs(src, rng)
        value = interpret.Val(src, exact, np.zeros(len(exact)))
        for t in INTS:
            got = interpret.convert(value, t)
            assert [int(x) for x in got.v] == [int(x) for x in expected(exact, t)], (src, t)
            assert not got.e.any(), (src, t)
