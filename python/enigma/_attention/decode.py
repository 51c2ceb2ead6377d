"""Split-key decoding (flash-decoding): few query rows against many keys.

A threadgroup owns the query rows of one (sequence, key/value head) --
every query head of the group times every query position, packed into 16
rows (more rows take more threadgroups) -- and one slice of the keys (a
*split*). Its simdgroups divide each block of keys among themselves, each
with its own online softmax; at the end they are merged in threadgroup
memory. With one split the kernel writes O and LSE; with more, each
split writes its normalised partial O (float) and its LSE, and
:func:`merge_kernel` combines them. So a single sequence still spreads
over ``splits x kv_heads`` threadgroups.
"""

import functools
from dataclasses import dataclass

from .._control import if_, range as _range, range_constexpr
from .._cooperation import threadgroup_alloc
from .._dtypes import Scalar, f32, i32 as I32, u32 as U32
from .._kernel import kernel
from .._math import exp2, fmax, imin, log2, where
from .._mma import (copy_commit, copy_wait, mma, mma_fill, mma_iota,
                    mma_load, mma_store, mma_zeros)
from .._threads import (barrier, simdgroup_index_in_threadgroup,
                        thread_index_in_threadgroup,
                        threadgroup_position_in_grid)
from .forward import element_type, key_source, require_threads
from .tiles import LN2, NEG_INF, TileLayout, i32, plain_fields, sequence, u32


@dataclass(frozen=True)
class DecodeConfig:
    """Tile shape of the decode kernel: ``simdgroups`` per threadgroup,
    ``bc`` keys per simdgroup per step, ``stages`` blocks of keys in
    flight."""
    simdgroups: int = 4
    bc: int = 16
    stages: int = 3

    def __post_init__(self):
        plain_fields(self)

    @property
    def threads(self) -> int:
        return 32 * self.simdgroups

    @property
    def keys_per_step(self) -> int:
        return self.simdgroups * self.bc

    def smem_bytes(self, d: int, itemsize: int = 2) -> int:
        """K and V stages, Q's 16 rows, the merge's float rows and
        row statistics."""
        return (2 * self.stages * self.keys_per_step * d + 16 * d) \
            * itemsize + 16 * d * 4 + (2 * self.simdgroups + 2) * 16 * 4 \
            + 16 * 4


def packed_row(p, t, sq, group):
    """(head in the group, query position) of packed row ``p`` of tile
    ``t``: row ``t * 16 + p`` is head ``(t*16+p) // sq``, position ``% sq``."""
    r = t * 16 + p
    return r // sq, r - (r // sq) * sq


