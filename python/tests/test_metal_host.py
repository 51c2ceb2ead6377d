"""The MSL host runtime (enigma.MetalHostRuntime): the surface it shares with
the other runtimes, hand-written Metal through execute_source, Metal's
execution model (barriers, divergent simdgroup functions, partial groups),
and its errors: faults, compile errors and unsupported constructs."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import enigma


@pytest.fixture(scope="module")
def msl():
    try:
        return enigma.MetalHostRuntime()
    except enigma.BackendUnavailableError as e:
        pytest.skip(str(e))


def _u32(raw):
    return np.frombuffer(raw, np.uint32)


def _f32(raw):
    return np.frombuffer(raw, np.float32)


# --- Enigma kernels: the generated Metal source itself runs -----------------

def _group_scale_kernel(group):
    @enigma.kernel
    def group_scale(a: enigma.f32, out: enigma.f32):
        s = enigma.threadgroup_alloc(enigma.f32, group)
        lid = enigma.thread_position_in_threadgroup()
        tid = enigma.thread_position_in_grid
        s[lid] = a[tid]
        enigma.barrier()
        # Each thread reads its mirror slot and the simdgroup's sum.
        out[tid] = s[group - 1 - lid] + enigma.simd_sum(a[tid])
    return group_scale


@pytest.mark.parametrize("groups", [1, 7])
def test_runs_the_generated_metal_source(msl, rng, groups):
    group = 64
    compiled = enigma.compile(_group_scale_kernel(group))
    a = rng.standard_normal(group * groups).astype(np.float32)
    out = _f32(msl.execute(compiled, [a], output_size=a.nbytes,
                           grid=a.size, threads=group))
    blocks = a.astype(np.float64).reshape(groups, group)
    sums = blocks.reshape(groups, group // 32, 32).sum(axis=2)
    want = blocks[:, ::-1] + np.repeat(sums, 32, axis=1)
    np.testing.assert_allclose(out, want.reshape(-1), rtol=1e-5, atol=1e-5)
    assert msl.name == "metal-host"
    assert repr(msl) == "<enigma.MetalHostRuntime>"


def test_prepare_dispatches_again(msl, rng):
    source = """
