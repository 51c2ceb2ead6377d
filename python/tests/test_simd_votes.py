"""Simdgroup votes and lane queries (docs/reference/simd.md): simd_ballot,
simd_any, simd_all, simd_active_threads_mask and simd_is_first, checked
against numpy on grids with full, partial and short simdgroups."""

import numpy as np
import pytest

import enigma
from conftest import run_kernel


def _simdgroups(n, group):
    """(first thread, lanes) of every simdgroup of a 1-D launch of n
    threads in threadgroups of `group` threads."""
    out = []
    for start in range(0, n, group):
        size = min(group, n - start)
        for s in range(0, size, 32):
            out.append((start + s, min(32, size - s)))
    return out


@enigma.kernel
def votes(A: enigma.u32, ballot: enigma.u64, any_: enigma.u32,
          all_: enigma.u32, mask: enigma.u64, first: enigma.u32):
    i = enigma.thread_position_in_grid
    odd = A[i] % 3 == 0
    ballot[i] = enigma.simd_ballot(odd)
    any_[i] = enigma.metal_cast(enigma.simd_any(odd), "uint")
    all_[i] = enigma.metal_cast(enigma.simd_all(A[i] < 90), "uint")
    mask[i] = enigma.simd_active_threads_mask()
    first[i] = enigma.metal_cast(enigma.simd_is_first(), "uint")


SHAPES = [(64, 64), (70, 64), (100, 48), (1, 1), (33, 1024), (200, 96)]


@pytest.mark.parametrize("n,group", SHAPES)
def test_votes_against_numpy(runtime, rng, n, group):
    a = rng.integers(0, 100, size=n, dtype=np.uint32)
    compiled = enigma.compile(votes)
    outs = runtime.execute(compiled, [a],
                           output_sizes=[8 * n, 4 * n, 4 * n, 8 * n, 4 * n],
                           grid=(n, 1, 1), threads=(group, 1, 1))
    ballot, any_, all_, mask, first = (
        np.frombuffer(o, t) for o, t in zip(
            outs, [np.uint64, np.uint32, np.uint32, np.uint64, np.uint32]))
    for start, lanes in _simdgroups(n, group):
        part = a[start:start + lanes]
        bits = sum(1 << k for k in range(lanes) if part[k] % 3 == 0)
        want_mask = (1 << lanes) - 1
        np.testing.assert_array_equal(ballot[start:start + lanes], bits)
        np.testing.assert_array_equal(any_[start:start + lanes],
                                      int(bits != 0))
        np.testing.assert_array_equal(all_[start:start + lanes],
                                      int(bool(np.all(part < 90))))
        np.testing.assert_array_equal(mask[start:start + lanes], want_mask)
        np.testing.assert_array_equal(first[start:start + lanes],
                                      [1] + [0] * (lanes - 1))


@enigma.kernel
def count_in_simdgroup(A: enigma.f32, out: enigma.u32):
    i = enigma.thread_position_in_grid
    hits = enigma.simd_ballot(A[i] > 0.0)
    below = hits & ((enigma.metal_cast(1, "ulong") <<
                     enigma.metal_cast(enigma.thread_index_in_simdgroup(),
                                       "ulong")) - 1)
    # a compaction index: positives before this lane in its simdgroup
    out[i] = enigma.metal_cast(enigma.popcount(below), "uint")


def test_ballot_gives_a_compaction_index(runtime, rng):
    n = 96 + 17
    a = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(count_in_simdgroup), [a],
                     np.uint32, n, (n, 1, 1), (96, 1, 1))
    want = np.empty(n, np.uint32)
    for start, lanes in _simdgroups(n, 96):
        positive = a[start:start + lanes] > 0
        want[start:start + lanes] = np.concatenate(
            [[0], np.cumsum(positive)[:-1]])
    np.testing.assert_array_equal(out, want)


def test_numbers_vote_as_bools(runtime, rng):
    @enigma.kernel
    def nonzero(A: enigma.i32, out: enigma.u32):
        i = enigma.thread_position_in_grid
        out[i] = enigma.metal_cast(enigma.simd_all(A[i]), "uint") * 2 + \
            enigma.metal_cast(enigma.simd_any(A[i]), "uint")

    n = 64
    a = rng.integers(-3, 3, size=n, dtype=np.int32)
    a[:32] = np.where(a[:32] == 0, 5, a[:32])  # all non-zero in simdgroup 0
    a[32:] = 0
    a[40] = -7  # one non-zero in simdgroup 1
    out = run_kernel(runtime, enigma.compile(nonzero), [a], np.uint32, n,
                     (n, 1, 1), (64, 1, 1))
    np.testing.assert_array_equal(out[:32], 3)
    np.testing.assert_array_equal(out[32:], 1)


def test_types_and_errors():
    seen = {}

    @enigma.kernel
    def types(out: enigma.u64):
        i = enigma.thread_position_in_grid
        b = enigma.simd_ballot(i > 3)
        m = enigma.simd_active_threads_mask()
        f = enigma.simd_is_first()
        seen.update(ballot=b.dtype, mask=m.dtype, first=f.dtype,
                    any=enigma.simd_any(f).dtype)
        out[i] = b | m

    enigma.compile(types)
    assert seen == {"ballot": enigma.u64, "mask": enigma.u64,
                    "first": enigma.b1, "any": enigma.b1}

    with pytest.raises(enigma.EnigmaError, match="simd_ballot"):
        @enigma.kernel
        def vector(A: enigma.f32, out: enigma.u64):
            i = enigma.thread_position_in_grid
            out[i] = enigma.simd_ballot(enigma.make_float4(A[i], 0, 0, 0) > 0)
        enigma.compile(vector)

    with pytest.raises(enigma.EnigmaError, match="lane"):
        @enigma.kernel
        def divergent(A: enigma.f32, out: enigma.u64):
            i = enigma.thread_position_in_grid
            with enigma.if_(A[i] > 0.0):
                out[i] = enigma.simd_ballot(True)
        enigma.compile(divergent)

    with pytest.raises(enigma.EnigmaError,
                       match=r"simd_is_first\(\) takes 0 positional"):
        @enigma.kernel
        def extra(out: enigma.u32):
            out[0] = enigma.simd_is_first(1)
        enigma.compile(extra)


def test_sources():
    compiled = enigma.compile(votes)
    msl = compiled.metal_source
    assert "(ulong)(simd_vote::vote_t)simd_ballot(" in msl
    assert "(ulong)(simd_vote::vote_t)simd_active_threads_mask()" in msl
    assert "simd_is_first()" in msl and "simd_any(" in msl
    cuda = compiled.cuda_source
    assert "simd_active_threads_mask(enigma_lanes)" in cuda
    assert "simd_is_first(enigma_lanes)" in cuda
    assert "enigma_cpu_simd_ballot(" in compiled.cpp_source


def test_cuda_source_compiles_with_nvrtc():
    try:
        enigma._core.Runtime.nvrtc_check(
            'extern "C" __global__ void k() {}', "sm_90", [])
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed on this machine")
    for kernel in (votes, count_in_simdgroup):
        enigma._core.Runtime.nvrtc_check(enigma.compile(kernel).cuda_source,
                                         "sm_90", [])
