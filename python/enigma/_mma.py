"""Matrix multiply-accumulate on simdgroup fragments (docs/reference/mma.md,
docs/design/mma.md).

A :class:`Fragment` is an ``M x N`` matrix held collectively by the 32 lanes
of one simdgroup, in a register layout that belongs to the target (tensor
core accumulators on CUDA, ``simdgroup_matrix`` elements on Metal, whole
rows per lane on the CPU). Make one with :func:`mma_fill`, :func:`mma_load`
or :func:`mma_iota`; multiply tiles of threadgroup memory into it with
:func:`mma`; combine fragments element by element with Python's operators
and ``enigma.exp``-style functions; reduce rows with :meth:`Fragment.row_max`
/ :meth:`Fragment.row_sum`; write it out with :func:`mma_store`.
:func:`copy_tile` fills threadgroup memory from a device buffer with the
whole threadgroup (cp.async on CUDA), :func:`copy_commit` /
:func:`copy_wait` pipeline those copies.

:func:`gemm_tile` multiplies tiles already in threadgroup memory;
``enigma.gemm_block`` (the ``_gemm`` module) is a complete threadgroup
GEMM built from these, and :func:`autotune` times configurations on a
runtime.
"""

from __future__ import annotations

import math as _math

from ._autotune import Autotuner, Launch, autotune  # noqa: F401
from ._threads import (barrier, simdgroup_index_in_threadgroup,
                        simdgroups_per_threadgroup,
                        threadgroup_position_in_grid)
from ._control import for_range, if_, range_constexpr
from ._cooperation import ThreadgroupTensor
from ._dtypes import as_dtype
from ._ir import (BufferProxy, Fragment, IRValue, current_tracer, fail,
                  plain_index, static_int, to_value)
from ._layout_swizzle import Swizzle
from ._math import imin, where
from ._tile_pipeline import PipelineStage, pipeline

__all__ = ["Fragment", "MmaOperand", "mma", "mma_wait", "mma_fill",
           "mma_zeros", "mma_iota", "mma_load", "mma_gather", "mma_store",
           "mma_halves", "mma_operand",
           "mma_swizzle", "copy_tile", "copy_commit", "copy_wait",
           "gemm_tile", "autotune", "Autotuner", "Launch"]

_U32 = as_dtype("uint")


def _call(function: str, *args):
    """``_core.<function>`` through the located call."""
    return current_tracer(function).call(function, *args)


def _wrap(value) -> IRValue:
    return IRValue(current_tracer("mma"), value)


def _index(x, what: str):
    """A traced uint (or a wider integer) for an offset, pitch or bound."""
    if isinstance(x, Fragment):
        fail(f"{what} must be an integer, got a fragment")
    if isinstance(x, IRValue):
        if x.lanes != 1 or x.dtype.is_float or x.dtype.name == "b1":
            fail(f"{what} must be an integer, got {x.dtype.name}")
        return x._value
    x = plain_index(x)
    if isinstance(x, bool) or not isinstance(x, int):
        fail(f"{what} must be an integer, got {type(x).__name__}")
    if x < 0:
        fail(f"{what} must not be negative, got {x}")
    return to_value(x, _U32 if x < 2**32 else as_dtype("u64"))._value


def _swizzle(sw, what: str):
    """(bits, base, shift) of an enigma.Swizzle (or a 3-tuple), or None."""
    if sw is None:
        return None
    if isinstance(sw, Swizzle):
        return (sw.bits, sw.base, sw.shift)
    if isinstance(sw, tuple) and len(sw) == 3 and \
            all(isinstance(v, int) for v in sw):
        return tuple(sw)
    fail(f"{what} must be an enigma.Swizzle, got {sw!r}")


# --------------------------------------------------------------------------
# Making, loading and storing fragments
# --------------------------------------------------------------------------

def _shape_args(rows, cols, what):
    rows = static_int(rows, f"{what}: rows")
    cols = 0 if cols is None else static_int(cols, f"{what}: cols")
    return rows, cols


