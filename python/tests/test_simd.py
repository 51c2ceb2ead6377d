"""SIMD-group functions (32 lanes) end to end, against numpy float64
references computed per simdgroup of each threadgroup. Threadgroup sizes
that are not multiples of 32 and partial last threadgroups check that lanes
which do not exist take no part."""

import contextlib

import numpy as np
import pytest

import enigma
from enigma._tracing import IRValue, current_tracer

from conftest import run_kernel

# (grid, threadgroup): full simdgroups, a partial simdgroup per group, a
# partial last threadgroup, a threadgroup smaller than a simdgroup.
SHAPES = [(256, 64), (200, 48), (150, 70), (45, 20)]
WIDTH = 32


def lane_groups(n, tg, width=WIDTH):
    """(begin, end) of every lane group: consecutive thread indices of one
    threadgroup, cut at the threadgroup's (possibly partial) end."""
    for g0 in range(0, n, tg):
        size = min(tg, n - g0)
        for b in range(0, size, width):
            yield g0 + b, g0 + min(b + width, size)


def per_group(x, n, tg, fn, width=WIDTH, out_dtype=np.float64):
    out = np.zeros(n, dtype=out_dtype)
    for b, e in lane_groups(n, tg, width):
        out[b:e] = fn(x[b:e])
    return out


def random_input(rng, dtype, n, kind="sum"):
    if dtype == np.float32:
        if kind == "product":
            return rng.uniform(0.9, 1.1, n).astype(np.float32)
        return rng.standard_normal(n).astype(np.float32)
    if kind == "product":
        return rng.integers(-2, 3, n).astype(dtype) if dtype == np.int32 \
            else rng.integers(0, 3, n).astype(dtype)
    lo = -1000 if dtype == np.int32 else 0
    return rng.integers(lo, 1000, n).astype(dtype)


def as_wrapped(ref, dtype):
    """An exact integer reference wrapped to the kernel's integer type."""
    return np.asarray(ref, dtype=np.float64).astype(np.int64).astype(dtype)


def check(out, ref, dtype):
    if dtype == np.float32:
        np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-5)
    else:
        np.testing.assert_array_equal(out, as_wrapped(ref, dtype))


DTYPES = {np.float32: enigma.f32, np.int32: enigma.i32, np.uint32: enigma.u32}

REDUCTIONS = {
    "simd_sum": np.sum,
    "simd_product": np.prod,
    "simd_min": np.min,
    "simd_max": np.max,
    "simd_and": lambda v: np.bitwise_and.reduce(v.astype(np.int64)),
    "simd_or": lambda v: np.bitwise_or.reduce(v.astype(np.int64)),
    "simd_xor": lambda v: np.bitwise_xor.reduce(v.astype(np.int64)),
}


def reduction_kernel(name, et):
    fn = getattr(enigma, name)

    @enigma.kernel
    def reduce_kernel(A: et, O: et):
        tid = enigma.thread_position_in_grid
        O[tid] = fn(A[tid])

    return reduce_kernel


