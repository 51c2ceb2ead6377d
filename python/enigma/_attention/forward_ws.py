"""The pipelined forward (prefill) kernel: the online softmax of
:mod:`.forward` on a ring of key/value stages (docs/reference/pipelines.md).

A threadgroup owns ``rows`` query rows of one (sequence, query head): one
warpgroup of 128 threads per 64 rows, the consumers. Each iteration of an
:func:`enigma.pipeline_loop` has a producer that copies one block of
``bc`` keys and its values into a stage of the ring (on Hopper a producer
warpgroup issuing Tensor Memory Accelerator copies, ``stages`` blocks
ahead) and a consumer that runs ``S = Q K^T`` (both operands in
threadgroup memory), the online softmax in registers and ``O += P V``
(``P`` from registers). Q is copied once before the loops. With
``config.turns`` the consumer warpgroups take turns at the two products
(:func:`enigma.consumer_turn`), so that one warpgroup's softmax runs
while the other's products use the tensor cores.

The whole key blocks are walked by two pipelines on the one ring: the
blocks no row masks, then the blocks with the causal diagonal, so that
the unmasked consumer has no branch.

Rows past a sequence's end: the copies read the K/V tensor as one matrix
(a host-encoded tensor map cannot end at a sequence), so a stage holding
a partial block would hold rows of the next sequence or head. Their
scores could be masked, but ``0 * inf`` in ``P V`` is NaN, so a partial
last block does not go through the ring: the consumers copy it after the
pipelines with the rows past the end zero-filled
(:class:`~.tiles.ContiguousKeys`, as the classic kernel does).
docs/design/attention.md explains the choices.
"""

import contextlib
import functools

from .._core import fitting_consumer_registers
from .._control import if_
from .._dtypes import f32, i32 as I32, u32 as U32, Scalar
from .._kernel import kernel
from .._math import exp2, fmax, imax, imin, where
from .._mma import (copy_commit, copy_wait, mma, mma_fill, mma_iota,
                    mma_wait, mma_zeros)
from .._pipeline import (consumer_turn, pipeline_loop, pipeline_ring,
                         stage_copy)
from .._threads import barrier, simdgroup_index_in_threadgroup
from .._cooperation import threadgroup_alloc
from .forward import (block_counts, element_type, finish, query_tile,
                      store_rows)
from .tiles import NEG_INF, ContiguousKeys, TileLayout, i32

def producer_registers(threads: int) -> int:
    """Registers per thread of the producer warpgroup on CUDA beside
    ``threads`` consumers: its copies and the sequence offsets it reads,
    in the TMA form and the cp.async fallback side by side. 56 as GEMM's
    producer beside two consumer warpgroups, whose registers are scarce;
    64 beside one (the causal D = 64 kernel's fallback spilled 4 bytes at
    56, ptxas for sm_90a)."""
    return 64 if threads <= 128 else 56


def consumer_registers(threads: int) -> int:
    """Registers per consumer thread beside the producer warpgroup: the
    most ``setmaxnreg`` can give (docs/reference/pipelines.md)."""
    return fitting_consumer_registers(threads, 128,
                                      producer_registers(threads))


