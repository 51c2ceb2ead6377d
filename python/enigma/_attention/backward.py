"""The backward kernels, from the forward's log-sum-exp with the scores
recomputed (FlashAttention 2's scheme):

* :func:`prep_kernel`: ``Delta = rowsum(dO * O)`` per query row;
* :func:`dkdv_kernel`: a threadgroup owns a block of keys of one (sequence,
  key/value head), 16 per simdgroup, and walks every query block of every
  query head of its group: ``S^T = K Q^T``, ``P^T = exp(S^T - LSE)``,
  ``dV += P^T dO``, ``dP^T = V dO^T``, ``dS^T = P^T (dP^T - Delta)``,
  ``dK += dS^T Q``. Per-query vectors (LSE, Delta) run along the columns
  of these fragments, loaded with a zero pitch. Optionally (not
  deterministic) it also adds ``dS K`` into a float dQ accumulator with
  atomics;
* :func:`dq_kernel`: the deterministic dQ: a threadgroup owns query rows
  and walks the key blocks, ``dQ += dS K``;
* :func:`dq_convert_kernel`: the accumulator, scaled, into dQ's dtype.
"""

import functools
from dataclasses import dataclass

from .._control import if_, range as _range, range_constexpr
from .._cooperation import atomic_fetch_add, threadgroup_alloc
from .._dtypes import Scalar, f32, i32 as I32, u32 as U32
from .._kernel import kernel
from .._math import exp2, imax, where
from .._mma import (copy_commit, copy_wait, mma, mma_iota, mma_load,
                    mma_operand, mma_store, mma_zeros)
from .._simd import simd_sum
from .._threads import (barrier, simdgroup_index_in_threadgroup,
                        thread_index_in_simdgroup,
                        thread_index_in_threadgroup,
                        threadgroup_position_in_grid)
from .forward import block_counts, element_type, require_threads
from .tiles import (LOG2E, NEG_INF, TileLayout, i32, plain_fields, sequence,
                    u32)

POS_INF = float("inf")


@dataclass(frozen=True)
class BackwardConfig:
    """Tile shapes of the backward: the dK/dV kernel's ``simdgroups`` (16
    keys each) and ``bq`` queries per block, ``stages`` (1 or 2) of Q and
    dO blocks; the dQ kernel's ``dq_simdgroups`` (16 queries each) and
    ``bk`` keys per block."""
    simdgroups: int = 4
    bq: int = 64
    stages: int = 2
    dq_simdgroups: int = 4
    bk: int = 64

    def __post_init__(self):
        plain_fields(self)

    def dkdv_smem_bytes(self, d: int, atomic: bool, itemsize: int = 2):
        keys = 16 * self.simdgroups
        total = (2 * keys * d + 2 * self.stages * self.bq * d) * itemsize
        if atomic:   # dS^T (keys x bq) and the float dQ block
            total += keys * self.bq * itemsize + self.bq * d * 4
        return total

    def dq_smem_bytes(self, d: int, itemsize: int = 2):
        rows = 16 * self.dq_simdgroups
        return (2 * rows * d + 2 * 2 * self.bk * d) * itemsize