#include <metal_stdlib>
using namespace metal;
kernel void accumulate(device const float *a [[buffer(0)]],
                       device float *out [[buffer(1)]],
                       uint gid [[thread_position_in_grid]]) {
    out[gid] += a[gid];
}
"""
    a = rng.standard_normal(100).astype(np.float32)
    compiled = msl.compile_source(source, "accumulate")
    prepared = msl.prepare(compiled, [a], output_size=a.nbytes)
    for _ in range(3):
        prepared.dispatch(100, 32)
    np.testing.assert_allclose(_f32(prepared.read_output()), 3 * a.astype(
        np.float64), rtol=1e-6)
    us = prepared.dispatch_timed(100, 32)
    assert us > 0
    prepared.release()


# --- Metal's execution model ---------------------------------------------------

DIVERGENT = """
#include <metal_stdlib>
using namespace metal;
// Lanes below 16 and the others call different simdgroup functions: each
// takes part only with the lanes on its own path.
kernel void divergent(device const int *a [[buffer(0)]],
                      device int *out [[buffer(1)]],
                      uint gid [[thread_position_in_grid]],
                      uint lane [[thread_index_in_simdgroup]]) {
    int v = a[gid];
    if (lane < 16)
        out[gid] = simd_sum(v);
    else
        out[gid] = simd_max(v) + simd_prefix_exclusive_sum(v) * 0;
}
"""


def test_divergent_simdgroup_functions(msl, rng):
    a = rng.integers(-1000, 1000, size=64, dtype=np.int32)
    out = np.frombuffer(msl.execute_source(DIVERGENT, "divergent", [a],
                                           output_size=a.nbytes, grid=64,
                                           threads=64), np.int32)
    for s in range(2):
        low = a[s * 32:s * 32 + 16]
        high = a[s * 32 + 16:s * 32 + 32]
        np.testing.assert_array_equal(out[s * 32:s * 32 + 16], low.sum())
        np.testing.assert_array_equal(out[s * 32 + 16:s * 32 + 32], high.max())


EARLY_RETURN = """
#include <metal_stdlib>
using namespace metal;
// Threads past the end return before the barrier; the others still meet
// there (threads that returned take no part, as on Apple GPUs).
kernel void reverse(device const float *a [[buffer(0)]],
                    device float *out [[buffer(1)]],
                    constant uint &n [[buffer(2)]],
                    uint gid [[thread_position_in_grid]],
                    uint lid [[thread_position_in_threadgroup]],
                    uint group [[threadgroup_position_in_grid]]) {
    threadgroup float tile[64];
    if (gid >= n)
        return;
    tile[lid] = a[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const uint last = min(63u, n - 1 - group * 64);
    out[gid] = tile[last - lid];
}
"""


@pytest.mark.parametrize("n", [1, 63, 64, 100, 1000])
def test_return_before_barrier(msl, rng, n):
    a = rng.standard_normal(n).astype(np.float32)
    groups = -(-n // 64)
    out = _f32(msl.execute_source(EARLY_RETURN, "reverse", [a],
                                  output_size=a.nbytes, grid=groups * 64,
                                  threads=64, scalars=[n]))
    want = np.concatenate([a[i:i + 64][::-1] for i in range(0, n, 64)])
    np.testing.assert_array_equal(out, want)


PARTIAL = """
#include <metal_stdlib>
using namespace metal;
kernel void lanes(device const uint *a [[buffer(0)]],
                  device uint *out [[buffer(1)]],
                  uint gid [[thread_position_in_grid]]) {
    const uint v = a[gid];
    out[gid * 6 + 0] = simd_sum(v);
    out[gid * 6 + 1] = simd_prefix_inclusive_sum(v);
    out[gid * 6 + 2] = simd_shuffle_down(v, 3);
    out[gid * 6 + 3] = quad_sum(v);
    out[gid * 6 + 4] = simd_broadcast_first(v);
    out[gid * 6 + 5] = uint(ulong(simd_ballot(v % 2 == 1)));
}
"""


@pytest.mark.parametrize("n,group", [(1, 1), (37, 37), (70, 64), (100, 1024)])
def test_partial_simdgroups_and_quads(msl, rng, n, group):
    a = rng.integers(0, 1000, size=n, dtype=np.uint32)
    out = _u32(msl.execute_source(PARTIAL, "lanes", [a],
                                  output_size=n * 6 * 4, grid=n,
                                  threads=group)).reshape(n, 6)
    for start in range(0, n, group):  # each (maybe partial) threadgroup
        size = min(group, n - start)
        for s in range(0, size, 32):
            lanes = a[start + s:start + min(s + 32, size)]
            k = len(lanes)
            rows = out[start + s:start + s + k]
            np.testing.assert_array_equal(rows[:, 0], lanes.sum())
            np.testing.assert_array_equal(rows[:, 1], np.cumsum(lanes))
            down = [lanes[i + 3] if i + 3 < k else lanes[i] for i in range(k)]
            np.testing.assert_array_equal(rows[:, 2], down)
            quads = [lanes[i - i % 4:i - i % 4 + 4].sum() for i in range(k)]
            np.testing.assert_array_equal(rows[:, 3], quads)
            np.testing.assert_array_equal(rows[:, 4], lanes[0])
            ballot = sum(1 << i for i in range(k) if lanes[i] % 2 == 1)
            np.testing.assert_array_equal(rows[:, 5], ballot)


POSITIONS = """
#include <metal_stdlib>
using namespace metal;
kernel void positions(device uint *out [[buffer(0)]],
                      ushort3 tpos [[thread_position_in_threadgroup]],
                      uint2 gpos [[thread_position_in_grid]],
                      uint3 tg_size [[threads_per_threadgroup]],
                      uint3 dispatched [[dispatch_threads_per_threadgroup]],
                      uint grid_width [[threads_per_grid]],
                      ushort quad_lane [[thread_index_in_quadgroup]],
                      uint quad [[quadgroup_index_in_threadgroup]],
                      uint quads [[quadgroups_per_threadgroup]],
                      uint width [[thread_execution_width]]) {
    const uint i = (gpos.y * grid_width + gpos.x) * 8;
    out[i + 0] = tpos.x + 100 * tpos.y;
    out[i + 1] = tg_size.x + 100 * tg_size.y;
    out[i + 2] = dispatched.x + 100 * dispatched.y;
    out[i + 3] = quad_lane;
    out[i + 4] = quad;
    out[i + 5] = quads;
    out[i + 6] = width;
    out[i + 7] = tpos.z;
}
"""


def test_thread_position_attributes(msl):
    gx, gy, tx, ty = 10, 3, 4, 2
    out = _u32(msl.execute_source(POSITIONS, "positions", [],
                                  output_size=gx * gy * 8 * 4, grid=(gx, gy),
                                  threads=(tx, ty))).reshape(gy, gx, 8)
    for y in range(gy):
        for x in range(gx):
            lx, ly = x % tx, y % ty
            sx, sy = min(tx, gx - x // tx * tx), min(ty, gy - y // ty * ty)
            flat = ly * sx + lx
            assert list(out[y, x]) == [lx + 100 * ly, sx + 100 * sy,
                                       tx + 100 * ty, flat % 4, flat // 4,
                                       (sx * sy + 3) // 4, 32, 0]


def test_parameter_forms(msl, rng):
    # [[kernel]] spelling, buffer indices with gaps and out of declaration
    # order (bound in index order), a half scalar, a float4 constant
    # reference (an input buffer) and a device reference (an output).
    source = """
#include <metal_stdlib>
using namespace metal;
[[kernel]] void forms(device float *out [[buffer(7)]],
                      constant half &scale [[buffer(3)]],
                      device const float *a [[buffer(0)]],
                      constant float4 &offset [[buffer(2)]],
                      device atomic_uint &count [[buffer(9)]],
                      uint gid [[thread_position_in_grid]]) {
    out[gid] = a[gid] * float(scale) + offset[gid % 4];
    atomic_fetch_add_explicit(&count, 1u, memory_order_relaxed);
}
"""
    a = rng.standard_normal(10).astype(np.float32)
    offset = rng.standard_normal(4).astype(np.float32)
    compiled = msl.compile_source(source, "forms")
    assert [(p.name, p.kind, p.dtype.name, p.vec_width)
            for p in compiled.params] == [
        ("a", "buffer", "f32", 1), ("offset", "buffer", "f32", 4),
        ("scale", "scalar", "f16", 1), ("out", "buffer", "f32", 1),
        ("count", "buffer", "u32", 1)]
    out, count = msl.execute(compiled, [a, offset], output_sizes=[40, 4],
                             grid=10, threads=4, scalars=[0.5])
    want = a * np.float32(0.5) + offset[np.arange(10) % 4]
    np.testing.assert_array_equal(_f32(out), want)
    assert _u32(count)[0] == 10


def test_threadgroup_memory_is_per_group(msl):
    source = """
#include <metal_stdlib>
using namespace metal;
kernel void mine(device uint *out [[buffer(0)]],
                 uint gid [[thread_position_in_grid]],
                 uint lid [[thread_index_in_threadgroup]],
                 uint group [[threadgroup_position_in_grid]]) {
    threadgroup uint owner[1];
    if (lid == 0)
        owner[0] = group;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int spin = 0; spin < 50; ++spin)  // give other groups time to run
        threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = owner[0];
}
"""
    groups, size = 300, 32
    out = _u32(msl.execute_source(source, "mine", [],
                                  output_size=groups * size * 4,
                                  grid=groups * size, threads=size))
    np.testing.assert_array_equal(out, np.repeat(np.arange(groups), size))


def test_device_atomics_across_threadgroups(msl):
    source = """