@functools.lru_cache(maxsize=None)
def forward_ws_kernel(dtype: str, d: int, causal: bool, config):
    """The pipelined forward kernel (an ``@enigma.kernel``) for ``dtype``
    ("bf16" or "f16") and head dimension ``d`` (64 or 128) over
    contiguous keys; ``config`` a pipelined :class:`~.forward.ForwardConfig`
    (``rows`` a multiple of 64). Its parameters are the classic kernel's
    (``TABLE``, ``LENGTHS``, ``pages`` and ``table_stride`` unread) and
    ``kv_rows``: the rows of K and V seen as one matrix of ``k_ss``
    columns (the tensor map's extent)."""
    el = element_type(dtype)
    bc, rows, stages = config.bc, config.rows, config.stages
    layout = TileLayout(el, bc, d)
    q_layout = TileLayout(el, rows, d)
    threads = config.threads
    turns = config.turns
    overlap = config.overlap
    if turns and overlap:   # the plans refuse it too; this is for callers
        raise ValueError(f"{config}: overlap and turns are two schedules "
                         "of the products; choose one")
    wide = d > 64     # K and V stored in blocks of 64 columns

    @kernel
    def attention_forward_ws(Q: el, K: el, V: el, CU_Q: I32, CU_K: I32,
                             TABLE: I32, LENGTHS: I32, n_heads: Scalar(U32),
                             group: Scalar(U32), q_sh: Scalar(U32),
                             q_ss: Scalar(U32), k_sh: Scalar(U32),
                             k_ss: Scalar(U32), l_bm: Scalar(U32),
                             l_sh: Scalar(U32), total_q: Scalar(U32),
                             total_k: Scalar(U32), pages: Scalar(U32),
                             table_stride: Scalar(U32),
                             kv_rows: Scalar(U32), scale2: Scalar(f32),
                             O: el, LSE: f32):
        ring = pipeline_ring(stages, [(el, bc * d), (el, bc * d)],
                             threads=threads,
                             producer_registers=producer_registers(threads),
                             consumer_registers=consumer_registers(threads))
        q_s = threadgroup_alloc(el, rows * d)
        k_tail = threadgroup_alloc(el, bc * d)
        v_tail = threadgroup_alloc(el, bc * d)
        b, h, q0, q_start, sq = query_tile(CU_Q, n_heads, total_q, rows,
                                           causal)
        kv_heads = n_heads // group
        keys = ContiguousKeys(K, V, CU_K, b, h // group, total=total_k,
                              batch_rows=kv_heads * d, head_stride=k_sh,
                              row_stride=k_ss)
        skv = keys.length
        # The sequence's first key as (row, column) of K seen as a matrix
        # of k_ss columns: (B, H, S, D) rows of d; (total, H, D) rows of
        # H * d, the head a column offset.
        kv_row0 = keys.base // k_ss
        kv_col0 = keys.base - kv_row0 * k_ss
        sg = simdgroup_index_in_threadgroup()
        row0 = q0 + sg * 16
        q_base = q_start * (n_heads * d) + h * q_sh
        rows_left = where(0, sq - row0, row0 < sq)
        q_layout.copy(q_s, Q, rows, src_ld=q_ss,
                      src_offset=q_base + q0 * q_ss,
                      valid_rows=where(0, sq - q0, q0 < sq))
        copy_commit()
        copy_wait(0)
        barrier()
        q = q_layout.operand(q_s, transpose=False, row0=(sg // 4) * 64)
        off = i32(skv) - i32(sq)

        def copy_blocks(slot, k_block, v_block):
            for buffer, src, block in ((0, K, k_block), (1, V, v_block)):
                stage_copy(ring, slot, buffer, src,
                           at=(kv_row0 + block * bc, kv_col0),
                           shape=(kv_rows, k_ss), ld=k_ss, box=(bc, d),
                           swizzle=layout.swizzle,
                           block_cols=64 if wide else None,
                           block_stride=layout.block if wide else None)

        def producer(j, slot):
            copy_blocks(slot, j, j)

        def lagged_producer(last):
            """With ``overlap``: stage ``j`` holds K block ``min(j, last)``
            and V block ``j - 1`` (block 0 at ``j = 0``, where P is 0)."""
            def produce(j, slot):
                copy_blocks(slot, imin(j, last), imax(j, 1) - 1)
            return produce

        def scores(k_tile, turn=False):
            acc = mma_zeros(16, bc)
            k_op = layout.operand(k_tile, transpose=True)
            if not turn:
                # Raw scores: online_step scales them (scale2 = scale *
                # log2(e), for exp2) inside its exponent.
                return mma(acc, q, k_op, k=d, warpgroup=True)
            # Issued in this warpgroup's turn and waited for after it: the
            # next warpgroup's products queue behind it on the tensor cores
            # while this one waits and runs its softmax.
            with consumer_turn():
                s = mma(acc, q, k_op, k=d, warpgroup=True,
                        asynchronous=True)
            return mma_wait(s)

        def mask(s, k0):
            cols = mma_iota(1, 16, bc) + i32(k0)
            masked = cols >= i32(skv)
            if causal:
                masked = masked | (cols > mma_iota(0, 16, bc) +
                                   (i32(row0) + off))
            return where(s, NEG_INF, masked)

        def online_step(s, m, l):
            """The online softmax step of raw scores ``s``: (P, the rescale
            alpha, m, l), m in units of ``s * scale2``. The scale is
            positive, so the row maximum is scaled instead of every score,
            and each exponent's product and difference become one fma
            where the target contracts them (the same value elsewhere:
            max(s) * c rounds to max(s * c))."""
            m_new = fmax(m, s.row_max() * scale2)
            # A row with no key yet keeps m = -inf; its exponents use 0, so
            # that P and the rescale are 0 rather than NaN.
            m_use = where(m_new, 0.0, m_new == NEG_INF)
            p = exp2(s * scale2 - m_use)
            alpha = exp2(m - m_use)
            return p.cast(el), alpha, m_new, l * alpha + p.row_sum()

        def softmax(s, o, m, l):
            """The online softmax step: (P, O and l rescaled, m)."""
            p, alpha, m_new, l_new = online_step(s, m, l)
            return p, o * alpha, m_new, l_new

        def products(s, v_tile, carry):
            p, o, carry[1], carry[2] = softmax(s, carry[0], carry[1],
                                               carry[2])
            # The turn waits for the row sums (every exponent): on CUDA
            # the softmax then runs before it, not inside it.
            with consumer_turn(after=carry[2]) if turns else \
                    contextlib.nullcontext():
                carry[0] = mma(o, p, layout.operand(v_tile, transpose=False),
                               warpgroup=True)

        # With config.turns the consumer warpgroups take turns at their
        # products (ping-pong: docs/design/consumer-turns.md): warpgroup
        # 0's Q K^T, then 1's; 0's P V, then 1's; each softmax runs during
        # the other's turn.
        def unmasked(j, slot, carry):
            products(scores(ring.stage(0, slot), turn=turns),
                     ring.stage(1, slot), carry)

        def masked(j, slot, carry):
            products(mask(scores(ring.stage(0, slot), turn=turns), j * bc),
                     ring.stage(1, slot), carry)

        def overlapped(with_mask):
            """Block ``j``'s ``S = Q K^T`` and block ``j - 1``'s ``O += P
            V`` issued together; the softmax of ``S`` runs while ``P V``
            is in flight, then O is rescaled. Carries (O, m, l, P)."""
            def consume(j, slot, carry):
                k_op = layout.operand(ring.stage(0, slot), transpose=True)
                v_op = layout.operand(ring.stage(1, slot), transpose=False)
                s = mma(mma_zeros(16, bc), q, k_op, k=d, warpgroup=True,
                        asynchronous=True)
                o = mma(carry[0], carry[3], v_op, warpgroup=True,
                        asynchronous=True)
                s = mma_wait(s, pending=1)
                if with_mask:
                    s = mask(s, j * bc)
                carry[3], alpha, carry[1], carry[2] = online_step(
                    s, carry[1], carry[2])
                carry[0] = mma_wait(o) * alpha
            return consume

        def drain(j, slot, carry):
            """The last whole block's ``O += P V`` (V in this stage)."""
            carry[0] = mma(carry[0], carry[3],
                           layout.operand(ring.stage(1, slot),
                                          transpose=False), warpgroup=True)

        # Whole blocks through the ring: those no row masks, then those
        # with the causal diagonal; a partial last block after them.
        blocks, full = block_counts(causal=causal, bc=bc, q0=q0, rows=rows,
                                    sq=sq, skv=skv)
        whole = imin(blocks, skv // bc)
        full = imin(full, whole)
        state = [mma_zeros(16, d), mma_fill(NEG_INF, 16), mma_zeros(16)]
        if overlap:
            # Stage j: K block j beside V block j - 1; one more stage for
            # the last block's V (its K copied again, unread).
            lagged = lagged_producer(imax(whole, 1) - 1)
            state.append(mma_zeros(16, bc).cast(el))
            state = pipeline_loop(ring, 0, full, producer=lagged,
                                  consumer=overlapped(False), init=state)
            state = pipeline_loop(ring, full, whole, producer=lagged,
                                  consumer=overlapped(True), init=state)
            o, m, l, _ = pipeline_loop(ring, whole, whole + imin(whole, 1),
                                       producer=lagged, consumer=drain,
                                       init=state)
        else:
            state = pipeline_loop(ring, 0, full, producer=producer,
                                  consumer=unmasked, init=state)
            o, m, l = pipeline_loop(ring, full, whole, producer=producer,
                                    consumer=masked, init=state)
        with if_(blocks > whole):
            # The rows past the end in a stage would belong to the next
            # sequence or head (0 x inf is NaN): this block is copied by
            # the consumers with those rows zero.
            k0 = whole * bc
            keys.copy(layout, k_tail, "k", k0, bc)
            keys.copy(layout, v_tail, "v", k0, bc)
            copy_commit()
            copy_wait(0)
            barrier()
            p, o, m, l = softmax(mask(scores(k_tail), k0), o, m, l)
            o = mma(o, p, layout.operand(v_tail, transpose=False),
                    warpgroup=True)
        o, lse = finish(o, m, l)
        store_rows(o, lse, O=O, LSE=LSE, d=d, out_base=q_base + row0 * q_ss,
                   out_stride=q_ss,
                   lse_base=q_start * l_bm + h * l_sh + row0,
                   rows_left=rows_left)

    return attention_forward_ws
