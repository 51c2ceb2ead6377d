"""64-bit integer atomics and float atomic min / max
(docs/reference/cooperation.md, "Atomics").

The CPU and CUDA runtimes have every operation on long / ulong memory and
float min / max (a compare-exchange loop). Metal has only min and max of
ulong device memory whose old value is not used: the MSL host runtime runs
those, and refuses any other 64-bit atomic with an EnigmaError that names
the operation and its line.
"""

import os
import re

import numpy as np
import pytest

import enigma
from conftest import run_kernel, tagged_line

THIS_FILE = os.path.basename(__file__)
BINS = 16


def _line(tag):
    return tagged_line(__file__, tag)


def _runs_metal(runtime):
    return runtime.name in ("metal", "metal-host")


# ---------------------------------------------------------------------------
# What Metal has: min / max of ulong device memory, old value unused
# ---------------------------------------------------------------------------

@enigma.kernel
def ulong_extremes(keys: enigma.u32, values: enigma.u64, hi: enigma.u64,
                   lo: enigma.u64):
    i = enigma.thread_position_in_grid
    b = keys[i] % BINS
    hi.atomic_fetch_max(b, values[i])
    enigma.atomic_fetch_min(lo, b, ~values[i])


@pytest.mark.parametrize("n", [1, 300, 4099])
def test_ulong_min_max_per_bin(runtime, rng, n):
    keys = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    values = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    values[0] = 2**64 - 5  # above every signed value: an unsigned compare
    outs = runtime.execute(enigma.compile(ulong_extremes), [keys, values],
                           output_sizes=[8 * BINS, 8 * BINS], grid=(n, 1, 1),
                           threads=(64, 1, 1))
    hi, lo = (np.frombuffer(o, np.uint64) for o in outs)
    want_hi = np.zeros(BINS, np.uint64)
    want_lo = np.zeros(BINS, np.uint64)  # outputs start at zero
    np.maximum.at(want_hi, keys % BINS, values)
    np.minimum.at(want_lo, keys % BINS, ~values)
    np.testing.assert_array_equal(hi, want_hi)
    np.testing.assert_array_equal(lo, want_lo)


# ---------------------------------------------------------------------------
# What only the CPU and CUDA runtimes have
# ---------------------------------------------------------------------------

@enigma.kernel
def wide_ops(a: enigma.i64, b: enigma.i64, u: enigma.u64, mem: enigma.i64,
             old: enigma.i64, umem: enigma.u64, uold: enigma.u64,
             ok: enigma.u32):
    t = enigma.thread_position_in_grid
    x, y = a[t], b[t]
    base = t * 8
    ops = [enigma.atomic_fetch_add, enigma.atomic_fetch_sub,
           enigma.atomic_fetch_min, enigma.atomic_fetch_max,  # signed-minmax
           enigma.atomic_fetch_and, enigma.atomic_fetch_or,
           enigma.atomic_fetch_xor, enigma.atomic_exchange]
    for k, op in enumerate(ops):
        enigma.atomic_store(mem, base + k, x)
        old[base + k] = op(mem, base + k, y)
    # unsigned: min / max whose old value is used, and compare-exchange
    enigma.atomic_store(umem, t * 4, u[t])
    uold[t * 4] = enigma.atomic_fetch_max(umem, t * 4, 2**63)
    enigma.atomic_store(umem, t * 4 + 1, u[t])
    uold[t * 4 + 1] = umem.atomic_fetch_min(t * 4 + 1, 2**63)
    enigma.atomic_store(umem, t * 4 + 2, u[t])
    success, seen = umem.atomic_compare_exchange_weak(t * 4 + 2, u[t], 7)
    uold[t * 4 + 2] = seen
    ok[t] = enigma.metal_cast(success, "uint")
    uold[t * 4 + 3] = enigma.atomic_load(umem, t * 4 + 2)


def _wrap64(v):
    v %= 2**64
    return v - 2**64 if v >= 2**63 else v


