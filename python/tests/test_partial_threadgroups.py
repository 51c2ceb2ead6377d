"""Partial threadgroups in bounds-checked mode (docs/runtimes.md,
"Bounds-checked mode"; docs/execution-model.md).

A grid that is not a multiple of the threadgroup size leaves a partial
last threadgroup, as Metal's dispatchThreads does: its missing threads do
not run, so they write nothing to threadgroup memory and take no part in
simdgroup functions. Kernels written for full groups then lose counts or
read garbage without an error. In bounds-checked mode a read of
threadgroup memory that no thread of the group wrote, a simdgroup shuffle
from a lane that does not exist and a simdgroup matrix operation in a
simdgroup without its 32 lanes are reported with their ``file:line``.
"""

import os
import re

import numpy as np
import pytest

import enigma
from conftest import (BY_THREAD, assert_reported_at, checked_error, run_kernel,
                      tagged_line)

THIS_FILE = os.path.basename(__file__)


def _line(tag):
    return tagged_line(__file__, tag)


_UNINITIALISED = re.compile(
    r"read of uninitialised threadgroup memory at (?P<where>\S+): element "
    r"(?P<index>\d+) of (?P<array>.+?) was not written in threadgroup "
    r"\((?P<gx>\d+), (?P<gy>\d+), (?P<gz>\d+)\) before this (?P<access>\w+), "
    + BY_THREAD)
_PARTIAL = re.compile(r"the threadgroup is partial: (?P<have>\d+) of its "
                      r"(?P<full>\d+) threads exist")
_MISSING_LANE = re.compile(
    r"(?P<fn>\w+) at (?P<where>\S+) reads lane (?P<lane>\d+) of its "
    r"(?P<group>simdgroup|quad), which does not exist, " + BY_THREAD)
_SHORT_SIMDGROUP = re.compile(
    r"(?P<fn>\w+) at (?P<where>\S+) runs in a simdgroup of (?P<lanes>\d+) "
    r"lanes, " + BY_THREAD)


# ---------------------------------------------------------------------------
# A scan whose last block total was 0
# ---------------------------------------------------------------------------

GROUP = 64


def _block_scan(total_index):
    @enigma.kernel
    def block_scan(A: enigma.u32, out: enigma.u32, totals: enigma.u32):
        s = enigma.threadgroup_alloc("uint", GROUP)  # scan-alloc
        lid = enigma.thread_position_in_threadgroup()
        gid = enigma.thread_position_in_grid
        s[lid] = A[gid]
        enigma.barrier()
        offset = 1
        while offset < GROUP:  # Hillis-Steele, unrolled at trace time
            add = enigma.where(0, s[lid - offset], lid >= offset)
            enigma.barrier()
            s[lid] = s[lid] + add
            enigma.barrier()
            offset *= 2
        out[gid] = s[lid]
        with enigma.if_(lid == 0):
            group = enigma.threadgroup_position_in_grid("x")
            totals[group] = s[total_index(enigma)]  # block-total
    return block_scan


def _scan_reference(a, group):
    out = np.empty_like(a)
    totals = []
    for start in range(0, a.size, group):
        part = np.cumsum(a[start:start + group].astype(np.uint64))
        out[start:start + group] = part.astype(a.dtype)
        totals.append(part[-1])
    return out, np.array(totals, dtype=a.dtype)


