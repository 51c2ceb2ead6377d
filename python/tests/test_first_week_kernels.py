"""A first week of kernels, written the way a newcomer writes them from
README.md and docs/reference/ alone: a blur, a scan, a histogram, a
LayerNorm, a transpose, an argmax, control flow and layouts. Each is
launched with the function-call form on every runtime under test (numpy
arrays on the CPU and MSL host runtimes, PyTorch tensors on CUDA),
checked against numpy in float64 (or exact integers), with outputs
poisoned before the launch and sizes that divide no tile. Kernels that
cooperate in a threadgroup launch whole groups (launch(threadgroups=...)),
as docs/reference/launch.md ("Partial threadgroups") says."""

import numpy as np
import pytest

import enigma

U32 = enigma.Scalar(enigma.u32)
F32 = enigma.Scalar(enigma.f32)


def groups_of(n, size):
    return (n + size - 1) // size


# --------------------------------------------------------------------------
# Blur: a 3 x 3 box filter, edges clamped, over a 2-D grid
# --------------------------------------------------------------------------

@enigma.kernel
def box_blur(src: enigma.f32, dst: enigma.f32, w: U32, h: U32):
    x = enigma.thread_position_in_grid_xyz("x")
    y = enigma.thread_position_in_grid_xyz("y")
    with enigma.if_((x < w) & (y < h)):
        # Signed coordinates, so that x - 1 at the left edge is -1, not a
        # wrapped uint (thread positions are unsigned).
        xi = enigma.metal_cast(x, "int")
        yi = enigma.metal_cast(y, "int")
        last_x = enigma.metal_cast(w, "int") - 1
        last_y = enigma.metal_cast(h, "int") - 1
        total = 0.0
        for dy in enigma.range_constexpr(-1, 2):
            for dx in enigma.range_constexpr(-1, 2):
                sx = enigma.clamp(xi + dx, 0, last_x)
                sy = enigma.clamp(yi + dy, 0, last_y)
                total = total + src[sy * (last_x + 1) + sx]
        dst[y * w + x] = total / 9.0


