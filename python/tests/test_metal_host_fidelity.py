"""Metal written the way Metal programmers write it, run by the MSL host
runtime (MetalHostRuntime.execute_source) and checked against numpy in
float64: float4 vector add, a threadgroup-tiled 2-D stencil, RMSNorm with
simd_sum, reductions with atomics, and a simdgroup-matrix multiply."""

import numpy as np
import pytest

import enigma


@pytest.fixture(scope="module")
def msl():
    try:
        return enigma.MetalHostRuntime()
    except enigma.BackendUnavailableError as e:
        pytest.skip(str(e))


VECTOR_ADD = """
#include <metal_stdlib>
using namespace metal;

kernel void vector_add4(device const float4 *a [[buffer(0)]],
                        device const float4 *b [[buffer(1)]],
                        device float4 *out [[buffer(2)]],
                        constant uint &count [[buffer(3)]],
                        uint gid [[thread_position_in_grid]])
{
    if (gid >= count)
        return;
    out[gid] = a[gid] + b[gid];
}
"""


@pytest.mark.parametrize("vectors,group", [(1, 32), (77, 32), (1000, 256),
                                           (65536, 1024)])
def test_vector_add_float4(msl, rng, vectors, group):
    a = rng.standard_normal(4 * vectors).astype(np.float32)
    b = rng.standard_normal(4 * vectors).astype(np.float32)
    # Round the grid up to whole groups: the guard keeps the extra threads
    # out of the buffers.
    grid = -(-vectors // group) * group
    raw = msl.execute_source(VECTOR_ADD, "vector_add4", [a, b],
                             output_size=a.nbytes, grid=grid, threads=group,
                             scalars=[vectors])
    out = np.frombuffer(raw, np.float32)
    np.testing.assert_array_equal(out, a + b)  # one rounding each, as numpy


STENCIL = """
#include <metal_stdlib>
using namespace metal;

constant uint TILE = 16;

// 5-point Laplacian smoothing of a W x H image, clamped at the borders,
// through a (TILE+2)^2 tile of threadgroup memory with a one-pixel halo.
kernel void smooth(device const float *src [[buffer(0)]],
                   constant uint2 &size [[buffer(1)]],
                   device float *dst [[buffer(2)]],
                   uint2 gid [[thread_position_in_grid]],
                   uint2 lid [[thread_position_in_threadgroup]],
                   uint2 group [[threadgroup_position_in_grid]],
                   uint2 threads [[threads_per_threadgroup]],
                   uint flat [[thread_index_in_threadgroup]])
{
    threadgroup float tile[TILE + 2][TILE + 2];
    const int2 origin = int2(group * TILE) - 1;
    // Cooperative load of the tile and its halo, clamped to the image, by
    // however many threads this (maybe partial) threadgroup has.
    for (uint i = flat; i < (TILE + 2) * (TILE + 2); i += threads.x * threads.y) {
        const int2 p = origin + int2(i % (TILE + 2), i / (TILE + 2));
        const uint x = uint(clamp(p.x, 0, int(size.x) - 1));
        const uint y = uint(clamp(p.y, 0, int(size.y) - 1));
        tile[i / (TILE + 2)][i % (TILE + 2)] = src[y * size.x + x];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (gid.x >= size.x || gid.y >= size.y)
        return;
    const uint x = lid.x + 1, y = lid.y + 1;
    dst[gid.y * size.x + gid.x] =
        0.5f * tile[y][x] +
        0.125f * (tile[y - 1][x] + tile[y + 1][x] + tile[y][x - 1] + tile[y][x + 1]);
}
"""


def _smooth_reference(image):
    padded = np.pad(image.astype(np.float64), 1, mode="edge")
    return (0.5 * padded[1:-1, 1:-1]
            + 0.125 * (padded[:-2, 1:-1] + padded[2:, 1:-1]
                       + padded[1:-1, :-2] + padded[1:-1, 2:]))


@pytest.mark.parametrize("height,width", [(1, 1), (16, 16), (37, 50),
                                          (129, 200)])
def test_threadgroup_tiled_stencil(msl, rng, height, width):
    image = rng.standard_normal((height, width)).astype(np.float32)
    # The grid is exactly the image: the edge threadgroups are partial, and
    # their threads still load the whole tile. `size` (a uint2) is an input
    # buffer.
    size = np.array([width, height], np.uint32)
    raw = msl.execute_source(STENCIL, "smooth", [image, size],
                             output_size=image.nbytes, grid=(width, height),
                             threads=(16, 16))
    out = np.frombuffer(raw, np.float32).reshape(height, width)
    np.testing.assert_allclose(out, _smooth_reference(image), rtol=1e-6,
                               atol=1e-6)


RMSNORM = """
#include <metal_stdlib>
using namespace metal;

// One threadgroup per row: y = x * rsqrt(mean(x^2) + eps) * weight.
kernel void rms_norm(device const float *x [[buffer(0)]],
                     device const float *weight [[buffer(1)]],
                     device float *y [[buffer(2)]],
                     constant uint &cols [[buffer(3)]],
                     constant float &eps [[buffer(4)]],
                     uint row [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint threads [[threads_per_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]],
                     uint simd_id [[simdgroup_index_in_threadgroup]],
                     uint simds [[simdgroups_per_threadgroup]])
{
    threadgroup float partial[32];
    device const float *xr = x + row * cols;
    float sum = 0.0f;
    for (uint i = tid; i < cols; i += threads)
        sum += xr[i] * xr[i];
    sum = simd_sum(sum);
    if (lane == 0)
        partial[simd_id] = sum;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (simd_id == 0) {
        float total = lane < simds ? partial[lane] : 0.0f;
        total = simd_sum(total);
        if (lane == 0)
            partial[0] = total;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const float scale = rsqrt(partial[0] / float(cols) + eps);
    for (uint i = tid; i < cols; i += threads)
        y[row * cols + i] = xr[i] * scale * weight[i];
}
"""


@pytest.mark.parametrize("rows,cols,group", [(1, 1, 32), (3, 100, 64),
                                             (8, 4096, 1024), (5, 333, 96)])
def test_rms_norm_with_simd_sum(msl, rng, rows, cols, group):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    eps = 1e-5
    raw = msl.execute_source(RMSNORM, "rms_norm", [x, w],
                             output_size=x.nbytes, grid=rows * group,
                             threads=group, scalars=[cols, eps])
    out = np.frombuffer(raw, np.float32).reshape(rows, cols)
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + eps) * w
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=1e-6)