#include <metal_stdlib>
using namespace metal;
kernel void count(device atomic_uint *counter [[buffer(0)]],
                  device atomic_float *total [[buffer(1)]]) {
    atomic_fetch_add_explicit(counter, 1u, memory_order_relaxed);
    atomic_fetch_add_explicit(total, 0.5f, memory_order_relaxed);
}
"""
    n = 200_000
    counter, total = msl.execute_source(source, "count", [],
                                        output_sizes=[4, 4], grid=n,
                                        threads=256)
    assert _u32(counter)[0] == n
    assert _f32(total)[0] == n / 2  # exact: every partial sum is a multiple of 0.5 < 2^24


def test_float_and_bool_atomics_and_bool_shuffles(msl, rng):
    source = """
#include <metal_stdlib>
using namespace metal;
kernel void misc(device const float *a [[buffer(0)]],
                 device atomic_float *slot [[buffer(1)]],
                 device atomic_bool *flag [[buffer(2)]],
                 device float *seen [[buffer(3)]],
                 device uint *odd_neighbour [[buffer(4)]],
                 uint gid [[thread_position_in_grid]],
                 uint lane [[thread_index_in_simdgroup]]) {
    if (gid == 0) {
        atomic_store_explicit(slot, 1.5f, memory_order_relaxed);
        float old = atomic_exchange_explicit(slot, a[0], memory_order_relaxed);
        float expected = a[0];
        bool swapped = atomic_compare_exchange_weak_explicit(
            slot, &expected, old + a[1], memory_order_relaxed,
            memory_order_relaxed);
        seen[0] = old;
        seen[1] = atomic_load_explicit(slot, memory_order_relaxed);
        atomic_store_explicit(flag, swapped, memory_order_relaxed);
    }
    const bool odd = (gid & 1u) != 0u;
    odd_neighbour[gid] = uint(simd_shuffle_xor(odd, ushort(1))) +
                         2u * uint(simd_broadcast(odd, ushort(3)));
}
"""
    a = rng.standard_normal(2).astype(np.float32)
    slot, flag, seen, neighbour = msl.execute_source(
        source, "misc", [a], output_sizes=[4, 1, 8, 32 * 4], grid=32,
        threads=32)
    assert _f32(slot)[0] == np.float32(1.5) + a[1]
    assert flag == b"\x01"
    np.testing.assert_array_equal(_f32(seen), [1.5, np.float32(1.5) + a[1]])
    want = [(1 - i % 2) + 2 for i in range(32)]
    np.testing.assert_array_equal(_u32(neighbour), want)


def test_function_constants_and_is_defined(msl):
    source = """
