"""Tile copies in a multi-stage pipeline (enigma.copy_tile / copy_commit /
copy_wait) and gemm_block, compiled with and without ``cuda_tma``, checked
element for element against numpy.

With ``cuda_tma=True`` an sm_90 GPU copies whole tiles with the 128-byte
swizzle or none through the Tensor Memory Accelerator (docs/design/tma.md):
one bulk copy per tile, completion on one mbarrier per commit group, 16
barriers reused in turn. These kernels commit more groups than that, mix
whole tiles with edge tiles (which the first warp copies with cp.async) and
pitches the TMA cannot use (the copies then run as cp.async in every
thread); every backend and both forms must give the same elements.
"""

import functools

import numpy as np
import pytest

import enigma

from conftest import run_kernel

U32 = enigma.Scalar(enigma.u32)


@functools.lru_cache(maxsize=None)
def _pipelined_copy(dtype, tiles, stages, threads, tma=True):
    """Tile i (64 rows from row 64 i, columns c0 .. c0 + cols of a pitch-ld
    matrix of M rows) goes through stage i % stages and out to O."""
    elem = getattr(enigma, dtype)
    rows = 64
    cols = 128 // elem.itemsize         # rows of 128 bytes
    size = rows * cols
    swizzle = enigma.mma_swizzle(cols, elem)

    @enigma.kernel
    def pipelined_copy(A: elem, M: U32, ld: U32, c0: U32, O: elem):
        t = enigma.threadgroup_alloc(elem, stages * size)
        tid = enigma.thread_index_in_threadgroup()

        def load(stage, i):
            r0 = i * rows
            enigma.copy_tile(t, A, rows, cols, src_ld=ld,
                             src_offset=r0 * ld + c0,
                             valid_rows=enigma.where(0, M - r0, r0 < M),
                             valid_cols=ld - c0, swizzle=swizzle,
                             dst_offset=stage * size)
            enigma.copy_commit()

        for s in range(stages - 1):
            load(s, s)
        with enigma.for_range(0, tiles, dtype="uint") as i:
            enigma.copy_wait(stages - 2)
            enigma.barrier()
            base = (i % stages) * size
            with enigma.for_range(tid, size, threads, dtype="uint") as e:
                O[i * size + e] = t[base + swizzle(e)]
            enigma.barrier()
            load((i + (stages - 1)) % stages, i + (stages - 1))
        enigma.copy_wait(0)
    return enigma.compile(pipelined_copy, cuda_tma=tma), rows, cols


def _expected(a, m, ld, c0, tiles, rows, cols):
    want = np.zeros((tiles, rows, cols), a.dtype)
    for i in range(tiles):
        for r in range(rows):
            row = i * rows + r
            if row >= m:
                break
            n = max(0, min(cols, ld - c0))
            want[i, r, :n] = a[row * ld + c0:row * ld + c0 + n]
    return want.reshape(-1)


@pytest.mark.parametrize("tma", [True, False])
@pytest.mark.parametrize("dtype", ["bf16", "f32"])
@pytest.mark.parametrize("threads", [128, 96])
@pytest.mark.parametrize("m,ld,c0", [
    (20 * 64, 64, 0),      # whole tiles, 20 commit groups
    (1250, 96, 16),        # a partial last tile and tiles of no rows
    (1280, 72, 8),         # a column offset inside the pitch
    (1280, 40, 8),         # columns past the pitch: zero-filled edges
    (1280, 100, 4),        # a pitch of 200/400 bytes: no tensor map
])
def test_pipelined_tile_copies(runtime, rng, tma, dtype, threads, m, ld, c0):
    tiles, stages = 22, 3
    kernel, rows, cols = _pipelined_copy(dtype, tiles, stages, threads, tma)
    np_dtype = np.uint16 if dtype == "bf16" else np.float32
    if dtype == "bf16":
        a = rng.integers(1, 1 << 15, m * ld + 64).astype(np.uint16)
    else:
        a = rng.uniform(-1, 1, m * ld + 64).astype(np.float32)
    out = run_kernel(runtime, kernel, [a], np_dtype, tiles * rows * cols,
                     (threads, 1, 1), (threads, 1, 1), scalars=[m, ld, c0])
    np.testing.assert_array_equal(
        out, _expected(a, m, ld, c0, tiles, rows, cols))


def test_tile_copies_name_their_tensor_maps(monkeypatch):
    """With cuda_tma the CUDA text passes one map per source, pitch and
    box; Metal and the CPU keep their copies, and so does CUDA without it
    (the default; ENIGMA_CUDA_TMA=1 asks for it)."""
    monkeypatch.delenv("ENIGMA_CUDA_TMA", raising=False)
    plain, _, _ = _pipelined_copy("bf16", 4, 3, 128, tma=None)
    assert "EnigmaTensorMap" not in plain.cuda_source
    kernel, _, _ = _pipelined_copy("bf16", 4, 3, 128)
    cuda = kernel.cuda_source
    assert cuda.count("const __grid_constant__ EnigmaTensorMap") == 1, cuda
    assert "enigma_copy_tile_tma<64, 64, 64, 3, 3, 3, 0>(enigma_tma, " \
           "enigma_tmap0" in cuda, cuda
    assert "enigma_tma_wait<1>(enigma_tma)" in cuda, cuda
    assert "tma" not in kernel.metal_source
    assert "tma" not in kernel.cpp_source


@functools.lru_cache(maxsize=None)
def _gemm(config, b_t):
    @enigma.kernel
    def gemm_tma(A: enigma.bf16, B: enigma.bf16, M: U32, N: U32, K: U32,
                 C: enigma.f32):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                          b_transposed=b_t)
    return enigma.compile(gemm_tma, cuda_tma=True)


def _bf16(x):
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


@pytest.mark.parametrize("b_t", [False, True])
@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (70, 130, 100),
                                   (128, 192, 1216), (1, 1, 1)])
def test_gemm_block_with_tensor_memory_copies(runtime, rng, b_t, stages, m,
                                              n, k):
    """gemm_block compiled with cuda_tma: its A and B tiles (rows of 128
    bytes, 128-byte swizzle, B in 64-column blocks) are the TMA's boxes;
    edge tiles and the prologue's take the other paths. K = 1216 commits
    more groups than there are barriers."""
    if stages == 3 and runtime.name == "metal-host":
        pytest.skip("48 KiB of threadgroup memory: beyond Metal's 32 KiB")
    config = enigma.MmaConfig(64, 64, 64, 4, 1, stages, group_m=2)
    a = (rng.integers(-4, 5, (m, k)) / 4.0).astype(np.float32)
    b = (rng.integers(-4, 5, (k, n)) / 4.0).astype(np.float32)
    out = run_kernel(runtime, _gemm(config, b_t),
                     [_bf16(a), _bf16(b.T if b_t else b)], np.float32, m * n,
                     *config.launch(m, n), scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n),
                                  a.astype(np.float64) @ b)