def mma_fill(value, rows: int, cols: int | None = None, dtype=None) -> Fragment:
    """A ``rows x cols`` fragment (a row vector when ``cols`` is None) with
    every element ``value``, which must be the same in every lane. The
    dtype is ``dtype``, else the value's (a Python number: float)."""
    rows, cols = _shape_args(rows, cols, "mma_fill")
    if dtype is None:
        dtype = value.dtype if isinstance(value, IRValue) else as_dtype("float")
    dtype = as_dtype(dtype)
    if isinstance(value, Fragment):
        fail("mma_fill takes a scalar value, got a fragment")
    v = to_value(value, dtype)
    return _wrap(_call("mma_fill", v._value, dtype.name, rows, cols))


def mma_zeros(rows: int, cols: int | None = None, dtype="float") -> Fragment:
    """``mma_fill(0, rows, cols, dtype)``: the usual accumulator start."""
    return mma_fill(0, rows, cols, dtype)


def mma_iota(dim: int, rows: int, cols: int) -> Fragment:
    """An int fragment whose elements are their row (``dim=0``) or column
    (``dim=1``) index: masks are comparisons of these, e.g. causal
    ``mma_iota(1, r, c) + col0 > mma_iota(0, r, c) + row0``."""
    rows, cols = _shape_args(rows, cols, "mma_iota")
    if dim not in (0, 1) or isinstance(dim, bool):
        fail(f"mma_iota: dim must be 0 (rows) or 1 (columns), got {dim!r}")
    return _wrap(_call("mma_iota", dim, rows, cols))


def _memory(mem, what: str, threadgroup_only=False):
    """(core memory, base offset or None) of a buffer, threadgroup tensor or
    pipeline stage."""
    if isinstance(mem, PipelineStage):
        return mem._tensor._array, mem.offset
    if isinstance(mem, ThreadgroupTensor):
        return mem._array, None
    if isinstance(mem, BufferProxy) and not threadgroup_only:
        if mem.lanes > 1:
            fail(f"{what}: buffer '{mem.name}' holds {mem.lanes}-lane "
                 "vectors (vec_width); use a scalar buffer")
        return mem._buffer, None
    kinds = ("a threadgroup_alloc tensor or a pipeline stage"
             if threadgroup_only else
             "a buffer parameter, a threadgroup_alloc tensor or a pipeline "
             "stage")
    fail(f"{what}: the memory must be {kinds}, got {type(mem).__name__}")


def _plus(base, offset):
    if base is None:
        return offset
    if isinstance(offset, int) and offset == 0:
        return base
    return base + offset


def _bounds(bounds, what):
    if bounds is None:
        return None, None
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        fail(f"{what}: bounds must be (rows, cols), got {bounds!r}")
    return (_index(bounds[0], f"{what}: row bound"),
            _index(bounds[1], f"{what}: column bound"))


def mma_load(mem, rows: int, cols: int, *, ld, offset=0, transpose=False,
             bounds=None) -> Fragment:
    """A ``rows x cols`` fragment of ``mem``'s dtype: element (r, c) is
    ``mem[offset + r * ld + c]`` (``transpose=True``: ``mem[offset + c * ld
    + r]``). ``mem`` is a buffer parameter, threadgroup tensor or pipeline
    stage (its offset is added). ``bounds=(R, C)``: elements at ``r >= R``
    or ``c >= C`` are 0 and not read (masked edges)."""
    what = "mma_load"
    rows, cols = _shape_args(rows, cols, what)
    memory, base = _memory(mem, what)
    r, c = _bounds(bounds, what)
    return _wrap(_call("mma_load", memory, _index(_plus(base, offset),
                                                   f"{what}: offset"),
                       _index(ld, f"{what}: ld"), rows, cols,
                       bool(transpose), r, c))


def mma_gather(mem, index, *, offset=0) -> Fragment:
    """A fragment of ``mem``'s dtype shaped like ``index``, an int fragment:
    element (r, c) is ``mem[offset + index(r, c)]``. Build the indices from
    :func:`mma_iota` and arithmetic; they may differ element by element,
    for layouts :func:`mma_load` cannot describe (weights packed several
    to a word, a permuted or paged table). ``mem`` is a buffer parameter,
    threadgroup tensor or pipeline stage; ``offset`` must be the same in
    every lane. The indices are not checked: each must lie inside ``mem``.
    """
    what = "mma_gather"
    current_tracer(what)
    if not isinstance(index, Fragment) or index.is_row_vector:
        fail(f"{what}: index must be an int fragment (from mma_iota and "
             f"arithmetic), got {index!r}")
    memory, base = _memory(mem, what)
    return _wrap(_call("mma_gather", memory,
                       _index(_plus(base, offset), f"{what}: offset"),
                       index._value))