def test_block_total_of_a_partial_group_is_reported(runtime, rng):
    groups, tail = 3, 20
    n = groups * GROUP + tail
    a = rng.integers(0, 1000, size=n, dtype=np.uint32)
    compiled = enigma.compile(_block_scan(lambda e: GROUP - 1),
                              bounds_check=True)
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [a], output_sizes=[4 * n, 4 * (groups + 1)],
                        grid=(n, 1, 1), threads=(GROUP, 1, 1))
    v = checked_error(_UNINITIALISED, excinfo)
    message = v["message"]
    assert int(v["index"]) == GROUP - 1 and v["access"] == "load", message
    assert (v["gx"], v["gy"], v["gz"]) == (str(groups), "0", "0"), message
    assert (int(v["x"]), v["y"], v["z"]) == (groups * GROUP, "0", "0")
    assert v["array"].startswith(f"threadgroup array (u32[{GROUP}] allocated "
                                 "at "), message
    assert v["array"].endswith(f"{THIS_FILE}:{_line('scan-alloc')})"), message
    partial = _PARTIAL.search(message)
    assert partial and partial.group("have", "full") == (str(tail),
                                                         str(GROUP)), message
    assert_reported_at(__file__, v, "block-total")


@pytest.mark.parametrize("n", [GROUP * 3, GROUP * 3 + 20, 1, GROUP + 1])
def test_scan_written_for_partial_groups_runs_clean(runtime, rng, n):
    """The same scan reading the total at threads_per_threadgroup() - 1:
    correct on every grid, and nothing to report."""
    a = rng.integers(0, 1000, size=n, dtype=np.uint32)
    groups = -(-n // GROUP)
    compiled = enigma.compile(
        _block_scan(lambda e: e.threads_per_threadgroup() - 1),
        bounds_check=True)
    outs = runtime.execute(compiled, [a], output_sizes=[4 * n, 4 * groups],
                           grid=(n, 1, 1), threads=(GROUP, 1, 1))
    want, totals = _scan_reference(a, GROUP)
    np.testing.assert_array_equal(np.frombuffer(outs[0], np.uint32), want)
    np.testing.assert_array_equal(np.frombuffer(outs[1], np.uint32), totals)


# ---------------------------------------------------------------------------
# A histogram that lost counts
# ---------------------------------------------------------------------------

BINS = 32


@enigma.kernel
def local_histogram(data: enigma.u32, bins: enigma.u32):
    local = enigma.threadgroup_alloc("uint", BINS)
    lid = enigma.thread_position_in_threadgroup()
    gid = enigma.thread_position_in_grid
    with enigma.if_(lid < BINS):
        local[lid] = 0  # one bin per thread: needs BINS threads
    enigma.barrier()
    local.atomic_fetch_add(data[gid] % BINS, 1)  # hist-add
    enigma.barrier()
    with enigma.if_(lid < BINS):
        bins.atomic_fetch_add(lid, local[lid])


def test_histogram_bin_never_zeroed_is_reported(runtime, rng):
    n = 64 * 2 + 10  # the last group has 10 threads: bins 10.. not zeroed
    data = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    data[-1] = 31  # a value of the last group lands in bin 31
    compiled = enigma.compile(local_histogram, bounds_check=True)
    # Full groups only: the counts are right.
    full = data[:128]
    out = run_kernel(runtime, compiled, [full], np.uint32, BINS, (128, 1, 1),
                     (64, 1, 1))
    np.testing.assert_array_equal(out, np.bincount(full % BINS,
                                                   minlength=BINS))
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [data], output_size=4 * BINS,
                        grid=(n, 1, 1), threads=(64, 1, 1))
    v = checked_error(_UNINITIALISED, excinfo)
    message = v["message"]
    assert v["access"] == "atomic_rmw" and int(v["index"]) >= 10, message
    assert v["gx"] == "2" and int(v["x"]) >= 128, message
    assert _PARTIAL.search(message).group("have", "full") == ("10", "64")
    assert_reported_at(__file__, v, "hist-add")


# ---------------------------------------------------------------------------
# Simdgroup functions with missing lanes
# ---------------------------------------------------------------------------

@enigma.kernel
def shift_down(A: enigma.f32, out: enigma.f32):
    gid = enigma.thread_position_in_grid
    out[gid] = enigma.simd_shuffle_down(A[gid], 4)  # shuffle-down