def test_every_operation_on_64_bit_memory(runtime, rng):
    n = 70
    a = rng.integers(-2**63, 2**63, size=n, dtype=np.int64)
    b = rng.integers(-2**63, 2**63, size=n, dtype=np.int64)
    u = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    compiled = enigma.compile(wide_ops)
    sizes = [8 * 8 * n, 8 * 8 * n, 8 * 4 * n, 8 * 4 * n, 4 * n]
    if _runs_metal(runtime):
        with pytest.raises(enigma.EnigmaError) as excinfo:
            runtime.execute(compiled, [a, b, u], output_sizes=sizes,
                            grid=(n, 1, 1), threads=(32, 1, 1))
        message = str(excinfo.value)
        assert "cannot run on the metal-host runtime" in message
        assert "atomic_store on 64-bit device memory at " in message
        assert "Metal's 64-bit atomics are only atomic_fetch_min and " \
            "atomic_fetch_max of ulong device memory" in message
        assert "Run it on the CPU or CUDA runtime" in message
        return
    mem, old, umem, uold, ok = runtime.execute(
        compiled, [a, b, u], output_sizes=sizes, grid=(n, 1, 1),
        threads=(32, 1, 1))
    old = np.frombuffer(old, np.int64).reshape(n, 8)
    mem = np.frombuffer(mem, np.int64).reshape(n, 8)
    np.testing.assert_array_equal(old, np.repeat(a[:, None], 8, axis=1))
    x, y = a.astype(object), b.astype(object)
    want = [[_wrap64(p + q), _wrap64(p - q), min(p, q), max(p, q), p & q,
             p | q, p ^ q, q] for p, q in zip(x, y)]
    np.testing.assert_array_equal(mem, np.array(want, dtype=np.int64))
    uold = np.frombuffer(uold, np.uint64).reshape(n, 4)
    umem = np.frombuffer(umem, np.uint64).reshape(n, 4)
    np.testing.assert_array_equal(uold[:, 0], u)
    np.testing.assert_array_equal(uold[:, 1], u)
    np.testing.assert_array_equal(uold[:, 2], u)
    np.testing.assert_array_equal(uold[:, 3], 7)
    np.testing.assert_array_equal(umem[:, 0], np.maximum(u, 2**63))
    np.testing.assert_array_equal(umem[:, 1], np.minimum(u, 2**63))
    np.testing.assert_array_equal(np.frombuffer(ok, np.uint32), 1)


@enigma.kernel
def signed_long_max(values: enigma.i64, out: enigma.i64):
    enigma.atomic_fetch_max(out, 0, values[enigma.thread_position_in_grid])  # long-max


@enigma.kernel
def used_ulong_max(values: enigma.u64, out: enigma.u64, old: enigma.u64):
    i = enigma.thread_position_in_grid
    old[i] = enigma.atomic_fetch_max(out, 0, values[i])  # used-max


@enigma.kernel
def threadgroup_ulong_max(values: enigma.u64, out: enigma.u64):
    best = enigma.threadgroup_alloc("ulong", 1)
    lid = enigma.thread_position_in_threadgroup()
    with enigma.if_(lid == 0):
        best[0] = 0
    enigma.barrier()
    i = enigma.thread_position_in_grid
    best.atomic_fetch_max(0, values[i])  # tg-max
    enigma.barrier()
    with enigma.if_(lid == 0):
        out[enigma.threadgroup_position_in_grid("x")] = best[0]


@pytest.mark.parametrize("kernel,tag,what", [
    (signed_long_max, "long-max", "on long (signed 64-bit) memory"),
    (used_ulong_max, "used-max", "on ulong memory whose old value is used"),
    (threadgroup_ulong_max, "tg-max", "on 64-bit threadgroup memory"),
])
def test_what_metal_lacks_runs_elsewhere(runtime, rng, kernel, tag, what):
    n = 200
    signed = kernel is signed_long_max
    values = (rng.integers(-2**63, 2**63, size=n, dtype=np.int64) if signed
              else rng.integers(0, 2**64, size=n, dtype=np.uint64))
    compiled = enigma.compile(kernel)
    assert what in compiled._artifact.metal_unsupported
    assert f"{THIS_FILE}:{_line(tag)}" in compiled._artifact.metal_unsupported
    sizes = [8 * 4] if kernel is not used_ulong_max else [8, 8 * n]
    launch = dict(output_sizes=sizes, grid=(n, 1, 1), threads=(64, 1, 1))
    if _runs_metal(runtime):
        with pytest.raises(enigma.EnigmaError, match=re.escape(what)):
            runtime.execute(compiled, [values], **launch)
        return
    outs = runtime.execute(compiled, [values], **launch)
    out = np.frombuffer(outs[0], values.dtype)
    if kernel is threadgroup_ulong_max:
        want = [values[g:g + 64].max() for g in range(0, n, 64)]
        np.testing.assert_array_equal(out[:len(want)], want)
    elif signed:
        assert out[0] == max(0, values.max())
    else:
        assert out[0] == values.max()
        old = np.frombuffer(outs[1], np.uint64)
        assert set(old.tolist()) <= set([0] + values.tolist())


# ---------------------------------------------------------------------------
# Float min / max: a compare-exchange loop on every target
# ---------------------------------------------------------------------------

@enigma.kernel
def float_extremes(keys: enigma.u32, values: enigma.f32, hi: enigma.f32,
                   lo: enigma.f32):
    i = enigma.thread_position_in_grid
    b = keys[i] % BINS
    hi.atomic_fetch_max(b, values[i])
    enigma.atomic_fetch_min(lo, b, values[i])


@pytest.mark.parametrize("n", [1, 513, 4096])
def test_float_min_max_per_bin(runtime, rng, n):
    keys = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    values = (rng.standard_normal(n) * 100).astype(np.float32)
    hi, lo = (np.frombuffer(o, np.float32) for o in runtime.execute(
        enigma.compile(float_extremes), [keys, values],
        output_sizes=[4 * BINS, 4 * BINS], grid=(n, 1, 1),
        threads=(128, 1, 1)))
    want_hi = np.zeros(BINS, np.float32)  # outputs start at zero
    want_lo = np.zeros(BINS, np.float32)
    np.maximum.at(want_hi, keys % BINS, values)
    np.minimum.at(want_lo, keys % BINS, values)
    np.testing.assert_array_equal(hi, want_hi)
    np.testing.assert_array_equal(lo, want_lo)