def mma_halves(words, dtype) -> Fragment:
    """The 16-bit halves of an ``M x N`` fragment of 32-bit words (int,
    uint or float) as an ``M x 2N`` fragment of ``dtype`` (half or
    bfloat): the low and high 16 bits of word ``(r, c)`` are elements
    ``(r, j)`` and ``(r, j + 1)``, where ``c = 8 b + 2 i + h`` (``h`` 0 or
    1) and ``j = 16 b + 8 h + 2 i``. Every lane keeps the halves of its
    own words (the pairs land where a 16-bit product's A operand reads
    them on NVIDIA's tensor cores), so nothing moves; choose the words'
    columns by this rule, e.g. to decode packed 4-bit weights two at a
    time (``(word >> s) & 0x000F000F | 0x43004300`` is two bfloat ``128 +
    q``)."""
    what = "mma_halves"
    if not isinstance(words, Fragment) or words.is_row_vector:
        fail(f"{what}: expected a fragment of 32-bit words, got "
             f"{type(words).__name__}")
    return _wrap(_call("mma_halves", words._value, as_dtype(dtype).name))


def mma_store(frag, mem, *, ld, offset=0, transpose=False,
              bounds=None) -> None:
    """Writes ``frag`` (converted to ``mem``'s dtype) to ``mem[offset + r *
    ld + c]`` (``transpose=True``: ``mem[offset + c * ld + r]``);
    ``bounds=(R, C)`` writes only the elements at ``r < R`` and ``c <
    C``."""
    what = "mma_store"
    if not isinstance(frag, Fragment):
        fail(f"{what}: expected a fragment, got {type(frag).__name__}")
    memory, base = _memory(mem, what)
    r, c = _bounds(bounds, what)
    _call("mma_store", frag._value, memory,
          _index(_plus(base, offset), f"{what}: offset"),
          _index(ld, f"{what}: ld"), bool(transpose), r, c)


class MmaOperand:
    """A tile of threadgroup memory used as an operand of :func:`mma` (see
    :func:`mma_operand`)."""

    __slots__ = ("memory", "base", "offset", "ld", "transpose", "swizzle",
                 "block_stride", "dtype")

    def __init__(self, mem, *, ld, offset=0, transpose=False, swizzle=None,
                 block_stride=0):
        what = "mma_operand"
        self.memory, base = _memory(mem, what, threadgroup_only=True)
        self.base = 0 if base is None else base
        self.offset = offset
        self.ld = static_int(ld, f"{what}: ld")
        self.transpose = bool(transpose)
        self.swizzle = _swizzle(swizzle, f"{what}: swizzle")
        self.block_stride = static_int(block_stride,
                                       f"{what}: block_stride", minimum=0)
        self.dtype = mem.dtype

    def __repr__(self) -> str:
        return (f"MmaOperand(ld={self.ld}, transpose={self.transpose}, "
                f"swizzle={self.swizzle}, block_stride={self.block_stride})")


def mma_operand(mem, *, ld: int, offset=0, transpose=False,
                swizzle=None, block_stride=0) -> MmaOperand:
    """An operand tile of :func:`mma` in threadgroup memory ``mem`` (a
    threadgroup tensor or pipeline stage): element (r, c) of the tile is
    ``mem[swizzle(offset + r * ld + c)]``, with ``transpose=True``
    ``mem[swizzle(offset + c * ld + r)]`` (A stored K x M, B stored N x K).
    ``ld`` (a Python int) is the pitch of the stored rows, a multiple of 16
    bytes; ``swizzle`` an ``enigma.Swizzle`` that the tile was stored with
    (:func:`copy_tile` with the same swizzle), applied to the offset inside
    the allocation or stage. ``block_stride`` > 0: the stored columns come
    in blocks of ``ld`` columns, ``block_stride`` elements apart (stored
    element (sr, sc) at ``(sc // ld) * block_stride + sr * ld + sc % ld``):
    the layout Hopper's wgmma reads for a B stored K x N."""
    return MmaOperand(mem, ld=ld, offset=offset, transpose=transpose,
                      swizzle=swizzle, block_stride=block_stride)


