"""Atomics on device buffers and threadgroup tensors, as functions and as
methods (docs/reference/cooperation.md), against numpy references."""

import numpy as np
import pytest

import enigma
from conftest import run_kernel

ORDERS = ["relaxed", "acquire", "release", "acq_rel"]


def _histogram_kernel(method, order):
    @enigma.kernel
    def histogram(data: enigma.u32, bins: enigma.u32):
        value = data[enigma.thread_position_in_grid]
        if method:
            bins.atomic_fetch_add(value, 1, order=order)
        else:
            enigma.atomic_fetch_add(bins, value, 1, order)
    return histogram


@pytest.mark.parametrize("method", [False, True])
@pytest.mark.parametrize("order", ORDERS)
def test_histogram_matches_bincount(runtime, rng, method, order):
    nbins = 64
    n = 10_000 + int(rng.integers(0, 300))  # partial last threadgroup
    data = rng.integers(0, nbins, size=n, dtype=np.uint32)
    compiled = enigma.compile(_histogram_kernel(method, order))
    assert "device atomic_uint* bins" in compiled.metal_source
    assert "memory_order_relaxed" in compiled.metal_source
    out = run_kernel(runtime, compiled, [data], np.uint32, nbins,
                     grid=(n, 1, 1), threads=(128, 1, 1))
    np.testing.assert_array_equal(out, np.bincount(data, minlength=nbins))


@enigma.kernel
def signed_extremes(data: enigma.i32, out: enigma.i32):
    v = data[enigma.thread_position_in_grid]
    enigma.atomic_fetch_max(out, 0, v)
    out.atomic_fetch_min(1, v)
    enigma.atomic_fetch_add(out, 2, v)
    out.atomic_fetch_sub(3, v)


@pytest.mark.parametrize("n", [1, 255, 4099])
def test_signed_min_max_add_sub_across_threads(runtime, rng, n):
    data = rng.integers(-10**6, 10**6, size=n, dtype=np.int32)
    out = run_kernel(runtime, enigma.compile(signed_extremes), [data],
                     np.int32, 4, grid=(n, 1, 1), threads=(64, 1, 1))
    total = int(data.astype(np.int64).sum())
    # Output buffers start at zero, so zero takes part in min and max.
    assert out[0] == max(0, int(data.max()))
    assert out[1] == min(0, int(data.min()))
    assert out[2] == total
    assert out[3] == -total


@enigma.kernel
def unsigned_bits(data: enigma.u32, out: enigma.u32):
    v = data[enigma.thread_position_in_grid]
    enigma.atomic_fetch_max(out, 0, v)  # unsigned comparison
    enigma.atomic_fetch_or(out, 1, 1 << (v & 31))
    enigma.atomic_fetch_xor(out, 2, v)


def test_unsigned_max_or_xor_across_threads(runtime, rng):
    n = 3000
    data = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    data[0] = 0xFFFFFFF0  # above INT_MAX: a signed max would get it wrong
    out = run_kernel(runtime, enigma.compile(unsigned_bits), [data], np.uint32,
                     3, grid=(n, 1, 1), threads=(256, 1, 1))
    assert out[0] == data.max()
    assert out[1] == np.bitwise_or.reduce(np.uint32(1) << (data & 31))
    assert out[2] == np.bitwise_xor.reduce(data)


@enigma.kernel
def per_thread_ops(a: enigma.u32, b: enigma.u32, mem: enigma.u32,
                   old: enigma.u32, ok: enigma.u32):
    tid = enigma.thread_position_in_grid
    x, y = a[tid], b[tid]
    base = tid * 8
    ops = [enigma.atomic_fetch_and, enigma.atomic_fetch_or,
           enigma.atomic_fetch_xor, enigma.atomic_exchange,
           enigma.atomic_fetch_sub, enigma.atomic_fetch_min]
    for k, op in enumerate(ops):
        enigma.atomic_store(mem, base + k, x)
        old[base + k] = op(mem, base + k, y)
    mem.atomic_store(base + 6, x, order="release")
    success, seen = mem.atomic_compare_exchange_weak(base + 6, x, y)
    old[base + 6] = seen
    ok[base + 6] = enigma.metal_cast(success, "uint")
    enigma.atomic_store(mem, base + 7, x)
    success, seen = enigma.atomic_compare_exchange_weak(
        mem, base + 7, x + 1, y, success_order="acq_rel",
        failure_order="acquire")
    old[base + 7] = seen
    ok[base + 7] = enigma.metal_cast(success, "uint")
    # atomic_load of what the first op left.
    ok[base] = enigma.atomic_load(mem, base, "acquire")