@pytest.mark.parametrize("grid,tg", SHAPES)
@pytest.mark.parametrize("np_dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions(runtime, rng, name, np_dtype, grid, tg):
    if name in ("simd_and", "simd_or", "simd_xor") and np_dtype == np.float32:
        pytest.skip("bitwise reductions take integers")
    kind = "product" if name == "simd_product" else "sum"
    a = random_input(rng, np_dtype, grid, kind)
    compiled = enigma.compile(reduction_kernel(name, DTYPES[np_dtype]))
    out = run_kernel(runtime, compiled, [a], np_dtype, grid, (grid, 1, 1), (tg, 1, 1))
    src = a.astype(np.float64) if np_dtype == np.float32 else a.astype(np.int64)
    ref = per_group(src, grid, tg, lambda v: REDUCTIONS[name](v))
    check(out, ref, np_dtype)


SCANS = {
    "simd_prefix_inclusive_sum": lambda v: np.cumsum(v),
    "simd_prefix_exclusive_sum": lambda v: np.concatenate([[0], np.cumsum(v)[:-1]]),
    "simd_prefix_inclusive_product": lambda v: np.cumprod(v),
    "simd_prefix_exclusive_product": lambda v: np.concatenate([[1], np.cumprod(v)[:-1]]),
}


@pytest.mark.parametrize("grid,tg", SHAPES)
@pytest.mark.parametrize("np_dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(SCANS))
def test_scans(runtime, rng, name, np_dtype, grid, tg):
    kind = "product" if "product" in name else "sum"
    a = random_input(rng, np_dtype, grid, kind)
    compiled = enigma.compile(reduction_kernel(name, DTYPES[np_dtype]))
    out = run_kernel(runtime, compiled, [a], np_dtype, grid, (grid, 1, 1), (tg, 1, 1))
    src = a.astype(np.float64) if np_dtype == np.float32 else a.astype(np.int64)
    check(out, per_group(src, grid, tg, SCANS[name]), np_dtype)


def shuffle_reference(x, arg, n, tg, kind, width=WIDTH):
    """Metal's shuffles with the documented rules: shuffle / broadcast read
    lane (arg % width), xor reads me ^ (arg % width), up me - arg, down
    me + arg; a source outside the group or not existing keeps the own
    value."""
    out = x.copy()
    for b, e in lane_groups(n, tg, width):
        count = e - b
        for i in range(b, e):
            me, a = i - b, int(arg[i])
            if kind in ("shuffle", "broadcast"):
                src = a % width
            elif kind == "shuffle_xor":
                src = me ^ (a % width)
            elif kind == "shuffle_up":
                src = me - a
            else:
                src = me + a
            if 0 <= src < count:
                out[i] = x[b + src]
    return out


SHUFFLES = ["shuffle", "shuffle_up", "shuffle_down", "shuffle_xor", "broadcast"]


@pytest.mark.parametrize("grid,tg", SHAPES)
@pytest.mark.parametrize("kind", SHUFFLES)
def test_shuffles_per_thread_operand(runtime, rng, kind, grid, tg):
    fn = getattr(enigma, "simd_" + kind)

    @enigma.kernel
    def shuffle_kernel(A: enigma.f32, L: enigma.u32, O: enigma.f32):
        tid = enigma.thread_position_in_grid
        O[tid] = fn(A[tid], L[tid])

    a = rng.standard_normal(grid).astype(np.float32)
    # Lane operands past the simdgroup too (taken modulo 32, or out of range
    # for up / down).
    lanes = rng.integers(0, 40, grid).astype(np.uint32)
    out = run_kernel(runtime, enigma.compile(shuffle_kernel), [a, lanes],
                     np.float32, grid, (grid, 1, 1), (tg, 1, 1))
    np.testing.assert_array_equal(out, shuffle_reference(a, lanes, grid, tg, kind))


@pytest.mark.parametrize("grid,tg", SHAPES)
@pytest.mark.parametrize("kind,arg", [("shuffle_up", 1), ("shuffle_up", 5),
                                      ("shuffle_down", 1), ("shuffle_down", 7),
                                      ("shuffle_xor", 16), ("shuffle_xor", 3),
                                      ("broadcast", 0), ("broadcast", 31),
                                      ("shuffle", 17)])
@pytest.mark.parametrize("np_dtype", [np.float32, np.int32, np.uint32])
def test_shuffles_constant_operand(runtime, rng, kind, arg, np_dtype, grid, tg):
    fn = getattr(enigma, "simd_" + kind)
    et = DTYPES[np_dtype]

    @enigma.kernel
    def shuffle_const(A: et, O: et):
        tid = enigma.thread_position_in_grid
        O[tid] = fn(A[tid], arg)

    a = random_input(rng, np_dtype, grid)
    out = run_kernel(runtime, enigma.compile(shuffle_const), [a], np_dtype,
                     grid, (grid, 1, 1), (tg, 1, 1))
    ref = shuffle_reference(a, np.full(grid, arg), grid, tg, kind)
    np.testing.assert_array_equal(out, ref)


def test_lane_queries_and_thread_query_operand(runtime, rng):
    """An operand that is a thread query (not an array) works, and the
    lanes are thread_index_in_threadgroup % 32."""

    @enigma.kernel
    def lanes(O: enigma.u32, P: enigma.u32):
        tid = enigma.thread_position_in_grid
        O[tid] = enigma.simd_sum(enigma.thread_index_in_simdgroup())
        P[tid] = enigma.simd_broadcast(enigma.thread_index_in_threadgroup(), 3)

    grid, tg = 150, 70
    raw = runtime.execute(enigma.compile(lanes), [], output_sizes=[grid * 4] * 2,
                          grid=(grid, 1, 1), threads=(tg, 1, 1))
    o, p = (np.frombuffer(r, dtype=np.uint32) for r in raw)
    lid = np.concatenate([np.arange(min(tg, grid - g)) for g in range(0, grid, tg)])
    ref_o = per_group(lid % 32, grid, tg, np.sum)
    ref_p = shuffle_reference(lid, np.full(grid, 3), grid, tg, "broadcast")
    np.testing.assert_array_equal(o, ref_o)
    np.testing.assert_array_equal(p, ref_p)


def test_small_and_half_types(runtime, rng):
    @enigma.kernel
    def small(A: enigma.f16, B: enigma.i16, C: enigma.u8, O: enigma.f16,
              P: enigma.i16, Q: enigma.u8):
        tid = enigma.thread_position_in_grid
        O[tid] = enigma.simd_max(A[tid])
        P[tid] = enigma.simd_min(B[tid])
        Q[tid] = enigma.simd_or(C[tid])

    grid, tg = 100, 40
    a = rng.standard_normal(grid).astype(np.float16)
    b = rng.integers(-3000, 3000, grid).astype(np.int16)
    c = rng.integers(0, 256, grid).astype(np.uint8)
    raw = runtime.execute(enigma.compile(small), [a, b, c],
                          output_sizes=[grid * 2, grid * 2, grid],
                          grid=(grid, 1, 1), threads=(tg, 1, 1))
    o = np.frombuffer(raw[0], dtype=np.float16)
    p = np.frombuffer(raw[1], dtype=np.int16)
    q = np.frombuffer(raw[2], dtype=np.uint8)
    np.testing.assert_array_equal(o, per_group(a, grid, tg, np.max, out_dtype=np.float16))
    np.testing.assert_array_equal(p, per_group(b, grid, tg, np.min, out_dtype=np.int16))
    np.testing.assert_array_equal(
        q, per_group(c, grid, tg, np.bitwise_or.reduce, out_dtype=np.uint8))


# --- Control flow around simd functions --------------------------------------
# (Through the core builder, so that these tests do not depend on the
# Python control-flow front end.)

@contextlib.contextmanager
def _if(cond):
    tracer = current_tracer()
    tracer.call("begin_if", cond._value, [], False)
    yield
    tracer.call("end_if", [])


@contextlib.contextmanager
def _for(lo, hi, inits):
    tracer = current_tracer()
    lo, hi = enigma.metal_cast(lo, "int"), enigma.metal_cast(hi, "int")
    step = enigma.metal_cast(1, "int")
    values = tracer.call("begin_for", lo._value, hi._value, step._value,
                         [v._value for v in inits])
    box = [IRValue(tracer, v) for v in values]
    # box is [iv, carried...]: assign box[1:] the next carried values; after
    # the loop box holds the loop's results.
    yield box
    results = tracer.call("end_for", [v._value for v in box[1:]])
    box[:] = [IRValue(tracer, v) for v in results]


def test_simd_in_uniform_loop(runtime, rng):
    @enigma.kernel
    def loop_sum(A: enigma.f32, O: enigma.f32):
        tid = enigma.thread_position_in_grid
        acc = enigma.metal_cast(0.0, "float")
        with _for(0, 4, [acc]) as box:
            i = enigma.metal_cast(box[0], "uint")
            x = A[tid * 4 + i]
            box[1] = box[1] + enigma.simd_sum(x) * 0.5
        O[tid] = box[0]

    grid, tg = 100, 48
    a = rng.standard_normal(grid * 4).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(loop_sum), [a], np.float32, grid,
                     (grid, 1, 1), (tg, 1, 1))
    a2 = a.astype(np.float64).reshape(grid, 4)
    ref = sum(per_group(a2[:, k], grid, tg, np.sum) * 0.5 for k in range(4))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_simd_under_simdgroup_uniform_if(runtime, rng):
    """An if whose condition is the simdgroup index is uniform per
    simdgroup, so simd functions may sit inside it; the CPU runs it once per
    simdgroup."""

    @enigma.kernel
    def odd_groups(A: enigma.f32, O: enigma.f32):
        tid = enigma.thread_position_in_grid
        x = A[tid]
        O[tid] = x
        sg = enigma.simdgroup_index_in_threadgroup()
        with _if((sg & 1) == 1):
            O[tid] = enigma.simd_sum(x) + enigma.simd_shuffle_down(x, 1)

    grid, tg = 300, 128
    a = rng.standard_normal(grid).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(odd_groups), [a], np.float32, grid,
                     (grid, 1, 1), (tg, 1, 1))
    a64 = a.astype(np.float64)
    ref = a64.copy()
    summed = per_group(a64, grid, tg, np.sum) + shuffle_reference(
        a64, np.ones(grid), grid, tg, "shuffle_down")
    for g0 in range(0, grid, tg):
        for i in range(g0, min(g0 + tg, grid)):
            if ((i - g0) // 32) % 2 == 1:
                ref[i] = summed[i]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_simd_in_loop_with_simdgroup_dependent_bound(runtime, rng):
    """Loop trip counts may differ between simdgroups (not between lanes)."""

    @enigma.kernel
    def tri(A: enigma.f32, O: enigma.f32):
        tid = enigma.thread_position_in_grid
        sg = enigma.simdgroup_index_in_threadgroup()
        acc = enigma.metal_cast(0.0, "float")
        with _for(0, sg + 1, [acc]) as box:
            box[1] = box[1] + enigma.simd_max(A[tid])
        O[tid] = box[0]

    grid, tg = 200, 96
    a = rng.standard_normal(grid).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(tri), [a], np.float32, grid,
                     (grid, 1, 1), (tg, 1, 1))
    m = per_group(a.astype(np.float64), grid, tg, np.max)
    lid = np.concatenate([np.arange(min(tg, grid - g)) for g in range(0, grid, tg)])
    np.testing.assert_allclose(out, m * (lid // 32 + 1), rtol=1e-5, atol=1e-5)


# --- Mistakes -----------------------------------------------------------------

def test_divergent_simd_op_is_rejected():
    @enigma.kernel
    def divergent(A: enigma.f32, O: enigma.f32):
        tid = enigma.thread_position_in_grid
        with _if(enigma.thread_index_in_simdgroup() < 16):
            O[tid] = enigma.simd_sum(A[tid])

    with pytest.raises(enigma.EnigmaError, match="every lane of the simdgroup"):
        enigma.compile(divergent)


@pytest.mark.parametrize("name,dtype,message", [
    ("simd_and", enigma.f32, "takes an integer"),
    ("simd_sum", enigma.b1, "not defined for bool"),
])
def test_bad_operand_types(name, dtype, message):
    fn = getattr(enigma, name)

    @enigma.kernel
    def bad(A: dtype, O: dtype):
        tid = enigma.thread_position_in_grid
        O[tid] = fn(A[tid])  # the error names this line

    with pytest.raises(enigma.EnigmaError, match=message) as info:
        enigma.compile(bad)
    assert "test_simd.py:" in str(info.value)


def test_float_lane_is_rejected():
    @enigma.kernel
    def bad_lane(A: enigma.f32, O: enigma.f32):
        tid = enigma.thread_position_in_grid
        O[tid] = enigma.simd_shuffle(A[tid], A[tid])

    with pytest.raises(enigma.EnigmaError, match="lane operand must be an integer"):
        enigma.compile(bad_lane)


def test_msl_source_uses_metal_names():
    @enigma.kernel
    def names(A: enigma.f32, I: enigma.i32, O: enigma.f32, P: enigma.i32):
        tid = enigma.thread_position_in_grid
        O[tid] = enigma.simd_prefix_exclusive_sum(A[tid]) + enigma.simd_shuffle_xor(A[tid], 1)
        P[tid] = enigma.simd_min(I[tid])

    src = enigma.compile(names).metal_source
    assert "simd_prefix_exclusive_sum(" in src
    assert "simd_shuffle_xor(" in src
    assert "simd_min((int)" in src


def test_docstrings():
    for name in list(REDUCTIONS) + list(SCANS) + ["simd_" + k for k in SHUFFLES]:
        fn = getattr(enigma, name)
        assert fn.__doc__ and name in fn.__doc__