#include <metal_stdlib>
using namespace metal;
constant float scale [[function_constant(0)]];
constant int offset [[function_constant(1)]];
constant bool has_offset = is_function_constant_defined(offset);
kernel void affine(device const float *a [[buffer(0)]],
                   device float *out [[buffer(1)]],
                   uint gid [[thread_position_in_grid]]) {
    out[gid] = a[gid] * scale + (has_offset ? float(offset) : -1.0f);
}
"""
    a = np.arange(8, dtype=np.float32)
    with_offset = _f32(msl.execute_source(
        source, "affine", [a], output_size=32, grid=8, threads=8,
        constants={0: ("float", 2.5), 1: ("int", -3)}))
    np.testing.assert_array_equal(with_offset, a * 2.5 - 3)
    without = _f32(msl.execute_source(source, "affine", [a], output_size=32,
                                      grid=8, threads=8,
                                      constants={0: ("float", 2.0)}))
    np.testing.assert_array_equal(without, a * 2 - 1)


def test_struct_buffers_take_bytes(msl, rng):
    source = """
#include <metal_stdlib>
using namespace metal;
struct Particle {
    float2 position;
    float2 velocity;
};
struct Step {
    float dt;
    uint count;
};
kernel void advance(device Particle *particles [[buffer(0)]],
                    constant Step &step [[buffer(1)]],
                    device float2 *moved [[buffer(2)]],
                    uint gid [[thread_position_in_grid]]) {
    if (gid >= step.count)
        return;
    Particle p = particles[gid];
    p.position += p.velocity * step.dt;
    moved[gid] = p.position;
}
"""
    n = 50
    particle = np.dtype([("position", np.float32, 2),
                         ("velocity", np.float32, 2)])
    particles = np.zeros(n, particle)
    particles["position"] = rng.standard_normal((n, 2))
    particles["velocity"] = rng.standard_normal((n, 2))
    step = np.zeros(1, np.dtype([("dt", np.float32), ("count", np.uint32)]))
    step["dt"], step["count"] = 0.25, n
    moved = _f32(msl.execute_source(source, "advance", [particles, step],
                                    output_size=n * 8, grid=64, threads=32))
    want = (particles["position"].astype(np.float64)
            + particles["velocity"].astype(np.float64) * np.float32(0.25))
    np.testing.assert_allclose(moved.reshape(n, 2), want, rtol=1e-6)


def test_simdgroup_matrix_accumulates_in_place(msl, rng):
    # Every lane loads C, multiplies and stores C back: on a GPU the lanes
    # do each step together, so C gains A * B once per step, not once per
    # lane.
    source = """
