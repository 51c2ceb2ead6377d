"""Dynamic threadgroup memory (docs/reference/cooperation.md, "Dynamic
threadgroup memory"): ``enigma.dynamic_threadgroup_alloc(dtype)`` declares
the kernel's one array whose size in bytes each launch gives
(``threadgroup_memory=``; Metal's setThreadgroupMemoryLength, CUDA's dynamic
shared memory), checked against the device's limit."""

import os

import numpy as np
import pytest

import enigma
from conftest import run_kernel

THIS_FILE = os.path.basename(__file__)


@enigma.kernel
def reverse_groups(A: enigma.f32, out: enigma.f32):
    s = enigma.dynamic_threadgroup_alloc("float")
    lid = enigma.thread_position_in_threadgroup()
    n = enigma.threads_per_threadgroup()
    gid = enigma.thread_position_in_grid
    s[lid] = A[gid]
    enigma.barrier()
    out[gid] = s[n - 1 - lid]


def _reverse_reference(a, group):
    return np.concatenate([a[s:s + group][::-1]
                           for s in range(0, a.size, group)])


@pytest.mark.parametrize("n,group", [(1, 1), (100, 32), (1000, 256),
                                     (4099, 1024)])
def test_sized_by_the_threadgroup(runtime, rng, n, group):
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(reverse_groups)
    out = run_kernel(runtime, compiled, [a], np.float32, n, (n, 1, 1),
                     (group, 1, 1), threadgroup_memory=4 * group)
    np.testing.assert_array_equal(out, _reverse_reference(a, group))


@enigma.kernel
def staged_sum(A: enigma.f32, tile: enigma.Scalar(enigma.u32),
               out: enigma.f32):
    """Each group sums `tile` consecutive elements per thread through the
    dynamic array, sized tile * threads at launch: the size is the launch's
    choice, not the kernel's."""
    s = enigma.dynamic_threadgroup_alloc("float")
    lid = enigma.thread_position_in_threadgroup()
    n = enigma.threads_per_threadgroup()
    g = enigma.threadgroup_position_in_grid("x")
    base = g * enigma.threads_per_threadgroup() * tile
    for k in enigma.range(0, tile):
        s[k * n + lid] = A[base + k * n + lid]
    enigma.barrier()
    acc = enigma.metal_cast(0.0, "float")
    for k in enigma.range(0, tile):
        acc = acc + s[lid * tile + k]
    out[g * n + lid] = acc


def test_one_kernel_many_sizes_with_prepare(runtime, rng):
    group, groups = 64, 3
    compiled = enigma.compile(staged_sum)
    for tile in (1, 4, 7):
        a = rng.standard_normal(group * groups * tile).astype(np.float32)
        prepared = runtime.prepare(compiled, [a], 4 * group * groups,
                                   scalars=[tile],
                                   threadgroup_memory=4 * tile * group)
        prepared.dispatch((group * groups, 1, 1), (group, 1, 1))
        out = np.frombuffer(prepared.read_output(), np.float32)
        want = a.reshape(groups * group, tile).astype(np.float64).sum(axis=1)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
        prepared.dispatch((group * groups, 1, 1), (group, 1, 1))  # again
        np.testing.assert_allclose(
            np.frombuffer(prepared.read_output(), np.float32), want,
            rtol=1e-5, atol=1e-5)
        prepared.release()


@enigma.kernel
def group_histogram(data: enigma.u32, bins: enigma.Scalar(enigma.u32),
                    out: enigma.u32):
    local = enigma.dynamic_threadgroup_alloc("uint")
    lid = enigma.thread_position_in_threadgroup()
    n = enigma.threads_per_threadgroup()
    for b in enigma.range(lid, bins, n):
        local[b] = 0
    enigma.barrier()
    local.atomic_fetch_add(data[enigma.thread_position_in_grid] % bins, 1)
    enigma.barrier()
    for b in enigma.range(lid, bins, n):
        out.atomic_fetch_add(b, local[b])


@pytest.mark.parametrize("bins", [1, 37, 300])
def test_atomics_on_the_dynamic_array(runtime, rng, bins):
    n = 1000
    data = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    out = run_kernel(runtime, enigma.compile(group_histogram), [data],
                     np.uint32, bins, (n, 1, 1), (128, 1, 1), scalars=[bins],
                     threadgroup_memory=4 * bins)
    np.testing.assert_array_equal(out, np.bincount(data % bins,
                                                   minlength=bins))


