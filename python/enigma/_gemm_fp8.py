"""The scaled 8-bit float GEMM inside a kernel: one threadgroup's block of
``C = (A * scale_a) @ (B * scale_b)^T`` with A (M x K) and B (N x K) of
e4m3 or e5m2, products summed in f32 (docs/reference/fp8.md,
docs/design/fp8.md). :func:`gemm_fp8_block` is the threadgroup's part;
``enigma.gemm_fp8`` (``_gemm_fp8_launch``) compiles and launches it on
arrays.

Both operands are K-major ("TN": A row-major M x K, B row-major N x K),
the layout Hopper's wgmma reads 8-bit types in, and what
``torch._scaled_mm(a, b.t())`` and DeepSeek-V3's kernels take.
"""

from __future__ import annotations

import copy
import functools

from ._control import for_range, if_, range_constexpr
from ._cooperation import atomic_fetch_max, threadgroup_alloc
from ._dtypes import as_dtype
from ._fp8 import saturating_cast
from ._ir import BufferProxy, current_tracer, fail, static_int, to_value
from ._math import as_type, imax, where
from ._gemm import MmaConfig, grouped_block_origin, require_matrices
from ._gemm_fp8_pipelined import gemm_fp8_pipelined
from ._mma import (copy_commit, copy_tile, copy_wait, mma, mma_load,
                   mma_operand, mma_store, mma_swizzle, mma_wait, mma_zeros)
from ._simd import simd_max
from ._threads import (barrier, simdgroup_index_in_threadgroup,
                       thread_index_in_simdgroup,
                       thread_index_in_threadgroup)
from ._tile_pipeline import pipeline

__all__ = ["gemm_fp8_block", "gemm_fp8_configs", "fp8_warpgroup_shape",
           "FP8_SCALINGS", "FP8_BLOCK"]

#: How the scales apply: one per tensor, one per row of A and per row of B
#: (per output row and column), or per block of 128 (A: 1 x 128 along K;
#: B: 128 x 128).
FP8_SCALINGS = ("tensor", "row", "block")
#: The side of a scale block.
FP8_BLOCK = 128

_OUT_DTYPES = ("f32", "f16", "bf16", "f8e4m3", "f8e5m2")
_TG_LIMITS = {"cuda": 227 * 1024, "cpu": 227 * 1024, "metal": 32 * 1024}


def _call(function: str, *args):
    return current_tracer(function).call(function, *args)


def fp8_warpgroup_shape(config) -> bool:
    """Whether :func:`gemm_fp8_block` runs ``config`` as warpgroup products
    (one wgmma m64nNk32 per 32 of K on Hopper, the same result elsewhere):
    ``bk == 128`` (rows of 128 bytes), one column of simdgroups
    (``wn == 1``) of 16 rows each in groups of four, ``bn`` of 64, 128 or
    256."""
    c = config
    return (c.bk == 128 and c.wn == 1 and c.wm % 4 == 0 and
            c.bm == 16 * c.wm and c.bn in (64, 128, 256))