@enigma.kernel
def butterfly_sum(A: enigma.f32, out: enigma.f32):
    gid = enigma.thread_position_in_grid
    v = A[gid]
    for mask in (16, 8, 4, 2, 1):
        v = v + enigma.simd_shuffle_xor(v, mask)  # butterfly
    out[gid] = v


@enigma.kernel
def group_sum(A: enigma.f32, out: enigma.f32):
    gid = enigma.thread_position_in_grid
    out[gid] = enigma.simd_sum(A[gid])


def test_shuffle_past_the_edge_of_a_full_simdgroup_is_not_reported(runtime,
                                                                   rng):
    """Lanes 28..31 of a full simdgroup read past lane 31: Metal defines
    that they keep their own value."""
    n = 64
    a = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(shift_down, bounds_check=True),
                     [a], np.float32, n, (n, 1, 1), (32, 1, 1))
    want = a.reshape(2, 32).copy()
    want[:, :28] = a.reshape(2, 32)[:, 4:]
    np.testing.assert_array_equal(out, want.reshape(-1))


def test_shuffle_from_a_missing_lane_is_reported(runtime, rng):
    n = 32 + 10
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(shift_down, bounds_check=True)
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [a], output_size=4 * n, grid=(n, 1, 1),
                        threads=(32, 1, 1))
    v = checked_error(_MISSING_LANE, excinfo)
    message = v["message"]
    assert v["fn"] == "simd_shuffle_down" and v["group"] == "simdgroup"
    x = int(v["x"])
    assert 32 + 6 <= x < n and int(v["lane"]) == x - 32 + 4, message
    assert "the first of 4 " in message, message
    assert _PARTIAL.search(message).group("have", "full") == ("10", "32")
    assert_reported_at(__file__, v, "shuffle-down")


def test_butterfly_in_a_partial_simdgroup_is_reported(runtime, rng):
    n = 24  # one threadgroup of 24: lanes 24..31 do not exist
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(butterfly_sum, bounds_check=True)
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [a], output_size=4 * n, grid=(n, 1, 1),
                        threads=(32, 1, 1))
    v = checked_error(_MISSING_LANE, excinfo)
    message = v["message"]
    assert v["fn"] == "simd_shuffle_xor" and int(v["lane"]) >= 24, message
    assert_reported_at(__file__, v, "butterfly")
    # Whole simdgroups: the butterfly is right and nothing is reported.
    a = rng.standard_normal(64).astype(np.float32)
    out = run_kernel(runtime, compiled, [a], np.float32, 64, (64, 1, 1),
                     (64, 1, 1))
    want = np.repeat(a.reshape(2, 32).astype(np.float64).sum(axis=1), 32)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_reduction_of_a_partial_simdgroup_is_not_reported(runtime, rng):
    """Metal defines simd_sum over the lanes that exist."""
    n = 32 + 7
    a = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(group_sum, bounds_check=True),
                     [a], np.float32, n, (n, 1, 1), (32, 1, 1))
    want = np.concatenate([np.repeat(a[:32].astype(np.float64).sum(), 32),
                           np.repeat(a[32:].astype(np.float64).sum(), 7)])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@enigma.kernel
def mm8(A: enigma.f32, B: enigma.f32, C0: enigma.f32, O: enigma.f32):
    a = enigma.simdgroup_matrix_load(A, 8)  # matrix-load
    b = enigma.simdgroup_matrix_load(B, 8)
    c = enigma.simdgroup_matrix_load(C0, 8)
    enigma.simdgroup_matrix_store(enigma.simdgroup_multiply_accumulate(a, b, c),
                                  O, 8)


