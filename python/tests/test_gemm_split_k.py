"""Split K summed in the kernel (gemm_block with MmaConfig(split_k=S),
workspace= and flags=; docs/design/split-k-in-kernel.md) on every backend
under test, against float64 numpy with fresh random inputs, a NaN-poisoned
workspace and poisoned outputs:

* results at M = 1, odd N, K not a multiple of the K tile and K with fewer
  tiles than splits (empty ranges), with a user epilogue applied once per
  block, bf16 and float operands;
* the same bits as the two-kernel form (partials, then
  gemm_split_k_reduce) and as a second launch with the same buffers, and
  the counters left zero for the next launch;
* the mistakes refused before launch (missing or mistyped buffers, a
  workspace or counters too small, an origin);
* the CUDA text of the split-K configurations the built-in choice weighs,
  for sm_90a (NVRTC, no spills).

On CUDA (the GPU script) the kernels run in a process of their own with a
time limit.
"""

import re

import numpy as np
import pytest

from conftest import (assert_no_spills_on_hopper, check_float_product,
                      gemm_operands, load_example, run_on_cuda_in_child,
                      skip_cuda_outside_child)

import enigma


@pytest.fixture(autouse=True)
def _isolated_on_cuda(request):
    skip_cuda_outside_child(request, "split K on CUDA runs in its own "
                            "process (test_split_k_on_cuda_in_its_own_"
                            "process)")


def test_split_k_on_cuda_in_its_own_process():
    """Where the suite runs on CUDA: this file's tests on the GPU in a
    child process limited to 10 minutes."""
    run_on_cuda_in_child(__file__)


def _ws(*shape, **options):
    return enigma.MmaConfig(*shape, warp_specialized=True, **options)


# 16-bit operands: a warpgroup on 64 x 64 blocks of K 32 (three stages fit
# Metal's 32 KiB beside the counter word); float: 2 x 2 simdgroups, K 16.
BF16 = (64, 64, 32, 4, 1, 3)
F32 = (64, 64, 16, 2, 2, 2)


def _kernel(config, dtype, shift=None):
    """C = A @ B (+ shift, added by an epilogue) through gemm_block with
    the in-kernel sum."""
    t = enigma.bf16 if dtype == "bf16" else enigma.f32

    def add(acc, row, col):
        return acc + shift

    @enigma.kernel
    def gemm(A: t, B: t, W: enigma.f32, M: enigma.Scalar(enigma.u32),
             N: enigma.Scalar(enigma.u32), K: enigma.Scalar(enigma.u32),
             C: enigma.f32, F: enigma.u32):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                          workspace=W, flags=F,
                          epilogue=None if shift is None else add)
    return enigma.compile(gemm)


def _run(runtime, compiled, config, a, b, m, n, k):
    """(C, counters after the launch); the workspace is poisoned with NaN
    (the outputs start as zeros)."""
    floats, count = enigma.split_k_workspace(config, m, n)
    assert count == config.tiles(m, n)
    w = np.full(floats, np.nan, np.float32)
    grid, threads = config.launch(m, n)
    assert grid[1] == config.split_k
    c, f = runtime.execute(compiled, [a, b, w], grid=grid, threads=threads,
                           scalars=[m, n, k],
                           output_sizes=[m * n * 4, count * 4])
    return (np.frombuffer(c, np.float32).reshape(m, n),
            np.frombuffer(f, np.uint32))


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
@pytest.mark.parametrize("m,n,k,split", [
    (1, 77, 300, 3),       # 2 blocks; 10 or 5 K tiles in 3 ranges
    (1, 1, 1, 4),          # one K tile: three empty ranges
    (65, 129, 257, 2),     # 6 blocks, edges on every side
    (64, 64, 700, 5)])     # one block among 5
def test_split_k_in_kernel_matches_float64(runtime, rng, dtype, m, n, k,
                                           split):
    config = _ws(*(BF16 if dtype == "bf16" else F32), split_k=split)
    a, b, fa, fb = gemm_operands(rng, m, n, k, dtype)
    compiled = _kernel(config, dtype)
    c, flags = _run(runtime, compiled, config, a, b, m, n, k)
    check_float_product(c, fa, fb)
    assert not flags.any(), flags          # ready for the next launch
    again, _ = _run(runtime, compiled, config, a, b, m, n, k)
    assert np.array_equal(again, c)        # the same bits