REDUCTIONS = """
#include <metal_stdlib>
using namespace metal;

// Per threadgroup: a tree sum in threadgroup memory and a histogram in
// threadgroup atomics; then one device atomic per group for the totals.
kernel void reduce(device const uint *values [[buffer(0)]],
                   device atomic_uint *total [[buffer(1)]],
                   device atomic_uint *maximum [[buffer(2)]],
                   device atomic_uint *histogram [[buffer(3)]],
                   constant uint &count [[buffer(4)]],
                   uint gid [[thread_position_in_grid]],
                   uint lid [[thread_position_in_threadgroup]],
                   uint threads [[threads_per_threadgroup]])
{
    threadgroup uint sums[256];
    threadgroup atomic_uint bins[16];
    if (lid < 16)
        atomic_store_explicit(&bins[lid], 0u, memory_order_relaxed);
    const uint v = gid < count ? values[gid] : 0u;
    sums[lid] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (gid < count)
        atomic_fetch_add_explicit(&bins[v & 15u], 1u, memory_order_relaxed);
    for (uint stride = threads / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            sums[lid] += sums[lid + stride];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (gid < count)
        atomic_fetch_max_explicit(maximum, v, memory_order_relaxed);
    if (lid == 0)
        atomic_fetch_add_explicit(total, sums[0], memory_order_relaxed);
    if (lid < 16)
        atomic_fetch_add_explicit(&histogram[lid],
                                  atomic_load_explicit(&bins[lid], memory_order_relaxed),
                                  memory_order_relaxed);
}
"""


@pytest.mark.parametrize("count", [1, 255, 256, 257, 100_000])
def test_reduction_with_atomics(msl, rng, count):
    values = rng.integers(0, 2**32, size=count, dtype=np.uint32)
    groups = -(-count // 256)
    total, maximum, histogram = msl.execute_source(
        REDUCTIONS, "reduce", [values], output_sizes=[4, 4, 64],
        grid=groups * 256, threads=256, scalars=[count])
    want_total = int(values.astype(np.uint64).sum()) % 2**32
    assert np.frombuffer(total, np.uint32)[0] == want_total
    assert np.frombuffer(maximum, np.uint32)[0] == values.max()
    np.testing.assert_array_equal(np.frombuffer(histogram, np.uint32),
                                  np.bincount(values & 15, minlength=16))


MATMUL = """
#include <metal_stdlib>
using namespace metal;

// C = A * B (M x K times K x N, row-major, all multiples of 8). Four
// simdgroups per threadgroup each own one 8x8 tile of a 16x16 block. With
// B_TRANSPOSED, B is given as N x K and loaded transposed.
constant bool b_transposed [[function_constant(0)]];

kernel void matmul(device const float *A [[buffer(0)]],
                   device const float *B [[buffer(1)]],
                   device float *C [[buffer(2)]],
                   constant uint &M [[buffer(3)]],
                   constant uint &N [[buffer(4)]],
                   constant uint &K [[buffer(5)]],
                   uint2 block [[threadgroup_position_in_grid]],
                   uint simd_id [[simdgroup_index_in_threadgroup]])
{
    const uint row = block.y * 16 + (simd_id / 2) * 8;
    const uint col = block.x * 16 + (simd_id % 2) * 8;
    if (row >= M || col >= N)
        return;
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint k = 0; k < K; k += 8) {
        simdgroup_float8x8 a, b;
        simdgroup_load(a, A, K, ulong2(k, row));
        if (b_transposed)
            simdgroup_load(b, B, K, ulong2(k, col), true);
        else
            simdgroup_load(b, B, N, ulong2(col, k));
        simdgroup_multiply_accumulate(acc, a, b, acc);
    }
    simdgroup_store(acc, C, N, ulong2(col, row));
}
"""


@pytest.mark.parametrize("m,n,k", [(8, 8, 8), (16, 24, 40), (64, 48, 96)])
@pytest.mark.parametrize("transposed", [False, True])
def test_simdgroup_matrix_multiply(msl, rng, m, n, k, transposed):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    given_b = np.ascontiguousarray(b.T) if transposed else b
    raw = msl.execute_source(
        MATMUL, "matmul", [a, given_b], output_size=m * n * 4,
        grid=(-(-n // 16) * 128, -(-m // 16)), threads=(128, 1),
        scalars=[m, n, k], constants={0: ("bool", transposed)})
    out = np.frombuffer(raw, np.float32).reshape(m, n)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5,
                               atol=1e-5)