@functools.lru_cache(maxsize=None)
def decode_kernel(dtype: str, d: int, causal: bool, page_size: int,
                  config: DecodeConfig, final: bool):
    """The split-key kernel (an ``@enigma.kernel``). ``final``: one split,
    writes O (``dtype``) and the natural LSE in the layout of Q; otherwise
    split ``y`` writes its rows to ``O[(y * rows_total + row) * d ..]``
    (float) and ``LSE[y * rows_total + row]`` (log2 units), ``row`` being
    the row's LSE index."""
    el = element_type(dtype)
    out_t = el if final else f32
    w, bc, stages = config.simdgroups, config.bc, config.stages
    step = config.keys_per_step
    threads = config.threads
    layout = TileLayout(el, step, d)
    per_thread = 16 * d // threads

    @kernel
    def attention_decode(Q: el, K: el, V: el, CU_Q: I32, CU_K: I32,
                         TABLE: I32, LENGTHS: I32, n_heads: Scalar(U32),
                         group: Scalar(U32), q_sh: Scalar(U32),
                         q_ss: Scalar(U32), k_sh: Scalar(U32),
                         k_ss: Scalar(U32), l_bm: Scalar(U32),
                         l_sh: Scalar(U32), total_q: Scalar(U32),
                         total_k: Scalar(U32), pages: Scalar(U32),
                         table_stride: Scalar(U32), tiles: Scalar(U32),
                         chunk: Scalar(U32), rows_total: Scalar(U32),
                         scale2: Scalar(f32),
                         O: out_t, LSE: f32):
        require_threads(threads)
        # Stages of K and V blocks, in one allocation each: stage offsets
        # come from the loop index (a Pipeline's position would be carried
        # through the thread-dependent branches below).
        k_tiles = threadgroup_alloc(el, stages * layout.elements)
        v_tiles = threadgroup_alloc(el, stages * layout.elements)
        q_s = threadgroup_alloc(el, 16 * d)
        o_s = threadgroup_alloc(f32, 16 * d)
        stats = threadgroup_alloc(f32, (2 * w + 2) * 16)
        where_row = threadgroup_alloc(U32, 16 * 2)   # O offset, LSE index
        kv_heads = n_heads // group
        z = threadgroup_position_in_grid("z")   # (b * tiles + t) * kv + hkv
        per_seq = z // kv_heads
        hkv = z - per_seq * kv_heads
        b = per_seq // tiles
        t = per_seq - b * tiles
        split = threadgroup_position_in_grid("y")
        tid = thread_index_in_threadgroup()
        sg = simdgroup_index_in_threadgroup()
        q_start, sq = sequence(CU_Q, b, total_q)
        keys = key_source(K, V, CU_K, TABLE, LENGTHS, b, hkv,
                          page_size=page_size, d=d, kv_heads=kv_heads,
                          k_sh=k_sh, k_ss=k_ss, total_k=total_k, pages=pages,
                          table_stride=table_stride)
        skv = keys.length
        packed = group * sq                    # rows of this sequence
        sq_safe = where(sq, 1, sq == 0)        # a divisor when sq is 0

        # Where each packed row lives: its offset in Q / O and its LSE
        # index (one thread per row), then Q's rows into threadgroup memory.
        with if_(tid < 16):
            g, i = packed_row(tid, t, sq_safe, group)
            h = hkv * group + g
            where_row[tid] = q_start * (n_heads * d) + h * q_sh + i * q_ss
            where_row[16 + tid] = q_start * l_bm + h * l_sh + i
        barrier()
        for e in range_constexpr(per_thread):
            idx = tid + e * threads
            r = idx // d
            c = idx - r * d
            inside = t * 16 + r < packed
            q_s[idx] = where(0.0, Q[where(0, where_row[r] + c, inside)],
                             inside)
        barrier()
        q = mma_load(q_s, 16, d, ld=d)

        k_begin = imin(split * chunk, skv)
        k_end = imin(k_begin + chunk, skv)
        steps = (k_end - k_begin + (step - 1)) // step
        rows = mma_iota(0, 16, bc) + i32(t * 16)
        last_key = i32(skv) - i32(sq) + rows % i32(sq_safe)   # causal limit

        def load(s):
            """Step ``s``'s keys and values into stage ``s % stages``."""
            k0 = k_begin + s * step
            base = (s % stages) * layout.elements
            keys.copy(layout, k_tiles, "k", k0, step, limit=k_end, base=base)
            keys.copy(layout, v_tiles, "v", k0, step, limit=k_end, base=base)
            copy_commit()

        for s0 in range_constexpr(stages - 1):
            load(u32(s0))
        o = mma_zeros(16, d)
        m = mma_fill(NEG_INF, 16)
        l = mma_zeros(16)
        for j in _range(steps, dtype="uint"):
            copy_wait(stages - 2)
            barrier()                # this step's block is in; the slot
            load(j + (stages - 1))   # of j - 1 is free
            base = (j % stages) * layout.elements
            s = mma(mma_zeros(16, bc), q,
                    layout.operand(k_tiles, transpose=True, row0=sg * bc,
                                   base=base), k=d)
            s = s * scale2
            cols = mma_iota(1, 16, bc) + i32(k_begin + j * step + sg * bc)
            masked = cols >= i32(k_end)
            if causal:
                masked = masked | (cols > last_key)
            s = where(s, NEG_INF, masked)
            m_new = fmax(m, s.row_max())
            m_use = where(m_new, 0.0, m_new == NEG_INF)
            p = exp2(s - m_use)
            alpha = exp2(m - m_use)
            l = l * alpha + p.row_sum()
            o = mma(o * alpha, p.cast(el),
                    layout.operand(v_tiles, transpose=False, row0=sg * bc,
                                   base=base))
            m = m_new
        copy_wait(0)

        # Merge the simdgroups: the largest maximum, each one's weight,
        # then the rows added one simdgroup after the other.
        mma_store(m.broadcast(16), stats, ld=1, offset=sg * 16,
                  bounds=(16, 1))
        barrier()
        big = mma_fill(NEG_INF, 16)
        for k in range_constexpr(w):
            big = fmax(big, mma_load(stats, 16, 16, ld=0, offset=k * 16,
                                     transpose=True).row_max())
        big_use = where(big, 0.0, big == NEG_INF)
        weight = exp2(m - big_use)
        mma_store((l * weight).broadcast(16), stats, ld=1,
                  offset=(w + sg) * 16, bounds=(16, 1))
        o = o * weight
        for k in range_constexpr(w):
            with if_(sg == k):
                if k == 0:
                    mma_store(o, o_s, ld=d)
                else:
                    mma_store(o + mma_load(o_s, 16, d, ld=d), o_s, ld=d)
            barrier()
        with if_(tid < 16):
            l_sum = stats[w * 16 + tid]
            for k in range_constexpr(1, w):
                l_sum = l_sum + stats[(w + k) * 16 + tid]
            stats[2 * w * 16 + tid] = l_sum
            no_key = l_sum == 0.0
            big_row = stats[tid]
            for k in range_constexpr(1, w):
                big_row = fmax(big_row, stats[k * 16 + tid])
            lse2 = where(where(big_row, 0.0, big_row == NEG_INF) +
                         log2(where(l_sum, 1.0, no_key)), NEG_INF, no_key)
            with if_(t * 16 + tid < packed):
                if final:
                    LSE[where_row[16 + tid]] = lse2 * LN2
                else:
                    LSE[split * rows_total + where_row[16 + tid]] = lse2
        barrier()
        for e in range_constexpr(per_thread):
            idx = tid + e * threads
            r = idx // d
            c = idx - r * d
            row_sum = stats[2 * w * 16 + r]
            value = o_s[idx] / where(row_sum, 1.0, row_sum == 0.0)
            with if_(t * 16 + r < packed):
                if final:
                    O[where_row[r] + c] = value
                else:
                    O[(split * rows_total + where_row[16 + r]) * d + c] = \
                        value

    return attention_decode