@enigma.kernel
def float_old_values(start: enigma.f32, operand: enigma.f32,
                     mem: enigma.f32, old: enigma.f32):
    t = enigma.thread_position_in_grid
    enigma.atomic_store(mem, t * 2, start[t])
    old[t * 2] = enigma.atomic_fetch_min(mem, t * 2, operand[t])
    enigma.atomic_store(mem, t * 2 + 1, start[t])
    old[t * 2 + 1] = mem.atomic_fetch_max(t * 2 + 1, operand[t])


def test_float_min_max_return_the_old_value_and_skip_nan(runtime, rng):
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    start = np.array([1.0, -2.0, nan, 3.0, 0.0, -0.0, -inf], np.float32)
    operand = np.array([0.5, 5.0, 1.0, nan, -0.0, 0.0, 2.0], np.float32)
    n = start.size
    mem, old = (np.frombuffer(o, np.float32).reshape(n, 2)
                for o in runtime.execute(
                    enigma.compile(float_old_values), [start, operand],
                    output_sizes=[8 * n, 8 * n], grid=(n, 1, 1),
                    threads=(n, 1, 1)))
    np.testing.assert_array_equal(old[:, 0], start)
    np.testing.assert_array_equal(old[:, 1], start)
    # the operand is stored when it compares below (above) the element: a
    # NaN never is, a NaN already there stays, -0.0 and 0.0 compare equal
    want_min = [0.5, -2.0, nan, 3.0, 0.0, -0.0, -inf]
    want_max = [1.0, 5.0, nan, 3.0, 0.0, -0.0, 2.0]
    np.testing.assert_array_equal(mem[:, 0], np.array(want_min, np.float32))
    np.testing.assert_array_equal(mem[:, 1], np.array(want_max, np.float32))
    assert not np.signbit(mem[4, 0]) and np.signbit(mem[5, 1])


@enigma.kernel
def threadgroup_float_max(values: enigma.f32, out: enigma.f32):
    best = enigma.threadgroup_alloc("float", 1)
    lid = enigma.thread_position_in_threadgroup()
    with enigma.if_(lid == 0):
        best[0] = -1e30
    enigma.barrier()
    best.atomic_fetch_max(0, values[enigma.thread_position_in_grid])
    enigma.barrier()
    with enigma.if_(lid == 0):
        out[enigma.threadgroup_position_in_grid("x")] = best[0]


def test_threadgroup_float_max(runtime, rng):
    n, group = 1000, 128
    values = rng.standard_normal(n).astype(np.float32)
    groups = -(-n // group)
    out = run_kernel(runtime, enigma.compile(threadgroup_float_max), [values],
                     np.float32, groups, (n, 1, 1), (group, 1, 1))
    want = [values[g:g + group].max() for g in range(0, n, group)]
    np.testing.assert_array_equal(out, want)


def test_sources():
    msl = enigma.compile(ulong_extremes).metal_source
    assert "device ulong* hi" in msl  # 64-bit memory keeps its type
    assert "atomic_max_explicit((device atomic_ulong *)&" in msl
    assert "atomic_min_explicit((device atomic_ulong *)&" in msl
    cuda = enigma.compile(ulong_extremes).cuda_source
    assert "atomic_fetch_max_explicit((ulong *)&" in cuda
    fmsl = enigma.compile(float_extremes).metal_source
    assert "inline float enigma_atomic_fetch_min_explicit(device atomic_float" \
        in fmsl
    assert "enigma_atomic_fetch_max_explicit((enigma_view_" in fmsl
    assert "enigma_atomic_fetch_min_explicit((float *)&" in \
        enigma.compile(float_extremes).cuda_source
    assert enigma.compile(ulong_extremes)._artifact.metal_unsupported == ""
    assert enigma.compile(float_extremes)._artifact.metal_unsupported == ""


def test_unsupported_types_and_kinds_are_errors():
    @enigma.kernel
    def bitwise_float(buf: enigma.f32):
        buf.atomic_fetch_xor(0, 1.0)

    with pytest.raises(enigma.EnigmaError,
                       match="atomic_fetch_xor needs int, uint, long or ulong"):
        enigma.compile(bitwise_float)


def test_cuda_sources_compile_with_nvrtc():
    try:
        enigma._core.Runtime.nvrtc_check(
            'extern "C" __global__ void k() {}', "sm_90", [])
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed on this machine")
    for kernel in (ulong_extremes, wide_ops, signed_long_max, used_ulong_max,
                   threadgroup_ulong_max, float_extremes, float_old_values,
                   threadgroup_float_max):
        enigma._core.Runtime.nvrtc_check(enigma.compile(kernel).cuda_source,
                                         "sm_90", [])
