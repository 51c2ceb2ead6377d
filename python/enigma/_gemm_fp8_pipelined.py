"""The scaled 8-bit float GEMM on the warp-specialised pipeline
(docs/design/fp8.md, docs/design/warp-specialization.md): what
:func:`enigma.gemm_fp8_block` runs for an ``MmaConfig(...,
warp_specialized=True)``.

It is ``gemm_block``'s pipelined structure with 8-bit operands, built from
its pieces (``_gemm``): the tile scheduler (``persistent_tiles``, grouped
order, persistent and clustered launches), the producer copying A and B
tiles into a ring (``operand_copies``: TMA boxes of 128-byte rows on
Hopper), the operand layout of each simdgroup (``GemmShape``) and the
bounded store (``block_epilogue``). What is its own: the ring of two 8-bit
operand dtypes, the consumer (wgmma with e4m3/e5m2 operands, promotion
into a separate f32 accumulator once per K tile unless ``fast_accum``,
block scales) and the epilogue's scales, amax and 8-bit output.
"""

from __future__ import annotations

from . import _core
from ._fp8 import saturating_cast
from ._gemm import (GemmShape, block_epilogue, operand_copies,
                    persistent_tiles)
from ._math import where
from ._mma import mma, mma_load, mma_wait, mma_zeros
from ._pipeline import consumer_turn, pipeline_loop, pipeline_ring
from ._threads import barrier

__all__ = ["gemm_fp8_pipelined"]

_SCALE_BLOCK = 128
# Whether promoting consumers take turns at their products (_mainloop):
# off until measured on a GPU (bench/profile_misses.py shows the tensor
# pipe idle during the promotion, docs/benchmarks.md).
PROMOTION_TURNS = False
# Whether promotion adds each K tile's product while the next one runs
# (_mainloop), at the price of a second tile accumulator: with products
# that start from zero themselves 1.10-1.16x the serial promotion (H100,
# docs/design/fp8.md).
PROMOTION_IN_FLIGHT = True


def _producer_registers(config):
    """The producer warpgroup's registers: its copies of 128-byte rows
    (the TMA form and the cp.async fallback, printed side by side) in a
    persistent tile loop spilled at 80, and with multicast in a cluster at
    88 (ptxas, sm_90a)."""
    return 96 if config.cluster > 1 else 88


def _consumer_registers(config):
    """What the pool leaves the consumers beside the producer's."""
    return _core.fitting_consumer_registers(config.threads, 128,
                                            _producer_registers(config))