def mma(acc: Fragment, a, b: MmaOperand, *, k: int | None = None,
        allow_tf32: bool = False, warpgroup: bool = False,
        asynchronous: bool = False) -> Fragment:
    """``acc + A @ B``. ``acc`` is an ``M x N`` float fragment; ``b`` a
    ``K x N`` :func:`mma_operand`; ``a`` an ``M x K`` :func:`mma_operand`
    (give ``k``) or an ``M x K`` fragment (converted to B's dtype: flash
    attention's ``P @ V``). Operands are both half, both bfloat, or both
    float; float operands use TF32 tensor cores on CUDA only with
    ``allow_tf32=True`` (else full fp32 FMA). Every lane of the simdgroup
    must reach the call.

    ``warpgroup=True``: the four simdgroups ``4q .. 4q + 3`` multiply
    together, all by the same ``b`` (its offsets the same in every
    thread). A tile ``a`` is their common ``64 x K`` tile: simdgroup
    ``4q + i`` multiplies its rows ``16 i .. 16 i + 15`` into a 16-row
    ``acc``. A fragment ``a`` is each simdgroup's own 16 rows. The result
    is the same on every target; on Hopper (sm_90a) tiles stored as
    :func:`gemm_block` stores them (rows of 128 bytes under
    ``mma_swizzle``, more than 64 columns in 64-column blocks) run as one
    wgmma instruction. Every thread of the threadgroup must reach the
    call.

    ``asynchronous=True`` (warpgroup products only): on Hopper the product
    may still be in flight when the call returns (the group's previous
    asynchronous product is complete, so its tiles may be refilled after a
    barrier). The result may only be the ``acc`` of another asynchronous
    product, also through loop-carried values, until :func:`mma_wait`
    completes it; anything else is an EnigmaError. A fragment ``a`` may
    be in registers (flash attention's ``P @ V`` in flight while the next
    scores' softmax runs): it is a value, so nothing can change it while
    the product reads it. Elsewhere the product is complete at once."""
    what = "mma"
    if not isinstance(acc, Fragment):
        fail(f"{what}: the accumulator must be a fragment, got "
             f"{type(acc).__name__}")
    if not isinstance(b, MmaOperand):
        fail(f"{what}: B must be an enigma.mma_operand(...) tile of "
             f"threadgroup memory, got {type(b).__name__}")
    b_args = (b.memory, _index(b.base, f"{what}: B base"),
              _index(b.offset, f"{what}: B offset"), b.ld, b.transpose,
              b.swizzle)
    if isinstance(a, Fragment):
        if asynchronous and not warpgroup:
            fail(f"{what}: asynchronous=True applies to warpgroup products "
                 "only (warpgroup=True)")
        if k is not None and k != a.cols:
            fail(f"{what}: k={k} but A is a {a.rows} x {a.cols} fragment")
        return _wrap(_call("mma_reg", acc._value, a._value, *b_args,
                           b.block_stride, bool(warpgroup),
                           bool(asynchronous)))
    if not isinstance(a, MmaOperand):
        fail(f"{what}: A must be an enigma.mma_operand(...) tile or a "
             f"fragment, got {type(a).__name__}")
    if k is None:
        fail(f"{what}: give k= (the inner dimension) when A is in memory")
    k = static_int(k, f"{what}: k")
    return _wrap(_call("mma", acc._value, a.memory,
                       _index(a.base, f"{what}: A base"),
                       _index(a.offset, f"{what}: A offset"), a.ld,
                       a.transpose, a.swizzle, *b_args, k, bool(allow_tf32),
                       a.block_stride, b.block_stride, bool(warpgroup),
                       bool(asynchronous)))


