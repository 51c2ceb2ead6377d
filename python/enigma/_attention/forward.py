"""The forward (prefill) kernel: a threadgroup owns ``rows`` query rows of
one (sequence, query head), 16 per simdgroup, and walks the keys of its
key/value head in blocks of ``bc`` with an online softmax.

The main loop (copy K and V blocks, ``S = Q K^T``, mask, online softmax,
``O += P V``) is written once, in :func:`forward_kernel`, for every
layout: only the copies differ (:class:`~.tiles.ContiguousKeys`,
:class:`~.tiles.PagedKeys`). It is in the kernel's own body because
``enigma.range`` and the values an ``if_`` assigns are rewritten there.
docs/design/attention.md explains the choices.
"""

import functools
from dataclasses import dataclass

from .._control import if_, range as _range
from .._dtypes import as_dtype, f32, i32 as I32, u32 as U32, Scalar
from .._ir import current_tracer
from .._kernel import kernel
from .._math import exp2, fmax, imax, imin, log2, where
from .._mma import (copy_commit, copy_wait, mma, mma_fill, mma_iota,
                    mma_load, mma_store, mma_zeros)
from .._threads import (barrier, simdgroup_index_in_threadgroup,
                        threadgroup_position_in_grid, threadgroups_per_grid)
from .._cooperation import threadgroup_alloc
from .tiles import (LN2, NEG_INF, ContiguousKeys, PagedKeys, TileLayout, i32,
                    plain_fields, sequence, u32)


@dataclass(frozen=True)
class ForwardConfig:
    """Tile shape of the forward kernel: ``bc`` keys per block, ``rows``
    query rows per threadgroup (``rows // 16`` simdgroups, two threads per
    row), Q in threadgroup memory (``q_shared``) or registers.

    ``pipelined=True`` selects the pipelined kernel
    (:mod:`.forward_ws`: a ring of ``stages`` key/value blocks filled by
    a producer, one consumer warpgroup per 64 rows; Q always in
    threadgroup memory); otherwise the classic kernel, whose K and V are
    single-buffered and ``stages`` is unused. ``turns=True`` (pipelined,
    two or more consumer warpgroups): they take turns at their products
    (ping-pong, :func:`enigma.consumer_turn`); off by default: on an
    H200 they gained 2-5 % at D 64 and -2 % to +3.5 % at D 128
    (docs/benchmarks.md). ``overlap=True`` (pipelined, not with
    ``turns``): each warpgroup runs the next block's ``S = Q K^T`` and
    this block's ``O += P V`` together, asynchronously, and the softmax
    while ``P V`` is in flight (FlashAttention 3's intra-warpgroup
    overlap); the stages then hold K block ``j`` beside V block ``j -
    1``."""
    bc: int = 64
    rows: int = 64
    q_shared: bool = True
    pipelined: bool = False
    stages: int = 2
    turns: bool = False
    overlap: bool = False

    def __post_init__(self):
        plain_fields(self)

    @property
    def threads(self) -> int:
        return 2 * self.rows

    def smem_bytes(self, d: int, itemsize: int = 2) -> int:
        """Threadgroup memory: one K and one V block, and Q's rows; the
        pipelined kernel: ``stages`` K and V blocks, Q's rows and the K
        and V blocks of a sequence's partial last block."""
        if self.pipelined:
            return ((self.stages + 1) * 2 * self.bc * d + self.rows * d) \
                * itemsize
        return (2 * self.bc * d + (self.rows * d if self.q_shared else 0)) \
            * itemsize


def require_threads(n: int):
    """The kernel runs only in full threadgroups of ``n`` threads (the
    copies unroll for that count; CUDA gets ``__launch_bounds__``)."""
    current_tracer("attention").call("require_threadgroup_size", n)