def gemm_fp8_pipelined(A, B, C, *, m, n, k, config, scale_a, scale_b,
                       scaling, scale_out, amax, lda, ldb, ldc, fast_accum,
                       group, amax_reduce, reduce_amax):
    """The threadgroup's output blocks of ``gemm_fp8_block`` (arguments
    checked there) on the pipeline: one block per threadgroup, or with
    ``config.persistent`` the blocks ``t, t + G, ...`` in grouped order.
    ``group``: warpgroup products (``fp8_warpgroup_shape``);
    ``reduce_amax(acc, reduce, amax, warp, wtm, config)`` is the amax
    reduction of ``_gemm_fp8`` (through ``amax_reduce``, threadgroup
    memory)."""
    c = config
    # A is m x k and B is n x k, both K-major: gemm_block's layout with B
    # transposed, rows of bk = 128 bytes under the 128-byte swizzle.
    s = GemmShape(A, B, C, m, n, k, lda, ldb, ldc, False, True, False, c,
                   A.dtype)
    s.group = group   # gemm_block's rule (warpgroup_shape) is for 16 bits
    blockwise = scaling == "block"
    # Promotion beside the products takes two K tiles per slot (_mainloop):
    # as many tiles in flight in half the slots.
    tiles = 2 if _in_flight(s, fast_accum, blockwise) else 1
    ring = pipeline_ring(max(2, c.stages // tiles),
                         [(A.dtype, c.bm * c.bk),
                          (B.dtype, c.bn * c.bk)] * tiles,
                         producer_registers=_producer_registers(c),
                         consumer_registers=_consumer_registers(c),
                         cluster=c.cluster)
    kblocks = (k + (_SCALE_BLOCK - 1)) // _SCALE_BLOCK

    def block(row0, col0):
        acc = _mainloop(s, ring, row0, col0, scale_a, scale_b, blockwise,
                        fast_accum, kblocks, tiles)
        block_epilogue(s, acc, row0, col0, lambda acc, out_row, out_col:
                  _scale_and_convert(s, acc, out_row, out_col, scale_a,
                                     scale_b, scaling, scale_out, amax,
                                     amax_reduce, reduce_amax))

    persistent_tiles(c, m, n, block)


def _in_flight(s, fast_accum, blockwise) -> bool:
    """Whether promotion runs beside the products (``PROMOTION_IN_FLIGHT``;
    warpgroup products, tensor or row scaling, 4 stages or more, no
    cluster: with the producer's multicast registers the consumers spill
    20 bytes, ptxas sm_90a)."""
    return PROMOTION_IN_FLIGHT and bool(s.group) and not fast_accum and \
        not blockwise and s.config.stages >= 4 and s.config.cluster == 1


def _mainloop(s, ring, row0, col0, scale_a, scale_b, blockwise, fast_accum,
              kblocks, tiles=1):
    """The f32 accumulator of the block at (row0, col0) over all of K.

    Three consumers:

    * ``fast_accum`` (tensor and row scaling): one accumulator through
      all of K, products in flight across iterations (the tensor cores'
      own sums on Hopper);
    * promotion: each K tile's product into a zeroed accumulator, added
      into the f32 one (on Hopper the tensor cores' reduced-precision sums
      then span bk = 128 of K, four wgmma k32 instructions); with
      ``tiles`` = 2 (:func:`_in_flight`) a slot holds two K tiles and each
      tile's product is added while the next one's runs;
    * block scaling: the same, the tile's product scaled by its A row
      scales and its B block scale first.
    """
    c = s.config
    asynchronous = s.group and fast_accum and not blockwise
    # Promotion waits for each tile's products before adding them: with
    # two or more consumer warpgroups they take turns at issuing them, so
    # that one's wait and additions overlap another's products.
    turns = PROMOTION_TURNS and bool(s.group) and not asynchronous and \
        c.threads >= 256 and tiles == 1
    b_scale_row = (col0 // _SCALE_BLOCK) * kblocks
    out_row = row0 + s.wrow
    my_rows = where(0, s.m - out_row, out_row < s.m)

    def consumer(kt, slot, carry):
        if tiles == 2:
            # Each tile's product into a fresh accumulator, added while
            # the next product runs: the first tile's product beside the
            # addition of the previous iteration's second (carry[1]), the
            # second's beside the first's addition. The second is waited
            # for at the end, so nothing is in flight across iterations
            # (ptxas serialises every wgmma otherwise), and it can take
            # carry[1]'s registers without a copy.
            ops = [s.operands(ring.stage(2 * t, slot),
                              ring.stage(2 * t + 1, slot)) for t in range(2)]
            first = mma(mma_zeros(s.wtm, s.wtn), *ops[0], k=c.bk,
                        warpgroup=True, asynchronous=True)
            carry[0] = carry[0] + carry[1]
            second = mma(mma_zeros(s.wtm, s.wtn), *ops[1], k=c.bk,
                         warpgroup=True, asynchronous=True)
            carry[0] = carry[0] + mma_wait(first, 1)
            carry[1] = mma_wait(second)
            return
        a_op, b_op = s.operands(ring.stage(0, slot), ring.stage(1, slot))
        if fast_accum and not blockwise:
            carry[0] = mma(carry[0], a_op, b_op, k=c.bk, warpgroup=s.group,
                           asynchronous=asynchronous)
            return
        if blockwise:
            # Read before the product, so the loads overlap it. (Through
            # the ring the TMA would need ceil(k/128), the scale matrix's
            # rows, as a parameter; without a map for every copy the whole
            # ring falls back to cp.async.)
            sa = mma_load(scale_a, s.wtm, s.wtn, ld=0, transpose=True,
                          offset=kt * s.m + out_row, bounds=(my_rows, s.wtn))
            sb = scale_b[b_scale_row + kt]
        if turns:
            # Issued in this warpgroup's turn, waited for after it: the
            # next warpgroup's products queue behind on the tensor cores
            # while this one waits and adds (ping-pong).
            with consumer_turn():
                part = mma(mma_zeros(s.wtm, s.wtn), a_op, b_op, k=c.bk,
                           warpgroup=True, asynchronous=True)
            part = mma_wait(part)
        else:
            part = mma(mma_zeros(s.wtm, s.wtn), a_op, b_op, k=c.bk,
                       warpgroup=s.group)
        if blockwise:
            carry[0] = carry[0] + part * (sa * sb)
        else:
            carry[0] = carry[0] + part

    init = [mma_zeros(s.wtm, s.wtn)] * tiles
    acc = pipeline_loop(ring, 0, (s.ktiles + (tiles - 1)) // tiles,
                        producer=operand_copies(s, ring, row0, col0, tiles),
                        consumer=consumer, init=init)
    if tiles == 2:
        return acc[0] + acc[1]
    return mma_wait(acc[0]) if asynchronous else acc[0]


def _scale_and_convert(s, acc, out_row, out_col, scale_a, scale_b, scaling,
                       scale_out, amax, amax_reduce, reduce_amax):
    """The epilogue: tensor or row scales, the amax, then the output's
    conversion (an 8-bit C: ``saturating_cast(acc * scale_out)``)."""
    m, n = s.m, s.n
    if scaling == "tensor":
        acc = acc * (scale_a[0] * scale_b[0])
    elif scaling == "row":
        my_rows = where(0, m - out_row, out_row < m)
        my_cols = where(0, n - out_col, out_col < n)
        sa = mma_load(scale_a, s.wtm, s.wtn, ld=0, transpose=True,
                      offset=out_row, bounds=(my_rows, s.wtn))
        sb = mma_load(scale_b, s.wtm, s.wtn, ld=0, offset=out_col,
                      bounds=(s.wtm, my_cols))
        acc = acc * sa * sb
    if amax is not None:
        reduce_amax(acc, amax_reduce, amax, s.warp, s.wtm, s.config)
        # The next block's reduction reuses the threadgroup memory.
        barrier()
    if s.C.dtype.is_float8:
        if scale_out is not None:
            acc = acc * scale_out[0]
        acc = saturating_cast(acc, s.C.dtype)
    return acc