def mma_wait(acc: Fragment, pending: int = 0) -> Fragment:
    """``acc`` once the simdgroup group's asynchronous products
    (``mma(..., asynchronous=True)``) are complete, and their reads of
    threadgroup memory over.

    ``pending`` = N (0 to 7): only the products issued before the group's
    N most recent ones are complete (Hopper's ``wgmma.wait_group N``), so
    the N newest may keep running while the code after the wait uses
    ``acc``: ``acc``'s own product must be older than them. The compiler
    proves it or raises an EnigmaError: N asynchronous products must come
    before the wait, unconditionally (not inside an ``if_``) and in the
    same loop body or region, after ``acc``'s product when that is there
    too (a value carried from the previous iteration is older than all of
    them). Elsewhere than Hopper products are complete at once and the
    result is the same."""
    if not isinstance(acc, Fragment):
        fail(f"mma_wait: expected a fragment, got {type(acc).__name__}")
    if isinstance(pending, bool) or not isinstance(pending, int) or \
            not 0 <= pending <= 7:
        fail(f"mma_wait: pending must be an int from 0 to 7, got "
             f"{pending!r}")
    return _wrap(_call("mma_wait", acc._value, pending))


def mma_swizzle(row_elements: int, dtype):
    """The ``enigma.Swizzle`` that makes a tile whose stored rows hold
    ``row_elements`` elements of ``dtype`` free of shared-memory bank
    conflicts for :func:`mma` and :func:`copy_tile`: it XORs the 16-byte
    chunk index within a row with the row number, so that the 8 rows an
    ``ldmatrix`` reads land in 8 different chunks of 128 bytes. None when
    the row is not a power of two of at least 2 chunks."""
    size = as_dtype(dtype).itemsize
    row_bytes = row_elements * size
    chunks = row_bytes // 16
    if row_bytes % 16 or chunks < 2 or chunks & (chunks - 1):
        return None
    base = int(_math.log2(16 // size))
    bits = int(_math.log2(min(chunks, 8)))
    shift = int(_math.log2(row_elements)) + (3 - bits) - base
    return Swizzle(bits, base, shift)


# --------------------------------------------------------------------------
# Tile copies
# --------------------------------------------------------------------------

def copy_tile(dst, src, rows: int, cols: int, *, src_ld, src_offset=0,
              dst_ld: int | None = None, valid_rows=None, valid_cols=None,
              swizzle=None, dst_offset=0, block_stride: int = 0) -> None:
    """The whole threadgroup copies a ``rows x cols`` tile of the device
    buffer ``src`` (rows ``src_ld`` elements apart, element (0, 0) at
    ``src_offset``) into threadgroup memory ``dst`` (a threadgroup tensor
    or pipeline stage) from element ``dst_offset`` on, row pitch ``dst_ld``
    (default ``cols``), offsets swizzled by ``swizzle`` (the swizzle applies
    to the offset inside the tile). Elements at ``r >= valid_rows`` or ``c >=
    valid_cols`` become 0 without reading ``src`` (masked edges).

    ``block_stride`` > 0 stores the columns in blocks of ``dst_ld``
    (``cols`` a multiple of it), block ``j`` from element ``dst_offset +
    j * block_stride`` on, each swizzled inside itself: the layout
    ``mma_operand(..., ld=dst_ld, block_stride=...)`` reads when
    ``block_stride`` is a multiple of the swizzle's period (Hopper's wgmma
    reads tiles with more than 64 columns so).

    On CUDA the copy is asynchronous (cp.async, 16-byte chunks; element
    copies when the source rows are not 16-byte aligned): the data is in
    ``dst`` after :func:`copy_commit`, :func:`copy_wait` and
    ``enigma.barrier()``. Every thread must reach the call with the same
    arguments. ``cols * element size`` and ``dst_ld * element size`` must
    be multiples of 16 bytes."""
    what = "copy_tile"
    memory, base = _memory(dst, what, threadgroup_only=True)
    if not isinstance(src, BufferProxy):
        fail(f"{what}: the source must be a buffer parameter, got "
             f"{type(src).__name__}")
    if src.lanes > 1:
        fail(f"{what}: buffer '{src.name}' holds vectors (vec_width)")
    rows = static_int(rows, f"{what}: rows")
    cols = static_int(cols, f"{what}: cols")
    dst_ld = cols if dst_ld is None else static_int(dst_ld, f"{what}: dst_ld")
    block_stride = static_int(block_stride, f"{what}: block_stride",
                              minimum=0)
    if block_stride:
        if dst_ld <= 0 or cols % dst_ld:
            fail(f"{what}: with block_stride the {cols} columns come in "
                 f"blocks of dst_ld = {dst_ld}; it must divide them")
        if block_stride < rows * dst_ld:
            fail(f"{what}: blocks of {rows} x {dst_ld} elements are "
                 f"{block_stride} apart; they would overlap")
    vr = _index(rows if valid_rows is None else valid_rows,
                f"{what}: valid_rows")
    vc = _index(cols if valid_cols is None else valid_cols,
                f"{what}: valid_cols")
    _call("copy_tile_async", memory, _index(_plus(base, dst_offset) if
                                            base is not None else dst_offset,
                                            f"{what}: destination"),
          src._buffer, _index(src_offset, f"{what}: src_offset"),
          _index(src_ld, f"{what}: src_ld"), vr, vc, rows, cols, dst_ld,
          _swizzle(swizzle, f"{what}: swizzle"), block_stride)


def copy_commit() -> None:
    """Closes the group of this thread's :func:`copy_tile` copies issued
    since the last commit (``cp.async.commit_group``)."""
    _call("copy_async_commit")


def copy_wait(pending: int = 0) -> None:
    """Waits until at most ``pending`` (0-7) of this thread's most recently
    committed copy groups are still in flight (``cp.async.wait_group``);
    follow with ``enigma.barrier()`` so every thread sees every copy."""
    if isinstance(pending, bool) or not isinstance(pending, int) or \
            not 0 <= pending <= 7:
        fail(f"copy_wait: pending must be an int from 0 to 7, got "
             f"{pending!r}")
    _call("copy_async_wait", pending)


def gemm_tile(a, b, c, *, m: int, n: int, k: int, a_transposed=False,
              b_transposed=False, lda=None, ldb=None, ldc=None, c_offset=0,
              accumulate=True, allow_tf32=False, warp_tile=(32, 32)):
    """``C (+)= A @ B`` for an ``m x k`` tile ``a`` and a ``k x n`` tile
    ``b`` already in threadgroup memory (threadgroup tensors or pipeline
    stages; ``a_transposed``: stored ``k x m``; ``b_transposed``: stored
    ``n x k``; pitches ``lda``/``ldb`` default to the stored rows), into
    ``c`` (a buffer, threadgroup tensor or stage) at ``c_offset`` with pitch
    ``ldc`` (default ``n``): the threadgroup product that ``enigma.gemm``
    can lower to. The ``m x n`` output is cut into ``warp_tile`` fragments
    (16 where a side does not divide), dealt to the simdgroups in turn; each
    loads its C tile (``accumulate``) or starts at 0, multiplies with
    :func:`mma` and stores it. Call it with the tiles complete (after a
    barrier); it ends without one. ``m``, ``n``, ``k`` are Python ints,
    ``m`` and ``n`` multiples of 16."""
    what = "gemm_tile"
    m, n, k = (static_int(v, f"{what}: {name}") for v, name in
               ((m, "m"), (n, "n"), (k, "k")))
    if m % 16 or n % 16:
        fail(f"{what}: m = {m} and n = {n} must be multiples of 16 (the "
             "fragment granularity); pad the tiles")
    tm = warp_tile[0] if m % warp_tile[0] == 0 else 16
    tn = warp_tile[1] if n % warp_tile[1] == 0 else 16
    lda = (m if a_transposed else k) if lda is None else lda
    ldb = (k if b_transposed else n) if ldb is None else ldb
    ldc = n if ldc is None else ldc
    tiles_n = n // tn
    tiles = (m // tm) * tiles_n
    sg = simdgroup_index_in_threadgroup()
    with for_range(sg, tiles, simdgroups_per_threadgroup(),
                   dtype="uint") as t:
        r0 = (t // tiles_n) * tm
        c0 = (t % tiles_n) * tn
        at = c_offset + r0 * ldc + c0
        acc = mma_load(c, tm, tn, ld=ldc, offset=at).cast("float") \
            if accumulate else mma_zeros(tm, tn)
        a_op = mma_operand(a, ld=lda, offset=r0 if a_transposed else
                           r0 * lda, transpose=a_transposed)
        b_op = mma_operand(b, ld=ldb, offset=c0 * ldb if b_transposed else
                           c0, transpose=b_transposed)
        acc = mma(acc, a_op, b_op, k=k, allow_tf32=allow_tf32)
        mma_store(acc, c, ld=ldc, offset=at)
