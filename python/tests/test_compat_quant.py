"""Quantisation and pack/unpack helpers as programs of the original Enigma
DSL use them: ``unpack_uint8x4`` and ``unpack_int4x2`` return tuples of
``uint`` / ``int`` lanes, ``pack_int4x2`` a ``uint``, ``pack_uint8x4``
converts each argument to ``uint``, ``dequantize_int8`` computes
``float(int(x) - int(zero_point)) * float(scale)``, and
``unpack_srgb_unorm4x8_to_float`` (Metal's
``unpack_unorm4x8_srgb_to_float``) exists. References are numpy.
"""

import numpy as np
import pytest

import enigma

from conftest import run_kernel

THREADS = 64


def _srgb_to_linear(c):
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


# --------------------------------------------------------------------------
# uint8x4
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 64, 100])
def test_unpack_uint8x4_tuple_round_trip(runtime, rng, n):
    """The original's runtime test: unpack into four names, pack back."""
    @enigma.kernel
    def k(In: enigma.u32, Out: enigma.u32):
        tid = enigma.thread_position_in_grid
        packed = In[tid]
        l0, l1, l2, l3 = enigma.unpack_uint8x4(packed)
        re = enigma.pack_uint8x4(l0, l1, l2, l3)
        Out[tid] = re

    a = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    a[0] = 0xFFFFFFFF
    out = run_kernel(runtime, enigma.compile(k), [a], np.uint32, n,
                     (n, 1, 1), (THREADS, 1, 1))
    np.testing.assert_array_equal(out, a)


def test_unpack_uint8x4_lanes_are_uint(runtime, rng):
    n = 150

    @enigma.kernel
    def widen(In: enigma.u32, Out: enigma.u32):
        tid = enigma.thread_position_in_grid
        lanes = enigma.unpack_uint8x4(In[tid])
        assert isinstance(lanes, tuple) and len(lanes) == 4
        assert all(x.dtype == enigma.u32 and x.lanes == 1 for x in lanes)
        b0, b1, b2, b3 = lanes
        # uint arithmetic: b3 * 1000 does not wrap at 8 bits.
        Out[tid * 2] = b3 * 1000 + b0
        Out[tid * 2 + 1] = b1 * 300 + b2

    a = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    out = run_kernel(runtime, enigma.compile(widen), [a], np.uint32, 2 * n,
                     (n, 1, 1), (THREADS, 1, 1)).reshape(n, 2)
    b = [(a.astype(np.uint64) >> s) & 0xFF for s in (0, 8, 16, 24)]
    np.testing.assert_array_equal(out[:, 0], b[3] * 1000 + b[0])
    np.testing.assert_array_equal(out[:, 1], b[1] * 300 + b[2])


def test_pack_uint8x4_converts_each_argument(runtime, rng):
    """Arguments of different types (uint, int, a Python int, a float) are
    each converted to uint and their low 8 bits packed, lane 0 lowest."""
    n = 100

    @enigma.kernel
    def pack(A: enigma.u32, B: enigma.i32, F: enigma.f32, Out: enigma.u32):
        tid = enigma.thread_position_in_grid
        p = enigma.pack_uint8x4(A[tid], B[tid], 7, F[tid])
        assert p.dtype == enigma.u32
        Out[tid] = p

    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(-2**31, 2**31, n).astype(np.int32)
    f = rng.uniform(0, 1000, n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(pack), [a, b, f], np.uint32, n,
                     (n, 1, 1), (THREADS, 1, 1))
    ref = ((a.astype(np.int64) & 0xFF) |
           ((b.astype(np.int64) & 0xFF) << 8) | (7 << 16) |
           ((f.astype(np.int64) & 0xFF) << 24))
    np.testing.assert_array_equal(out, ref.astype(np.uint32))


# --------------------------------------------------------------------------
# int4x2
# --------------------------------------------------------------------------

def _sext4(x):
    x = np.asarray(x, np.int64) & 0xF
    return np.where(x >= 8, x - 16, x)


