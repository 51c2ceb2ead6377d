"""Barriers and simd functions under control flow whose condition differs
between threads without coming from a thread query: an atomic's old value, a
compare-exchange's success or observed value, a simd / quad scan, a sum of a
uniform value over a group whose lane count varies, an atomic load of memory
the kernel changes atomically, a register array holding the thread's
position. Each must be refused at compile time (the CPU runtime would run
the branch in every thread, Metal and the MSL host runtime in some), naming
the line of the barrier and the line that makes the condition vary; the
uniform neighbours of each stay accepted and agree on every runtime."""

from __future__ import annotations

import re

import numpy as np
import pytest

import enigma
from conftest import run_kernel

_SOURCE_LINES = open(__file__, encoding="utf-8").read().splitlines()


def line_of(tag: str) -> int:
    hits = [number for number, text in enumerate(_SOURCE_LINES, start=1)
            if text.rstrip().endswith(f"# {tag}")]
    assert len(hits) == 1, f"marker {tag!r} found {len(hits)} times"
    return hits[0]


def _barrier_under(condition):
    @enigma.kernel
    def k(A: enigma.u32, F: enigma.f32, C: enigma.u32):
        tid = enigma.thread_position_in_grid
        with enigma.if_(condition(A, F, tid)):
            enigma.barrier()  # sync: barrier
        C[tid] = 1
    return k


def _simd_under(condition):
    @enigma.kernel
    def k(A: enigma.u32, F: enigma.f32, C: enigma.u32):
        tid = enigma.thread_position_in_grid
        with enigma.if_(condition(A, F, tid)):
            C[tid] = enigma.simd_max(A[tid])  # sync: simd
    return k


def _register_position(A, F, tid):
    r = enigma.register_tensor((2,), "uint")
    r[1] = tid  # source: register
    return r[1] < 4


CONDITIONS = {
    "atomic_fetch_add": (
        lambda A, F, tid: enigma.atomic_fetch_add(A, 0, 1) < 4,  # source: atomic_fetch_add
        r"enigma\.atomic_fetch_add\(\) gives each thread a different old value"),
    "atomic_exchange": (
        lambda A, F, tid: enigma.atomic_exchange(A, 0, 7) == 0,  # source: atomic_exchange
        r"enigma\.atomic_exchange\(\) gives each thread a different old value"),
    "float_atomic_fetch_add": (
        lambda A, F, tid: enigma.atomic_fetch_add(F, 0, 1.0) < 4.0,  # source: float_atomic_fetch_add
        r"enigma\.atomic_fetch_add\(\)"),
    "atomic_fetch_max": (
        lambda A, F, tid: enigma.atomic_fetch_max(A, 0, 5) < 4,  # source: atomic_fetch_max
        r"enigma\.atomic_fetch_max\(\)"),
    "compare_exchange_success": (
        lambda A, F, tid: enigma.atomic_compare_exchange_weak(A, 0, 0, 1)[0],  # source: compare_exchange_success
        r"enigma\.atomic_compare_exchange_weak\(\) succeeds in some threads"),
    "compare_exchange_observed": (
        lambda A, F, tid: enigma.atomic_compare_exchange_weak(A, 0, 0, 1)[1] == 0,  # source: compare_exchange_observed
        r"enigma\.atomic_compare_exchange_weak\(\)"),
    "simd_prefix_exclusive_sum": (
        lambda A, F, tid: enigma.simd_prefix_exclusive_sum(A[0]) < 4,  # source: simd_prefix_exclusive_sum
        r"enigma\.simd_prefix_exclusive_sum\(\) gives each lane the "
        r"combination of the lanes below it"),
    "simd_prefix_inclusive_product": (
        lambda A, F, tid: enigma.simd_prefix_inclusive_product(F[0]) < 4.0,  # source: simd_prefix_inclusive_product
        r"enigma\.simd_prefix_inclusive_product\(\)"),
    "quad_prefix_inclusive_sum": (
        lambda A, F, tid: enigma.quad_prefix_inclusive_sum(A[0]) < 4,  # source: quad_prefix_inclusive_sum
        r"enigma\.quad_prefix_inclusive_sum\(\)"),
    "quad_sum_of_uniform": (
        lambda A, F, tid: enigma.quad_sum(A[0]) == 4 * A[0],  # source: quad_sum_of_uniform
        r"enigma\.quad_sum\(\) depends on how many lanes its quad has"),
    "atomic_load_of_counter": (
        lambda A, F, tid: (enigma.atomic_fetch_add(A, 1, 1) * 0
                           + enigma.atomic_load(A, 1)) < 4,  # source: atomic_load_of_counter
        None),
    "register_array": (_register_position, None),
}

# Only at threadgroup scope: a simdgroup's lanes agree on its own sum.
THREADGROUP_ONLY = {
    "simd_sum_of_uniform": (
        lambda A, F, tid: enigma.simd_sum(A[0]) == 32 * A[0],  # source: simd_sum_of_uniform
        r"enigma\.simd_sum\(\) depends on how many lanes its simdgroup has, "
        r"and the last simdgroup of a partial threadgroup has fewer"),
    "simd_xor_of_uniform": (
        lambda A, F, tid: enigma.simd_xor(A[0]) == 0,  # source: simd_xor_of_uniform
        r"enigma\.simd_xor\(\)"),
}


def _check_refused(kernel, sync_tag, source_tag, reason):
    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(kernel, emit_only=True)
    message = str(info.value)
    here = "test_uniformity_sources.py"
    assert re.search(rf"{here}:{line_of(sync_tag)}: error: .*must reach it",
                     message), message
    assert re.search(rf"{here}:\d+: note: divergent control flow is here",
                     message), message
    if reason is not None:
        assert re.search(rf"{here}:{line_of(source_tag)}: note: its condition "
                         rf"differs between threads: {reason}", message), message