def test_epilogue_runs_once_per_block(runtime, rng):
    """An epilogue adding 0.5 runs on the sum, by the last threadgroup of
    the block only (twice would add 1)."""
    m, n, k = 70, 100, 200
    config = _ws(*F32, split_k=3)
    a, b, fa, fb = gemm_operands(rng, m, n, k, "f32")
    c, _ = _run(runtime, _kernel(config, "f32", shift=0.5), config, a, b, m,
                n, k)
    check_float_product(c, fa, fb, extra=0.5)


def test_same_bits_as_the_second_kernel(runtime, rng):
    """Both forms add the partials in the order 0, 1, ..., S - 1 in
    float: the results are equal bit for bit."""
    ex = load_example("gemm_bf16")
    m, n, k = 33, 130, 1000
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    config = _ws(*BF16, split_k=4)
    two = ex.run(runtime, a, b, config, sum_in_kernel=False)
    one = ex.run(runtime, a, b, config, sum_in_kernel=True)
    ex.check_output(one, a, b)
    assert np.array_equal(one, two)


def test_mistakes_are_refused(arrays):
    config = _ws(*F32, split_k=2)

    def build(**buffers):
        @enigma.kernel
        def gemm(A: enigma.f32, B: enigma.f32, W: enigma.f32,
                 F: enigma.u32, G: enigma.f32, C: enigma.bf16):
            chosen = {"W": W, "F": F, "G": G}
            enigma.gemm_block(A, B, C, m=8, n=8, k=8, config=config,
                              **{name: chosen[value] if value else None
                                 for name, value in buffers.items()})
        return gemm

    with pytest.raises(enigma.EnigmaError,
                       match="needs flags= .a buffer parameter of u32"):
        enigma.compile(build(workspace="W"))
    with pytest.raises(enigma.EnigmaError, match="flags must hold u32"):
        enigma.compile(build(workspace="W", flags="G"))
    with pytest.raises(enigma.EnigmaError,
                       match="C holds the float partial products"):
        enigma.compile(build())   # no workspace: partials in C, which is bfloat
    with pytest.raises(enigma.EnigmaError, match="split_k > 1"):
        enigma.split_k_workspace(_ws(*F32), 8, 8)
    with pytest.raises(enigma.EnigmaError, match="m must be an int"):
        enigma.split_k_workspace(config, -1, 8)

    @enigma.kernel
    def placed(A: enigma.f32, B: enigma.f32, W: enigma.f32, F: enigma.u32,
               C: enigma.f32):
        enigma.gemm_block(A, B, C, m=8, n=8, k=8, config=config,
                          workspace=W, flags=F, origin=(0, 0))

    with pytest.raises(enigma.EnigmaError, match="no origin"):
        enigma.compile(placed)

    # Buffers too small for their matrices: DispatchErrors naming them.
    gemm = build(workspace="W", flags="F")
    floats, counters = enigma.split_k_workspace(config, 8, 8)
    assert (floats, counters) == (2 * 64 * 64, 1)
    grid, threads = config.launch(8, 8)
    for sizes, words in (((floats - 1, 1), "into the workspace as a "
                          r"\(ceil\(m/bm\)\) x \(ceil\(n/bn\) split_k bm "
                          r"bn\) matrix"),
                         ((floats, 0), "counts the split-K partials")):
        with pytest.raises(enigma.DispatchError, match=words):
            gemm.launch(grid=grid, threads=threads)(
                *(arrays.put(np.zeros(count, dtype)) for count, dtype in (
                    (64, np.float32), (64, np.float32),
                    (sizes[0], np.float32), (sizes[1], np.uint32),
                    (64, np.float32), (64, np.uint16))))