@enigma.kernel
def with_static(A: enigma.f32, out: enigma.f32):
    fixed = enigma.threadgroup_alloc("float", 64)
    extra = enigma.dynamic_threadgroup_alloc("float")
    lid = enigma.thread_position_in_threadgroup()
    gid = enigma.thread_position_in_grid
    fixed[lid] = A[gid]
    extra[lid] = A[gid] * 2.0
    enigma.barrier()
    out[gid] = fixed[63 - lid] + extra[lid]


def test_static_and_dynamic_arrays_together(runtime, rng):
    a = rng.standard_normal(128).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(with_static), [a], np.float32,
                     128, (128, 1, 1), (64, 1, 1), threadgroup_memory=256)
    want = _reverse_reference(a, 64).astype(np.float64) + 2.0 * a
    np.testing.assert_allclose(out, want, rtol=1e-6)


# ---------------------------------------------------------------------------
# Launch checks
# ---------------------------------------------------------------------------

def test_the_size_is_required_and_checked(runtime):
    a = np.ones(64, np.float32)
    compiled = enigma.compile(reverse_groups)
    with pytest.raises(enigma.DispatchError,
                       match="give its size in bytes with threadgroup_memory="):
        runtime.execute(compiled, [a], output_size=256, grid=(64, 1, 1),
                        threads=(64, 1, 1))
    limit = runtime.device_capabilities().max_threadgroup_memory
    with pytest.raises(enigma.DispatchError) as excinfo:
        runtime.execute(compiled, [a], output_size=256, grid=(64, 1, 1),
                        threads=(64, 1, 1), threadgroup_memory=limit + 1)
    message = str(excinfo.value)
    assert f"threadgroup_memory={limit + 1}" in message
    assert f"allows {limit}" in message
    with pytest.raises(enigma.DispatchError, match="threadgroup_memory="):
        runtime.prepare(compiled, [a], 256, threadgroup_memory=limit + 1)
    with pytest.raises(enigma.DispatchError, match="number of bytes"):
        runtime.execute(compiled, [a], output_size=256, grid=(64, 1, 1),
                        threads=(64, 1, 1), threadgroup_memory=-1)


def test_static_memory_counts_toward_the_limit(runtime):
    compiled = enigma.compile(with_static)
    limit = runtime.device_capabilities().max_threadgroup_memory
    a = np.ones(64, np.float32)
    with pytest.raises(enigma.DispatchError, match="256 bytes of "
                                                   "threadgroup_alloc arrays"):
        runtime.execute(compiled, [a], output_size=256, grid=(64, 1, 1),
                        threads=(64, 1, 1), threadgroup_memory=limit - 16)
    fixed = 256
    if runtime.name == "cuda":
        # The dynamic area starts at a 1 KiB boundary after the fixed
        # arrays (ptxas reserves 1024 bytes for these 256): refused before
        # the launch, naming what the fixed arrays take.
        with pytest.raises(enigma.DispatchError, match="1 KiB boundary"):
            runtime.execute(compiled, [a], output_size=256, grid=(64, 1, 1),
                            threads=(64, 1, 1),
                            threadgroup_memory=limit - 256)
        fixed = 1024
    out = run_kernel(runtime, compiled, [a], np.float32, 64, (64, 1, 1),
                     (64, 1, 1), threadgroup_memory=limit - fixed)
    np.testing.assert_array_equal(out, 3.0)


def test_kernels_without_one_refuse_a_size(runtime):
    @enigma.kernel
    def plain(A: enigma.f32, out: enigma.f32):
        out[enigma.thread_position_in_grid] = A[enigma.thread_position_in_grid]

    with pytest.raises(enigma.DispatchError,
                       match="has no dynamic threadgroup array"):
        runtime.execute(enigma.compile(plain), [np.ones(4, np.float32)],
                        output_size=16, grid=(4, 1, 1), threads=(4, 1, 1),
                        threadgroup_memory=64)


def test_bounds_checked_mode_knows_the_launchs_size(runtime):
    compiled = enigma.compile(reverse_groups, bounds_check=True)
    a = np.arange(64, dtype=np.float32)
    out = run_kernel(runtime, compiled, [a], np.float32, 64, (64, 1, 1),
                     (64, 1, 1), threadgroup_memory=256)
    np.testing.assert_array_equal(out, a[::-1])
    with pytest.raises(enigma.BoundsCheckError) as excinfo:  # 60 floats
        runtime.execute(compiled, [a], output_size=256, grid=(64, 1, 1),
                        threads=(64, 1, 1), threadgroup_memory=240)
    message = str(excinfo.value)
    assert "out-of-bounds store" in message and "index 60" in message
    assert "dynamic threadgroup array (f32, allocated at " in message
    assert "which has 60 elements" in message