def block_counts(*, causal, bc, q0, rows, sq, skv):
    """(blocks to visit, blocks that need no mask) for query rows ``q0 ..
    q0 + rows`` of a sequence of ``sq`` queries and ``skv`` keys. Causal
    masks are aligned bottom-right: query ``i`` sees keys ``j <= i + skv -
    sq``. A tile past the queries visits none."""
    blocks = (skv + (bc - 1)) // bc
    full = skv // bc
    if causal:
        off = i32(skv) - i32(sq)
        seen = imax(i32(imin(q0 + rows, sq)) + off, 0)      # by its last row
        blocks = imin(blocks, u32((seen + (bc - 1)) // bc))
        full = imin(full, u32(imax(i32(q0) + off + 1, 0) // bc))
    return where(0, blocks, q0 < sq), full


def finish(o, m, l):
    """(O, LSE) of a row from the loop's state: ``O / l`` and the natural
    log-sum-exp of the scaled scores; a row that saw no key gets 0 and
    -inf."""
    empty = l == 0.0
    l_safe = where(l, 1.0, empty)
    lse = where((m + log2(l_safe)) * LN2, NEG_INF, empty)
    return o / l_safe, lse


def store_rows(o, lse, *, O, LSE, d, out_base, out_stride, lse_base,
               rows_left):
    """Stores the simdgroup's 16 rows of O (from ``out_base``, rows
    ``out_stride`` apart) and of LSE (consecutive from ``lse_base``),
    rows from ``rows_left`` on left alone."""
    mma_store(o, O, ld=out_stride, offset=out_base, bounds=(rows_left, d))
    mma_store(lse.broadcast(16), LSE, ld=1, offset=lse_base,
              bounds=(rows_left, 1))


def query_tile(cu_q, n_heads, total_q, rows: int, causal: bool):
    """(sequence b, query head h, first row q0, the sequence's first row
    and length) of this threadgroup: z is b * n_heads + h, y the block of
    ``rows`` query rows, taken from the last one when ``causal`` (the
    longest rows first: fewer idle cores at the end)."""
    z = threadgroup_position_in_grid("z")
    b = z // n_heads
    h = z - b * n_heads
    y = threadgroup_position_in_grid("y")
    if causal:
        y = threadgroups_per_grid("y") - 1 - y
    q_start, sq = sequence(cu_q, b, total_q)
    return b, h, y * rows, q_start, sq


def element_type(dtype):
    """The enigma dtype of a kernel's 16-bit tensors ("bf16" or "f16")."""
    return as_dtype(dtype)


@functools.lru_cache(maxsize=None)
def forward_kernel(dtype: str, d: int, causal: bool, page_size: int,
                   config: ForwardConfig):
    """The forward kernel (an ``@enigma.kernel``) for ``dtype`` ("bf16"
    or "f16"), head dimension ``d``: keys from a contiguous tensor
    (``page_size == 0``: ``CU_K`` holds the cumulative key offsets,
    ``TABLE`` and ``LENGTHS`` are not read) or from a paged cache of that
    page size (``TABLE``, the block table, and ``LENGTHS``; ``CU_K`` is
    not read)."""
    el = element_type(dtype)
    bc, rows = config.bc, config.rows
    layout = TileLayout(el, bc, d)

    @kernel
    def attention_forward(Q: el, K: el, V: el, CU_Q: I32, CU_K: I32,
                          TABLE: I32, LENGTHS: I32, n_heads: Scalar(U32),
                          group: Scalar(U32), q_sh: Scalar(U32),
                          q_ss: Scalar(U32), k_sh: Scalar(U32),
                          k_ss: Scalar(U32), l_bm: Scalar(U32),
                          l_sh: Scalar(U32), total_q: Scalar(U32),
                          total_k: Scalar(U32), pages: Scalar(U32),
                          table_stride: Scalar(U32), scale2: Scalar(f32),
                          O: el, LSE: f32):
        require_threads(config.threads)
        k_s = threadgroup_alloc(el, bc * d)
        v_s = threadgroup_alloc(el, bc * d)
        b, h, q0, q_start, sq = query_tile(CU_Q, n_heads, total_q, rows,
                                           causal)
        keys = key_source(K, V, CU_K, TABLE, LENGTHS, b, h // group,
                          page_size=page_size, d=d,
                          kv_heads=n_heads // group, k_sh=k_sh, k_ss=k_ss,
                          total_k=total_k, pages=pages,
                          table_stride=table_stride)
        skv = keys.length
        sg = simdgroup_index_in_threadgroup()
        row0 = q0 + sg * 16
        q_base = q_start * (n_heads * d) + h * q_sh
        rows_left = where(0, sq - row0, row0 < sq)
        if config.q_shared:   # both wgmma operands in threadgroup memory
            q_layout = TileLayout(el, rows, d)
            q_s = threadgroup_alloc(el, rows * d)
            q_layout.copy(q_s, Q, rows, src_ld=q_ss,
                          src_offset=q_base + q0 * q_ss,
                          valid_rows=where(0, sq - q0, q0 < sq))
            q = q_layout.operand(q_s, transpose=False, row0=(sg // 4) * 64)
        else:
            q = mma_load(Q, 16, d, ld=q_ss, offset=q_base + row0 * q_ss,
                         bounds=(rows_left, d))

        # The main loop: online softmax over the key blocks. K and V are
        # single-buffered and overlap: V's copy runs under S = Q K^T, the
        # next K's under O += P V.
        o = mma_zeros(16, d)
        m = mma_fill(NEG_INF, 16)          # running row maximum (log2)
        l = mma_zeros(16)                  # running row sum
        blocks, full = block_counts(causal=causal, bc=bc, q0=q0, rows=rows,
                                    sq=sq, skv=skv)
        off = i32(skv) - i32(sq)
        keys.copy(layout, k_s, "k", u32(0), bc)
        copy_commit()
        for j in _range(blocks, dtype="uint"):
            k0 = j * bc
            keys.copy(layout, v_s, "v", k0, bc)
            copy_commit()
            copy_wait(1)                   # this block's K has landed
            barrier()
            s = mma(mma_zeros(16, bc), q, layout.operand(k_s, transpose=True),
                    k=d, warpgroup=True)
            with if_(j >= full):           # the same in every thread
                cols = mma_iota(1, 16, bc) + i32(k0)
                masked = cols >= i32(skv)
                if causal:
                    masked = masked | (cols > mma_iota(0, 16, bc) +
                                       (i32(row0) + off))
                s = where(s, NEG_INF, masked)
            # Raw scores; m in units of s * scale2 (scale * log2(e), for
            # exp2): the positive scale goes to the row maximum and into
            # each exponent (one fma where the target contracts).
            m_new = fmax(m, s.row_max() * scale2)
            # A row with no key yet keeps m = -inf; its exponents use 0, so
            # that P and the rescale are 0 rather than NaN.
            m_use = where(m_new, 0.0, m_new == NEG_INF)
            p = exp2(s * scale2 - m_use)
            alpha = exp2(m - m_use)
            l = l * alpha + p.row_sum()
            o = o * alpha
            barrier()                      # every simdgroup is done with K
            keys.copy(layout, k_s, "k", k0 + bc, bc)
            copy_commit()
            copy_wait(1)                   # this block's V has landed
            barrier()
            o = mma(o, p.cast(el), layout.operand(v_s, transpose=False),
                    warpgroup=True)
            m = m_new
            barrier()                      # every simdgroup is done with V
        copy_wait(0)

        o, lse = finish(o, m, l)
        store_rows(o, lse, O=O, LSE=LSE, d=d, out_base=q_base + row0 * q_ss,
                   out_stride=q_ss,
                   lse_base=q_start * l_bm + h * l_sh + row0,
                   rows_left=rows_left)

    return attention_forward


def key_source(K, V, CU_K, TABLE, LENGTHS, b, hkv, *, page_size, d,
               kv_heads, k_sh, k_ss, total_k, pages, table_stride):
    """The keys and values of sequence ``b``, key/value head ``hkv``:
    contiguous (``page_size == 0``) or paged."""
    if not page_size:
        return ContiguousKeys(K, V, CU_K, b, hkv, total=total_k,
                              batch_rows=kv_heads * d, head_stride=k_sh,
                              row_stride=k_ss)
    return PagedKeys(K, V, TABLE, LENGTHS, b, hkv, page_size=page_size,
                     table_stride=table_stride, pages=pages,
                     kv_heads=kv_heads, d=d,
                     capacity=table_stride * page_size)
