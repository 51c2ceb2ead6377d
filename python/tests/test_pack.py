"""Pack/unpack and quantisation (docs/reference/vectors.md). References follow
the conversion rules of the Metal specification (float -> snorm/unorm: clamp,
NaN -> 0, scale, round to nearest even; lane 0 in the lowest bits), computed
with numpy in float32 (as the GPU does) or float64."""

import numpy as np
import pytest

import enigma
from conftest import run_kernel

THREADS = 64
SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5 / 255,
           1.5 / 255, 0.5 / 127, -0.5 / 127, 1e-30, 2.0, -2.0]

# name: (lanes, per-lane bits, signed)
FORMATS = {
    "snorm4x8": (4, [8] * 4, True),
    "unorm4x8": (4, [8] * 4, False),
    "snorm2x16": (2, [16] * 2, True),
    "unorm2x16": (2, [16] * 2, False),
    "srgb_unorm4x8": (4, [8] * 4, False),
    "unorm10a2": (4, [10, 10, 10, 2], False),
}


def _srgb_encode(c):
    c = np.where(np.isnan(c), 0, np.clip(c, 0, 1)).astype(np.float64)
    return np.where(c <= 0.0031308, c * 12.92,
                    1.055 * np.power(c, 1 / 2.4) - 0.055)


def _ref_pack(fmt, values):
    lanes, bits, signed = FORMATS[fmt]
    v = values.reshape(-1, lanes).astype(np.float32)
    if fmt == "srgb_unorm4x8":
        v = v.copy()
        v[:, :3] = _srgb_encode(v[:, :3]).astype(np.float32)
    out = np.zeros(len(v), np.uint64)
    shift = 0
    for lane, b in enumerate(bits):
        x = v[:, lane]
        lo = -1.0 if signed else 0.0
        scale = np.float32(2 ** (b - 1) - 1 if signed else 2 ** b - 1)
        clamped = np.where(np.isnan(x), np.float32(0), np.clip(x, lo, 1))
        q = np.rint(clamped.astype(np.float32) * scale).astype(np.int64)
        out |= (q.astype(np.uint64) & np.uint64(2 ** b - 1)) << np.uint64(shift)
        shift += b
    return out.astype(np.uint32)


def _ref_unpack(fmt, packed):
    lanes, bits, signed = FORMATS[fmt]
    p = packed.astype(np.uint64)
    out, shift = [], 0
    for b in bits:
        field = ((p >> np.uint64(shift)) & np.uint64(2 ** b - 1)).astype(np.int64)
        if signed:
            field = np.where(field >= 2 ** (b - 1), field - 2 ** b, field)
            out.append(np.maximum(-1.0, field / (2 ** (b - 1) - 1)))
        else:
            out.append(field / (2 ** b - 1))
        shift += b
    out = np.stack(out, axis=1)
    if fmt == "srgb_unorm4x8":
        c = out[:, :3]
        out[:, :3] = np.where(c <= 0.04045, c / 12.92,
                              np.power((c + 0.055) / 1.055, 2.4))
    return out


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("n", [1, 150])
def test_pack(runtime, rng, fmt, n):
    lanes = FORMATS[fmt][0]
    pack = getattr(enigma, f"pack_float_to_{fmt}")

    @enigma.kernel
    def packer(A: enigma.f32, P: enigma.u32):
        t = enigma.thread_position_in_grid
        v = enigma.make_vec(*[A[t * lanes + k] for k in range(lanes)])
        P[t] = pack(v)

    values = rng.uniform(-1.3, 1.3, n * lanes).astype(np.float32)
    special = np.array(SPECIAL, np.float32)
    values[:min(len(special), values.size)] = special[:values.size]
    out = run_kernel(runtime, enigma.compile(packer), [values], np.uint32, n,
                     (n, 1, 1), (THREADS, 1, 1))
    ref = _ref_pack(fmt, values)
    if fmt == "srgb_unorm4x8":
        # The transfer curve is evaluated in float on the device: allow one
        # step of the 8-bit result.
        got = out.view(np.uint8).astype(int)
        want = ref.view(np.uint8).astype(int)
        assert np.abs(got - want).max() <= 1
    else:
        np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_unpack(runtime, rng, fmt):
    lanes = FORMATS[fmt][0]
    unpack = getattr(enigma, "unpack_unorm4x8_srgb_to_float"
                     if fmt == "srgb_unorm4x8" else f"unpack_{fmt}_to_float")
    n = 300

    @enigma.kernel
    def unpacker(P: enigma.u32, A: enigma.f32):
        t = enigma.thread_position_in_grid
        v = unpack(P[t])
        assert v.lanes == lanes and v.dtype == enigma.f32
        for k in range(lanes):
            A[t * lanes + k] = enigma.vec_extract(v, k)

    packed = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    packed[:4] = [0, 0xFFFFFFFF, 0x80808080, 0x7F7F7F7F]
    out = run_kernel(runtime, enigma.compile(unpacker), [packed], np.float32,
                     lanes * n, (n, 1, 1), (THREADS, 1, 1)).reshape(n, lanes)
    np.testing.assert_allclose(out, _ref_unpack(fmt, packed), rtol=2e-6,
                               atol=1e-7)