# ---------------------------------------------------------------------------
# Mistakes in the kernel
# ---------------------------------------------------------------------------

def test_one_per_kernel_at_the_top_level():
    @enigma.kernel
    def two(out: enigma.f32):
        enigma.dynamic_threadgroup_alloc("float")
        enigma.dynamic_threadgroup_alloc("int")  # second-dynamic

    with pytest.raises(enigma.EnigmaError,
                       match=f"{THIS_FILE}:\\d+: .*already has its dynamic "
                             "threadgroup array"):
        enigma.compile(two)

    @enigma.kernel
    def nested(out: enigma.f32):
        with enigma.if_(enigma.thread_position_in_grid == 0):
            enigma.dynamic_threadgroup_alloc("float")

    with pytest.raises(enigma.EnigmaError, match="top level"):
        enigma.compile(nested)

    @enigma.kernel
    def length(out: enigma.f32):
        s = enigma.dynamic_threadgroup_alloc("float")
        out[0] = len(s)

    with pytest.raises(enigma.EnigmaError, match="given at each launch"):
        enigma.compile(length)


def test_hidden_parameter_is_not_the_users():
    compiled = enigma.compile(staged_sum)
    assert compiled.param_names == ["A", "tile", "out"]
    assert compiled.scalar_params == [("tile", 1, "uint")]


# ---------------------------------------------------------------------------
# The other launch forms
# ---------------------------------------------------------------------------

def test_call_form():
    a = np.arange(96, dtype=np.float32)
    out = np.zeros_like(a)
    reverse_groups.launch(grid=96, threads=32)(a, out, threadgroup_memory=128)
    np.testing.assert_array_equal(out, _reverse_reference(a, 32))
    with pytest.raises(enigma.DispatchError, match="threadgroup_memory="):
        reverse_groups.launch(grid=96, threads=32)(a, out)


@enigma.kernel
def jit_reverse(gX, gY):
    s = enigma.dynamic_threadgroup_alloc("float")
    tid, _, _ = enigma.arch.thread_idx()
    n, _, _ = enigma.arch.block_dim()
    s[tid] = gX[tid]
    enigma.barrier()
    gY[tid] = s[n - 1 - tid]


@enigma.jit
def reverse_all(X, Y):
    jit_reverse(X, Y).launch(grid=[X.size(), 1, 1], block=[X.size(), 1, 1],
                             smem=X.size() * 4)


def test_jit_launch_takes_smem(runtime):
    n = 48
    layout = enigma.make_layout(n)
    compiled = enigma.compile(reverse_all,
                              enigma.Tensor("X", 0, "float", layout),
                              enigma.Tensor("Y", 1, "float", layout))
    assert compiled.threadgroup_memory == 4 * n
    a = np.arange(n, dtype=np.float32)
    out = np.frombuffer(runtime.execute(compiled, [a], 4 * n), np.float32)
    np.testing.assert_array_equal(out, a[::-1])


# ---------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------

def test_sources():
    compiled = enigma.compile(reverse_groups)
    msl = compiled.metal_source
    assert "threadgroup float* enigma_threadgroup_memory [[threadgroup(0)]]" \
        in msl
    assert "constant ulong& enigma_threadgroup_memory_bytes" in msl
    cuda = compiled.cuda_source
    assert "extern __shared__ __align__(1024) unsigned char " \
        "enigma_dynamic_shared[];" in cuda
    assert "reinterpret_cast<float *>(enigma_dynamic_shared + 0)" in cuda
    assert "+ 16];" in compiled.cpp_source  # the group's stack array
    atomic = enigma.compile(group_histogram).metal_source
    assert "threadgroup atomic_uint* enigma_threadgroup_memory " \
        "[[threadgroup(0)]]" in atomic


def test_cuda_sources_compile_with_nvrtc():
    try:
        enigma._core.Runtime.nvrtc_check(
            'extern "C" __global__ void k() {}', "sm_90", [])
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed on this machine")
    for kernel in (reverse_groups, staged_sum, group_histogram, with_static):
        for checked in (False, True):
            source = enigma.compile(kernel, bounds_check=checked).cuda_source
            enigma._core.Runtime.nvrtc_check(source, "sm_90", [])