def _amax_bytes(config) -> int:
    c = config
    return c.wm * c.wn * (c.bm // c.wm) * 16 * 4


def gemm_fp8_configs(target: str = "cuda", scaling: str = "tensor",
                     amax: bool = False, *, warp_specialized=None,
                     fast_accum: bool = False) -> list:
    """Tile configurations (``enigma.MmaConfig``) worth trying for
    :func:`gemm_fp8_block` on ``target`` ("cuda", "metal", "cpu"), the
    expected fastest first. ``scaling="block"`` needs ``bk == 128`` and
    ``bn`` dividing 128 (one B scale per tile and K step). Each fits the
    target's threadgroup memory with the amax reduction's when ``amax``.

    ``warp_specialized``: the configurations of the pipelined kernel
    (``MmaConfig(..., warp_specialized=True)``: a producer warpgroup with
    TMA copies and consumer warpgroups on Hopper) or of the classic one;
    default: pipelined on "cuda" (sm_90; ``gemm_fp8`` takes the classic
    list on older GPUs), classic elsewhere. ``fast_accum``: the products
    are not promoted (see :func:`gemm_fp8_block`), which leaves the
    registers for wider pipelined blocks (128 x 256)."""
    what = "gemm_fp8_configs"
    if target not in _TG_LIMITS:
        fail(f"{what}: target must be one of "
             f"{sorted(_TG_LIMITS)}, got {target!r}")
    if scaling not in FP8_SCALINGS:
        fail(f"{what}: scaling must be one of {FP8_SCALINGS}, "
             f"got {scaling!r}")
    for name, v in (("fast_accum", fast_accum),
                    ("warp_specialized", warp_specialized)):
        if not isinstance(v, bool) and not (v is None and
                                            name == "warp_specialized"):
            fail(f"{what}: {name} must be a bool, got {v!r}")
    if warp_specialized is None:
        warp_specialized = target == "cuda"
    # Copies: a caller may change the fields of what it is given.
    return [copy.copy(c) for c in cached_fp8_configs(
        target, scaling, bool(amax), warp_specialized, fast_accum)]


@functools.lru_cache(maxsize=None)
def cached_fp8_configs(target, scaling, amax, warp_specialized, fast_accum):
    """:func:`gemm_fp8_configs` of checked arguments, made once (the call
    form asks on every call; it must not change them)."""
    if warp_specialized:
        cands = _pipelined_configs(target, scaling, fast_accum)
    elif target == "cuda":
        cands = [MmaConfig(128, 256, 128, 8, 1, 4),
                 MmaConfig(128, 256, 128, 8, 1, 3),
                 MmaConfig(256, 128, 128, 16, 1, 4),
                 MmaConfig(128, 128, 128, 8, 1, 6),
                 MmaConfig(128, 128, 128, 8, 1, 4),
                 MmaConfig(64, 256, 128, 4, 1, 4),
                 MmaConfig(128, 64, 128, 8, 1, 6),
                 MmaConfig(64, 128, 128, 4, 1, 4),
                 MmaConfig(64, 64, 64, 2, 2, 3)]
    elif target == "metal":
        cands = [MmaConfig(32, 64, 128, 1, 2, 2),
                 MmaConfig(64, 64, 64, 2, 2, 2),
                 MmaConfig(32, 32, 128, 1, 1, 2)]
    else:
        cands = [MmaConfig(64, 64, 128, 2, 2, 2),
                 MmaConfig(32, 64, 128, 1, 2, 2),
                 MmaConfig(64, 64, 64, 2, 2, 2)]
    out = []
    promoted = not fast_accum or scaling == "block"
    for c in cands:
        if scaling == "block" and (c.bk != FP8_BLOCK or FP8_BLOCK % c.bn):
            continue
        # Promotion (and block scales) hold a second accumulator, the K
        # tile's product: in the classic kernel 16 x 256 fragments (two of
        # 128 registers a thread) spilled, and so did 512 threads (128
        # registers each) with 16 x 128 ones.
        if promoted and ((c.bm // c.wm) * (c.bn // c.wn) > 16 * 128 or
                         c.threads > 256):
            continue
        smem = c.smem_bytes("u8") + (_amax_bytes(c) if amax else 0)
        if smem <= _TG_LIMITS[target]:
            out.append(c)
    return tuple(out)


def _pipelined_configs(target, scaling, fast_accum):
    """The warp-specialised configurations of :func:`gemm_fp8_configs`."""
    def ws(*shape, **options):
        return MmaConfig(*shape, warp_specialized=True, **options)
    if target == "cpu":
        return [ws(64, 64, 128, 4, 1, 2), ws(64, 64, 128, 4, 1, 3,
                                             persistent=True),
                ws(64, 64, 64, 2, 2, 2)]
    if target == "metal":
        return [ws(64, 64, 128, 4, 1, 2), ws(64, 32, 128, 4, 1, 2)]
    if fast_accum and scaling != "block":
        # Two consumer warpgroups of 64 x 256 (128 accumulators a
        # thread), as gemm_block's 16-bit pipeline.
        # (In clusters the producer spilled a few registers; 256 x 128
        # leaves 512 consumers 96 registers.)
        return [ws(128, 256, 128, 8, 1, 4, persistent=True),
                ws(128, 256, 128, 8, 1, 4),
                ws(128, 128, 128, 8, 1, 6, persistent=True),
                ws(128, 128, 128, 8, 1, 6, persistent=True, cluster=2),
                ws(64, 256, 128, 4, 1, 5, persistent=True)]
    # Promotion and block scales hold a second accumulator of the block
    # (the K tile's product): 64 x 128 per consumer warpgroup, 128
    # registers a thread for both, where 64 x 256 would spill.
    return [ws(128, 128, 128, 8, 1, 6, persistent=True),
            ws(128, 128, 128, 8, 1, 6),
            ws(128, 128, 128, 8, 1, 6, persistent=True, cluster=2),
            ws(64, 128, 128, 4, 1, 8, persistent=True),
            ws(128, 64, 128, 8, 1, 8, persistent=True)]


def _check(config, scaling, what):
    if not isinstance(config, MmaConfig):
        fail(f"{what}: config must be an enigma.MmaConfig, got "
             f"{type(config).__name__}")
    c = config
    for name in ("warp_specialized", "persistent"):
        if not isinstance(getattr(c, name), bool):
            fail(f"{what}: config.{name} must be a bool")
    for name in ("bm", "bn", "bk", "wm", "wn", "stages", "group_m",
                 "cluster", "split_k"):
        static_int(getattr(c, name), f"{what}: config.{name}")
    if c.split_k != 1:
        fail(f"{what}: {c}: split_k is gemm_block's; the 8-bit GEMM "
             "computes each block over all of K")
    if c.consumer_groups != 1 or c.stream_k:
        fail(f"{what}: {c}: consumer_groups and stream_k are gemm_block's; "
             "the 8-bit GEMM runs one group of consumers over all of K")
    if (c.persistent or c.cluster != 1) and not c.warp_specialized:
        fail(f"{what}: {c}: persistent launches and clusters are part of "
             "the warp-specialised kernel (warp_specialized=True)")
    if c.cluster not in (1, 2, 4):
        fail(f"{what}: {c}: cluster must be 1, 2 or 4 threadgroups")
    if c.warp_specialized and c.threads % 128:
        fail(f"{what}: {c}: a warp-specialised configuration runs whole "
             f"warpgroups of consumers ({c.threads} threads is not a "
             "multiple of 128)")
    if c.bm % (16 * c.wm) or c.bn % (16 * c.wn):
        fail(f"{what}: {c}: each simdgroup's tile ({c.bm}/{c.wm} x "
             f"{c.bn}/{c.wn}) must have sides that are multiples of 16")
    if c.bk % 32:
        fail(f"{what}: {c}: bk must be a multiple of 32 for 8-bit floats")
    if c.stages < 2 or c.stages > 8:
        fail(f"{what}: stages must be 2 to 8, got {c.stages}")
    if scaling not in FP8_SCALINGS:
        fail(f"{what}: scaling must be one of {FP8_SCALINGS}, got "
             f"{scaling!r}")
    if scaling == "block" and (c.bk != FP8_BLOCK or FP8_BLOCK % c.bn):
        fail(f"{what}: block scaling takes K tiles of {FP8_BLOCK} (bk = "
             f"{c.bk}) and bn dividing {FP8_BLOCK} (bn = {c.bn}), so that "
             "one B scale covers each tile and K step")


def _buffer(x, name, what, dtypes):
    if not isinstance(x, BufferProxy):
        fail(f"{what}: {name} must be a buffer parameter, got "
             f"{type(x).__name__}")
    if x.dtype.name not in dtypes:
        fail(f"{what}: {name} must be a buffer of "
             f"{' or '.join(dtypes)}, got {x.dtype.name}")
    if x.lanes > 1:
        fail(f"{what}: {name} holds vectors (vec_width); use a scalar "
             "buffer")


def gemm_fp8_block(A, B, C, *, m, n, k, config: MmaConfig, scale_a, scale_b,
                   scaling: str = "tensor", scale_out=None, amax=None,
                   lda=None, ldb=None, ldc=None, fast_accum: bool = False):
    """This threadgroup's ``bm x bn`` block of ``C = (A sa) @ (B sb)^T``:
    ``A`` is ``m x k`` and ``B`` is ``n x k`` (both row-major, pitches
    ``lda``, ``ldb`` default ``k``), of ``f8e4m3`` or ``f8e5m2`` (either
    with either); ``C`` is ``m x n`` (pitch ``ldc``, default ``n``) of
    f32, f16, bf16 or an 8-bit float. Products of the 8-bit values are
    exact and summed in f32 (on Hopper by the tensor cores, whose fp8 sums
    keep fewer bits between K steps of 32; block scaling adds each 128 of
    K in f32).

    ``scale_a`` / ``scale_b`` are f32 buffers:

    ==========  ========================  ==============================
    scaling     scale_a                   scale_b
    ==========  ========================  ==============================
    "tensor"    1 value                   1 value
    "row"       m values (one per row)    n values (one per row of B,
                                          i.e. per column of C)
    "block"     ceil(k/128) x m, element  ceil(n/128) x ceil(k/128), element
                (kb, r): row r, K block   (nb, kb): B rows 128 nb.., K
                kb (M-contiguous)         block kb
    ==========  ========================  ==============================

    An 8-bit ``C`` gets ``saturating_cast(result * scale_out[0])``
    (``scale_out`` an f32 buffer of one value, or None for 1). ``amax``
    (a u32 buffer of one element, 0 before the launch) receives the bits
    of ``max |result|`` over the whole C (result before ``scale_out``; a
    NaN result gives a NaN) by an atomic max; read it as a float.

    Accumulation: with ``fast_accum=False`` (the default, as
    ``torch._scaled_mm``'s) each K tile's product (``bk`` of K) is summed
    from zero and then added into a separate f32 accumulator ("promotion":
    on Hopper the tensor cores' reduced-precision sums never span more
    than one K tile, 128 in every listed configuration); with
    ``fast_accum=True`` one accumulator runs through all of K (on Hopper
    the tensor cores' own sums, faster; the CPU, MSL host and Metal sum in
    f32 in K order either way, so there the two differ only in rounding).
    Block scaling always adds each K tile's scaled product in f32 and
    ignores ``fast_accum``.

    Call it at the top level of the kernel body; launch ``config.launch(m,
    n)`` (whole threadgroups of ``config.threads``, as gemm_block; with
    ``persistent``, ``config.launch(m, n, processors)``). Any m, n, k is
    correct: edges are zero-filled and masked. Configurations of
    :func:`fp8_warpgroup_shape` run as warpgroup products (wgmma on
    Hopper). ``MmaConfig(..., warp_specialized=True)`` runs the pipeline
    with roles (``enigma.pipeline_loop``: on Hopper a producer warpgroup
    copying A, B and block scale tiles with the TMA into a ring, the
    simdgroups consuming them), also ``persistent`` (the threadgroup
    walks blocks in grouped order) and in clusters of 2 or 4 sharing A
    tiles; it computes the same values as the classic kernel."""
    what = "gemm_fp8_block"
    f8 = ("f8e4m3", "f8e5m2")
    _buffer(A, "A", what, f8)
    _buffer(B, "B", what, f8)
    _buffer(C, "C", what, _OUT_DTYPES)
    _buffer(scale_a, "scale_a", what, ("f32",))
    _buffer(scale_b, "scale_b", what, ("f32",))
    if scale_out is not None:
        _buffer(scale_out, "scale_out", what, ("f32",))
        if not C.dtype.is_float8:
            fail(f"{what}: scale_out scales an 8-bit C; C is "
                 f"{C.dtype.name}")
    if amax is not None:
        _buffer(amax, "amax", what, ("u32",))
    if not isinstance(fast_accum, bool):
        fail(f"{what}: fast_accum must be a bool, got {fast_accum!r}")
    _check(config, scaling, what)
    c = config
    _call("require_threadgroup_size", c.threads)
    lda = k if lda is None else lda
    ldb = k if ldb is None else ldb
    ldc = n if ldc is None else ldc
    # The operands, C and the scales, judged at each launch.
    kb = (k, FP8_BLOCK, 1)           # ceil(k / 128) K blocks
    scales = {"tensor": ((1, 1), "1 x 1", 1, "1", (1, 1), "1 x 1", 1, "1"),
              "row": ((1, m), "1 x m", m, "m", (1, n), "1 x n", n, "n"),
              "block": ((kb, m), "(ceil(k/128)) x m", m, "m",
                        ((n, FP8_BLOCK, 1), kb),
                        "(ceil(n/128)) x (ceil(k/128))", kb,
                        "ceil(k/128)")}[scaling]
    require_matrices(what, (
        (A, "reads A", (m, k), "m x k", lda, "lda"),
        (B, "reads B", (n, k), "n x k", ldb, "ldb"),
        (C, "writes C", (m, n), "m x n", ldc, "ldc"),
        (scale_a, f"reads {scaling} scales of A", scales[0], scales[1],
         scales[2], scales[3]),
        (scale_b, f"reads {scaling} scales of B", scales[4], scales[5],
         scales[6], scales[7])) + tuple(
        (buf, f"reads {name}", (1, 1), "1 x 1", 1, "1")
        for buf, name in ((scale_out, "scale_out"), (amax, "amax"))
        if buf is not None))

    group = fp8_warpgroup_shape(c)
    wtm, wtn = c.bm // c.wm, c.bn // c.wn
    if c.warp_specialized:
        reduce = None
        if amax is not None:   # each simdgroup's row maxima, 16 copies
            reduce = threadgroup_alloc("float", c.wm * c.wn * wtm * 16)
        gemm_fp8_pipelined(A, B, C, m=m, n=n, k=k, config=c,
                           scale_a=scale_a, scale_b=scale_b, scaling=scaling,
                           scale_out=scale_out, amax=amax, lda=lda, ldb=ldb,
                           ldc=ldc, fast_accum=fast_accum, group=group,
                           amax_reduce=reduce, reduce_amax=_amax)
        return
    sw = mma_swizzle(c.bk, "u8")
    a_tiles = pipeline(A.dtype, c.bm * c.bk, c.stages)
    b_tiles = pipeline(B.dtype, c.bn * c.bk, c.stages)
    reduce = None
    if amax is not None:   # each simdgroup's row maxima, 16 copies
        reduce = threadgroup_alloc("float", c.wm * c.wn * wtm * 16)

    row0, col0 = grouped_block_origin(c, m, n)
    warp = simdgroup_index_in_threadgroup()
    wrow = (warp // c.wn) * wtm
    wcol = (warp % c.wn) * wtn
    out_row, out_col = row0 + wrow, col0 + wcol
    ktiles = (k + (c.bk - 1)) // c.bk
    rows_left = m - row0
    cols_left = n - col0
    # This simdgroup's valid rows and columns (0 when past the edge).
    my_rows = where(0, m - out_row, out_row < m)
    my_cols = where(0, n - out_col, out_col < n)

    def copy_tiles(stage, kt):
        k0 = kt * c.bk
        k_left = where(0, k - k0, k0 < k)
        copy_tile(stage[0], A, c.bm, c.bk, src_ld=lda,
                  src_offset=row0 * lda + k0, valid_rows=rows_left,
                  valid_cols=k_left, swizzle=sw)
        copy_tile(stage[1], B, c.bn, c.bk, src_ld=ldb,
                  src_offset=col0 * ldb + k0, valid_rows=cols_left,
                  valid_cols=k_left, swizzle=sw)

    def load(stage, kt):
        if isinstance(kt, int):
            copy_tiles(stage, kt)
        else:
            with if_(kt < ktiles):
                copy_tiles(stage, kt)
        copy_commit()

    def operands():
        if group:   # the warpgroup's 64 rows of A; all of B's tile
            a_op = mma_operand(a_tiles.front(), ld=c.bk,
                               offset=(warp // 4) * 64 * c.bk, swizzle=sw)
            b_op = mma_operand(b_tiles.front(), ld=c.bk, transpose=True,
                               swizzle=sw)
        else:
            a_op = mma_operand(a_tiles.front(), ld=c.bk,
                               offset=wrow * c.bk, swizzle=sw)
            b_op = mma_operand(b_tiles.front(), ld=c.bk,
                               offset=wcol * c.bk, transpose=True,
                               swizzle=sw)
        return a_op, b_op

    # Tensor and row scaling apply after the K loop and, with fast_accum,
    # keep a product in flight across the barrier (asynchronous, from 3
    # stages on); block scaling scales each K tile's product as it adds
    # it, promotion adds it unscaled.
    blockwise = scaling == "block"
    promoted = not fast_accum and not blockwise
    asynchronous = group and c.stages >= 3 and not blockwise and fast_accum
    ahead = c.stages - 2 if asynchronous else c.stages - 1
    for s in range_constexpr(ahead):
        load((a_tiles.stage(s), b_tiles.stage(s)), s)

    if blockwise:
        kblocks = (k + (FP8_BLOCK - 1)) // FP8_BLOCK
        b_scale_row = (col0 // FP8_BLOCK) * kblocks

    with for_range(0, ktiles, dtype="uint",
                   init=[mma_zeros(wtm, wtn)]) as (kt, carry):
        copy_wait(ahead - 1)
        barrier()
        load((a_tiles.stage(ahead), b_tiles.stage(ahead)), kt + ahead)
        a_op, b_op = operands()
        if blockwise:
            part = mma(mma_zeros(wtm, wtn), a_op, b_op, k=c.bk,
                       warpgroup=group)
            sa = mma_load(scale_a, wtm, wtn, ld=0, transpose=True,
                          offset=kt * m + out_row, bounds=(my_rows, wtn))
            sb = scale_b[b_scale_row + kt]
            carry[0] = carry[0] + part * (sa * sb)
        elif promoted:
            carry[0] = carry[0] + mma(mma_zeros(wtm, wtn), a_op, b_op,
                                      k=c.bk, warpgroup=group)
        else:
            carry[0] = mma(carry[0], a_op, b_op, k=c.bk, warpgroup=group,
                           asynchronous=asynchronous)
        a_tiles.advance()
        b_tiles.advance()
    acc = mma_wait(carry[0]) if asynchronous else carry[0]
    copy_wait(0)

    if scaling == "tensor":
        acc = acc * (scale_a[0] * scale_b[0])
    elif scaling == "row":
        sa = mma_load(scale_a, wtm, wtn, ld=0, transpose=True,
                      offset=out_row, bounds=(my_rows, wtn))
        sb = mma_load(scale_b, wtm, wtn, ld=0, offset=out_col,
                      bounds=(wtm, my_cols))
        acc = acc * sa * sb

    if amax is not None:
        _amax(acc, reduce, amax, warp, wtm, c)
    out = acc
    if C.dtype.is_float8:
        if scale_out is not None:
            out = out * scale_out[0]
        out = saturating_cast(out, C.dtype)
    mma_store(out, C, ld=ldc, offset=out_row * ldc + out_col,
              bounds=(my_rows, my_cols))


def _u32(x):
    """A traced uint of an int or traced integer (for the core's calls)."""
    if isinstance(x, int):
        return to_value(x, as_dtype("u32"))._value
    return x._value


def _amax(acc, reduce, amax, warp, wtm, c):
    """max |acc| over the threadgroup into amax[0] (an atomic max of the
    float's bits: non-negative floats order as their bits, NaN above
    infinity). Rows and columns past C's edge hold zeros."""
    # row_max ignores NaN unless a whole row is NaN; the sum of the
    # magnitudes is NaN exactly when an element is.
    rows = abs(acc).row_max()
    sums = abs(acc).row_sum()
    rows = where(rows, sums, sums != sums)
    mma_store(rows.broadcast(16), reduce, ld=16, offset=warp * wtm * 16)
    barrier()
    entries = c.wm * c.wn * wtm
    tid = thread_index_in_threadgroup()
    with for_range(tid, entries, c.threads, dtype="uint",
                   init=[to_value(0, as_dtype("u32"))]) as (i, best):
        bits = as_type(abs(reduce[i * 16]), "uint")
        best[0] = imax(best[0], bits)
    top = simd_max(best[0])
    with if_(thread_index_in_simdgroup() == 0):
        atomic_fetch_max(amax, 0, top)
