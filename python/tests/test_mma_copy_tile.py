"""The threadgroup tile copy of the matrix multiply-accumulate family
(enigma.copy_tile, docs/reference/mma.md): edges, alignment, swizzles,
destination offsets and column blocks, against the source's elements on
every backend under test, and the block layouts it refuses.
"""

import functools

import numpy as np
import pytest

import enigma

from conftest import run_kernel
from _mma_helpers import U32, body_error, to_bits


# --------------------------------------------------------------------------
# copy_tile
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _copy_tile(dtype, swizzled, threads=96, dst_offset=0):
    elem = getattr(enigma, dtype)
    rows, cols, ld = 24, 32, 40
    sw = enigma.mma_swizzle(ld, elem) if swizzled else None
    if sw is None and swizzled:
        sw = enigma.Swizzle(2, 3 if elem.itemsize == 2 else 2, 3)

    @enigma.kernel
    def copy_tile(A: elem, off: U32, src_ld: U32, VR: U32, VC: U32, O: elem):
        t = enigma.threadgroup_alloc(elem, 64 + rows * ld)
        enigma.copy_tile(t, A, rows, cols, src_ld=src_ld, src_offset=off,
                         dst_ld=ld, valid_rows=VR, valid_cols=VC,
                         swizzle=sw, dst_offset=dst_offset)
        enigma.copy_commit()
        enigma.copy_wait(0)
        enigma.barrier()
        tid = enigma.thread_index_in_threadgroup()
        for i in enigma.range(tid, rows * cols, threads, dtype="uint"):
            at = (i // cols) * ld + i % cols
            O[i] = t[dst_offset + (sw(at) if sw is not None else at)]
    return enigma.compile(copy_tile), rows, cols


# 96 threads: the generic copy loop; 128 (with a destination offset): on
# CUDA whole tiles take the unrolled path.
@pytest.mark.parametrize("threads,dst_offset", [(96, 0), (128, 64)])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("swizzled", [False, True])
@pytest.mark.parametrize("off,src_ld,vr,vc", [
    (0, 32, 24, 32),       # whole tile, aligned rows
    (16, 48, 19, 27),      # edges inside chunks
    (3, 37, 24, 32),       # unaligned rows: element copies
    (8, 40, 0, 32),        # nothing valid: all zero
])
def test_copy_tile_edges_and_alignment(runtime, rng, dtype, swizzled, off,
                                       src_ld, vr, vc, threads, dst_offset):
    kernel, rows, cols = _copy_tile(dtype, swizzled, threads, dst_offset)
    a = rng.uniform(1, 2, off + rows * src_ld + 8).astype(np.float32)
    bits = to_bits(a, dtype)
    out = run_kernel(runtime, kernel, [bits], bits.dtype, rows * cols,
                     (threads, 1, 1), (threads, 1, 1),
                     scalars=[off, src_ld, vr, vc])
    want = np.zeros((rows, cols), bits.dtype)
    for r in range(min(rows, vr)):
        want[r, :min(cols, vc)] = bits[off + r * src_ld:
                                       off + r * src_ld + min(cols, vc)]
    np.testing.assert_array_equal(out.reshape(rows, cols), want)


# (rows, cols, block width, block stride, destination offset): blocks 776
# elements apart (not a multiple of the swizzle's period), and a tile that
# 128 threads copy whole (CUDA's unrolled path when nothing is cut).
_BLOCK_SHAPES = {"odd": (24, 96, 32, 776, 16), "whole": (32, 128, 64, 2048, 0)}


@functools.lru_cache(maxsize=None)
def _copy_tile_blocks(dtype, swizzled, shape="odd"):
    """A rows x cols tile into blocks of `width` columns, `stride` elements
    apart, from element `offset` on."""
    elem = getattr(enigma, dtype)
    rows, cols, width, stride, offset = _BLOCK_SHAPES[shape]
    sw = enigma.mma_swizzle(width, elem) if swizzled else None

    @enigma.kernel
    def copy_blocks(A: elem, src_ld: U32, VR: U32, VC: U32, O: elem):
        t = enigma.threadgroup_alloc(elem, offset + (cols // width) * stride)
        enigma.copy_tile(t, A, rows, cols, src_ld=src_ld, dst_ld=width,
                         valid_rows=VR, valid_cols=VC, swizzle=sw,
                         dst_offset=offset, block_stride=stride)
        enigma.copy_commit()
        enigma.copy_wait(0)
        enigma.barrier()
        tid = enigma.thread_index_in_threadgroup()
        for i in enigma.range(tid, rows * cols, 128, dtype="uint"):
            r, c = i // cols, i % cols
            inside = r * width + c % width
            O[i] = t[offset + (c // width) * stride +
                     (sw(inside) if sw is not None else inside)]
    return enigma.compile(copy_blocks), rows, cols


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("swizzled", [False, True])
@pytest.mark.parametrize("shape,src_ld,vr,vc", [
    ("odd", 96, 24, 96), ("odd", 100, 19, 70), ("odd", 96, 24, 20),
    ("whole", 128, 32, 128), ("whole", 136, 32, 128), ("whole", 128, 31, 100)])
def test_copy_tile_into_column_blocks(runtime, rng, dtype, swizzled, shape,
                                      src_ld, vr, vc):
    """block_stride: each block of columns lands block_stride apart,
    swizzled inside itself, edges zero-filled block by block."""
    kernel, rows, cols = _copy_tile_blocks(dtype, swizzled, shape)
    a = rng.uniform(1, 2, rows * src_ld).astype(np.float32)
    bits = to_bits(a, dtype)
    out = run_kernel(runtime, kernel, [bits], bits.dtype, rows * cols,
                     (128, 1, 1), (128, 1, 1), scalars=[src_ld, vr, vc])
    want = np.zeros((rows, cols), bits.dtype)
    for r in range(vr):
        want[r, :vc] = bits[r * src_ld:r * src_ld + vc]
    np.testing.assert_array_equal(out.reshape(rows, cols), want)


def test_copy_tile_block_mistakes():
    def uneven(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 4096)
        enigma.copy_tile(t, A, 8, 96, src_ld=96, dst_ld=64,
                         block_stride=1024)
    msg = body_error(uneven)
    assert "blocks of dst_ld = 64" in msg, msg

    def overlapping(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 4096)
        enigma.copy_tile(t, A, 8, 64, src_ld=64, dst_ld=32, block_stride=128)
    msg = body_error(overlapping)
    assert "would overlap" in msg, msg