@pytest.mark.parametrize("name", sorted({**CONDITIONS, **THREADGROUP_ONLY}))
def test_barrier_under_a_varying_condition_is_refused(name):
    condition, reason = {**CONDITIONS, **THREADGROUP_ONLY}[name]
    _check_refused(_barrier_under(condition), "sync: barrier",
                   f"source: {name.split('.')[0]}", reason)


@pytest.mark.parametrize("name", sorted(CONDITIONS))
def test_simd_function_under_a_varying_condition_is_refused(name):
    condition, reason = CONDITIONS[name]
    _check_refused(_simd_under(condition), "sync: simd",
                   f"source: {name}", reason)


def test_the_atomic_load_of_a_counter_names_the_load():
    condition, _ = CONDITIONS["atomic_load_of_counter"]
    with pytest.raises(enigma.EnigmaError,
                       match=r"enigma\.atomic_load\(\) reads memory that the "
                             r"kernel changes atomically"):
        enigma.compile(_barrier_under(condition), emit_only=True)


# --------------------------------------------------------------------------
# What stays accepted, and runs the same everywhere
# --------------------------------------------------------------------------

@enigma.kernel
def ticket_from_thread_zero(counter: enigma.u32, out: enigma.u32):
    """One thread takes a ticket; all read it after a barrier and branch on
    it together, with a barrier inside."""
    lid = enigma.thread_index_in_threadgroup()
    tid = enigma.thread_position_in_grid
    ticket = enigma.threadgroup_alloc("uint", 1)
    with enigma.if_(lid == 0):
        ticket[0] = enigma.atomic_fetch_add(counter, 0, 1)
    enigma.barrier()
    mine = ticket[0]
    with enigma.if_(mine < 3):
        enigma.barrier()
        out[tid] = mine + 1


def test_a_ticket_shared_through_threadgroup_memory_runs(runtime):
    groups, size = 5, 64
    counter = np.zeros(1, dtype=np.uint32)
    out = run_kernel(runtime, enigma.compile(ticket_from_thread_zero),
                     [counter], np.uint32, groups * size,
                     grid=groups * size, threads=size)
    per_group = out.reshape(groups, size)
    # Every thread of a group agrees; tickets 0..2 wrote 1..3, the others 0.
    assert all(len(set(row)) == 1 for row in per_group)
    assert sorted(per_group[:, 0]) == [0, 0, 1, 2, 3]


@enigma.kernel
def first_ten_winners(counter: enigma.u32, out: enigma.u32):
    """A varying condition without a barrier inside is fine."""
    tid = enigma.thread_position_in_grid
    out[tid] = 0
    with enigma.if_(enigma.atomic_fetch_add(counter, 0, 1) < 10):
        out[tid] = 1


def test_an_atomic_condition_without_a_barrier_runs(runtime):
    n = 200
    out = run_kernel(runtime, enigma.compile(first_ten_winners),
                     [np.zeros(1, dtype=np.uint32)], np.uint32, n,
                     grid=n, threads=64)
    assert int(out.sum()) == 10


@enigma.kernel
def lanes_of_own_simdgroup(out: enigma.u32):
    """A simdgroup's lanes agree on its own sum, so simd functions may sit
    under it; the CPU must run such a branch per simdgroup, since the sums
    of the full and the partial simdgroup differ."""
    tid = enigma.thread_position_in_grid
    out[tid] = 0
    lanes = enigma.simd_sum(enigma.metal_cast(1, "uint"))
    with enigma.if_(lanes == 32):
        out[tid] = enigma.simd_max(tid) + 1


@pytest.mark.parametrize("size", [48, 33, 64])
def test_a_branch_on_the_simdgroup_lane_count_runs_per_simdgroup(runtime, size):
    out = run_kernel(runtime, enigma.compile(lanes_of_own_simdgroup), [],
                     np.uint32, size, grid=size, threads=size)
    expected = np.zeros(size, dtype=np.uint32)
    expected[:32] = 32  # simd_max(tid) + 1 of the first, full simdgroup
    if size == 64:
        expected[32:] = 64
    np.testing.assert_array_equal(out, expected)


@enigma.kernel
def uniform_reads(A: enigma.u32, out: enigma.u32):
    """An atomic load of memory nobody writes atomically, a minimum over a
    simdgroup and a register array of uniform values are uniform."""
    tid = enigma.thread_position_in_grid
    r = enigma.register_tensor((2,), "uint")
    r[0] = A[1]
    acc = enigma.threadgroup_alloc("uint", 1)
    with enigma.if_(enigma.thread_index_in_threadgroup() == 0):
        acc[0] = 0
    enigma.barrier()
    with enigma.if_(enigma.atomic_load(A, 0) > 2):
        enigma.barrier()
        with enigma.if_(enigma.simd_min(A[2]) == 5):
            enigma.barrier()
            with enigma.if_(r[0] == 7):
                enigma.barrier()
                enigma.atomic_fetch_add(acc, 0, 1)
    enigma.barrier()
    out[tid] = acc[0]


def test_uniform_neighbours_compile_and_run(runtime):
    n = 96
    out = run_kernel(runtime, enigma.compile(uniform_reads),
                     [np.array([3, 7, 5], dtype=np.uint32)], np.uint32, n,
                     grid=n, threads=32)
    np.testing.assert_array_equal(out, np.full(n, 32, dtype=np.uint32))