#include <metal_stdlib>
using namespace metal;
kernel void twice(device const float *A [[buffer(0)]],
                  device const float *B [[buffer(1)]],
                  device float *C [[buffer(2)]]) {
    for (int step = 0; step < 2; ++step) {
        simdgroup_float8x8 a, b, c;
        simdgroup_load(c, C, 8);
        simdgroup_load(a, A, 8);
        simdgroup_load(b, B, 8);
        simdgroup_multiply_accumulate(c, a, b, c);
        simdgroup_store(c, C, 8);
    }
}
"""
    a = rng.standard_normal((8, 8)).astype(np.float32)
    b = rng.standard_normal((8, 8)).astype(np.float32)
    out = _f32(msl.execute_source(source, "twice", [a, b], output_size=256,
                                  grid=32, threads=32)).reshape(8, 8)
    np.testing.assert_allclose(out, 2 * (a.astype(np.float64) @ b),
                               rtol=1e-5, atol=1e-5)


THREAD_ELEMENTS = """
#include <metal_stdlib>
using namespace metal;
// Operands built lane by lane through thread_elements() (lane l holds row
// fm(l), columns fn(l) and the next), the product read back the same way;
// then a loaded tile scaled in place through its pairs and stored whole.
kernel void pairs(device const float *A [[buffer(0)]],
                  device const float *B [[buffer(1)]],
                  device float *C [[buffer(2)]],
                  device float *S [[buffer(3)]],
                  ushort lane [[thread_index_in_simdgroup]]) {
    const uint r = ((lane >> 2) & 4) + ((lane >> 1) & 3);
    const uint c = ((lane >> 2) & 2) * 2 + (lane & 1) * 2;
    simdgroup_float8x8 a, b;
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    a.thread_elements()[0] = A[r * 8 + c];
    a.thread_elements()[1] = A[r * 8 + c + 1];
    thread float2 &pair = b.thread_elements();
    pair = float2(B[r * 8 + c], B[r * 8 + c + 1]);
    simdgroup_multiply_accumulate(acc, a, b, acc);
    C[r * 8 + c] = acc.thread_elements()[0];
    C[r * 8 + c + 1] = acc.thread_elements()[1];
    simdgroup_float8x8 t;
    simdgroup_load(t, A, 8);
    t.thread_elements() *= float(lane);
    simdgroup_store(t, S, 8);
}
"""


def test_simdgroup_matrix_thread_elements(msl, rng):
    a = rng.standard_normal((8, 8)).astype(np.float32)
    b = rng.standard_normal((8, 8)).astype(np.float32)
    c, s = msl.execute_source(THREAD_ELEMENTS, "pairs", [a, b],
                              output_sizes=[256, 256], grid=32, threads=32)
    np.testing.assert_allclose(_f32(c).reshape(8, 8),
                               a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    owner = np.zeros((8, 8))
    for lane in range(32):
        r = ((lane >> 2) & 4) + ((lane >> 1) & 3)
        col = ((lane >> 2) & 2) * 2 + (lane & 1) * 2
        owner[r, col:col + 2] = lane
    np.testing.assert_array_equal(_f32(s).reshape(8, 8),
                                  a * owner.astype(np.float32))


def test_simdgroup_async_copy_intrinsics(msl, rng):
    # The declarations Enigma emits for Apple's AIR async-copy intrinsics.
    source = """
