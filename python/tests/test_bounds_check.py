"""Out-of-bounds detection (docs/runtimes.md, "Bounds-checked mode").

With ``enigma.compile(..., bounds_check=True)`` (or ENIGMA_BOUNDS_CHECK=1)
every buffer, threadgroup and atomic access checks its index: the access is
skipped (a load gives zero) and the first violation is raised after the
dispatch with the buffer, index, size, thread and this file's line. Without
it, the seed page's common mistakes (output_size too small, grid larger
than the inputs) are refused before the dispatch by a DispatchError.
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


_VIOLATION = re.compile(
    r"out-of-bounds (?P<access>\w+) at (?P<where>\S+): "
    r"(?:index (?P<index>-?\d+)|elements \[(?P<first>-?\d+), \d+\)) of "
    r"(?P<buffer>.+?), which has (?P<size>\d+) elements, " + BY_THREAD)


def _violation(excinfo):
    """The fields of a bounds-check error message, as a dict."""
    fields = checked_error(_VIOLATION, excinfo)
    index = fields["index"] if fields["index"] is not None else fields["first"]
    return {"access": fields["access"], "where": fields["where"],
            "index": int(index), "buffer": fields["buffer"],
            "size": int(fields["size"]), "thread": fields["thread"],
            "message": fields["message"]}


# ---------------------------------------------------------------------------
# Kernels with mistakes
# ---------------------------------------------------------------------------

@enigma.kernel
def read_shifted(A: enigma.f32, shift: enigma.Scalar(enigma.u32),
                 C: enigma.f32):
    gid = enigma.thread_position_in_grid
    C[gid] = A[gid + shift] + 1.0  # read-shifted


@enigma.kernel
def write_shifted(A: enigma.f32, shift: enigma.Scalar(enigma.u32),
                  C: enigma.f32):
    gid = enigma.thread_position_in_grid
    C[gid + shift] = A[gid]  # write-shifted


@enigma.kernel
def write_next(A: enigma.i32, C: enigma.i32):
    gid = enigma.thread_position_in_grid
    C[gid + 1] = A[gid]  # write-next


@enigma.kernel
def threadgroup_overrun(A: enigma.f32, C: enigma.f32):
    s = enigma.threadgroup_alloc(enigma.f32, 32)  # tg-alloc
    lid = enigma.thread_position_in_threadgroup()
    gid = enigma.thread_position_in_grid
    s[lid + 1] = A[gid]  # tg-write
    enigma.barrier()
    C[gid] = s[lid]


@enigma.kernel
def atomic_count(counts: enigma.u32):
    gid = enigma.thread_position_in_grid
    counts.atomic_fetch_add(gid, 1)  # atomic-add


@enigma.kernel
def read_previous(A: enigma.i32, C: enigma.i32):
    gid = enigma.thread_position_in_grid
    i = enigma.metal_cast(gid, "int") - 1
    C[gid] = A[i]  # read-previous


# ---------------------------------------------------------------------------
# Violations in bounds-checked mode
# ---------------------------------------------------------------------------

def test_bounds_check_error_is_a_runtime_error():
    assert issubclass(enigma.BoundsCheckError, enigma.EnigmaRuntimeError)
    assert issubclass(enigma.BoundsCheckError, RuntimeError)


@enigma.kernel
def jit_copy_next(gX, gY):
    tid, _, _ = enigma.arch.thread_idx()
    gY[tid] = gX[tid + 1]  # jit-read-next


@enigma.jit
def copy_next(X, Y):
    jit_copy_next(X, Y).launch(grid=[X.size(), 1, 1], block=[X.size(), 1, 1])


def test_jit_kernels_take_bounds_check(runtime):
    n = 32
    layout = enigma.make_layout(n)
    compiled = enigma.compile(copy_next, enigma.Tensor("X", 0, "float", layout),
                              enigma.Tensor("Y", 1, "float", layout),
                              bounds_check=True)
    assert compiled.bounds_checked
    with pytest.raises(enigma.BoundsCheckError, match="index 32 of X"):
        runtime.execute(compiled, [np.ones(n, np.float32)], 4 * n)

def test_input_read_past_the_end(runtime, rng):
    n, shift = 200, 7
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(read_shifted, bounds_check=True)
    assert compiled.bounds_checked
    prepared = runtime.prepare(compiled, [a], n * 4, scalars=[shift])
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        prepared.dispatch((n, 1, 1), (64, 1, 1))
    v = _violation(excinfo)
    assert v["access"] == "load" and v["buffer"] == "A" and v["size"] == n
    assert n - shift <= v["thread"][0] < n and v["thread"][1:] == (0, 0)
    assert v["index"] == v["thread"][0] + shift
    assert "the first of 7 out-of-bounds accesses" in v["message"]
    assert_reported_at(__file__, v, "read-shifted")
    # The reads that failed gave zero; the others are untouched.
    out = np.frombuffer(prepared.read_output(), np.float32)
    want = np.ones(n, np.float64)
    want[:n - shift] += a[shift:]
    np.testing.assert_allclose(out, want, rtol=1e-6)
    prepared.release()


def test_output_write_past_the_end_is_skipped(runtime, rng):
    n, shift = 150, 3
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(write_shifted, bounds_check=True)
    prepared = runtime.prepare(compiled, [a], n * 4, scalars=[shift])
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        prepared.dispatch((n, 1, 1), (32, 1, 1))
    v = _violation(excinfo)
    assert v["access"] == "store" and v["buffer"] == "C" and v["size"] == n
    assert v["index"] == v["thread"][0] + shift >= n
    assert_reported_at(__file__, v, "write-shifted")
    out = np.frombuffer(prepared.read_output(), np.float32)
    want = np.zeros(n, np.float32)
    want[shift:] = a[:n - shift]
    np.testing.assert_array_equal(out, want)
    # The record is cleared: a dispatch without violations passes.
    prepared.dispatch((n - shift, 1, 1), (32, 1, 1))
    prepared.release()


@pytest.mark.parametrize("n,group", [(100, 32), (64, 64), (1, 1)])
def test_off_by_one_at_the_edge_threadgroup(runtime, rng, n, group):
    a = rng.integers(-2**31, 2**31, size=n, dtype=np.int32)
    compiled = enigma.compile(write_next, bounds_check=True)
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [a], output_size=n * 4, grid=(n, 1, 1),
                        threads=(group, 1, 1))
    v = _violation(excinfo)
    assert (v["access"], v["buffer"], v["index"], v["size"]) == \
        ("store", "C", n, n)
    assert v["thread"] == (n - 1, 0, 0)
    assert "the first of" not in v["message"]  # exactly one violation
    assert_reported_at(__file__, v, "write-next")


def test_threadgroup_array_overrun(runtime, rng):
    groups = 3
    a = rng.standard_normal(32 * groups).astype(np.float32)
    compiled = enigma.compile(threadgroup_overrun, bounds_check=True)
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [a], output_size=a.nbytes,
                        grid=(a.size, 1, 1), threads=(32, 1, 1))
    v = _violation(excinfo)
    assert v["access"] == "store" and v["index"] == 32 and v["size"] == 32
    assert v["buffer"].startswith("threadgroup array (f32[32] allocated at ")
    assert f"{THIS_FILE}:{_line('tg-alloc')}" in v["buffer"]
    assert v["thread"][0] % 32 == 31 and v["thread"][1:] == (0, 0)
    assert f"the first of {groups} out-of-bounds" in v["message"]
    assert_reported_at(__file__, v, "tg-write")


def test_atomic_past_the_end(runtime):
    n = 5
    compiled = enigma.compile(atomic_count, bounds_check=True)
    prepared = runtime.prepare(compiled, [], (n - 1) * 4)
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        prepared.dispatch((n, 1, 1), (2, 1, 1))
    v = _violation(excinfo)
    assert v["access"] == "atomic_rmw" and v["buffer"] == "counts"
    assert (v["index"], v["size"], v["thread"]) == (n - 1, n - 1, (n - 1, 0, 0))
    assert_reported_at(__file__, v, "atomic-add")
    out = np.frombuffer(prepared.read_output(), np.uint32)
    np.testing.assert_array_equal(out, np.ones(n - 1, np.uint32))
    prepared.release()


def test_negative_index_through_a_signed_int(runtime, rng):
    n = 40
    a = rng.integers(-1000, 1000, size=n, dtype=np.int32)
    compiled = enigma.compile(read_previous, bounds_check=True)
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [a], output_size=n * 4, grid=(n, 1, 1),
                        threads=(16, 1, 1))
    v = _violation(excinfo)
    assert (v["access"], v["buffer"], v["index"], v["size"]) == \
        ("load", "A", -1, n)
    assert v["thread"] == (0, 0, 0)
    assert_reported_at(__file__, v, "read-previous")


def test_2d_thread_position_is_reported(runtime):
    @enigma.kernel
    def rows(W: enigma.Scalar(enigma.u32), out: enigma.u32):
        x = enigma.thread_position_in_grid_xyz("x")
        y = enigma.thread_position_in_grid_xyz("y")
        out[y * W + x] = x  # rows-store

    compiled = enigma.compile(rows, bounds_check=True)
    # 3 rows of 8 fit; row 3 (the last) does not.
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [], output_size=3 * 8 * 4, grid=(8, 4, 1),
                        threads=(4, 2, 1), scalars=[8])
    v = _violation(excinfo)
    x, y, z = v["thread"]
    assert y == 3 and z == 0 and v["index"] == y * 8 + x and v["size"] == 24
    assert "the first of 8 out-of-bounds" in v["message"]
    assert_reported_at(__file__, v, "rows-store")


def test_env_var_turns_the_mode_on(runtime, monkeypatch):
    monkeypatch.setenv("ENIGMA_BOUNDS_CHECK", "1")
    compiled = enigma.compile(write_next)
    assert compiled.bounds_checked
    a = np.arange(10, dtype=np.int32)
    with pytest.raises(enigma.EnigmaRuntimeError, match="out-of-bounds store"):
        runtime.execute(compiled, [a], output_size=40, grid=(10, 1, 1),
                        threads=(4, 1, 1))
    # An explicit False wins over the environment.
    assert not enigma.compile(write_next, bounds_check=False).bounds_checked
    monkeypatch.setenv("ENIGMA_BOUNDS_CHECK", "0")
    assert not enigma.compile(write_next).bounds_checked


# ---------------------------------------------------------------------------
# Correct kernels in bounds-checked mode
# ---------------------------------------------------------------------------

@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


@enigma.kernel
def reverse_groups(a: enigma.i32, out: enigma.i32):
    s = enigma.threadgroup_alloc("int", 64)
    lid = enigma.thread_position_in_threadgroup()
    n = enigma.threads_per_threadgroup()
    tid = enigma.thread_position_in_grid
    s[lid] = a[tid]
    enigma.barrier()
    out[tid] = s[n - 1 - lid]


@enigma.kernel
def histogram(values: enigma.u32, bins: enigma.u32):
    bins.atomic_fetch_add(values[enigma.thread_position_in_grid] % 16, 1)


@pytest.mark.parametrize("n", [1, 255, 4097])
def test_correct_kernels_are_unchanged(runtime, rng, n):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(vector_add, bounds_check=True)
    out = run_kernel(runtime, compiled, [a, b], np.float32, n, (n, 1, 1),
                     (256, 1, 1))
    np.testing.assert_allclose(out, a.astype(np.float64) + b, rtol=1e-6)

    ints = rng.integers(-2**31, 2**31, size=n, dtype=np.int32)
    out = run_kernel(runtime, enigma.compile(reverse_groups, bounds_check=True),
                     [ints], np.int32, n, (n, 1, 1), (64, 1, 1))
    want = np.concatenate([g[::-1] for g in np.split(
        ints, range(64, n, 64))])
    np.testing.assert_array_equal(out, want)

    values = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    out = run_kernel(runtime, enigma.compile(histogram, bounds_check=True),
                     [values], np.uint32, 16, (n, 1, 1), (128, 1, 1))
    np.testing.assert_array_equal(out, np.bincount(values % 16, minlength=16))


def test_vector_buffers_are_checked_in_entries(runtime, rng):
    n = 64  # float4 entries
    a = rng.standard_normal(4 * n).astype(np.float32)
    compiled = enigma.compile(read_shifted,
                              vec_width=4, bounds_check=True)
    out = run_kernel(runtime, compiled, [a], np.float32, 4 * n, (n, 1, 1),
                     (32, 1, 1), scalars=[0])
    np.testing.assert_allclose(out, a.astype(np.float64) + 1.0, rtol=1e-6)
    with pytest.raises(enigma.BoundsCheckError) as excinfo:
        runtime.execute(compiled, [a], output_size=a.nbytes, grid=(n, 1, 1),
                        threads=(32, 1, 1), scalars=[1])
    v = _violation(excinfo)
    assert (v["buffer"], v["index"], v["size"], v["thread"]) == \
        ("A", n, n, (n - 1, 0, 0))


def test_kernel_without_accesses_compiles_unchanged():
    @enigma.kernel
    def nothing(x: enigma.Scalar(enigma.f32)):
        y = x + 1.0  # noqa: F841

    compiled = enigma.compile(nothing, bounds_check=True)
    assert not compiled.bounds_checked
    assert len(compiled.params) == 1


def test_checked_cuda_source_compiles_with_nvrtc():
    try:
        enigma._core.Runtime.nvrtc_check(
            'extern "C" __global__ void k() {}', "sm_90", [])
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed on this machine")
    for kernel in (read_shifted, threadgroup_overrun, atomic_count,
                   read_previous, reverse_groups):
        compiled = enigma.compile(kernel, bounds_check=True)
        assert "enigma_bounds_record" in compiled.cuda_source
        enigma._core.Runtime.nvrtc_check(compiled.cuda_source, "sm_90", [])


# ---------------------------------------------------------------------------
# Without the flag: the seed page's mistakes are refused before dispatch
# ---------------------------------------------------------------------------

def test_output_size_too_small_is_refused(runtime, rng):
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(vector_add)
    with pytest.raises(enigma.DispatchError) as excinfo:
        runtime.execute(compiled, [a, b], output_size=(n - 1) * 4,
                        grid=(n, 1, 1), threads=(256, 1, 1))
    message = str(excinfo.value)
    assert "store of C" in message and f"index {n - 1}" in message
    assert "999 elements" in message and f"at least {n * 4} bytes" in message
    assert "nothing was run" in message


def test_grid_larger_than_the_inputs_is_refused(runtime, rng):
    n = 300
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(vector_add)
    with pytest.raises(enigma.DispatchError, match=r"load of A .*index 300"):
        runtime.execute(compiled, [a, a], output_size=(n + 1) * 4,
                        grid=(n + 1, 1, 1), threads=(64, 1, 1))
    prepared = runtime.prepare(compiled, [a, a], n * 4)
    with pytest.raises(enigma.DispatchError, match="reaches index"):
        prepared.dispatch((n + 5, 1, 1), (64, 1, 1))
    prepared.dispatch((n, 1, 1), (64, 1, 1))  # the right grid still runs
    np.testing.assert_allclose(np.frombuffer(prepared.read_output(), np.float32),
                               a.astype(np.float64) * 2, rtol=1e-6)
    prepared.release()


def test_strided_index_is_judged_exactly(runtime, rng):
    @enigma.kernel
    def spread(A: enigma.f32, C: enigma.f32):
        gid = enigma.thread_position_in_grid
        C[gid * 2 + 1] = A[gid]

    n = 50
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(spread)
    out = run_kernel(runtime, compiled, [a], np.float32, 2 * n, (n, 1, 1),
                     (16, 1, 1))
    np.testing.assert_array_equal(out[1::2], a)
    np.testing.assert_array_equal(out[0::2], 0)
    with pytest.raises(enigma.DispatchError, match=r"index 99 .*\(49, 0, 0\)"):
        runtime.execute(compiled, [a], output_size=(2 * n - 1) * 4,
                        grid=(n, 1, 1), threads=(16, 1, 1))


def test_guarded_access_is_not_refused(runtime, rng):
    @enigma.kernel
    def guarded(A: enigma.f32, n: enigma.Scalar(enigma.u32), C: enigma.f32):
        gid = enigma.thread_position_in_grid
        with enigma.if_(gid < n):
            C[gid] = A[gid] * 2.0

    n = 100
    a = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(guarded), [a], np.float32, n,
                     (128, 1, 1), (64, 1, 1), scalars=[n])
    np.testing.assert_allclose(out, a.astype(np.float64) * 2, rtol=1e-6)


@enigma.kernel
def guarded_add(A: enigma.f32, B: enigma.f32, n: enigma.Scalar(enigma.u32),
                C: enigma.f32):
    gid = enigma.thread_position_in_grid
    with enigma.if_(gid < n):
        C[gid] = A[gid] + B[gid]


@enigma.kernel
def guarded_signed(A: enigma.f32, n: enigma.Scalar(enigma.i32), C: enigma.f32):
    i = enigma.metal_cast(enigma.thread_position_in_grid, enigma.i32)
    with enigma.if_(i < n):  # int < int: a signed comparison
        C[i * 2] = A[i]


@enigma.kernel
def guarded_mixed(A: enigma.f32, n: enigma.Scalar(enigma.i32), C: enigma.f32):
    gid = enigma.thread_position_in_grid
    with enigma.if_(gid < n):  # uint < int: n compared as a uint (Metal)
        C[gid] = A[gid]


def test_guard_bound_larger_than_the_buffers_is_refused(runtime, rng):
    """`if gid < n` with n beyond the arrays: the threads that pass the
    guard would write past C's end (heap corruption, not a fault), so the
    dispatch is refused before anything runs; the same kernel with an n
    that fits runs."""
    m = 16
    a = rng.standard_normal(m).astype(np.float32)
    compiled = enigma.compile(guarded_add)
    with pytest.raises(enigma.DispatchError) as excinfo:
        runtime.execute(compiled, [a, a], output_size=m * 4, grid=(100, 1, 1),
                        threads=(32, 1, 1), scalars=[100])
    message = str(excinfo.value)
    assert "load of A" in message and "index 99" in message, message
    assert "n = 100" in message and "16 elements" in message, message
    assert "nothing was run" in message
    prepared = runtime.prepare(compiled, [a, a], m * 4, scalars=[100])
    with pytest.raises(enigma.DispatchError, match="n = 100"):
        prepared.dispatch((100, 1, 1), (32, 1, 1))
    prepared.release()
    # grid and n smaller than the arrays in turn: both in bounds
    out = run_kernel(runtime, compiled, [a, a], np.float32, m, (100, 1, 1),
                     (32, 1, 1), scalars=[m])
    np.testing.assert_allclose(out, a.astype(np.float64) * 2, rtol=1e-6)
    out = run_kernel(runtime, compiled, [a, a], np.float32, m, (m, 1, 1),
                     (16, 1, 1), scalars=[1000])
    np.testing.assert_allclose(out, a.astype(np.float64) * 2, rtol=1e-6)


def test_guard_bound_with_a_signed_scalar(runtime, rng):
    m = 8
    a = rng.standard_normal(m).astype(np.float32)
    compiled = enigma.compile(guarded_signed)
    with pytest.raises(enigma.DispatchError, match=r"store of C .*index 14"):
        runtime.execute(compiled, [a], output_size=(2 * m - 2) * 4,
                        grid=(64, 1, 1), threads=(32, 1, 1), scalars=[m])
    # n <= 0: no thread passes the guard, nothing to refuse
    out = run_kernel(runtime, compiled, [a], np.float32, 2, (64, 1, 1),
                     (32, 1, 1), scalars=[-5])
    np.testing.assert_array_equal(out, 0)
    # uint < int converts n to uint: -5 lets every thread through
    mixed = enigma.compile(guarded_mixed)
    with pytest.raises(enigma.DispatchError,
                       match=r"load of A .*n = 4294967291.*index 63"):
        runtime.execute(mixed, [a], output_size=64 * 4, grid=(64, 1, 1),
                        threads=(32, 1, 1), scalars=[-5])


def test_guard_bound_in_the_call_form():
    m = 16
    a = np.ones(m, np.float32)
    c = np.zeros(m, np.float32)
    with pytest.raises(enigma.DispatchError, match=r"n = 100"):
        guarded_add[100](a, a, 100, c)
    assert not c.any()
    guarded_add[100](a, a, m, c)
    np.testing.assert_array_equal(c, 2)


@enigma.kernel
def window_copy(A: enigma.f32, Out: enigma.f32):
    tid = enigma.thread_position_in_grid
    with enigma.for_range(0, 4) as i:
        Out[tid + i] = A[tid + i]


def test_counted_loop_past_the_buffers_is_refused(runtime, rng):
    """A loop with constant bounds runs in every thread: its last iteration
    at the last thread is judged (the original Enigma's for_range example
    on a grid 5 threads too large would write past Out's end)."""
    m = 35
    a = rng.standard_normal(m).astype(np.float32)
    compiled = enigma.compile(window_copy)
    out = run_kernel(runtime, compiled, [a], np.float32, m, (m - 3, 1, 1),
                     (32, 1, 1))
    np.testing.assert_array_equal(out, a)
    with pytest.raises(enigma.DispatchError,
                       match=r"load of A .*index 42 for thread \(39, 0, 0\)"):
        runtime.execute(compiled, [a], output_size=m * 4, grid=(40, 1, 1),
                        threads=(32, 1, 1))


def test_data_dependent_index_is_not_judged(runtime, rng):
    @enigma.kernel
    def gather(idx: enigma.u32, A: enigma.f32, C: enigma.f32):
        gid = enigma.thread_position_in_grid
        C[gid] = A[idx[gid]]

    n = 64
    idx = rng.integers(0, 8, size=n, dtype=np.uint32)
    a = rng.standard_normal(8).astype(np.float32)
    compiled = enigma.compile(gather)
    out = run_kernel(runtime, compiled, [idx, a], np.float32, n, (n, 1, 1),
                     (32, 1, 1))
    np.testing.assert_array_equal(out, a[idx])