def test_small_buffers_refused_with_sides_known_at_launch(arrays):
    """m and n as scalar parameters: the workspace and counters (blocks of
    C), and without them the float partials in C (split_k m rows), are
    judged at each launch from the values passed; one element short is a
    DispatchError before anything runs."""
    config = _ws(*F32, split_k=3)

    @enigma.kernel
    def summed(A: enigma.f32, B: enigma.f32, W: enigma.f32, F: enigma.u32,
               m: enigma.Scalar(enigma.u32), n: enigma.Scalar(enigma.u32),
               k: enigma.Scalar(enigma.u32), C: enigma.f32):
        enigma.gemm_block(A, B, C, m=m, n=n, k=k, config=config,
                          workspace=W, flags=F)

    @enigma.kernel
    def partials(A: enigma.f32, B: enigma.f32,
                 m: enigma.Scalar(enigma.u32), n: enigma.Scalar(enigma.u32),
                 k: enigma.Scalar(enigma.u32), C: enigma.f32):
        enigma.gemm_block(A, B, C, m=m, n=n, k=k, config=config)

    m, n, k = 70, 130, 40      # 2 x 3 blocks of 64 x 64
    floats, counters = enigma.split_k_workspace(config, m, n)
    assert (floats, counters) == (6 * 3 * 64 * 64, 6)
    grid, threads = config.launch(m, n)
    a, b = np.ones(m * k, np.float32), np.ones(k * n, np.float32)

    def run_summed(w, f):
        c = arrays.put(np.full(m * n, np.nan, np.float32))
        summed.launch(grid=grid, threads=threads)(
            arrays.put(a), arrays.put(b), arrays.put(w), arrays.put(f),
            m, n, k, c)
        return arrays.get(c)

    for w, f, words in (
            (np.zeros(floats - 1, np.float32), np.zeros(counters, np.uint32),
             "writes its split-K partials into the workspace"),
            (np.zeros(floats, np.float32), np.zeros(counters - 1, np.uint32),
             "counts the split-K partials")):
        with pytest.raises(enigma.DispatchError, match=words):
            run_summed(w, f)
    got = run_summed(np.zeros(floats, np.float32),
                     np.zeros(counters, np.uint32))
    assert np.all(got == k)            # exactly enough: it runs

    with pytest.raises(enigma.DispatchError,
                       match=r"writes C as a \(split_k m\) x n matrix"):
        partials.launch(grid=grid, threads=threads)(
            arrays.put(a), arrays.put(b), m, n, k,
            arrays.put(np.zeros(3 * m * n - 1, np.float32)))


def test_metal_text_counts_after_a_device_barrier():
    """The MSL of the in-kernel sum: the counters are device atomics, the
    partials reach device memory (threadgroup_barrier mem_device) before
    one atomic add counts them, its old value is shared through a
    threadgroup word, and the last threadgroup sets the counter back to
    zero."""
    ex = load_example("gemm_bf16")
    src = ex.compiled(_ws(*BF16, split_k=3), sum_in_kernel=True).metal_source
    assert "device atomic_uint* F [[buffer(3)]]" in src
    barrier = src.index("threadgroup_barrier(mem_flags::mem_device);")
    add = src.index("atomic_fetch_add_explicit(", barrier)
    assert "(uint)1u, memory_order_relaxed)" in src[add:add + 120]
    assert re.search(r"threadgroup uint v\d+\[1\];", src)
    reset = src.index("atomic_store_explicit(", add)
    assert "(uint)0u, memory_order_relaxed)" in src[reset:reset + 120]


def test_built_in_split_k_cuda_text_compiles_for_hopper(monkeypatch):
    """The split-K configurations the built-in choice weighs, summing in
    the kernel, compile for sm_90a without spills or serialised
    warpgroup products."""
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    ex = load_example("gemm_bf16")
    from enigma._gemm_configs import _gemm_choices
    configs = {c for m, n, k in ((16, 6144, 4096), (128, 4096, 4096),
                                 (128, 8192, 28672))
               for _, c, _ in _gemm_choices(m, n, k, 132) if c.split_k > 1}
    assert {(c.bm, c.bn) for c in configs} >= {(64, 128), (128, 64),
                                               (128, 128)}
    for c in sorted(configs, key=repr):
        source = ex.compiled(c, sum_in_kernel=True).cuda_source
        assert "atomic" in source and "memory_order_acq_rel" in source, c
        assert_no_spills_on_hopper(source, c)
