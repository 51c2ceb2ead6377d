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

:func:`gemm_block` is a complete threadgroup GEMM built from these (tile
shapes per target in :class:`MmaConfig`, :func:`gemm_configs`), and
:func:`autotune` times configurations on a runtime.
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
                  static_int, to_value)
from ._layout import Swizzle
from ._math import imin, where
from ._tile import PipelineStage, pipeline

__all__ = ["Fragment", "MmaOperand", "MmaConfig", "mma", "mma_wait",
           "mma_fill",
           "mma_zeros", "mma_iota", "mma_load", "mma_store", "mma_operand",
           "mma_swizzle", "copy_tile", "copy_commit", "copy_wait",
           "gemm_block", "gemm_tile", "gemm_configs", "default_gemm_config",
           "warpgroup_shape",
           "autotune",
           "Autotuner", "Launch"]

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
    completes it; anything else is an EnigmaError. Elsewhere the product
    is complete at once."""
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
        if asynchronous:
            fail(f"{what}: asynchronous=True needs A in threadgroup memory, "
                 "not a fragment")
        if k is not None and k != a.cols:
            fail(f"{what}: k={k} but A is a {a.rows} x {a.cols} fragment")
        return _wrap(_call("mma_reg", acc._value, a._value, *b_args,
                           b.block_stride, bool(warpgroup)))
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


def mma_wait(acc: Fragment) -> Fragment:
    """``acc`` once the simdgroup group's asynchronous products
    (``mma(..., asynchronous=True)``) are complete, and their reads of
    threadgroup memory over."""
    if not isinstance(acc, Fragment):
        fail(f"mma_wait: expected a fragment, got {type(acc).__name__}")
    return _wrap(_call("mma_wait", acc._value))


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


# --------------------------------------------------------------------------
# A threadgroup GEMM
# --------------------------------------------------------------------------

class MmaConfig:
    """Tile shapes of :func:`gemm_block`: a ``bm x bn`` block of C per
    threadgroup, K in steps of ``bk``, ``wm x wn`` simdgroups (each a
    ``bm/wm x bn/wn`` fragment), ``stages`` buffers of A and B tiles in
    flight, and ``group_m`` block rows per group of the launch order (as
    Triton's grouped ordering, for L2 reuse)."""

    __slots__ = ("bm", "bn", "bk", "wm", "wn", "stages", "group_m")

    def __init__(self, bm=128, bn=128, bk=32, wm=2, wn=2, stages=2,
                 group_m=8):
        self.bm, self.bn, self.bk = bm, bn, bk
        self.wm, self.wn, self.stages, self.group_m = wm, wn, stages, group_m

    @property
    def threads(self) -> int:
        return 32 * self.wm * self.wn

    def smem_bytes(self, dtype) -> int:
        return self.stages * (self.bm + self.bn) * self.bk * \
            as_dtype(dtype).itemsize

    def blocks(self, m: int, n: int) -> int:
        return -(-m // self.bm) * -(-n // self.bn)

    def launch(self, m: int, n: int):
        """(grid, threads) of a launch over an m x n C."""
        return ((self.blocks(m, n) * self.threads, 1, 1),
                (self.threads, 1, 1))

    def as_dict(self) -> dict:
        return {s: getattr(self, s) for s in self.__slots__}

    def __eq__(self, other):
        return isinstance(other, MmaConfig) and \
            self.as_dict() == other.as_dict()

    def __hash__(self):
        return hash(tuple(self.as_dict().values()))

    def __repr__(self) -> str:
        return ("MmaConfig(" + ", ".join(f"{k}={v}" for k, v in
                                          self.as_dict().items()) + ")")


# Threadgroup memory per target: Metal's 32 KiB; an sm_90 block's 227 KiB,
# which the CPU runtime also allows (the most any target allows, so the
# limit of a configuration's check; runtimes check their own at load).
_TG_LIMITS = {"metal": 32 * 1024, "cpu": 227 * 1024, "cuda": 227 * 1024}
_TG_LIMIT = max(_TG_LIMITS.values())


def _gemm_dtype(dtype, what):
    """``dtype``, which gemm_block multiplies (half, bfloat, float), or an
    EnigmaError."""
    if dtype.name not in ("f16", "bf16", "f32"):
        fail(f"{what} must be half, bfloat or float, got {dtype.name}")
    return dtype


def gemm_configs(target: str = "cuda", dtype="bf16",
                 allow_tf32: bool = False) -> list:
    """Configurations worth timing for ``target`` ("cuda", "metal", "cpu")
    and operand dtype, the usual winners first; each fits the target's
    threadgroup memory (32 KiB on Metal, 227 KiB on CUDA and the CPU). The
    16-bit CUDA list starts with warpgroup shapes (:func:`warpgroup_shape`:
    wgmma on Hopper). ``allow_tf32`` picks, for float operands on CUDA, the
    tiles of TF32 tensor-core products instead of those of FMA (other
    targets compute fp32 either way)."""
    dtype = _gemm_dtype(as_dtype(dtype), "gemm_configs: dtype")
    if target not in _TG_LIMITS:
        fail(f"gemm_configs: target must be one of {sorted(_TG_LIMITS)}, "
             f"got {target!r}")
    if not isinstance(allow_tf32, bool):
        fail(f"gemm_configs: allow_tf32 must be a bool, got {allow_tf32!r}")
    if target == "cpu":
        return [MmaConfig(64, 64, 32, 2, 2, 2), MmaConfig(32, 32, 32, 1, 1, 2)]
    if target == "metal":
        return [MmaConfig(64, 64, 32, 2, 2, 2), MmaConfig(32, 64, 32, 1, 2, 2)]
    if dtype.itemsize == 2:
        # Hopper: 128 x 256 and 256 x 128 tiles of 4 stages were the
        # fastest on an H200 (docs/benchmarks.md); the smaller shapes fit
        # two threadgroups per multiprocessor.
        cands = [MmaConfig(128, 256, 64, 8, 1, 4),
                 MmaConfig(256, 128, 64, 16, 1, 4),
                 MmaConfig(128, 256, 64, 8, 1, 3),
                 MmaConfig(256, 128, 64, 16, 1, 3),
                 MmaConfig(128, 128, 64, 8, 1, 3),
                 MmaConfig(128, 128, 64, 8, 1, 4),
                 MmaConfig(64, 256, 64, 4, 1, 2),
                 MmaConfig(128, 128, 32, 2, 2, 4),
                 MmaConfig(128, 128, 32, 2, 2, 2),
                 MmaConfig(64, 128, 32, 2, 2, 2)]
    elif allow_tf32:
        # TF32 tensor cores (mma.sync m16n8k8): deeper pipelines and
        # wider tiles than FMA wants; fastest first on an H100 at 4096^3
        # (docs/benchmarks.md).
        cands = [MmaConfig(128, 128, 16, 2, 2, 4),
                 MmaConfig(128, 128, 32, 2, 2, 3),
                 MmaConfig(128, 256, 32, 2, 4, 3),
                 MmaConfig(256, 128, 32, 4, 2, 3),
                 MmaConfig(128, 256, 16, 2, 4, 4),
                 MmaConfig(128, 128, 32, 2, 2, 4),
                 MmaConfig(128, 64, 32, 2, 2, 3),
                 MmaConfig(128, 128, 32, 4, 2, 3),
                 MmaConfig(128, 64, 32, 2, 2, 2),
                 MmaConfig(64, 128, 32, 2, 2, 3)]
    else:
        # FMA in registers: fastest first on an H200 at 4096^3
        # (docs/benchmarks.md); smaller tiles for smaller products.
        cands = [MmaConfig(128, 64, 32, 2, 2, 2),
                 MmaConfig(128, 64, 32, 2, 2, 3),
                 MmaConfig(128, 128, 32, 2, 2, 2),
                 MmaConfig(128, 128, 16, 2, 2, 3),
                 MmaConfig(128, 128, 32, 2, 4, 2),
                 MmaConfig(256, 128, 16, 4, 2, 2),
                 MmaConfig(128, 64, 16, 2, 2, 2),
                 MmaConfig(128, 128, 16, 2, 4, 2),
                 MmaConfig(64, 64, 32, 2, 2, 2),
                 MmaConfig(64, 128, 16, 2, 2, 3)]
    return [c for c in cands if c.smem_bytes(dtype) <= _TG_LIMITS[target]]


def default_gemm_config(target: str = "cuda", dtype="bf16",
                        allow_tf32: bool = False) -> MmaConfig:
    """The first of :func:`gemm_configs`."""
    return gemm_configs(target, dtype, allow_tf32)[0]


def _check_config(config, dtype, what):
    if not isinstance(config, MmaConfig):
        fail(f"{what}: config must be an enigma.MmaConfig, got "
             f"{type(config).__name__}")
    c = config
    for name in MmaConfig.__slots__:
        static_int(getattr(c, name), f"{what}: config.{name}")
    if c.bm % (16 * c.wm) or c.bn % (16 * c.wn):
        fail(f"{what}: {c}: each simdgroup's tile ({c.bm}/{c.wm} x "
             f"{c.bn}/{c.wn}) must have sides that are multiples of 16")
    kstep = 8 if dtype.itemsize == 4 else 16
    if c.bk % kstep:
        fail(f"{what}: {c}: bk must be a multiple of {kstep} for "
             f"{dtype.name}")
    if c.smem_bytes(dtype) > _TG_LIMIT:
        fail(f"{what}: {c} needs {c.smem_bytes(dtype)} bytes of threadgroup "
             f"memory for {dtype.name} tiles; no target has more than "
             f"{_TG_LIMIT} (Metal: 32 KiB)")
    if c.stages < 2 or c.stages > 8:
        fail(f"{what}: stages must be 2 to 8, got {c.stages}")


def warpgroup_shape(config, dtype, a_transposed=False) -> bool:
    """Whether :func:`gemm_block` runs ``config`` as warpgroup products
    (one wgmma per K step on Hopper, the same result elsewhere): 16-bit
    operands, A not transposed, ``bk == 64``, one column of simdgroups
    (``wn == 1``) of 16 rows each in groups of four, ``bn`` a multiple of
    64."""
    c = config
    return (as_dtype(dtype).itemsize == 2 and not a_transposed and
            c.bk == 64 and c.wn == 1 and c.wm % 4 == 0 and
            c.bm == 16 * c.wm and c.bn % 64 == 0)


def _block_origin(config, m, n):
    """(row0, col0) of this threadgroup's block of C in grouped order."""
    c = config
    pid = threadgroup_position_in_grid("x")
    blocks_m = (m + (c.bm - 1)) // c.bm
    blocks_n = (n + (c.bn - 1)) // c.bn
    per_group = c.group_m * blocks_n
    group = pid // per_group
    first_m = group * c.group_m
    size_m = imin(blocks_m - first_m, c.group_m)
    in_group = pid % per_group
    return ((first_m + in_group % size_m) * c.bm,
            (in_group // size_m) * c.bn)


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


def _require_matrices(what, matrices):
    """Records each ``(buffer, verb, (rows, cols), shape, pitch, pitch
    name)`` on the kernel, so that a launch with a buffer too small for
    its matrix is a DispatchError (sides that are scalar parameters or
    constants; others are not judged)."""
    for buf, verb, (rows, cols), shape, pitch, pitch_name in matrices:
        _call("require_matrix_extent", buf._buffer,
              _index(rows, f"{what}: rows"), _index(cols, f"{what}: cols"),
              _index(pitch, f"{what}: {pitch_name}"),
              f"{what} {verb} as {'a' if shape[0] == 'k' else 'an'} "
              f"{shape} matrix (pitch {pitch_name})")


def gemm_block(A, B, C, *, m, n, k, config: MmaConfig, lda=None, ldb=None,
               ldc=None, a_transposed=False, b_transposed=False,
               allow_tf32=False, epilogue=None, origin=None):
    """This threadgroup's ``bm x bn`` block of ``C = A @ B`` (``A`` is
    ``m x k``, ``B`` is ``k x n``, row-major with pitches ``lda`` (default
    ``k``), ``ldb`` (default ``n``), ``ldc`` (default ``n``);
    ``a_transposed``: A is stored ``k x m``, ``b_transposed``: B is stored
    ``n x k``). Call it at the top level of the kernel body (it allocates
    threadgroup memory); launch ``config.launch(m, n)``.

    The K loop keeps ``config.stages`` tiles of A and B in flight
    (:func:`copy_tile`, swizzled by :func:`mma_swizzle`), each simdgroup
    multiplies its part into a fragment in registers, and the block is
    stored with bounds, so any m, n, k is correct (edges are zero-filled
    and masked). The kernel then runs only in threadgroups of exactly
    ``config.threads`` threads, all full (``config.launch`` gives them; any
    other launch is a DispatchError). Configurations of
    :func:`warpgroup_shape` multiply as
    warpgroups (``mma(..., warpgroup=True)``: wgmma on Hopper), with B in
    64-column blocks, and from 3 stages on keep one product in flight
    across the barrier (``asynchronous=True``, one tile fewer loaded
    ahead). ``epilogue(acc, row, col)`` may return a new fragment
    (``row``/``col``: this simdgroup's first row and column of C) before
    it is stored. ``origin=(row0, col0)`` overrides the grouped launch
    order. Returns nothing."""
    what = "gemm_block"
    for name, buf in (("A", A), ("B", B), ("C", C)):
        if not isinstance(buf, BufferProxy):
            fail(f"{what}: {name} must be a buffer parameter, got "
                 f"{type(buf).__name__}")
    if A.dtype != B.dtype:
        fail(f"{what}: A is {A.dtype.name} and B is {B.dtype.name}; both "
             "must have one dtype")
    dtype = _gemm_dtype(A.dtype, f"{what}: A and B")
    _check_config(config, dtype, what)
    c = config
    # Its simdgroups split the block among themselves, so the kernel runs
    # in threadgroups of exactly config.threads (the runtime refuses other
    # launches; the copies unroll for that count).
    _call("require_threadgroup_size", c.threads)
    lda = (m if a_transposed else k) if lda is None else lda
    ldb = (k if b_transposed else n) if ldb is None else ldb
    ldc = n if ldc is None else ldc
    _require_matrices(what, ((A, "reads A", (k, m) if a_transposed else
                              (m, k), "k x m" if a_transposed else "m x k",
                              lda, "lda"),
                             (B, "reads B", (n, k) if b_transposed else
                              (k, n), "n x k" if b_transposed else "k x n",
                              ldb, "ldb"),
                             (C, "writes C", (m, n), "m x n", ldc, "ldc")))
    wtm, wtn = c.bm // c.wm, c.bn // c.wn

    # Stored tiles: A is bm x bk (a_transposed: bk x bm), B bk x bn
    # (b_transposed: bn x bk). Warpgroup products keep a bk x bn B in
    # blocks of 64 columns (rows of 128 bytes, as wgmma reads them).
    group = warpgroup_shape(c, dtype, a_transposed)
    b_blocks = group and not b_transposed
    a_shape = (c.bk, c.bm) if a_transposed else (c.bm, c.bk)
    b_shape = (c.bn, c.bk) if b_transposed else \
        (c.bk, 64 if b_blocks else c.bn)
    sw_a = mma_swizzle(a_shape[1], dtype)
    sw_b = mma_swizzle(b_shape[1], dtype)
    a_tiles = pipeline(dtype, c.bm * c.bk, c.stages)
    b_tiles = pipeline(dtype, c.bk * c.bn, c.stages)

    row0, col0 = _block_origin(c, m, n) if origin is None else origin
    warp = simdgroup_index_in_threadgroup()
    wrow = (warp // c.wn) * wtm
    wcol = (warp % c.wn) * wtn
    ktiles = (k + (c.bk - 1)) // c.bk
    rows_left = m - row0
    cols_left = n - col0

    def load(stage, kt):
        """Copies K tile kt into stage (tiles past K: nothing) and closes
        the group."""
        if isinstance(kt, int):
            copy_tiles(stage, kt)
        else:   # inside the loop: the last `ahead` steps have no tile left
            with if_(kt < ktiles):
                copy_tiles(stage, kt)
        copy_commit()

    def copy_tiles(stage, kt):
        k0 = kt * c.bk
        k_left = where(0, k - k0, k0 < k)
        if a_transposed:   # A^T tile: rows k0.., columns row0..
            copy_tile(stage[0], A, c.bk, c.bm, src_ld=lda,
                      src_offset=k0 * lda + row0, valid_rows=k_left,
                      valid_cols=rows_left, swizzle=sw_a)
        else:
            copy_tile(stage[0], A, c.bm, c.bk, src_ld=lda,
                      src_offset=row0 * lda + k0, valid_rows=rows_left,
                      valid_cols=k_left, swizzle=sw_a)
        if b_transposed:   # B^T tile: rows col0.., columns k0..
            copy_tile(stage[1], B, c.bn, c.bk, src_ld=ldb,
                      src_offset=col0 * ldb + k0, valid_rows=cols_left,
                      valid_cols=k_left, swizzle=sw_b)
        else:              # b_blocks: bk x 64 blocks of columns
            copy_tile(stage[1], B, c.bk, c.bn, src_ld=ldb,
                      src_offset=k0 * ldb + col0, valid_rows=k_left,
                      valid_cols=cols_left, swizzle=sw_b,
                      dst_ld=b_shape[1],
                      block_stride=c.bk * 64 if b_blocks else 0)

    # Tiles loaded ahead of the one computed on. Asynchronous warpgroup
    # products (3 stages or more) keep the previous step's product in
    # flight, so its stage is not refilled until the step after.
    asynchronous = group and c.stages >= 3
    ahead = c.stages - 2 if asynchronous else c.stages - 1
    for s in range_constexpr(ahead):
        load((a_tiles.stage(s), b_tiles.stage(s)), s)

    with for_range(0, ktiles, dtype="uint",
                   init=[mma_zeros(wtm, wtn)]) as (kt, carry):
        copy_wait(ahead - 1)
        barrier()
        # Free again: the stage of the product before the previous one
        # (asynchronous: every group completed it before this barrier), or
        # of the previous one.
        load((a_tiles.stage(ahead), b_tiles.stage(ahead)), kt + ahead)
        if group:          # the group's 64 rows; B is the whole tile
            a_op = mma_operand(a_tiles.front(), ld=c.bk,
                               offset=(warp // 4) * 64 * c.bk, swizzle=sw_a)
            b_op = mma_operand(b_tiles.front(), ld=b_shape[1],
                               transpose=b_transposed, swizzle=sw_b,
                               block_stride=c.bk * 64 if b_blocks else 0)
        else:
            a_op = mma_operand(a_tiles.front(), ld=a_shape[1],
                               offset=wrow if a_transposed else wrow * c.bk,
                               transpose=a_transposed, swizzle=sw_a)
            b_op = mma_operand(b_tiles.front(), ld=b_shape[1],
                               offset=wcol * c.bk if b_transposed else wcol,
                               transpose=b_transposed, swizzle=sw_b)
        carry[0] = mma(carry[0], a_op, b_op, k=c.bk, allow_tf32=allow_tf32,
                       warpgroup=group, asynchronous=asynchronous)
        a_tiles.advance()
        b_tiles.advance()
    acc = mma_wait(carry[0]) if asynchronous else carry[0]
    copy_wait(0)

    out_row, out_col = row0 + wrow, col0 + wcol
    if epilogue is not None:
        result = epilogue(acc, out_row, out_col)
        if result is not None:
            acc = result
    mma_store(acc, C, ld=ldc, offset=out_row * ldc + out_col,
              bounds=(where(0, m - out_row, out_row < m),
                      where(0, n - out_col, out_col < n)))