#include <metal_stdlib>
using namespace metal;
struct _simdgroup_event_t;
typedef thread _simdgroup_event_t *event_t;
thread _simdgroup_event_t *copy_in(ulong, ulong, threadgroup void *,
    const device void *, ulong) __asm("air.simdgroup_async_copy_1d.p3i8.p1i8");
thread _simdgroup_event_t *copy_tile(ulong, ulong, threadgroup void *, ulong,
    ulong, ulong2, const device void *, ulong, ulong, ulong2, long2, int)
    __asm("air.simdgroup_async_copy_2d.p3i8.p1i8");
void wait_events(int, thread _simdgroup_event_t **)
    __asm("air.wait_simdgroup_events");

kernel void staged(device const float *a [[buffer(0)]],
                   device float *out [[buffer(1)]],
                   uint lane [[thread_index_in_simdgroup]]) {
    threadgroup float line[40];
    threadgroup float tile[6 * 5];
    event_t events[2];
    events[0] = copy_in(sizeof(float), alignof(float), line, a, 40);
    // A 5 x 6 tile from a matrix with 10 elements per row, starting at
    // row 1, column 2; destination rows hold 5 elements.
    events[1] = copy_tile(sizeof(float), alignof(float), tile, 5, 1,
                          ulong2(5, 6), a + 12, 10, 1, ulong2(5, 6),
                          long2(0, 0), 0);
    wait_events(2, events);
    for (uint i = lane; i < 40; i += 32)
        out[i] = line[i];
    out[40 + lane % 30] = tile[lane % 30];
}
"""
    a = rng.standard_normal(80).astype(np.float32)
    out = _f32(msl.execute_source(source, "staged", [a], output_size=70 * 4,
                                  grid=32, threads=32))
    np.testing.assert_array_equal(out[:40], a[:40])
    np.testing.assert_array_equal(out[40:70],
                                  a.reshape(8, 10)[1:7, 2:7].reshape(-1))


# --- errors ------------------------------------------------------------------------

OUT_OF_BOUNDS = """
#include <metal_stdlib>
using namespace metal;
kernel void wild(device float *out [[buffer(0)]],
                 uint gid [[thread_position_in_grid]]) {
    out[ulong(gid) << 44] = 1.0f;  // 64 TiB apart: never mapped
}
"""


def test_fault_raises_and_the_runtime_keeps_working(msl, rng):
    with pytest.raises(enigma._core.KernelFaultError) as caught:
        msl.execute_source(OUT_OF_BOUNDS, "wild", [], output_size=64,
                           grid=64, threads=32)
    message = str(caught.value)
    assert "kernel wild faulted on the MSL host runtime: SIGSEGV" in message
    # Every thread but thread 0 writes far outside; threadgroups run
    # concurrently, so the first to fault is any of them.
    faulted = re.search(r"in thread \((\d+), 0, 0\) \(threadgroup "
                        r"\((\d+), 0, 0\)", message)
    assert faulted, message
    assert int(faulted.group(1)) != 0
    assert int(faulted.group(2)) == int(faulted.group(1)) // 32
    assert "undefined behaviour" in message
    assert isinstance(caught.value, enigma.EnigmaRuntimeError)
    # Still usable, threadgroups with barriers included.
    test_return_before_barrier(msl, rng, 100)


def test_integer_division_by_zero_does_not_trap(msl):
    # x86 traps where a GPU returns a value: the runtime completes the
    # division with the values Enigma's other backends give.
    source = """
