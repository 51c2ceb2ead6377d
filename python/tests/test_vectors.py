"""Vector values (docs/reference/vectors.md): make_vec, make_float2/3/4,
vec_extract, .x .y .z .w, and element-wise operators on vectors, where a
scalar next to a vector is broadcast (Metal's rule) and comparisons give
bool vectors. References are numpy float64 / integer arithmetic."""

import numpy as np
import pytest

import enigma
from conftest import run_kernel

SIZES = [1, 3, 257]   # vectors per dispatch; 257 leaves a partial group
THREADS = 64


def _lanes(buf, i, n):
    return [buf[i + k] for k in range(n)]


@pytest.mark.parametrize("n", SIZES)
def test_float4_arithmetic(runtime, rng, n):
    @enigma.kernel
    def arith4(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        i = enigma.thread_position_in_grid * 4
        a = enigma.make_float4(*_lanes(A, i, 4))
        b = enigma.make_vec(*_lanes(B, i, 4))
        c = (a * b + 2.0 - a / 4) * -b
        c = enigma.make_float4(c.x, c.y, c.z, c.w) - 1
        for k, lane in enumerate((c.x, c.y, c.z, c.w)):
            C[i + k] = lane

    a = rng.uniform(-4, 4, 4 * n).astype(np.float32)
    b = rng.uniform(-4, 4, 4 * n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(arith4), [a, b], np.float32,
                     4 * n, (n, 1, 1), (THREADS, 1, 1))
    A, B = a.astype(np.float64), b.astype(np.float64)
    ref = (A * B + 2.0 - A / 4) * -B - 1
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lanes", [2, 3, 4])
def test_compare_gives_bool_vector(runtime, rng, lanes):
    n = 100

    @enigma.kernel
    def cmp(A: enigma.f32, B: enigma.f32, C: enigma.u32):
        i = enigma.thread_position_in_grid * lanes
        a = enigma.make_vec(*_lanes(A, i, lanes))
        b = enigma.make_vec(*_lanes(B, i, lanes))
        lt = a < b
        ge = a >= 0.0   # scalar broadcast
        for k in range(lanes):
            C[i + k] = enigma.metal_cast(enigma.vec_extract(lt, k), "uint") + \
                2 * enigma.metal_cast(enigma.vec_extract(ge, k), "uint")

    a = rng.uniform(-1, 1, lanes * n).astype(np.float32)
    b = rng.uniform(-1, 1, lanes * n).astype(np.float32)
    b[::7] = a[::7]   # equal lanes
    out = run_kernel(runtime, enigma.compile(cmp), [a, b], np.uint32,
                     lanes * n, (n, 1, 1), (THREADS, 1, 1))
    ref = (a < b).astype(np.uint32) + 2 * (a >= 0).astype(np.uint32)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("lanes", [2, 3, 4])
def test_any_and_all_of_bool_vectors(runtime, rng, lanes):
    n = 200

    @enigma.kernel
    def relational(A: enigma.f32, C: enigma.u32):
        i = enigma.thread_position_in_grid * lanes
        c = enigma.make_vec(*_lanes(A, i, lanes)) > 0.0
        some, every = enigma.any(c), enigma.all(c)
        assert some.lanes == 1 and every.lanes == 1
        with enigma.if_(some):
            C[i] = 1 + 2 * enigma.metal_cast(every, "uint")

    compiled = enigma.compile(relational)
    assert " | " in compiled.metal_source and " & " in compiled.metal_source
    a = rng.uniform(-1, 1, lanes * n).astype(np.float32)
    a[:lanes * 20] = np.abs(a[:lanes * 20])          # some rows all true
    a[lanes * 20:lanes * 40] = -np.abs(a[lanes * 20:lanes * 40])  # all false
    out = run_kernel(runtime, compiled, [a], np.uint32, lanes * n,
                     (n, 1, 1), (THREADS, 1, 1))
    positive = a.reshape(n, lanes) > 0
    want = np.zeros((n, lanes), np.uint32)
    want[:, 0] = np.where(positive.any(axis=1),
                          1 + 2 * positive.all(axis=1), 0)
    np.testing.assert_array_equal(out.reshape(n, lanes), want)


def test_any_and_all_errors():
    @enigma.kernel
    def bad(A: enigma.f32):
        t = enigma.thread_position_in_grid
        with enigma.if_(enigma.any(enigma.make_float2(A[t], A[t]))):
            A[t] = 0.0

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_vectors.py:\d+: any takes a bool vector"):
        enigma.compile(bad)


def test_integer_vectors(runtime, rng):
    n = 129

    @enigma.kernel
    def ints(A: enigma.u32, B: enigma.i32, C: enigma.u32, D: enigma.i32):
        i = enigma.thread_position_in_grid * 2
        a = enigma.make_vec(A[i], A[i + 1])
        b = enigma.make_vec(B[i], B[i + 1])
        u = ((a << 3) ^ a) + 7 * a
        s = -b // 3 + (b >> 1)
        C[i] = u.x
        C[i + 1] = u.y
        D[i] = s.x
        D[i + 1] = s.y

    a = rng.integers(0, 2**32, 2 * n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(-2**31 + 1, 2**31, 2 * n, dtype=np.int64).astype(np.int32)
    compiled = enigma.compile(ints)
    raw = runtime.execute(compiled, [a, b], output_sizes=[8 * n, 8 * n],
                          grid=(n, 1, 1), threads=(THREADS, 1, 1))
    c = np.frombuffer(raw[0], np.uint32)
    d = np.frombuffer(raw[1], np.int32)
    A = a.astype(np.uint64)
    ref_c = ((((A << 3) & 0xFFFFFFFF) ^ A) + 7 * A) & 0xFFFFFFFF
    np.testing.assert_array_equal(c, ref_c.astype(np.uint32))
    B = b.astype(np.int64)
    quot = np.trunc(-B / 3).astype(np.int64)   # C division truncates
    ref_d = (quot + (B >> 1) + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(d, ref_d.astype(np.int32))


def test_lanes_and_msl():
    seen = {}

    @enigma.kernel
    def k(A: enigma.f32):
        v = enigma.make_float3(A[0], 2, A[1])
        seen["lanes"] = (v.lanes, A[0].lanes)
        seen["repr"] = repr(v)
        # dot keeps the vectors alive through canonicalisation.
        A[0] = enigma.dot(v * A[2], v) + enigma.dot(
            enigma.make_float2(2.5), enigma.make_float2(A[3], A[4]))

    src = enigma.compile(k).metal_source
    assert seen["lanes"] == (3, 1)
    assert "x 3" in seen["repr"]
    # MSL prints Metal's dot, not its expansion into lanes.
    assert "float3(" in src and "dot(" in src and ".z" not in src
    assert "float2(2.5f)" in src


def test_make_vec_adopts_number_types(runtime):
    @enigma.kernel
    def k(A: enigma.u8, B: enigma.u32):
        v = enigma.make_vec(A[0], 200, 7)
        assert v.dtype == enigma.u8 and v.lanes == 3
        w = v + 100   # uchar arithmetic wraps
        B[0] = w.x
        B[1] = w.y
        B[2] = w.z

    a = np.array([250], np.uint8)
    out = run_kernel(runtime, enigma.compile(k), [a], np.uint32, 3,
                     (1, 1, 1), (1, 1, 1))
    np.testing.assert_array_equal(out, [(250 + 100) % 256, (200 + 100) % 256,
                                        107])


def _trace_error(body):
    @enigma.kernel
    def bad(A: enigma.f32, B: enigma.i32):
        body(A, B)

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(bad)
    return str(info.value)


def test_errors_name_user_line():
    msg = _trace_error(lambda A, B: enigma.make_vec(A[0], B[0]))
    assert "different types" in msg and "test_vectors.py:" in msg
    msg = _trace_error(lambda A, B: enigma.vec_extract(
        enigma.make_float2(A[0], A[1]), 2))
    assert "out of range" in msg and "test_vectors.py:" in msg
    msg = _trace_error(lambda A, B: enigma.make_float3(A[0], A[1], A[2]).w)
    assert "out of range" in msg and "test_vectors.py:" in msg
    msg = _trace_error(lambda A, B: A[0].x)
    assert "scalar" in msg
    msg = _trace_error(lambda A, B: enigma.make_vec(A[0]))
    assert "2, 3 or 4" in msg
    msg = _trace_error(lambda A, B: enigma.make_vec(1, 2, 3, 4, 5))
    assert "2, 3 or 4" in msg
    msg = _trace_error(lambda A, B: enigma.make_float2(A[0], A[1]) +
                       enigma.make_float3(A[0], A[1], A[2]))
    assert "lane counts" in msg and "test_vectors.py:" in msg
    msg = _trace_error(lambda A, B: enigma.vec_extract(
        enigma.make_float2(A[0], A[1]), B[0]))
    assert "constant" in msg
    msg = _trace_error(lambda A, B: A.__setitem__(
        0, enigma.make_float2(A[0], A[1])))
    assert "2-lane vector" in msg


def test_a_subscript_reads_a_lane_as_metal_does(runtime, rng):
    n = 65

    @enigma.kernel
    def lanes(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid * 3
        v = enigma.make_float3(A[i], A[i + 1], A[i + 2]) * 2.0
        B[i] = v[2]
        B[i + 1] = v[0]
        B[i + 2] = v[1] - v.y

    a = rng.uniform(-4, 4, 3 * n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(lanes), [a], np.float32, 3 * n,
                     (n, 1, 1), (THREADS, 1, 1)).reshape(n, 3)
    ref = a.astype(np.float64).reshape(n, 3) * 2
    np.testing.assert_array_equal(out[:, 0], ref[:, 2])
    np.testing.assert_array_equal(out[:, 1], ref[:, 0])
    np.testing.assert_array_equal(out[:, 2], 0)


@pytest.mark.parametrize("body,match", [
    (lambda A, B: enigma.make_float3(A[0], A[1], A[2])[3],
     r"v\[3\] is out of range for a 3-lane vector"),
    (lambda A, B: enigma.make_float2(A[0], A[1])[-1],
     r"v\[-1\] is out of range for a 2-lane vector"),
    (lambda A, B: enigma.make_float2(A[0], A[1])[B[0]],
     r"a lane index must be a constant \(a Python int, 0 to 1\)"),
    (lambda A, B: enigma.make_float2(A[0], A[1]).__setitem__(0, 1.0),
     r"traced values cannot be changed in place"),
    # A newcomer's numpy habit on a flat buffer: A[i] is a float, not a row.
    (lambda A, B: A[0][1],
     r"f32 scalar value cannot be indexed.*not A\[y\]\[x\]"),
    (lambda A, B: A[0].__setitem__(1, 2.0),
     r"f32 scalar value cannot be indexed"),
])
def test_bad_subscripts_of_values_name_the_line(body, match):
    msg = _trace_error(body)
    assert "test_vectors.py:" in msg
    import re
    assert re.search(match, msg), msg


def test_a_fragment_subscript_says_where_its_elements_are():
    msg = _trace_error(lambda A, B: enigma.mma_zeros(8, 8)[0])
    assert "this 8 x 8 f32 fragment cannot be indexed" in msg, msg
    assert "test_vectors.py:" in msg
