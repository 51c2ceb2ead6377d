"""Transposing stage copies (enigma.stage_copy(..., transpose=True),
docs/reference/pipelines.md, docs/design/tf32.md): the stage
holds the transpose of the box, K-major and swizzled as TF32 warpgroup
products read it, zeros outside the matrix.

Each kernel sends every stage through the ring to an output buffer
unchanged, so the test sees the stage's exact layout, which the reference
builds from the documented formula (element (r, c) of the box at
``(r // bc) * block_stride + swizzle(c * bc + r % bc)``) with numpy, from
fresh random matrices, the output poisoned before each run.

On CUDA (the GPU script) the kernels run with the producer warpgroup
copying the boxes through its registers; here their CUDA text is checked
and compiled for sm_90a."""

import os
import re

import numpy as np
import pytest

import enigma

THREADS = 128
U32 = enigma.Scalar(enigma.u32)


def _swizzle(sw, x):
    if sw is None or sw.bits == 0:
        return x
    return sw(x)


def _layout(box_rows, box_cols, bc, stride, sw):
    """Stage element of box element (r, c) for every (r, c)."""
    r, c = np.meshgrid(np.arange(box_rows), np.arange(box_cols),
                       indexing="ij")
    at = (r // bc) * stride + np.vectorize(lambda x: _swizzle(sw, int(x)))(
        c * bc + r % bc)
    return at