#include <metal_stdlib>
using namespace metal;
kernel void divide(device const int *a [[buffer(0)]],
                   device const int *b [[buffer(1)]],
                   device const uchar *c [[buffer(2)]],
                   device const uchar *d [[buffer(3)]],
                   device int *q [[buffer(4)]],
                   device int *r [[buffer(5)]],
                   device uchar *q8 [[buffer(6)]],
                   device long *q64 [[buffer(7)]],
                   uint gid [[thread_position_in_grid]]) {
    q[gid] = a[gid] / b[gid];
    r[gid] = a[gid] % b[gid];
    q8[gid] = c[gid] / d[gid];
    q64[gid] = long(a[gid]) / long(b[gid]);
}
"""
    a = np.array([7, -7, 5, -2**31, -2**31, 9], np.int32)
    b = np.array([2, 0, 0, -1, 3, -4], np.int32)
    c = np.array([200, 7, 0, 255, 1, 9], np.uint8)
    d = np.array([3, 0, 0, 16, 1, 2], np.uint8)
    q, r, q8, q64 = msl.execute_source(source, "divide", [a, b, c, d],
                                       output_sizes=[24, 24, 6, 48], grid=6,
                                       threads=6)
    np.testing.assert_array_equal(np.frombuffer(q, np.int32),
                                  [3, -1, -1, -2**31, -715827882, -2])
    # a % 0 is the dividend (RISC-V's definition, metal_total_division.h)
    np.testing.assert_array_equal(np.frombuffer(r, np.int32),
                                  [1, -7, 5, 0, -2, 1])
    np.testing.assert_array_equal(np.frombuffer(q8, np.uint8),
                                  [66, 255, 255, 15, 1, 4])
    # 64-bit: every bit set, even where both operands fit in 32 bits.
    np.testing.assert_array_equal(np.frombuffer(q64, np.int64),
                                  [3, -1, -1, 2**31, -715827882, -2])


def test_stack_overflow_is_reported(msl):
    source = """
#include <metal_stdlib>
using namespace metal;
kernel void deep(device float *out [[buffer(0)]],
                 uint gid [[thread_position_in_grid]]) {
    volatile float big[1 << 20];  // 4 MiB of thread memory
    for (uint i = 0; i < (1u << 20); i += 1024)
        big[i] = float(i);
    out[gid] = big[gid];
}
"""
    # The array's lowest address lies 4 MiB below the stack's top, past
    # the guard page (below the first stack: unmapped or other memory);
    # the overflow must still be found at the guard page, whichever stack
    # the thread runs on.
    with pytest.raises(enigma._core.KernelFaultError, match="stack overflow"):
        msl.execute_source(source, "deep", [], output_size=64, grid=16,
                           threads=16)
    after_barrier = source.replace(
        "uint gid [[thread_position_in_grid]]) {",
        "uint gid [[thread_position_in_grid]]) {\n"
        "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
        "    if (gid != 40) return;")
    with pytest.raises(enigma._core.KernelFaultError, match="stack overflow"):
        msl.execute_source(after_barrier, "deep", [], output_size=256,
                           grid=64, threads=64)


def test_compile_error_gives_the_metal_line(msl):
    source = """#include <metal_stdlib>
using namespace metal;