def test_each_operation_returns_the_old_value(runtime, rng):
    n = 100
    a = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    b = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    raw = runtime.execute(enigma.compile(per_thread_ops), [a, b],
                          output_sizes=[n * 32] * 3, grid=(n, 1, 1),
                          threads=(32, 1, 1))
    mem, old, ok = (np.frombuffer(r, dtype=np.uint32).reshape(n, 8)
                    for r in raw)
    with np.errstate(over="ignore"):
        finals = [a & b, a | b, a ^ b, b, a - b, np.minimum(a, b), b, a]
    for k in range(8):
        np.testing.assert_array_equal(mem[:, k], finals[k], err_msg=f"op {k}")
        np.testing.assert_array_equal(old[:, k], a, err_msg=f"op {k}")
    np.testing.assert_array_equal(ok[:, 6], 1)
    np.testing.assert_array_equal(ok[:, 7], 0)
    np.testing.assert_array_equal(ok[:, 0], a & b)


@enigma.kernel
def signed_per_thread(a: enigma.i32, b: enigma.i32, mem: enigma.i32,
                      old: enigma.i32):
    tid = enigma.thread_position_in_grid
    enigma.atomic_store(mem, tid * 2, a[tid])
    old[tid * 2] = enigma.atomic_fetch_min(mem, tid * 2, b[tid])
    enigma.atomic_store(mem, tid * 2 + 1, a[tid])
    old[tid * 2 + 1] = mem.atomic_fetch_max(tid * 2 + 1, b[tid])


def test_signed_min_max_compare_as_signed(runtime, rng):
    n = 200
    a = rng.integers(-2**31, 2**31, size=n, dtype=np.int32)
    b = rng.integers(-2**31, 2**31, size=n, dtype=np.int32)
    raw = runtime.execute(enigma.compile(signed_per_thread), [a, b],
                          output_sizes=[n * 8] * 2, grid=(n, 1, 1),
                          threads=(64, 1, 1))
    mem, old = (np.frombuffer(r, dtype=np.int32).reshape(n, 2) for r in raw)
    np.testing.assert_array_equal(mem[:, 0], np.minimum(a, b))
    np.testing.assert_array_equal(mem[:, 1], np.maximum(a, b))
    np.testing.assert_array_equal(old[:, 0], a)
    np.testing.assert_array_equal(old[:, 1], a)


@enigma.kernel
def float_sum(data: enigma.f32, out: enigma.f32):
    v = data[enigma.thread_position_in_grid]
    out.atomic_fetch_add(0, v)
    enigma.atomic_fetch_sub(out, 1, v)
    enigma.atomic_exchange(out, 2, 2.5)


def test_float_add_sub(runtime, rng):
    n = 5000
    # Small whole numbers: every partial sum is exact in float32, so the
    # result does not depend on the order the threads add in.
    data = rng.integers(0, 16, size=n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(float_sum), [data], np.float32,
                     3, grid=(n, 1, 1), threads=(128, 1, 1))
    total = data.astype(np.float64).sum()
    assert out[0] == total and out[1] == -total and out[2] == 2.5


@enigma.kernel
def cas_race(winner: enigma.u32, ok: enigma.u32, seen: enigma.u32):
    tid = enigma.thread_position_in_grid
    success, observed = enigma.atomic_compare_exchange_weak(
        winner, 0, 0, tid + 1)
    ok[tid] = enigma.metal_cast(success, "uint")
    seen[tid] = observed