def _transposed_copies(box_rows, box_cols, block_cols=None,
                       block_stride=None, swizzle=None, stages=3,
                       dtype=enigma.f32):
    """Box i of column block g of X (rows x cols, pitch ld) transposed into
    the ring, every stage copied out to Out whole."""
    bc = block_cols or box_rows
    stride = block_stride or box_cols * bc
    slot = (box_rows // bc - 1) * stride + box_cols * bc

    @enigma.kernel
    def transposed_copies(X: dtype, rows: U32, cols: U32, ld: U32,
                          Out: dtype):
        ring = enigma.pipeline_ring(stages, [(dtype, slot)], threads=THREADS)
        g = enigma.threadgroup_position_in_grid("x")
        t = enigma.thread_index_in_threadgroup()
        boxes = (rows + (box_rows - 1)) // box_rows

        def producer(i, s):
            enigma.stage_copy(ring, s, 0, X, at=(i * box_rows, g * box_cols),
                              shape=(rows, cols), ld=ld,
                              box=(box_rows, box_cols), block_cols=block_cols,
                              block_stride=block_stride, swizzle=swizzle,
                              transpose=True)

        def consumer(i, s, carry):
            stage = ring.stage(0, s)
            base = (g * boxes + i) * slot
            for j in enigma.range_constexpr(-(-slot // THREADS)):
                e = t + THREADS * j
                if slot % THREADS:
                    with enigma.if_(e < slot):
                        Out[base + e] = stage[e]
                else:
                    Out[base + e] = stage[e]

        enigma.pipeline_loop(ring, boxes, producer=producer,
                             consumer=consumer)
    return transposed_copies, slot, bc, stride


CASES = {
    # TF32 B of gemm_block: 32 rows of K, 64 columns of N, the 128-byte
    # swizzle on the stored rows of 32 floats.
    "tf32": dict(box_rows=32, box_cols=64,
                 swizzle=enigma.mma_swizzle(32, "f32")),
    # Several stored column blocks (8 of the box's rows each), apart by
    # more than a block, unswizzled.
    "blocks": dict(box_rows=16, box_cols=12, block_cols=8, block_stride=104),
}


def _reference(x, rows, cols, box_rows, box_cols, slot, layout, groups,
               boxes, dtype):
    out = np.zeros(groups * boxes * slot, dtype)
    padded = np.zeros((boxes * box_rows, groups * box_cols), dtype)
    padded[:rows, :cols] = x[:rows, :cols]
    for g in range(groups):
        for i in range(boxes):
            box = padded[i * box_rows:(i + 1) * box_rows,
                         g * box_cols:(g + 1) * box_cols]
            stage = np.zeros(slot, dtype)
            stage[layout.reshape(-1)] = box.reshape(-1)
            out[(g * boxes + i) * slot:(g * boxes + i + 1) * slot] = stage
    return out


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("rows,cols,pad", [(1, 1, 0), (37, 45, 3),
                                           (64, 128, 0), (70, 131, 1)])
def test_transposing_stage_copy_layout(runtime, rng, case, rows, cols, pad):
    """M = 1, odd sides, sides that are not multiples of the box, pitches
    wider than the matrix (unaligned rows with pad = 1, 3)."""
    spec = CASES[case]
    kernel, slot, bc, stride = _transposed_copies(**spec)
    box_rows, box_cols = spec["box_rows"], spec["box_cols"]
    ld = cols + pad
    x = rng.standard_normal((rows, ld)).astype(np.float32)
    groups, boxes = -(-cols // box_cols), -(-rows // box_rows)
    size = groups * boxes * slot
    layout = _layout(box_rows, box_cols, bc, stride, spec.get("swizzle"))
    want = _reference(x, rows, cols, box_rows, box_cols, slot, layout,
                      groups, boxes, np.float32)
    got = runtime.execute(enigma.compile(kernel), [x],
                          output_size=size * 4, scalars=[rows, cols, ld],
                          grid=(groups * THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    # Gaps between the stored blocks are not the copy's: compare the rest.
    covered = np.zeros(slot, bool)
    covered[layout.reshape(-1)] = True
    covered = np.tile(covered, groups * boxes)
    np.testing.assert_array_equal(np.frombuffer(got, np.float32)[covered],
                                  want[covered])


def test_transposing_stage_copy_of_integers(runtime, rng):
    """32-bit integers go through unchanged (bits, not values)."""
    spec = CASES["tf32"]
    kernel, slot, bc, stride = _transposed_copies(dtype=enigma.u32, **spec)
    rows, cols = 33, 70
    x = rng.integers(0, 2**32, (rows, cols), dtype=np.uint32)
    groups, boxes = -(-cols // 64), -(-rows // 32)
    layout = _layout(32, 64, bc, stride, spec["swizzle"])
    want = _reference(x, rows, cols, 32, 64, slot, layout, groups, boxes,
                      np.uint32)
    got = runtime.execute(enigma.compile(kernel), [x],
                          output_size=want.size * 4,
                          scalars=[rows, cols, cols],
                          grid=(groups * THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    np.testing.assert_array_equal(np.frombuffer(got, np.uint32), want)


def _compile_error(**spec):
    kernel = _transposed_copies(**spec)[0]
    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(kernel)
    return str(info.value)


def test_transposing_stage_copy_mistakes():
    assert "32-bit elements only" in _compile_error(
        box_rows=32, box_cols=64, dtype=enigma.f16)
    assert "multiples of 4" in _compile_error(box_rows=32, box_cols=6)
    assert "whole 16-byte chunks" in _compile_error(box_rows=12, box_cols=8,
                                                    block_cols=6,
                                                    block_stride=64)
    with pytest.raises(enigma.EnigmaError, match="transpose must be True"):
        _front_end_transpose_flag()


def _front_end_transpose_flag():
    @enigma.kernel
    def bad(X: enigma.f32, Out: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 32 * 64)], threads=THREADS)

        def producer(i, s):
            enigma.stage_copy(ring, s, 0, X, at=(0, 0), shape=(32, 64),
                              ld=64, box=(32, 64), transpose="yes")

        def consumer(i, s, carry):
            Out[0] = ring.stage(0, s)[0]
        enigma.pipeline_loop(ring, 1, producer=producer, consumer=consumer)
    enigma.compile(bad)


def test_transposing_stage_copy_cuda_text(monkeypatch):
    """The CUDA text: the producer warpgroup runs the producer region with
    all four warps (no first-warp branch), the transposing copy by all of
    them, the ring's full barriers wait for 128 arrivals, and no tensor
    map is made for the copy; it compiles for sm_90a."""
    kernel = _transposed_copies(**CASES["tf32"])[0]
    source = enigma.compile(kernel).cuda_source
    # 40 producer registers (the ring's default): one 4 x 4 block at a time.
    assert "enigma_stage_copy_transposed<32, 64, 32, 2048, 3, 2, 3, 1>(" \
        in source
    assert "its first warp issues the copies" not in source
    assert re.search(r"enigma_ring_begin<3, 1>\([^;]*, 128u\);", source)
    assert "enigma_ring_commit_transposed(" in source
    assert "enigma_tmap" not in source.split("enigma_ring_begin")[1]
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    try:
        enigma._core.Runtime.nvrtc_check(source, "sm_90a", [], log=True)
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed here")