def test_simdgroup_matrix_in_a_short_simdgroup_is_reported(runtime, rng):
    a, b, c = (rng.standard_normal(64).astype(np.float32) for _ in range(3))
    compiled = enigma.compile(mm8, bounds_check=True)
    out = run_kernel(runtime, compiled, [a, b, c], np.float32, 64, (32, 1, 1),
                     (32, 1, 1))
    want = a.reshape(8, 8).astype(np.float64) @ b.reshape(8, 8) + \
        c.reshape(8, 8)
    np.testing.assert_allclose(out.reshape(8, 8), want, rtol=1e-4, atol=1e-4)
    if runtime.name == "cuda":
        # The check reports the op, which still runs: CUDA's warp shuffles
        # naming lanes that do not exist are undefined (they may hang).
        pytest.skip("a simdgroup matrix op in a short warp is not run on CUDA")
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [a, b, c], output_size=256, grid=(16, 1, 1),
                        threads=(16, 1, 1))
    v = checked_error(_SHORT_SIMDGROUP, excinfo)
    message = v["message"]
    assert v["fn"] == "simdgroup_matrix_load" and v["lanes"] == "16", message
    assert_reported_at(__file__, v, "matrix-load")


# ---------------------------------------------------------------------------
# What the check leaves alone
# ---------------------------------------------------------------------------

TILE = 32


@enigma.kernel
def copied_tile(A: enigma.f32, O: enigma.f32):
    tile = enigma.threadgroup_alloc("float", TILE)
    base = enigma.threadgroup_position_in_grid("x") * TILE
    with enigma.if_(enigma.simdgroup_index_in_threadgroup() == 0):
        ev = enigma.async_copy_1d_d2t(tile, 0, A, base, TILE)
        enigma.async_copy_wait(ev)
    enigma.barrier()
    lid = enigma.thread_position_in_threadgroup()
    O[base + lid] = tile[TILE - 1 - lid] * 2.0


def test_arrays_filled_by_async_copies_are_not_judged(runtime, rng):
    """The check sees only element stores and atomics; an array that
    anything else writes is left out rather than misjudged."""
    n = TILE * 3
    a = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(copied_tile, bounds_check=True),
                     [a], np.float32, n, (n, 1, 1), (TILE, 1, 1))
    want = a.reshape(-1, TILE)[:, ::-1].reshape(-1).astype(np.float64) * 2
    np.testing.assert_allclose(out, want, rtol=1e-6)


@enigma.kernel
def full_memory(A: enigma.f32, O: enigma.f32):
    big = enigma.threadgroup_alloc("float", 8192)  # all of Metal's 32 KiB
    lid = enigma.thread_position_in_threadgroup()
    gid = enigma.thread_position_in_grid
    big[lid] = A[gid]
    enigma.barrier()
    O[gid] = big[enigma.threads_per_threadgroup() - 1 - lid]


def test_shadow_never_pushes_a_kernel_past_its_memory_limit(runtime, rng):
    compiled = enigma.compile(full_memory, bounds_check=True)
    assert compiled.threadgroup_memory_bytes <= 32768
    n = 100
    a = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, compiled, [a], np.float32, n, (n, 1, 1),
                     (64, 1, 1))
    want = np.concatenate([a[:64][::-1], a[64:][::-1]])
    np.testing.assert_array_equal(out, want)


def test_unchecked_kernels_carry_no_shadow():
    compiled = enigma.compile(_block_scan(lambda e: GROUP - 1))
    assert compiled.threadgroup_memory_bytes == 4 * GROUP
    checked = enigma.compile(_block_scan(lambda e: GROUP - 1),
                             bounds_check=True)
    assert checked.threadgroup_memory_bytes == 4 * GROUP + 16


def test_checked_cuda_source_compiles_with_nvrtc():
    try:
        enigma._core.Runtime.nvrtc_check(
            'extern "C" __global__ void k() {}', "sm_90", [])
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed on this machine")
    for kernel in (_block_scan(lambda e: GROUP - 1), local_histogram,
                   shift_down, butterfly_sum, mm8, copied_tile):
        compiled = enigma.compile(kernel, bounds_check=True)
        enigma._core.Runtime.nvrtc_check(compiled.cuda_source, "sm_90", [])