kernel void typo(device float *out [[buffer(0)]],
                 uint gid [[thread_position_in_grid]]) {
    out[gid] = sqrt(gidd);
}
"""
    with pytest.raises(enigma.EnigmaRuntimeError) as caught:
        msl.execute_source(source, "typo", [], output_size=4)
    message = str(caught.value)
    assert "does not compile" in message
    assert "typo.metal:6:" in message
    assert "use of undeclared identifier 'gidd'" in message


def test_address_spaces_are_real(msl):
    source = """#include <metal_stdlib>
using namespace metal;
static void twice(device float *p) { *p *= 2.0f; }
kernel void mixed(device float *out [[buffer(0)]],
                  uint lid [[thread_position_in_threadgroup]]) {
    threadgroup float t[32];
    t[lid] = out[lid];
    twice(&t[lid]);
    out[lid] = t[lid];
}
"""
    with pytest.raises(enigma.EnigmaRuntimeError,
                       match="mixed.metal:8:.*no matching function"):
        msl.execute_source(source, "mixed", [], output_size=128, grid=32,
                           threads=32)


@pytest.mark.parametrize("construct,declaration,words", [
    ("texture", "texture2d<float> image [[texture(0)]],", "textures are not supported"),
    ("sampler", "sampler s [[sampler(0)]],", "samplers are not supported"),
    ("threadgroup parameter", "threadgroup float *t [[threadgroup(1)]],",
     "threadgroup memory at index 0 only"),
    ("stage_in", "float4 v [[stage_in]],", "the attribute [[stage_in]] is not supported"),
])
def test_unsupported_constructs_name_the_line(msl, construct, declaration,
                                              words):
    source = ("#include <metal_stdlib>\nusing namespace metal;\n"
              "kernel void k(device float *out [[buffer(0)]],\n"
              f"              {declaration}\n"
              "              uint gid [[thread_position_in_grid]]) {\n"
              "    out[gid] = 1.0f;\n}\n")
    with pytest.raises(enigma.EnigmaRuntimeError) as caught:
        msl.execute_source(source, "k", [], output_size=4)
    assert "k.metal:4:" in str(caught.value), construct
    assert words in str(caught.value)


def test_vertex_and_fragment_functions_are_refused(msl):
    source = """#include <metal_stdlib>
using namespace metal;
fragment float4 shade(float4 position [[position]]) { return position; }
"""
    with pytest.raises(enigma.EnigmaRuntimeError,
                       match=r"shade\.metal:3: fragment function shade is not "
                             "supported"):
        msl.execute_source(source, "shade", [])


def test_unknown_kernel_lists_the_kernels(msl):
    with pytest.raises(enigma.EnigmaRuntimeError,
                       match=r"no kernel function named 'nope' \(kernels: "
                             r"vector_add4\)"):
        from test_metal_host_fidelity import VECTOR_ADD
        msl.execute_source(VECTOR_ADD, "nope", [])


def test_binding_errors_are_dispatch_errors(msl, rng):
    from test_metal_host_fidelity import VECTOR_ADD
    a = rng.standard_normal(8).astype(np.float32)
    with pytest.raises(enigma.DispatchError, match="takes 1 scalar"):
        msl.execute_source(VECTOR_ADD, "vector_add4", [a, a], output_size=32,
                           grid=2, threads=2)
    with pytest.raises(TypeError, match="dtype float64"):
        msl.execute_source(VECTOR_ADD, "vector_add4", [a, a.astype(np.float64)],
                           output_size=32, grid=2, threads=2, scalars=[2])


def test_without_clang_the_runtime_is_unavailable(tmp_path):
    script = ("import enigma\n"
              "try:\n"
              "    enigma.MetalHostRuntime()\n"
              "except enigma.BackendUnavailableError as e:\n"
              "    print('unavailable:', e)\n")
    env = dict(os.environ, ENIGMA_MSL_CXX=str(tmp_path / "no-such-clang"))
    proc = subprocess.run([sys.executable, "-c", script], env=env,
                          capture_output=True, text=True, timeout=120)
    assert "unavailable: ENIGMA_MSL_CXX=" in proc.stdout, proc.stderr