def test_compare_exchange_race_has_one_winner(runtime):
    n = 2048
    raw = runtime.execute(enigma.compile(cas_race), [],
                          output_sizes=[4, n * 4, n * 4], grid=(n, 1, 1),
                          threads=(64, 1, 1))
    winner, ok, seen = (np.frombuffer(r, dtype=np.uint32) for r in raw)
    # The CPU and CUDA backends never fail spuriously: exactly one thread
    # swapped 0 for its id + 1; every other thread saw the winner's value.
    assert ok.sum() == 1
    w = int(np.flatnonzero(ok)[0])
    assert winner[0] == w + 1
    assert seen[w] == 0
    np.testing.assert_array_equal(np.delete(seen, w), w + 1)


@enigma.kernel
def group_tickets(tickets: enigma.u32, totals: enigma.u32):
    count = enigma.threadgroup_alloc(enigma.u32, 1)
    count.atomic_store(0, 0)
    enigma.barrier()
    ticket = count.atomic_fetch_add(0, 1)
    enigma.barrier()
    tid = enigma.thread_position_in_grid
    tickets[tid] = ticket
    totals[tid] = enigma.atomic_load(count, 0)


@pytest.mark.parametrize("n", [32, 100, 257])
def test_threadgroup_atomics_with_barrier(runtime, n):
    group = 32
    compiled = enigma.compile(group_tickets)
    assert "threadgroup atomic_uint" in compiled.metal_source
    raw = runtime.execute(compiled, [], output_sizes=[n * 4, n * 4],
                          grid=(n, 1, 1), threads=(group, 1, 1))
    tickets, totals = (np.frombuffer(r, dtype=np.uint32) for r in raw)
    for start in range(0, n, group):
        size = min(group, n - start)
        np.testing.assert_array_equal(
            np.sort(tickets[start:start + size]), np.arange(size))
        np.testing.assert_array_equal(totals[start:start + size], size)


@enigma.kernel
def threadgroup_signed_min(data: enigma.i32, out: enigma.i32):
    low = enigma.threadgroup_alloc("int", 1)
    low.atomic_store(0, 2**31 - 1)
    enigma.barrier()
    low.atomic_fetch_min(0, data[enigma.thread_position_in_grid])
    enigma.barrier()
    out[enigma.thread_position_in_grid] = low.atomic_load(0)


def test_threadgroup_signed_min(runtime, rng):
    n, group = 300, 64
    data = rng.integers(-10**9, 10**9, size=n, dtype=np.int32)
    out = run_kernel(runtime, enigma.compile(threadgroup_signed_min), [data],
                     np.int32, n, grid=(n, 1, 1), threads=(group, 1, 1))
    want = np.concatenate([np.full(min(group, n - s), data[s:s + group].min())
                           for s in range(0, n, group)])
    np.testing.assert_array_equal(out, want)


# --- mistakes ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [enigma.u8, enigma.i16, enigma.f16,
                                   enigma.bf16])
def test_unsupported_element_type(dtype):
    @enigma.kernel
    def bad(buf: dtype):
        enigma.atomic_fetch_add(buf, 0, 1)

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_atomics.py:\d+:.*int, uint, long, ulong "
                             r"or float memory"):
        enigma.compile(bad)


def test_bitwise_atomic_on_float_is_an_error():
    @enigma.kernel
    def bad(buf: enigma.f32):
        buf.atomic_fetch_or(0, 1.0)

    with pytest.raises(enigma.EnigmaError, match="int, uint, long or ulong"):
        enigma.compile(bad)


@pytest.mark.parametrize("order", ["seq_cst", "consume", "", None, 1])
def test_unknown_memory_order(order):
    @enigma.kernel
    def bad(buf: enigma.u32):
        enigma.atomic_fetch_add(buf, 0, 1, order=order)

    with pytest.raises(enigma.EnigmaError, match="memory order"):
        enigma.compile(bad)


def test_atomic_on_a_value_is_an_error():
    @enigma.kernel
    def bad(buf: enigma.u32):
        v = buf[0]
        enigma.atomic_fetch_add(v, 0, 1)

    with pytest.raises(enigma.EnigmaError, match="buffer parameter"):
        enigma.compile(bad)


def test_negative_index_is_an_error():
    @enigma.kernel
    def bad(buf: enigma.u32):
        enigma.atomic_load(buf, -1)

    with pytest.raises(enigma.EnigmaError, match="negative"):
        enigma.compile(bad)