def test_pack_takes_components_and_errors():
    @enigma.kernel
    def k(A: enigma.f32, P: enigma.u32):
        P[0] = enigma.pack_float_to_unorm4x8(A[0], A[1], 0.5, 1)
        P[1] = enigma.pack_float_to_unorm2x16(A[0], A[1])

    src = enigma.compile(k).metal_source
    # MSL calls Metal's own packing functions.
    assert "pack_float_to_unorm4x8(" in src
    assert "pack_float_to_unorm2x16(" in src

    def error_of(body):
        @enigma.kernel
        def bad(A: enigma.f32, P: enigma.u32):
            body(A, P)
        with pytest.raises(enigma.EnigmaError) as info:
            enigma.compile(bad)
        return str(info.value)

    msg = error_of(lambda A, P: enigma.pack_float_to_unorm4x8(
        enigma.make_float2(A[0], A[1])))
    assert "4-lane" in msg and "test_pack.py:" in msg
    assert "32-bit" in error_of(
        lambda A, P: enigma.unpack_unorm4x8_to_float(A[0]))


# --------------------------------------------------------------------------
# Quantisation
# --------------------------------------------------------------------------

def test_uint8x4_round_trip(runtime, rng):
    n = 257

    @enigma.kernel
    def q(A: enigma.u32, P: enigma.u32, U: enigma.u32):
        t = enigma.thread_position_in_grid
        p = enigma.pack_uint8x4(*[A[t * 4 + k] for k in range(4)])
        P[t] = p
        u = enigma.unpack_uint8x4(A[t * 4])     # a tuple of 4 uints
        assert len(u) == 4 and all(x.dtype == enigma.u32 for x in u)
        for k in range(4):
            U[t * 4 + k] = u[k]

    a = rng.integers(0, 2 ** 32, 4 * n, dtype=np.uint64).astype(np.uint32)
    a[:8] = [255, 256, 0, 1, 0xFFFFFFFF, 7, 128, 300]
    out = runtime.execute(enigma.compile(q), [a], output_sizes=[4 * n, 16 * n],
                          grid=(n, 1, 1), threads=(THREADS, 1, 1))
    p = np.frombuffer(out[0], np.uint32)
    u = np.frombuffer(out[1], np.uint32).reshape(n, 4)
    lanes = (a.reshape(n, 4) & 0xFF).astype(np.uint64)
    ref_p = lanes[:, 0] | lanes[:, 1] << 8 | lanes[:, 2] << 16 | lanes[:, 3] << 24
    np.testing.assert_array_equal(p, ref_p.astype(np.uint32))
    first = a[::4].astype(np.uint64)
    ref_u = np.stack([(first >> s) & 0xFF for s in (0, 8, 16, 24)], axis=1)
    np.testing.assert_array_equal(u, ref_u)


def test_int4x2(runtime, rng):
    n = 256   # every byte once for unpack

    @enigma.kernel
    def q(A: enigma.i32, B: enigma.u8, P: enigma.u32, U: enigma.i32):
        t = enigma.thread_position_in_grid
        P[t] = enigma.pack_int4x2(A[t * 2], A[t * 2 + 1])
        lo, hi = enigma.unpack_int4x2(B[t])      # two ints
        assert lo.dtype == enigma.i32 and hi.dtype == enigma.i32
        U[t * 2] = lo
        U[t * 2 + 1] = hi

    a = rng.integers(-8, 8, 2 * n).astype(np.int32)
    a[:4] = [-9, 8, 100, -100]   # wrap to 4 bits
    b = np.arange(256, dtype=np.uint8)
    rng.shuffle(b)
    out = runtime.execute(enigma.compile(q), [a, b], output_sizes=[4 * n, 8 * n],
                          grid=(n, 1, 1), threads=(THREADS, 1, 1))
    p = np.frombuffer(out[0], np.uint32)
    u = np.frombuffer(out[1], np.int32).reshape(n, 2)
    nib = a.reshape(n, 2) & 0xF
    np.testing.assert_array_equal(p, nib[:, 0] | nib[:, 1] << 4)

    def sext(x):
        return np.where(x >= 8, x - 16, x)
    bi = b.astype(np.int32)
    ref = np.stack([sext(bi & 0xF), sext(bi >> 4)], axis=1).astype(np.int32)
    np.testing.assert_array_equal(u, ref)


@pytest.mark.parametrize("dtype", ["i8", "u8"])
def test_dequantize_int8(runtime, rng, dtype):
    n = 200
    np_type = np.int8 if dtype == "i8" else np.uint8
    in_type = getattr(enigma, dtype)

    @enigma.kernel
    def dq(X: in_type, S: enigma.f32, Y: enigma.f32):
        t = enigma.thread_position_in_grid
        Y[t * 3] = enigma.dequantize_int8(X[t], S[t], -3)
        Y[t * 3 + 1] = enigma.dequantize_int8(X[t], 0.25)
        v = enigma.dequantize_int8(enigma.make_vec(X[t], X[t]), S[t], 128)
        Y[t * 3 + 2] = v.y

    info = np.iinfo(np_type)
    x = rng.integers(info.min, info.max + 1, n).astype(np_type)
    x[:2] = [info.min, info.max]
    s = rng.uniform(-2, 2, n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(dq), [x, s], np.float32, 3 * n,
                     (n, 1, 1), (THREADS, 1, 1)).reshape(n, 3)
    X, S = x.astype(np.float64), s.astype(np.float64)
    np.testing.assert_allclose(out[:, 0], (X + 3) * S, rtol=1e-6)
    np.testing.assert_allclose(out[:, 1], X * 0.25, rtol=1e-6)
    np.testing.assert_allclose(out[:, 2], (X - 128) * S, rtol=1e-6)