def test_int4x2_pack_is_uint_unpack_is_int_tuple(runtime, rng):
    n = 256

    @enigma.kernel
    def nibbles(A: enigma.i32, W: enigma.u32, P: enigma.u32, U: enigma.i32):
        tid = enigma.thread_position_in_grid
        packed = enigma.pack_int4x2(A[tid * 2], A[tid * 2 + 1])
        assert packed.dtype == enigma.u32 and packed.lanes == 1
        # A uint result: adding 0x100 keeps the bit (a uchar would drop it).
        P[tid] = packed + 0x100
        lo, hi = enigma.unpack_int4x2(packed)
        assert lo.dtype == enigma.i32 and hi.dtype == enigma.i32
        # int lanes: * 1000 does not overflow a char.
        U[tid * 4] = lo * 1000
        U[tid * 4 + 1] = hi * 1000
        # Only bits 0-7 of a wider word are read.
        lo2, hi2 = enigma.unpack_int4x2(W[tid])
        U[tid * 4 + 2] = lo2
        U[tid * 4 + 3] = hi2

    a = rng.integers(-8, 8, 2 * n).astype(np.int32)
    a[:6] = [-9, 8, 100, -100, 7, -8]  # wrap to 4 bits
    w = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    p, u = runtime.execute(enigma.compile(nibbles), [a, w],
                           output_sizes=[4 * n, 16 * n], grid=(n, 1, 1),
                           threads=(THREADS, 1, 1))
    p = np.frombuffer(p, np.uint32)
    u = np.frombuffer(u, np.int32).reshape(n, 4)
    nib = a.reshape(n, 2).astype(np.int64) & 0xF
    np.testing.assert_array_equal(p, (nib[:, 0] | nib[:, 1] << 4) + 0x100)
    np.testing.assert_array_equal(u[:, 0], _sext4(a[0::2]) * 1000)
    np.testing.assert_array_equal(u[:, 1], _sext4(a[1::2]) * 1000)
    np.testing.assert_array_equal(u[:, 2], _sext4(w))
    np.testing.assert_array_equal(u[:, 3], _sext4(w.astype(np.int64) >> 4))


# --------------------------------------------------------------------------
# dequantize_int8
# --------------------------------------------------------------------------

def test_dequantize_int8_like_the_original(runtime, rng):
    n = 200

    @enigma.kernel
    def dq(X: enigma.i8, S: enigma.f32, F: enigma.f32, Y: enigma.f32):
        tid = enigma.thread_position_in_grid
        x, s = X[tid], S[tid]
        zero = enigma.metal_cast(0, "int")
        y0 = enigma.dequantize_int8(x, s, zero_point=zero)
        # A half scale is converted to float: the result is float.
        y1 = enigma.dequantize_int8(x, enigma.metal_cast(s, "half"), 3)
        # A float zero point is converted to int (2.7 -> 2).
        y2 = enigma.dequantize_int8(x, s, 2.7)
        # A float x is converted to int (toward zero).
        y3 = enigma.dequantize_int8(F[tid], 0.5)
        for k, y in enumerate((y0, y1, y2, y3)):
            assert y.dtype == enigma.f32, (k, y.dtype)
            Y[tid * 4 + k] = y

    x = rng.integers(-128, 128, n).astype(np.int8)
    x[:2] = [-128, 127]
    s = rng.uniform(-2, 2, n).astype(np.float32)
    f = rng.uniform(-50, 50, n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(dq), [x, s, f], np.float32,
                     4 * n, (n, 1, 1), (THREADS, 1, 1)).reshape(n, 4)
    xi = x.astype(np.int64)
    s_half = s.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(out[:, 0], (xi.astype(np.float32) * s))
    np.testing.assert_array_equal(out[:, 1],
                                  (xi - 3).astype(np.float32) * s_half)
    np.testing.assert_array_equal(out[:, 2], (xi - 2).astype(np.float32) * s)
    np.testing.assert_array_equal(out[:, 3],
                                  np.trunc(f).astype(np.float32) * 0.5)


def test_dequantize_int8_of_a_vector(runtime, rng):
    """Ours beyond the original: x may be a vector (lane by lane)."""
    n = 64

    @enigma.kernel
    def dqv(X: enigma.u8, Y: enigma.f32):
        tid = enigma.thread_position_in_grid
        v = enigma.dequantize_int8(enigma.make_vec(X[tid * 2], X[tid * 2 + 1]),
                                   0.25, 128)
        assert v.dtype == enigma.f32 and v.lanes == 2
        Y[tid * 2] = v.x
        Y[tid * 2 + 1] = v.y

    x = rng.integers(0, 256, 2 * n).astype(np.uint8)
    out = run_kernel(runtime, enigma.compile(dqv), [x], np.float32, 2 * n,
                     (n, 1, 1), (THREADS, 1, 1))
    np.testing.assert_array_equal(out, (x.astype(np.float32) - 128) * 0.25)