@functools.lru_cache(maxsize=None)
def prep_kernel(dtype: str, d: int):
    """``Delta[row] = sum(dO[row] * O[row])`` (float), one simdgroup per
    query row, four rows per threadgroup; Delta has the layout of LSE."""
    el = element_type(dtype)

    @kernel
    def attention_backward_prep(DO: el, O: el, CU_Q: I32,
                                n_heads: Scalar(U32), q_sh: Scalar(U32),
                                q_ss: Scalar(U32), l_bm: Scalar(U32),
                                l_sh: Scalar(U32), total_q: Scalar(U32),
                                DELTA: f32):
        require_threads(128)
        z = threadgroup_position_in_grid("z")
        b = z // n_heads
        h = z - b * n_heads
        i = threadgroup_position_in_grid("y") * 4 + \
            simdgroup_index_in_threadgroup()
        lane = thread_index_in_simdgroup()
        start, sq = sequence(CU_Q, b, total_q)
        with if_(i < sq):
            base = start * (n_heads * d) + h * q_sh + i * q_ss + lane
            acc = 0.0
            for k in range_constexpr(d // 32):
                acc = acc + DO[base + 32 * k].cast(f32) * \
                    O[base + 32 * k].cast(f32)
            total = simd_sum(acc)
            with if_(lane == 0):
                DELTA[start * l_bm + h * l_sh + i] = total

    return attention_backward_prep


def _column_vector(mem, base, q0, sq, rows: int, cols: int):
    """A rows x cols fragment whose column ``c`` is ``mem[base + q0 + c]``
    (0 past the sequence's ``sq`` rows)."""
    return mma_load(mem, rows, cols, ld=0, offset=base + q0,
                    bounds=(rows, where(0, sq - q0, q0 < sq)))


def _row_vector(mem, base, rows):
    """The row vector ``mem[base + r]`` of a 16-row fragment (0 from row
    ``rows`` on)."""
    return mma_load(mem, 16, 16, ld=0, transpose=True, offset=base,
                    bounds=(rows, 16)).row_max()


@functools.lru_cache(maxsize=None)
def dkdv_kernel(dtype: str, d: int, causal: bool, config: BackwardConfig,
                atomic: bool):
    """dK and dV of one block of keys (16 per simdgroup) of one (sequence,
    key/value head), over every query of the group's heads. ``atomic``:
    also adds ``scale`` times nothing -- the unscaled ``dS K`` -- into the
    float accumulator ``DQ`` (laid out as Q) with atomics."""
    el = element_type(dtype)
    w, bq, stages = config.simdgroups, config.bq, config.stages
    keys = 16 * w
    threads = 32 * w
    group_products = w % 4 == 0       # warpgroup products (wgmma)
    k_layout = TileLayout(el, keys, d)
    q_layout = TileLayout(el, bq, d)
    per_thread = bq * d // threads

    @kernel
    def attention_backward_dkdv(Q: el, K: el, V: el, DO: el, LSE: f32,
                                DELTA: f32, CU_Q: I32, CU_K: I32,
                                n_heads: Scalar(U32), group: Scalar(U32),
                                q_sh: Scalar(U32), q_ss: Scalar(U32),
                                k_sh: Scalar(U32), k_ss: Scalar(U32),
                                l_bm: Scalar(U32), l_sh: Scalar(U32),
                                total_q: Scalar(U32), total_k: Scalar(U32),
                                scale: Scalar(f32), scale2: Scalar(f32),
                                DK: el, DV: el, DQ: f32):
        require_threads(threads)
        k_s = threadgroup_alloc(el, keys * d)
        v_s = threadgroup_alloc(el, keys * d)
        q_s = threadgroup_alloc(el, stages * bq * d)
        do_s = threadgroup_alloc(el, stages * bq * d)
        if atomic:
            ds_s = threadgroup_alloc(el, keys * bq)
            dq_s = threadgroup_alloc(f32, bq * d)
        kv_heads = n_heads // group
        z = threadgroup_position_in_grid("z")
        b = z // kv_heads
        hkv = z - b * kv_heads
        k0 = threadgroup_position_in_grid("y") * keys
        sg = simdgroup_index_in_threadgroup()
        tid = thread_index_in_threadgroup()
        q_start, sq = sequence(CU_Q, b, total_q)
        k_start, skv = sequence(CU_K, b, total_k)
        k_base = k_start * (kv_heads * d) + hkv * k_sh
        for t_, src in ((k_s, K), (v_s, V)):
            k_layout.copy(t_, src, keys, src_ld=k_ss,
                          src_offset=k_base + k0 * k_ss,
                          valid_rows=where(0, skv - k0, k0 < skv))
        copy_commit()

        # Query blocks: from the first whose last row sees the block's
        # first key (causal), for every head of the group, flattened.
        off = i32(skv) - i32(sq)
        first = u32(0)
        if causal:
            first = u32(imax(i32(k0) - off, 0)) // bq
        blocks = (sq + (bq - 1)) // bq
        count = where(0, blocks - first, (blocks > first) & (k0 < skv))
        steps = group * count

        def load(t):
            """Q and dO of step t (head t // count, block first + t %
            count) into stage t % stages; nothing past the last step."""
            g = t // imax(count, 1)
            q0 = (first + t - g * count) * bq
            h = hkv * group + g
            base = q_start * (n_heads * d) + h * q_sh + q0 * q_ss
            rows = where(0, sq - q0, (t < steps) & (q0 < sq))
            at = (t % stages) * (bq * d)
            q_layout.copy(q_s, Q, bq, src_ld=q_ss, src_offset=base,
                          valid_rows=rows, base=at)
            q_layout.copy(do_s, DO, bq, src_ld=q_ss, src_offset=base,
                          valid_rows=rows, base=at)
            copy_commit()

        load(u32(0))
        dk = mma_zeros(16, d)
        dv = mma_zeros(16, d)
        a_row = (sg // 4) * 64 if group_products else sg * 16
        k_op = k_layout.operand(k_s, transpose=False, row0=a_row)
        v_op = k_layout.operand(v_s, transpose=False, row0=a_row)
        for t in _range(steps, dtype="uint"):
            copy_wait(0)
            barrier()                 # step t is in; step t - 1 is done
            if stages == 2:
                load(t + 1)
            g = t // count
            q0 = (first + t - g * count) * bq
            h = hkv * group + g
            lse_base = q_start * l_bm + h * l_sh
            at = (t % stages) * (bq * d)
            s = mma(mma_zeros(16, bq), k_op,
                    q_layout.operand(q_s, transpose=True, base=at), k=d,
                    warpgroup=group_products)
            lse = _column_vector(LSE, lse_base, q0, sq, 16, bq) * LOG2E
            lse = where(lse, POS_INF, lse == NEG_INF)   # rows without keys
            # (made here, not before the loop: a fragment kept across the
            # loop would hold 32 registers for the whole of it)
            query = mma_iota(1, 16, bq) + i32(q0)
            masked = query >= i32(sq)
            if causal:
                key = mma_iota(0, 16, bq) + i32(k0 + sg * 16)
                masked = masked | (key > query + off)
            # P in 16 bits from here on, for dS too: the float copy would
            # hold 32 more registers across two products (the dK/dV
            # accumulators take 128).
            p = where(exp2(s * scale2 - lse), 0.0, masked).cast(el)
            dv = mma(dv, p, q_layout.operand(do_s, transpose=False, base=at),
                     warpgroup=group_products)
            dp = mma(mma_zeros(16, bq), v_op,
                     q_layout.operand(do_s, transpose=True, base=at), k=d,
                     warpgroup=group_products)
            ds = p.cast(f32) * (dp - _column_vector(DELTA, lse_base, q0, sq,
                                                    16, bq))
            dk = mma(dk, ds.cast(el),
                     q_layout.operand(q_s, transpose=False, base=at),
                     warpgroup=group_products)
            if atomic:
                # dQ's block += dS K: dS^T through threadgroup memory (the
                # sum runs over the keys of every simdgroup), each
                # simdgroup 16 of the block's rows, added with atomics.
                mma_store(ds, ds_s, ld=bq, offset=sg * 16 * bq)
                barrier()
                # (64 columns at a time: a 16 x d float fragment next to
                # dK and dV would spill)
                for r in range_constexpr(bq // (16 * w)):
                    rows0 = (r * w + sg) * 16
                    ds_op = mma_operand(ds_s, ld=bq, offset=rows0,
                                        transpose=True)
                    for cb in range_constexpr(d // 64):
                        part = mma(mma_zeros(16, 64), ds_op,
                                   mma_operand(k_s, ld=64,
                                               offset=cb * keys * 64,
                                               swizzle=k_layout.swizzle),
                                   k=keys)
                        mma_store(part, dq_s, ld=d,
                                  offset=rows0 * d + cb * 64)
                barrier()
                q_base = q_start * (n_heads * d) + h * q_sh
                for e in range_constexpr(per_thread):
                    idx = tid + e * threads
                    r = idx // d
                    with if_(q0 + r < sq):
                        atomic_fetch_add(DQ, q_base + (q0 + r) * q_ss +
                                         (idx - r * d), dq_s[idx])
            if stages == 1:
                barrier()             # every simdgroup is done with Q, dO
                load(t + 1)
        copy_wait(0)
        row = k0 + sg * 16
        rows_left = where(0, skv - row, row < skv)
        out = k_base + row * k_ss
        mma_store(dk * scale, DK, ld=k_ss, offset=out, bounds=(rows_left, d))
        mma_store(dv, DV, ld=k_ss, offset=out, bounds=(rows_left, d))

    return attention_backward_dkdv


@functools.lru_cache(maxsize=None)
def dq_kernel(dtype: str, d: int, causal: bool, config: BackwardConfig):
    """The deterministic dQ: 16 query rows per simdgroup of one (sequence,
    query head), over the key blocks they see (K and V double-buffered)."""
    el = element_type(dtype)
    w, bk = config.dq_simdgroups, config.bk
    rows = 16 * w
    threads = 32 * w
    group_products = w % 4 == 0
    q_layout = TileLayout(el, rows, d)
    k_layout = TileLayout(el, bk, d)

    @kernel
    def attention_backward_dq(Q: el, K: el, V: el, DO: el, LSE: f32,
                              DELTA: f32, CU_Q: I32, CU_K: I32,
                              n_heads: Scalar(U32), group: Scalar(U32),
                              q_sh: Scalar(U32), q_ss: Scalar(U32),
                              k_sh: Scalar(U32), k_ss: Scalar(U32),
                              l_bm: Scalar(U32), l_sh: Scalar(U32),
                              total_q: Scalar(U32), total_k: Scalar(U32),
                              scale: Scalar(f32), scale2: Scalar(f32),
                              DQ: el):
        require_threads(threads)
        q_s = threadgroup_alloc(el, rows * d)
        do_s = threadgroup_alloc(el, rows * d)
        k_s = threadgroup_alloc(el, 2 * bk * d)
        v_s = threadgroup_alloc(el, 2 * bk * d)
        z = threadgroup_position_in_grid("z")
        b = z // n_heads
        h = z - b * n_heads
        kv_heads = n_heads // group
        q0 = threadgroup_position_in_grid("y") * rows
        sg = simdgroup_index_in_threadgroup()
        row0 = q0 + sg * 16
        q_start, sq = sequence(CU_Q, b, total_q)
        k_start, skv = sequence(CU_K, b, total_k)
        q_base = q_start * (n_heads * d) + h * q_sh
        k_base = k_start * (kv_heads * d) + (h // group) * k_sh
        valid = where(0, sq - q0, q0 < sq)
        q_layout.copy(q_s, Q, rows, src_ld=q_ss,
                      src_offset=q_base + q0 * q_ss, valid_rows=valid)
        q_layout.copy(do_s, DO, rows, src_ld=q_ss,
                      src_offset=q_base + q0 * q_ss, valid_rows=valid)
        blocks, _ = block_counts(causal=causal, bc=bk, q0=q0, rows=rows,
                                 sq=sq, skv=skv)

        def load(j):
            kj = j * bk
            at = (j % 2) * (bk * d)
            for t_, src in ((k_s, K), (v_s, V)):
                k_layout.copy(t_, src, bk, src_ld=k_ss,
                              src_offset=k_base + kj * k_ss,
                              valid_rows=where(0, skv - kj,
                                               (kj < skv) & (j < blocks)),
                              base=at)
            copy_commit()

        load(u32(0))
        a_row = (sg // 4) * 64 if group_products else sg * 16
        q_op = q_layout.operand(q_s, transpose=False, row0=a_row)
        do_op = q_layout.operand(do_s, transpose=False, row0=a_row)
        lse_base = q_start * l_bm + h * l_sh + row0
        rows_left = where(0, sq - row0, row0 < sq)
        # The rows' LSE and Delta as row vectors (two registers a lane,
        # where whole fragments would hold 32 each across the loop).
        lse = _row_vector(LSE, lse_base, rows_left) * LOG2E
        lse = where(lse, POS_INF, lse == NEG_INF)
        delta = _row_vector(DELTA, lse_base, rows_left)
        off = i32(skv) - i32(sq)
        dq = mma_zeros(16, d)
        for j in _range(blocks, dtype="uint"):
            copy_wait(0)
            barrier()                 # block j is in; block j - 1 is done
            load(j + 1)
            at = (j % 2) * (bk * d)
            s = mma(mma_zeros(16, bk), q_op,
                    k_layout.operand(k_s, transpose=True, base=at), k=d,
                    warpgroup=group_products)
            col = mma_iota(1, 16, bk) + i32(j * bk)
            masked = col >= i32(skv)
            if causal:
                row = mma_iota(0, 16, bk) + i32(row0)
                masked = masked | (col > row + off)
            p = where(exp2(s * scale2 - lse), 0.0, masked)
            dp = mma(mma_zeros(16, bk), do_op,
                     k_layout.operand(v_s, transpose=True, base=at), k=d,
                     warpgroup=group_products)
            ds = p * (dp - delta)
            dq = mma(dq, ds.cast(el),
                     k_layout.operand(k_s, transpose=False, base=at),
                     warpgroup=group_products)
        copy_wait(0)
        mma_store(dq * scale, DQ, ld=q_ss, offset=q_base + row0 * q_ss,
                  bounds=(rows_left, d))

    return attention_backward_dq


@functools.lru_cache(maxsize=None)
def dq_convert_kernel(dtype: str):
    """``DQ[i] = ACC[i] * scale`` in ``dtype``, one element per thread."""
    el = element_type(dtype)

    @kernel
    def attention_backward_dq_convert(ACC: f32, n: Scalar(U32),
                                      scale: Scalar(f32), DQ: el):
        i = threadgroup_position_in_grid("x") * 256 + \
            thread_index_in_threadgroup()
        with if_(i < n):
            DQ[i] = ACC[i] * scale

    return attention_backward_dq_convert
