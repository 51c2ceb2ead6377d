"""threadgroup_alloc: per-group memory shared through barriers
(docs/reference/cooperation.md), run on each backend under test against
numpy references."""

import numpy as np
import pytest

import enigma
from conftest import run_kernel


def _reduce_kernel(group):
    @enigma.kernel
    def group_sum(a: enigma.f32, out: enigma.f32):
        s = enigma.threadgroup_alloc(enigma.f32, group)
        lid = enigma.thread_position_in_threadgroup()
        s[lid] = a[enigma.thread_position_in_grid]
        enigma.barrier()
        # Tree reduction unrolled at trace time: read both halves, wait,
        # then write, so no thread reads a slot another is writing.
        stride = group // 2
        while stride > 0:
            x = s[lid]
            y = s[(lid + stride) & (group - 1)]
            enigma.barrier()
            s[lid] = x + y
            enigma.barrier()
            stride //= 2
        out[enigma.threadgroup_position_in_grid()] = s[0]
    return group_sum


@pytest.mark.parametrize("group,groups", [(256, 1), (256, 7), (64, 13), (2, 5)])
def test_tree_reduction(runtime, rng, group, groups):
    a = rng.standard_normal(group * groups).astype(np.float32)
    compiled = enigma.compile(_reduce_kernel(group))
    assert "threadgroup float" in compiled.metal_source
    assert f"[{group}];" in compiled.metal_source
    out = run_kernel(runtime, compiled, [a], np.float32, groups,
                     grid=(group * groups, 1, 1), threads=(group, 1, 1))
    want = a.astype(np.float64).reshape(groups, group).sum(axis=1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


@enigma.kernel
def reverse_groups(a: enigma.i32, out: enigma.i32):
    s = enigma.threadgroup_alloc("int", 64)
    lid = enigma.thread_position_in_threadgroup()
    n = enigma.threads_per_threadgroup()
    tid = enigma.thread_position_in_grid
    s[lid] = a[tid]
    enigma.barrier(enigma.mem_threadgroup)
    out[tid] = s[n - 1 - lid]


@pytest.mark.parametrize("n", [1, 63, 64, 65, 64 * 3 + 17, 1000])
def test_reverse_each_group_partial_last_group(runtime, rng, n):
    a = rng.integers(-2**31, 2**31, size=n, dtype=np.int32)
    compiled = enigma.compile(reverse_groups)
    out = run_kernel(runtime, compiled, [a], np.int32, n, grid=(n, 1, 1),
                     threads=(64, 1, 1))
    want = np.concatenate([a[i:i + 64][::-1] for i in range(0, n, 64)])
    np.testing.assert_array_equal(out, want)


def test_two_arrays_of_different_types(runtime, rng):
    @enigma.kernel
    def mixed(a: enigma.f32, b: enigma.u16, out: enigma.f32):
        fs = enigma.threadgroup_alloc(enigma.f32, 32)
        us = enigma.threadgroup_alloc(enigma.u16, 32)
        lid = enigma.thread_position_in_threadgroup()
        tid = enigma.thread_position_in_grid
        fs[lid] = a[tid]
        us[lid] = b[tid]
        enigma.barrier()
        other = (lid + 1) & 31
        out[tid] = fs[other] * enigma.metal_cast(us[other], "float") + fs[0]

    n = 96
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.integers(0, 2**16, size=n, dtype=np.uint16)
    out = run_kernel(runtime, enigma.compile(mixed), [a, b], np.float32, n,
                     grid=(n, 1, 1), threads=(32, 1, 1))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    idx = np.arange(n)
    other = (idx // 32) * 32 + (idx + 1) % 32
    want = a64[other] * b64[other] + a64[(idx // 32) * 32]
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-3)


def test_227_kib_limit_is_reported_with_byte_counts():
    # 227 KiB is the most any target allows (an sm_90 GPU's block).
    @enigma.kernel
    def too_much(out: enigma.f32):
        a = enigma.threadgroup_alloc(enigma.f32, 58112)  # exactly 227 KiB
        b = enigma.threadgroup_alloc(enigma.u8, 1)  # one byte too many
        out[0] = a[0]

    with pytest.raises(enigma.EnigmaError) as e:
        enigma.compile(too_much)
    message = str(e.value)
    assert "test_threadgroup_memory.py:" in message
    # The byte starts its own 16-byte-aligned slot: 232448 + 16.
    assert "232464 bytes" in message and "232448" in message
    assert "227 KiB" in message


def test_alignment_padding_counts_toward_the_limit():
    # 1 + 232436 bytes of elements fit in 227 KiB, but each array starts on
    # a 16-byte boundary (vector accesses): 16 + 232448 do not.
    @enigma.kernel
    def padded(out: enigma.f32):
        a = enigma.threadgroup_alloc(enigma.u8, 1)
        b = enigma.threadgroup_alloc(enigma.f32, 58109)
        out[0] = b[0] + enigma.metal_cast(a[0], "float")

    with pytest.raises(enigma.EnigmaError, match="would use 232464 bytes"):
        enigma.compile(padded)


def test_each_runtime_checks_its_own_limit(runtime, rng):
    # 48 KiB + 16: more than Metal's 32 KiB and CUDA's static 48 KiB. The
    # metal-host runtime refuses it when it loads the kernel; the CPU (227
    # KiB) and CUDA (dynamic shared memory) run it.
    @enigma.kernel
    def big(A: enigma.f32, B: enigma.f32):
        t = enigma.threadgroup_alloc(enigma.f32, 12288)
        u = enigma.threadgroup_alloc(enigma.f32, 4)
        i = enigma.thread_position_in_threadgroup()
        g = enigma.thread_position_in_grid
        for j in range(12):
            t[i + j * 1024] = A[g] * float(j + 1)
        with enigma.if_(i == 0):
            u[0] = 0.5
        enigma.barrier()
        B[g] = t[1023 - i + 11 * 1024] + u[0]

    compiled = enigma.compile(big)
    assert compiled._artifact.threadgroup_memory_bytes == 49168
    # CUDA carves both arrays out of dynamic shared memory.
    assert compiled._artifact.cuda_dynamic_shared_bytes == 49168
    assert "extern __shared__" in compiled.cuda_source
    assert "__shared__ float" not in compiled.cuda_source
    a = rng.standard_normal(2048).astype(np.float32)
    if runtime.name not in ("cpu", "cuda"):
        with pytest.raises(enigma.DispatchError,
                           match=r"49168 bytes of threadgroup memory.*32768 "
                                 r"\(32 KiB\)"):
            runtime.execute(compiled, [a], output_size=a.nbytes,
                            grid=(2048, 1, 1), threads=(1024, 1, 1))
        return
    out = np.frombuffer(runtime.execute(compiled, [a], output_size=a.nbytes,
                                        grid=(2048, 1, 1),
                                        threads=(1024, 1, 1)), np.float32)
    idx = np.arange(2048)
    want = a[(idx // 1024) * 1024 + 1023 - idx % 1024] * 12.0 + 0.5
    np.testing.assert_array_equal(out, want.astype(np.float32))


def test_arrays_are_declared_16_byte_aligned():
    @enigma.kernel
    def two(out: enigma.f32):
        a = enigma.threadgroup_alloc(enigma.f16, 3)
        b = enigma.threadgroup_alloc(enigma.f32, 64)
        lid = enigma.thread_index_in_threadgroup()
        b[lid] = 1.0
        a[0] = 2.0
        enigma.barrier()
        out[lid] = b[lid] + a[0]

    compiled = enigma.compile(two)
    for source, space in ((compiled.metal_source, "threadgroup "),
                          (compiled.cuda_source, "__shared__ "),
                          (compiled.cpp_source, "")):
        assert source.count(f"alignas(16) {space}") == 2, source


def test_cuda_starts_product_tiles_on_1024_byte_boundaries(runtime, rng):
    # Hopper's wgmma reads 128-byte-swizzled tiles in place, a pattern that
    # repeats every 1024 bytes: CUDA starts arrays of whole KiB from 8 KiB
    # on at such a boundary (static and dynamic), other arrays at 16.
    def make(tile_elements):
        @enigma.kernel
        def tiles(A: enigma.f32, B: enigma.f32):
            small = enigma.threadgroup_alloc(enigma.f32, 5)
            tile = enigma.threadgroup_alloc(enigma.f32, tile_elements)
            i = enigma.thread_position_in_threadgroup()
            g = enigma.thread_position_in_grid
            tile[i] = A[g]
            with enigma.if_(i == 0):
                small[4] = 0.25
            enigma.barrier()
            B[g] = tile[255 - i] + small[4]
        return enigma.compile(tiles)

    static, dynamic = make(2048), make(16384)   # 8 KiB, 64 KiB
    assert "alignas(1024) __shared__ float" in static.cuda_source
    assert "alignas(16) __shared__ float" in static.cuda_source
    src = dynamic.cuda_source
    assert "extern __shared__ __align__(1024)" in src
    assert "enigma_dynamic_shared + 1024)" in src, src
    assert dynamic._artifact.cuda_dynamic_shared_bytes == 1024 + 65536
    for compiled in (static, dynamic):
        if runtime.name == "metal-host" and compiled is dynamic:
            continue   # beyond Metal's 32 KiB
        a = rng.standard_normal(512).astype(np.float32)
        out = np.frombuffer(runtime.execute(
            compiled, [a], output_size=a.nbytes, grid=(512, 1, 1),
            threads=(256, 1, 1)), np.float32)
        idx = np.arange(512)
        want = a[(idx // 256) * 256 + 255 - idx % 256] + np.float32(0.25)
        np.testing.assert_array_equal(out, want)


def test_exactly_32_kib_compiles():
    @enigma.kernel
    def full(out: enigma.f32):
        a = enigma.threadgroup_alloc(enigma.f32, 4096)
        b = enigma.threadgroup_alloc(enigma.i32, 4096)
        a[0] = 1.0
        out[0] = a[0] + enigma.metal_cast(b[0], "float")

    compiled = enigma.compile(full)
    assert "threadgroup float" in compiled.metal_source


@pytest.mark.parametrize("size", [0, -4, 2.0, "8"])
def test_bad_size_is_an_enigma_error(size):
    @enigma.kernel
    def bad(out: enigma.f32):
        enigma.threadgroup_alloc(enigma.f32, size)

    with pytest.raises(enigma.EnigmaError, match="test_threadgroup_memory.py"):
        enigma.compile(bad)


def test_constant_index_out_of_range_is_an_enigma_error():
    @enigma.kernel
    def bad(out: enigma.f32):
        s = enigma.threadgroup_alloc(enigma.f32, 4)
        out[0] = s[4]

    with pytest.raises(enigma.EnigmaError, match="out of range"):
        enigma.compile(bad)


def test_outside_a_kernel_is_an_enigma_error():
    with pytest.raises(enigma.EnigmaError):
        enigma.threadgroup_alloc(enigma.f32, 4)


def test_iterating_a_threadgroup_array(runtime, rng):
    """``for x in t`` over a ``threadgroup_alloc`` array reads its elements
    in order, as Python iterates a sequence of known length (it ended with
    "index 8 is out of range" after reading them all)."""
    @enigma.kernel
    def summed(a: enigma.f32, out: enigma.f32):
        t = enigma.threadgroup_alloc(enigma.f32, 8)
        lid = enigma.thread_position_in_threadgroup()
        t[lid] = a[lid]
        enigma.barrier()
        s = 0.0
        for x in t:
            s = s * 2.0 + x
        out[lid] = s

    a = rng.integers(-4, 5, 8).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(summed), [a], np.float32, 8,
                     grid=(8, 1, 1), threads=(8, 1, 1))
    want = 0.0
    for x in a.astype(np.float64):
        want = want * 2.0 + x
    np.testing.assert_array_equal(out, np.full(8, want))


def test_iterating_what_has_no_short_static_length():
    @enigma.kernel
    def dynamic(out: enigma.f32):
        t = enigma.dynamic_threadgroup_alloc(enigma.f32)
        for x in t:
            out[0] = x

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_threadgroup_memory\.py:\d+: "
                             r"dynamic_threadgroup_alloc\(f32\) cannot be "
                             r"iterated.*enigma\.range"):
        enigma.compile(dynamic, emit_only=True)

    @enigma.kernel
    def large(out: enigma.f32):
        t = enigma.threadgroup_alloc(enigma.f32, 4096)
        for x in t:
            out[0] = x

    with pytest.raises(enigma.EnigmaError,
                       match=r"iterating threadgroup_alloc\(f32, 4096\) "
                             r"would unroll 4096 loads.*enigma\.range"):
        enigma.compile(large, emit_only=True)


def test_whole_array_arithmetic_says_to_index():
    @enigma.kernel
    def k(out: enigma.f32):
        t = enigma.threadgroup_alloc(enigma.f32, 8)
        out[0] = t * 2.0

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_threadgroup_memory\.py:\d+: "
                             r"threadgroup_alloc\(f32, 8\) is not a value: "
                             r"arithmetic takes its elements"):
        enigma.compile(k, emit_only=True)