MERGE_THREADS = 64


@functools.lru_cache(maxsize=None)
def merge_kernel(dtype: str, d: int):
    """Combines the splits of :func:`decode_kernel`: threadgroup ``x``
    (of 64 threads) merges row ``x`` (its LSE index) of every split into O
    (``dtype``, at ``(x // l_sh) * q_sh + (x % l_sh) * q_ss``, the row's
    place in the layout of Q) and LSE (natural log)."""
    el = element_type(dtype)
    per_thread = d // MERGE_THREADS

    @kernel
    def attention_merge(OP: f32, LP: f32, splits: Scalar(U32),
                        rows_total: Scalar(U32), q_sh: Scalar(U32),
                        q_ss: Scalar(U32), l_sh: Scalar(U32), O: el,
                        LSE: f32):
        require_threads(MERGE_THREADS)
        row = threadgroup_position_in_grid("x")
        tid = thread_index_in_threadgroup()
        big = LP[row]
        for s in _range(1, splits, dtype="uint"):
            big = fmax(big, LP[s * rows_total + row])
        big_use = where(big, 0.0, big == NEG_INF)
        total = 0.0
        acc = [0.0 for _ in range(per_thread)]
        for s in _range(splits, dtype="uint"):
            weight = exp2(LP[s * rows_total + row] - big_use)
            total = total + weight
            at = (s * rows_total + row) * d + tid
            for k in range_constexpr(per_thread):
                acc[k] = acc[k] + weight * OP[at + k * MERGE_THREADS]
        no_key = total == 0.0
        inv = 1.0 / where(total, 1.0, no_key)
        base = (row // l_sh) * q_sh + (row - (row // l_sh) * l_sh) * q_ss \
            + tid
        for k in range_constexpr(per_thread):
            O[base + k * MERGE_THREADS] = acc[k] * inv
        with if_(tid == 0):
            LSE[row] = where((big_use + log2(where(total, 1.0, no_key))) *
                             LN2, NEG_INF, no_key)

    return attention_merge