@pytest.mark.parametrize("w,h", [(1, 1), (37, 23), (130, 3)])
def test_box_blur(arrays, rng, w, h):
    image = rng.standard_normal((h, w)).astype(np.float32)
    out = arrays.put(np.full(h * w, np.nan, np.float32))
    box_blur.launch(grid=(w, h), threads=(8, 8))(arrays.put(image), out,
                                                  w, h)
    padded = np.pad(image.astype(np.float64), 1, mode="edge")
    want = sum(padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]
               for dy in (-1, 0, 1) for dx in (-1, 0, 1)) / 9.0
    np.testing.assert_allclose(arrays.get(out).reshape(h, w), want,
                               rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------
# Scan: an inclusive prefix sum in two kernels (blocks, then offsets)
# --------------------------------------------------------------------------

BLOCK = 256


@enigma.kernel
def block_scan(data: enigma.i32, out: enigma.i32, block_sums: enigma.i32,
               n: U32):
    """Scans each block of 256 (simdgroup scans, then the simdgroups'
    totals through threadgroup memory) and writes each block's total."""
    i = enigma.thread_position_in_grid
    lid = enigma.thread_position_in_threadgroup()
    lane = enigma.thread_index_in_simdgroup()
    warp = enigma.simdgroup_index_in_threadgroup()
    warp_totals = enigma.threadgroup_alloc("int", BLOCK // 32)
    # Threads past n take part with 0, so every lane and barrier is there.
    value = enigma.load_if(data, i, i < n, default=0)
    inclusive = enigma.simd_prefix_inclusive_sum(value)
    with enigma.if_(lane == 31):
        warp_totals[warp] = inclusive
    enigma.barrier()
    offset = 0
    for k in enigma.range_constexpr(BLOCK // 32):
        offset = offset + enigma.where(0, warp_totals[k], warp > k)
    inclusive = inclusive + offset
    with enigma.if_(i < n):
        out[i] = inclusive
    with enigma.if_(lid == BLOCK - 1):
        block_sums[enigma.threadgroup_position_in_grid()] = inclusive


@enigma.kernel
def add_block_offsets(out: enigma.i32, block_sums: enigma.i32, n: U32):
    i = enigma.thread_position_in_grid
    block = enigma.threadgroup_position_in_grid()
    with enigma.if_(i < n):
        offset = 0
        for b in enigma.range(block):
            offset = offset + block_sums[b]
        out[i] = out[i] + offset


@pytest.mark.parametrize("n", [1, 31, 256, 257, 5000])
def test_scan(arrays, rng, n):
    data = rng.integers(-100, 100, n).astype(np.int32)
    groups = groups_of(n, BLOCK)
    out = arrays.put(np.full(n, -7777777, np.int32))
    sums = arrays.put(np.full(groups, -7777777, np.int32))
    launch = dict(threadgroups=groups, threads=BLOCK)
    block_scan.launch(**launch)(arrays.put(data), out, sums, n)
    add_block_offsets.launch(**launch)(out, sums, n)
    np.testing.assert_array_equal(arrays.get(out),
                                  np.cumsum(data.astype(np.int64)))


# --------------------------------------------------------------------------
# Histogram: counts per threadgroup in threadgroup memory, then merged
# --------------------------------------------------------------------------

BINS = 64


@enigma.kernel
def histogram(data: enigma.u32, bins: enigma.u32, n: U32):
    i = enigma.thread_position_in_grid
    lid = enigma.thread_position_in_threadgroup()
    local = enigma.threadgroup_alloc("uint", BINS)
    with enigma.if_(lid < BINS):
        local[lid] = 0
    enigma.barrier()
    with enigma.if_(i < n):
        local.atomic_fetch_add(data[i] % BINS, 1)
    enigma.barrier()
    with enigma.if_(lid < BINS):
        bins.atomic_fetch_add(lid, local[lid])


@pytest.mark.parametrize("n", [1, 100, 4099])
def test_histogram(arrays, rng, n):
    data = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    data[: n // 3] = 5  # one full bin
    # The counts are added to what the bins hold: start them at 7.
    bins = arrays.put(np.full(BINS, 7, np.uint32))
    histogram.launch(threadgroups=groups_of(n, 128), threads=128)(
        arrays.put(data), bins, n)
    want = np.bincount(data % BINS, minlength=BINS) + 7
    np.testing.assert_array_equal(arrays.get(bins), want)


# --------------------------------------------------------------------------
# LayerNorm: one threadgroup per row
# --------------------------------------------------------------------------

THREADS = 128


def block_sum(value, partial):
    """The sum of ``value`` over the threadgroup (THREADS threads)."""
    lane = enigma.thread_index_in_simdgroup()
    warp = enigma.simdgroup_index_in_threadgroup()
    total = enigma.simd_sum(value)
    with enigma.if_(lane == 0):
        partial[warp] = total
    enigma.barrier()
    result = partial[0]
    for k in enigma.range_constexpr(1, THREADS // 32):
        result = result + partial[k]
    enigma.barrier()  # partial is written again by the next call
    return result


@enigma.kernel
def layer_norm(X: enigma.f32, gamma: enigma.f32, beta: enigma.f32,
               Y: enigma.f32, cols: U32, eps: F32):
    row = enigma.threadgroup_position_in_grid()
    lid = enigma.thread_position_in_threadgroup()
    partial = enigma.threadgroup_alloc("float", THREADS // 32)
    base = row * cols
    count = enigma.metal_cast(cols, "float")
    s = 0.0
    for c in enigma.range(lid, cols, THREADS, dtype="uint"):
        s = s + X[base + c]
    mean = block_sum(s, partial) / count
    sq = 0.0
    for c in enigma.range(lid, cols, THREADS, dtype="uint"):
        d = X[base + c] - mean
        sq = sq + d * d
    rstd = enigma.rsqrt(block_sum(sq, partial) / count + eps)
    for c in enigma.range(lid, cols, THREADS, dtype="uint"):
        Y[base + c] = (X[base + c] - mean) * rstd * gamma[c] + beta[c]


@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 333), (17, 128),
                                       (5, 1000)])
def test_layer_norm(arrays, rng, rows, cols):
    x = (rng.standard_normal((rows, cols)) * 3 + 1).astype(np.float32)
    gamma = rng.standard_normal(cols).astype(np.float32)
    beta = rng.standard_normal(cols).astype(np.float32)
    y = arrays.put(np.full(rows * cols, np.nan, np.float32))
    eps = 1e-5
    layer_norm.launch(threadgroups=rows, threads=THREADS)(
        arrays.put(x), arrays.put(gamma), arrays.put(beta), y, cols, eps)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=1, keepdims=True)
    want = (x64 - mean) / np.sqrt(var + eps) * gamma + beta
    np.testing.assert_allclose(arrays.get(y).reshape(rows, cols), want,
                               rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------
# Transpose through a padded threadgroup tile
# --------------------------------------------------------------------------

TILE = 16


@enigma.kernel
def transpose(A: enigma.f32, B: enigma.f32, rows: U32, cols: U32):
    tile = enigma.threadgroup_alloc("float", TILE * (TILE + 1))
    tx = enigma.thread_position_in_threadgroup("x")
    ty = enigma.thread_position_in_threadgroup("y")
    bx = enigma.threadgroup_position_in_grid("x")
    by = enigma.threadgroup_position_in_grid("y")
    x = bx * TILE + tx  # a column of A
    y = by * TILE + ty  # a row of A
    with enigma.if_((x < cols) & (y < rows)):
        tile[ty * (TILE + 1) + tx] = A[y * cols + x]
    enigma.barrier()
    out_x = by * TILE + tx  # a column of B: a row of A
    out_y = bx * TILE + ty  # a row of B: a column of A
    with enigma.if_((out_x < rows) & (out_y < cols)):
        B[out_y * rows + out_x] = tile[tx * (TILE + 1) + ty]


@pytest.mark.parametrize("rows,cols", [(1, 1), (45, 71), (16, 48), (3, 200)])
def test_transpose(arrays, rng, rows, cols):
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    b = arrays.put(np.full(rows * cols, np.nan, np.float32))
    transpose.launch(threadgroups=(groups_of(cols, TILE),
                                   groups_of(rows, TILE)),
                     threads=(TILE, TILE))(arrays.put(a), b, rows, cols)
    np.testing.assert_array_equal(arrays.get(b).reshape(cols, rows), a.T)


# --------------------------------------------------------------------------
# Argmax of each row (the first of equal maxima, as numpy)
# --------------------------------------------------------------------------

ARGMAX_THREADS = 64


@enigma.kernel
def row_argmax(X: enigma.f32, out: enigma.u32, cols: U32):
    row = enigma.threadgroup_position_in_grid()
    lid = enigma.thread_position_in_threadgroup()
    lane = enigma.thread_index_in_simdgroup()
    warp = enigma.simdgroup_index_in_threadgroup()
    best = float("-inf")
    best_index = cols  # past every index: loses every tie
    for c in enigma.range(lid, cols, ARGMAX_THREADS, dtype="uint"):
        v = X[row * cols + c]
        better = v > best  # strict: the first of equal values stays
        best = enigma.where(best, v, better)
        best_index = enigma.where(best_index, c, better)
    # In the simdgroup: the largest value, then the smallest index holding it.
    top = enigma.simd_max(best)
    index = enigma.simd_min(enigma.where(cols, best_index, best == top))
    values = enigma.threadgroup_alloc("float", ARGMAX_THREADS // 32)
    indices = enigma.threadgroup_alloc("uint", ARGMAX_THREADS // 32)
    with enigma.if_(lane == 0):
        values[warp] = top
        indices[warp] = index
    enigma.barrier()
    with enigma.if_(lid == 0):
        v0, v1 = values[0], values[1]
        i0, i1 = indices[0], indices[1]
        second = (v1 > v0) | ((v1 == v0) & (i1 < i0))
        out[row] = enigma.where(i0, i1, second)


@pytest.mark.parametrize("rows,cols", [(1, 1), (7, 33), (4, 1000),
                                       (9, 64)])
def test_row_argmax(arrays, rng, rows, cols):
    # Few distinct values: many ties, which numpy breaks by the first index.
    x = rng.integers(-3, 4, (rows, cols)).astype(np.float32)
    x[0, -1] = 100.0  # a maximum in the last column
    out = arrays.put(np.full(rows, 0xDEADBEEF, np.uint32))
    row_argmax.launch(threadgroups=rows, threads=ARGMAX_THREADS)(
        arrays.put(x), out, cols)
    np.testing.assert_array_equal(arrays.get(out), np.argmax(x, axis=1))


# --------------------------------------------------------------------------
# Control flow: Collatz steps (a while loop with a branch in it)
# --------------------------------------------------------------------------

@enigma.kernel
def collatz_steps(start: enigma.u32, steps: enigma.u32, n: U32):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        v = start[i]
        count = enigma.metal_cast(0, "uint")
        with enigma.while_(lambda: v > 1):
            with enigma.if_(v % 2 == 0) as (even, odd):
                with even:
                    v = v >> 1
                with odd:
                    v = v * 3 + 1
            count = count + 1
        steps[i] = count


def _collatz(v):
    count = 0
    while v > 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        count += 1
    return count


@pytest.mark.parametrize("n", [1, 97, 1000])
def test_collatz_steps(arrays, rng, n):
    start = rng.integers(1, 20000, n).astype(np.uint32)
    start[0] = 27  # 111 steps
    if n > 1:
        start[1] = 1  # none
    steps = arrays.put(np.full(n, 0xFFFFFFFF, np.uint32))
    collatz_steps[n](arrays.put(start), steps, n)
    np.testing.assert_array_equal(arrays.get(steps),
                                  [_collatz(int(v)) for v in start])


# --------------------------------------------------------------------------
# Layouts: a column-major matrix read through one layout, written
# through another
# --------------------------------------------------------------------------

def make_relayout(rows, cols):
    """A kernel for rows x cols matrices: reads A column-major, writes
    B = 2 A row-major, each index from an enigma.Layout."""
    column_major = enigma.Layout((rows, cols), (1, rows))
    row_major = enigma.make_ordered_layout((rows, cols), (1, 0))

    @enigma.kernel
    def relayout(A: enigma.f32, B: enigma.f32):
        c = enigma.thread_position_in_grid_xyz("x")
        r = enigma.thread_position_in_grid_xyz("y")
        with enigma.if_((r < rows) & (c < cols)):
            B[row_major(r, c)] = A[column_major(r, c)] * 2.0
    return relayout


@pytest.mark.parametrize("rows,cols", [(1, 1), (5, 9), (33, 17)])
def test_layouts(arrays, rng, rows, cols):
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    b = arrays.put(np.full(rows * cols, np.nan, np.float32))
    make_relayout(rows, cols).launch(grid=(cols, rows), threads=(4, 4))(
        arrays.put(np.asfortranarray(a).ravel(order="K")), b)
    np.testing.assert_array_equal(arrays.get(b).reshape(rows, cols),
                                  a.astype(np.float64) * 2)