# --------------------------------------------------------------------------
# unpack_srgb_unorm4x8_to_float (the original's name of Metal's
# unpack_unorm4x8_srgb_to_float)
# --------------------------------------------------------------------------

def test_unpack_srgb_unorm4x8_to_float(runtime, rng):
    n = 300

    @enigma.kernel
    def unpack(P: enigma.u32, A: enigma.f32):
        tid = enigma.thread_position_in_grid
        v = enigma.unpack_srgb_unorm4x8_to_float(P[tid])
        assert v.dtype == enigma.f32 and v.lanes == 4
        w = enigma.unpack_unorm4x8_srgb_to_float(P[tid])
        A[tid * 8] = v.x
        A[tid * 8 + 1] = v.y
        A[tid * 8 + 2] = v.z
        A[tid * 8 + 3] = v.w
        A[tid * 8 + 4] = w.x
        A[tid * 8 + 5] = w.y
        A[tid * 8 + 6] = w.z
        A[tid * 8 + 7] = w.w

    packed = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    # Every byte value in every lane.
    ramp = np.arange(256, dtype=np.uint32)
    packed[:256] = ramp | ((255 - ramp) << 8) | (ramp << 16) | \
        (((ramp * 7) & 0xFF) << 24)
    compiled = enigma.compile(unpack)
    assert "unpack_unorm4x8_srgb_to_float(" in compiled.metal_source
    out = run_kernel(runtime, compiled, [packed], np.float32, 8 * n,
                     (n, 1, 1), (THREADS, 1, 1)).reshape(n, 8)
    b = np.stack([(packed.astype(np.uint64) >> s) & 0xFF
                  for s in (0, 8, 16, 24)], axis=1) / 255.0
    ref = b.copy()
    ref[:, :3] = _srgb_to_linear(b[:, :3])
    np.testing.assert_allclose(out[:, :4], ref, rtol=2e-6, atol=1e-9)
    np.testing.assert_array_equal(out[:, 4:], out[:, :4])
    assert out[0, 0] == 0.0 and out[255, 0] == 1.0


def test_srgb_round_trip_like_the_original_docs(runtime, rng):
    n = 128

    @enigma.kernel
    def round_trip(A: enigma.f32, B: enigma.f32):
        tid = enigma.thread_position_in_grid
        v = enigma.make_float4(A[tid * 4], A[tid * 4 + 1], A[tid * 4 + 2],
                               A[tid * 4 + 3])
        packed = enigma.pack_float_to_srgb_unorm4x8(v)
        back = enigma.unpack_srgb_unorm4x8_to_float(packed)
        B[tid * 4] = back.x
        B[tid * 4 + 1] = back.y
        B[tid * 4 + 2] = back.z
        B[tid * 4 + 3] = back.w

    a = rng.uniform(0, 1, 4 * n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(round_trip), [a], np.float32,
                     4 * n, (n, 1, 1), (THREADS, 1, 1)).reshape(n, 4)
    a = a.reshape(n, 4).astype(np.float64)
    # Alpha: 8-bit unorm. Colour: the sRGB code step is at most
    # 1/255 in sRGB space, i.e. a linear step below 1/255 * 2.4 / 1.055.
    assert np.abs(out[:, 3] - a[:, 3]).max() <= 0.5 / 255 + 1e-7
    assert np.abs(out[:, :3] - a[:, :3]).max() <= 2.4 / 1.055 / 255


def test_unpack_srgb_errors():
    @enigma.kernel
    def bad(A: enigma.f32, B: enigma.f32):
        v = enigma.unpack_srgb_unorm4x8_to_float(A[0])
        B[0] = v.x
    with pytest.raises(enigma.EnigmaError, match="32-bit integer") as info:
        enigma.compile(bad)
    assert "test_compat_quant.py:" in str(info.value)
