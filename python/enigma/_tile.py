"""Tile helpers (docs/reference/tile.md): ``copy``, ``gemm`` and
``pipeline``, the building blocks of tiled kernels, with the original
Enigma DSL's meanings: ``copy`` copies every element in the thread that
calls it (``cooperative=True`` splits the work over the threadgroup),
``gemm`` accumulates into a per-thread ``register_tensor`` or, together
with the whole threadgroup, into memory, and a :class:`Pipeline` rotates
with ``advance()``.

They are trace-time helpers: each call expands, inside the kernel body
being traced, into existing traced operations (thread queries, counted
loops, ``if_``, loads and stores, register tensors, simdgroup 8x8
matrices). Nothing here adds an op to the dialect, so every backend runs
them as it runs any other kernel. The design is in
docs/design/tile-helpers.md.

Memory operands (``src``/``dst`` of copy, ``A``/``B``/``C`` of gemm) are
buffer parameters, ``threadgroup_alloc`` tensors or the stages a
:class:`Pipeline` hands out; gemm also takes register tensors.
"""

from __future__ import annotations

import builtins

from ._threads import barrier as _barrier
from ._threads import (simd_barrier, simdgroup_index_in_threadgroup,
                        simdgroups_per_threadgroup, thread_index_in_threadgroup,
                        threads_per_threadgroup)
from ._control import RegisterTensor, for_range, if_, register_tensor
from ._cooperation import ThreadgroupTensor, threadgroup_alloc
from ._dtypes import as_dtype
from ._math import fma
from ._simd import (simdgroup_matrix_load, simdgroup_matrix_store,
                    simdgroup_multiply_accumulate)
from ._ir import (BufferProxy, EnigmaError, IRValue, current_tracer, fail,
                  to_value)
from ._slots import Slot, control_state
from ._tensor import MAX_VECTOR_BYTES, Tensor
from ._tensor_offsets import power_of_two_divisor

__all__ = ["copy", "gemm", "pipeline", "Pipeline", "PipelineStage"]

_U32 = as_dtype("uint")
_I32 = as_dtype("int")
COPY_WIDTHS = (1, 2, 4, 8)
# Element counts are indexed with uint loops that scf.for compares as
# signed integers, so every extent must stay below 2**31.
_MAX_EXTENT = 2**31 - 1
# Simdgroup tiles are 8x8 (Metal's simdgroup_float8x8 / half8x8).
_SIMD_TILE = 8
_SIMD_DTYPES = ("f32", "f16")
# K steps of 8 unrolled per iteration of the simdgroup path's K loop: the
# accumulator tile cannot be loop-carried, so it goes through memory once
# per iteration; beyond this many steps the K loop becomes a traced loop.
_SIMD_UNROLL = 8
# Up to this K the scalar path unrolls its dot product at trace time.
_SCALAR_UNROLL_K = 32
# The register path unrolls K when M * N * K multiply-adds stay within this.
_REGISTER_UNROLL_MACS = 1024


# --------------------------------------------------------------------------
# Memory operands
# --------------------------------------------------------------------------

class PipelineStage(ThreadgroupTensor):
    """One stage of a :class:`Pipeline`: ``size`` consecutive elements of
    the pipeline's threadgroup allocation, starting at element ``offset``
    (a traced ``uint``, because the stage a name such as ``front()`` refers
    to may be chosen at run time inside a traced loop).

    A stage is a threadgroup tensor of ``size`` elements: ``s[i]`` loads and
    ``s[i] = v`` stores element ``i`` of the stage (a constant ``i``
    outside ``0..size-1`` is an EnigmaError, a traced one is not checked),
    ``len(s)`` is ``size``, and it goes wherever a ``threadgroup_alloc``
    tensor does (``copy``, ``gemm``, ``load_if`` / ``store_if``, atomics,
    simdgroup matrix loads and stores). A stage denotes the buffer it named
    when it was taken: after ``advance()`` / ``swap()`` call ``front()`` /
    ``back()`` again."""

    def __init__(self, tensor: ThreadgroupTensor, offset: IRValue, size: int,
                 label: str):
        super().__init__(tensor._tracer, tensor._array, tensor.dtype, size)
        self._tensor = tensor
        self.offset = offset
        self.name = label

    def _index(self, index) -> IRValue:
        """The element of the whole allocation that is element ``index`` of
        the stage (what every access of a threadgroup tensor goes through,
        atomics included)."""
        if isinstance(index, IRValue):
            if index.lanes != 1 or index.dtype.is_float or \
                    index.dtype.name == "b1":
                fail(f"index of {self.name} must be an integer, got a "
                     f"{index.dtype.name} value")
            return self.offset + index.cast(_U32)
        if isinstance(index, bool) or not isinstance(index, int):
            fail(f"index of {self.name} must be an integer, got "
                 f"{type(index).__name__}")
        if not 0 <= index < self.size:
            fail(f"index {index} is out of range for {self.name} "
                 f"({self.size} elements)")
        return self.offset + index

    def _view_start(self) -> IRValue:
        """Where the stage starts in the allocation (simdgroup matrix loads
        and stores add it to their offset)."""
        return self.offset

    def __repr__(self) -> str:
        return f"<{self.name}: threadgroup {self.dtype.msl}[{self.size}]>"


class _Operand:
    """A memory operand of copy / gemm, normalised: ``memory`` (a buffer
    parameter, threadgroup tensor or register tensor; stages and
    ``enigma.Tensor`` views resolve to the memory they view) whose element
    ``i`` of the operand is ``memory[base + i]``; ``size`` is the element
    count when it is known at trace time (threadgroup and register memory),
    None for buffers. Register tensors are read at Python-int indices
    only."""

    def __init__(self, what: str, role: str, operand, registers=False):
        self.role = role
        self.shape = None
        if isinstance(operand, BufferProxy):
            # copy moves whole vectors of a vec_width buffer, as the
            # original does; gemm needs scalar elements.
            if operand.lanes > 1 and what != "copy":
                fail(f"{what}: {role} is buffer '{operand.name}', which holds "
                     f"{operand.lanes}-lane vectors (vec_width); {what} works "
                     "on scalar elements")
            self.memory, self.base, self.size = operand, 0, None
            self.space = "device"
            self.label = f"buffer '{operand.name}'"
        elif isinstance(operand, PipelineStage):
            self.memory, self.base = operand._tensor, operand.offset
            self.size = operand.size
            self.space = "threadgroup"
            self.label = operand.name
        elif isinstance(operand, ThreadgroupTensor):
            self.memory, self.base, self.size = operand, 0, operand.size
            self.space = "threadgroup"
            self.label = operand.name
        elif isinstance(operand, Tensor):
            # The original's Tensor: element i is memory[base_offset + i]
            # (a single index is a raw element index; the layout is unused).
            if operand.swizzled:
                fail(f"tensor {operand.name} has a swizzled layout, so its "
                     "elements do not lie in order from its base offset; "
                     "move them with its load() / store() or by coordinate")
            self.memory = operand._memory()[0]
            self.base = operand.base_offset
            if isinstance(self.base, IRValue):
                self.base = self.base.cast(_U32)
            self.space = operand.address_space
            self.size = self.memory.size - self.base \
                if self.space == "threadgroup" and \
                isinstance(self.base, int) else None
            self.label = f"tensor {operand.name}"
        elif registers and isinstance(operand, RegisterTensor):
            self.memory, self.base, self.size = operand, 0, operand.size
            self.shape = operand.shape
            self.space = "register"
            self.label = "register tensor"
        else:
            kinds = ["a buffer parameter", "a threadgroup_alloc tensor",
                     "a pipeline stage", "an enigma.Tensor"] + \
                (["a register tensor"] if registers else [])
            fail(f"{what}: {role} must be {', '.join(kinds[:-1])} or "
                 f"{kinds[-1]}, got {type(operand).__name__}")
        self.dtype = self.memory.dtype

    def index(self, i):
        """The memory index of operand element ``i``."""
        if isinstance(self.base, int) and self.base == 0:
            return i
        return self.base + i

    def _register_key(self, i: int) -> tuple:
        key = []
        for d in reversed(self.shape):
            i, r = divmod(i, d)
            key.append(r)
        return tuple(reversed(key))

    def load(self, i) -> IRValue:
        if self.space == "register":
            return self.memory[self._register_key(i)]
        return self.memory[self.index(i)]

    def store(self, i, value) -> None:
        if self.space == "register":
            self.memory[self._register_key(i)] = value
            return
        self.memory[self.index(i)] = value

    def vector_memory(self):
        """The core handle that vector_load / vector_store take."""
        if isinstance(self.memory, BufferProxy):
            return self.memory._buffer
        return self.memory._array

    def require(self, what: str, needed: int, how: str,
                at_launch: bool = False) -> None:
        """EnigmaError when a statically sized operand is too small. With
        ``at_launch`` (every element is touched: no mask), a buffer
        parameter, whose size is known only then, is checked at each
        launch: a smaller one is a DispatchError (enigma.matrix_extents;
        not under an if or in a loop)."""
        if self.size is not None and needed > self.size:
            fail(f"{what}: {self.role} ({self.label}) has {self.size} "
                 f"elements but {how} needs {needed}")
        if at_launch and self.size is None and \
                isinstance(self.memory, BufferProxy) and \
                isinstance(self.base, int) and self.base == 0:
            count = to_value(needed, _U32 if needed < 2**32 else
                             as_dtype("u64"))._value
            one = to_value(1, _U32)._value
            current_tracer(what).call(
                "require_matrix_extent", self.memory._buffer, one, count,
                count, f"{what} uses {self.role} as {how}")


def _group_size() -> IRValue:
    """Threads in this threadgroup (the actual, possibly partial, size)."""
    return (threads_per_threadgroup("x") * threads_per_threadgroup("y")
            * threads_per_threadgroup("z"))


def _offset(value, what: str, name: str):
    """A copy offset: a non-negative Python int or a traced integer."""
    if isinstance(value, IRValue):
        if value.lanes != 1 or value.dtype.is_float or value.dtype.name == "b1":
            fail(f"{what}: {name} must be an integer, got a "
                 f"{value.dtype.name} value")
        return value.cast(_U32)
    if isinstance(value, bool) or not isinstance(value, int):
        fail(f"{what}: {name} must be an integer or a traced integer, got "
             f"{type(value).__name__}")
    if not 0 <= value <= _MAX_EXTENT:
        fail(f"{what}: {name} must be in 0..{_MAX_EXTENT}, got {value}")
    return value


# --------------------------------------------------------------------------
# copy
# --------------------------------------------------------------------------

def copy(src, dst, count, src_offset=0, dst_offset=0, mask_fn=None,
         coalesced_width=1, *, cooperative=False) -> None:
    """Copies ``count`` elements: ``dst[dst_offset + i] = src[src_offset +
    i]`` for ``i`` in ``0..count-1`` (converting to ``dst``'s element type,
    as a store does).

    As in the original DSL, the thread that calls ``copy`` copies all
    ``count`` elements itself, in chunks of ``coalesced_width`` (1, 2, 4 or
    8) consecutive elements; it may be called by one thread (under an
    ``if_``) or by each thread for its own data. With ``cooperative=True``
    the threads of the threadgroup share the work instead: thread ``t``
    (its ``thread_index_in_threadgroup``) copies the chunks ``t, t + T, t +
    2T, ...`` (``T`` threads in the group), so that neighbouring threads
    touch neighbouring memory; then every thread of the group must make the
    same call.

    ``src`` and ``dst`` are buffer parameters (whole vectors of a
    ``vec_width`` buffer), ``threadgroup_alloc`` tensors, pipeline stages or
    ``enigma.Tensor`` views (from their ``base_offset``). ``count`` is a Python int >= 0 or a traced integer;
    the offsets are Python ints >= 0 or traced integers. ``mask_fn(i)``,
    when given, is called with the traced element index ``i`` (an ``int``,
    before the offsets) and returns a bool: elements where it is false are
    neither read nor written.

    Without ``mask_fn``, when ``count`` and both starting elements are
    provably multiples of the vector width (Python ints, or traced values
    built as multiples, such as ``c * 64``), each chunk moves as 2- or
    4-element vector accesses (a ``float4`` for ``coalesced_width=4``),
    as :meth:`Tensor.load` does; otherwise element by element.

    No barrier is inserted: call ``enigma.barrier()`` after the copy before
    other threads read ``dst``, and before ``src`` is overwritten while
    other threads may still be copying from it."""
    what = "copy"
    current_tracer(what)
    src_op = _Operand(what, "src", src)
    dst_op = _Operand(what, "dst", dst)
    if not isinstance(cooperative, bool):
        fail(f"{what}: cooperative must be True or False, got "
             f"{cooperative!r}")
    if isinstance(coalesced_width, bool) or \
            coalesced_width not in COPY_WIDTHS:
        fail(f"{what}: coalesced_width must be one of "
             f"{', '.join(map(str, COPY_WIDTHS))}, got {coalesced_width!r}")
    width = coalesced_width
    if isinstance(count, IRValue):
        if count.lanes != 1 or count.dtype.is_float or count.dtype.name == "b1":
            fail(f"{what}: count must be an integer, got a "
                 f"{count.dtype.name} value")
        count = count.cast(_U32)
    elif isinstance(count, bool) or not isinstance(count, int):
        fail(f"{what}: count must be a Python int or a traced integer, got "
             f"{type(count).__name__}")
    elif count < 0:
        fail(f"{what}: count must not be negative, got {count}")
    elif count > _MAX_EXTENT:
        fail(f"{what}: count {count} is too large (at most {_MAX_EXTENT})")
    if mask_fn is not None and not callable(mask_fn):
        fail(f"{what}: mask_fn must be a function of the element index that "
             f"returns a bool, got {type(mask_fn).__name__}")
    src_base = _offset(src_offset, what, "src_offset")
    dst_base = _offset(dst_offset, what, "dst_offset")
    if isinstance(count, int):
        if count == 0:
            return
        for op, base, name in ((src_op, src_base, "src_offset"),
                               (dst_op, dst_base, "dst_offset")):
            if isinstance(base, int):
                op.require(what, base + count,
                           f"{name} {base} + count {count}")
            else:
                op.require(what, count, f"count {count}")
    # Whether a chunk may run past the end: only the last chunk can, and
    # only when count is not (provably) a multiple of the width.
    ragged = width > 1 and power_of_two_divisor(count) % width != 0
    lanes = 1 if ragged or mask_fn is not None or \
        _vector_elements(src_op) or _vector_elements(dst_op) else \
        _copy_vector_lanes(src_op, dst_op, src_base, dst_base, width)

    if cooperative:
        first, step = thread_index_in_threadgroup() * width, \
            _group_size() * width
    else:
        first, step = 0, width
    with for_range(first, count, step, dtype="uint") as chunk:
        for lane in builtins.range(0, width, lanes):
            i = chunk + lane if lane else chunk
            if lanes > 1:
                _copy_vector(src_op, dst_op, src_base, dst_base, i, lanes)
                continue
            guard = i < count if ragged and lane else None
            if mask_fn is not None:
                # The original's element index is an int (its loop counter).
                guard = _mask(mask_fn(i.cast(_I32)), guard, what)
                if guard is False:
                    continue
            _copy_element(src_op, dst_op, src_base, dst_base, i, guard)


def _vector_elements(op) -> bool:
    """Whether the operand's elements are vectors (a vec_width buffer)."""
    return getattr(op.memory, "lanes", 1) > 1


def _copy_vector_lanes(src_op, dst_op, src_base, dst_base, width) -> int:
    """Lanes per vector access of a chunk (1: element by element). A chunk
    starts at a multiple of ``width``, so each access is aligned to its own
    size when both operands start at multiples of it."""
    if "b1" in (src_op.dtype.name, dst_op.dtype.name):
        return 1
    itemsize = max(src_op.dtype.itemsize, dst_op.dtype.itemsize)
    lanes = min(width, 4, MAX_VECTOR_BYTES // itemsize)
    starts = (src_op.base, src_base, dst_op.base, dst_base)
    while lanes > 1 and any(power_of_two_divisor(x) % lanes for x in starts):
        lanes //= 2
    return lanes


def _copy_vector(src_op, dst_op, src_base, dst_base, i, lanes):
    """Elements i..i+lanes-1 as one vector load and one vector store."""
    tracer = current_tracer("copy")

    def index(op, base):
        at = i if isinstance(base, int) and base == 0 else i + base
        return op.index(at)._value

    vec = tracer.call("vector_load", src_op.vector_memory(),
                      index(src_op, src_base), lanes)
    tracer.call("vector_store", dst_op.vector_memory(),
                index(dst_op, dst_base), vec)


def _mask(mask, guard, what: str):
    """Combines ``mask`` (what mask_fn returned) with the bounds guard;
    False means the element is never copied, None always."""
    if isinstance(mask, bool):
        return guard if mask else False
    if not isinstance(mask, IRValue) or mask.dtype.name != "b1" or \
            mask.lanes != 1:
        fail(f"{what}: mask_fn must return a bool (a traced comparison or "
             f"True/False), got "
             f"{getattr(mask, 'dtype', type(mask).__name__)}")
    return mask if guard is None else guard & mask


def _copy_element(src_op, dst_op, src_base, dst_base, i, guard):
    def move():
        src_index = i if isinstance(src_base, int) and src_base == 0 \
            else i + src_base
        dst_index = i if isinstance(dst_base, int) and dst_base == 0 \
            else i + dst_base
        dst_op.store(dst_index, src_op.load(src_index))

    if guard is None:
        move()
    else:
        with if_(guard):
            move()


# --------------------------------------------------------------------------
# gemm
# --------------------------------------------------------------------------

def _extent(value, name: str) -> int:
    if isinstance(value, IRValue):
        fail(f"gemm: {name} must be a Python int: the tile shape is fixed "
             "when the kernel is traced (loop over tiles for run-time sizes)")
    if isinstance(value, bool) or not isinstance(value, int):
        fail(f"gemm: {name} must be a Python int, got {type(value).__name__}")
    if value <= 0:
        fail(f"gemm: {name} must be positive, got {value}")
    return value


def _accumulator_type(accum_dtype):
    try:
        dtype = as_dtype(accum_dtype)
    except EnigmaError as e:
        fail(f"gemm: accum_dtype: {e}")
    if dtype.name not in ("f32", "f16", "bf16", "i32", "u32", "i64", "u64"):
        fail(f"gemm: accum_dtype must be float, half, bfloat or a 32/64-bit "
             f"integer type, got {dtype.name}")
    return dtype


def _check_types(a, b, c, accum) -> None:
    for op in (a, b, c):
        if op.dtype.name == "b1":
            fail(f"gemm: {op.role} ({op.label}) holds bool; gemm needs "
                 "numbers")
    if accum.is_float:
        if not c.dtype.is_float:
            fail(f"gemm: C ({c.label}) holds {c.dtype.name} but accum_dtype "
                 f"is {accum.name}: the float result would be truncated; use "
                 "a float C or an integer accum_dtype")
    else:
        for op in (a, b, c):
            if op.dtype.is_float:
                fail(f"gemm: accum_dtype {accum.name} is an integer type but "
                     f"{op.role} ({op.label}) holds {op.dtype.name}; "
                     "accumulate floats in float")


def _simdgroup_blocker(a, b, c, accum, M, N, K):
    """Why the simdgroup path cannot compute this gemm (None when it can)."""
    bad = [f"{n}={v}" for n, v in (("M", M), ("N", N), ("K", K))
           if v % _SIMD_TILE]
    if bad:
        return (f"M, N and K must be multiples of {_SIMD_TILE} (8x8 "
                f"simdgroup tiles), got {', '.join(bad)}")
    if accum.name not in _SIMD_DTYPES:
        return (f"accum_dtype must be float or half, got {accum.name}")
    for op in (a, b, c):
        if op.dtype != accum:
            return (f"A, B and C must all hold accum_dtype ({accum.name}): "
                    f"the 8x8 tiles accumulate in their own element type, "
                    f"but {op.role} ({op.label}) holds {op.dtype.name}")
    return None


def gemm(A, B, C, *, M, N, K, transpose_A=False, transpose_B=False,
         accum_dtype="float", use_simdgroup=None, barrier=True) -> None:
    """``C[M, N] += op(A)[M, K] @ op(B)[K, N]`` on row-major tiles.

    ``A`` and ``B`` are buffer parameters, ``threadgroup_alloc`` tensors or
    pipeline stages, element ``(r, c)`` of an ``R x C`` tile being element
    ``r * C + c``. ``op(A)`` is ``A`` (``M x K``), or with ``transpose_A``
    the transpose of ``A`` stored ``K x M``; likewise ``transpose_B`` reads
    ``B`` stored ``N x K``. ``M``, ``N``, ``K`` are Python ints. Products
    are summed in ``accum_dtype`` (float, half, bfloat or a 32/64-bit
    integer type) starting from ``C``'s value; the sum is stored back into
    ``C``.

    ``C`` a ``register_tensor`` of shape ``(M, N)`` (the original's scalar
    gemm): the calling thread computes the whole tile into its own
    registers; any thread may call it, alone or with others. ``A`` and
    ``B`` may then be register tensors too (shapes ``(M, K)`` / ``(K, N)``,
    or transposed); K is then unrolled.

    ``C`` in memory (a buffer, threadgroup tensor or stage): the threads of
    the threadgroup compute the tile together, after a threadgroup barrier
    (so A and B written by other threads just before are seen, as the
    original's gemm does; ``barrier=False`` leaves it out where the caller
    has already synchronised). The scalar path gives each thread the output
    elements ``t, t + T, ...`` (``T`` threads in the group). With
    ``use_simdgroup=True``, each simdgroup computes whole 8x8 output tiles
    with ``simdgroup_multiply_accumulate`` (transposed operands through
    transposed tile loads); this needs M, N, K multiples of 8 and A, B, C
    all of ``accum_dtype`` float or half (else an EnigmaError says which).
    ``use_simdgroup=None`` picks the simdgroup path exactly when those
    hold. A threadgroup whose size is not a multiple of 32 takes the scalar
    path at run time either way. Put ``enigma.barrier()`` between the gemm
    and other threads' reads of C. Repeated gemm calls with the same C, M,
    N and path give each C element to the same thread (or simdgroup) every
    time. Every thread of the group must reach the call."""
    what = "gemm"
    current_tracer(what)
    M, N, K = _extent(M, "M"), _extent(N, "N"), _extent(K, "K")
    for name, size in (("M * N", M * N), ("M * K", M * K), ("K * N", K * N)):
        if size > _MAX_EXTENT:
            fail(f"gemm: {name} = {size} elements is too large (at most "
                 f"{_MAX_EXTENT})")
    for name, flag in (("transpose_A", transpose_A),
                       ("transpose_B", transpose_B)):
        if not isinstance(flag, bool):
            fail(f"gemm: {name} must be True or False, got {flag!r}")
    if use_simdgroup is not None and not isinstance(use_simdgroup, bool):
        fail(f"gemm: use_simdgroup must be True, False or None (automatic), "
             f"got {use_simdgroup!r}")
    if not isinstance(barrier, bool):
        fail(f"gemm: barrier must be True or False, got {barrier!r}")
    a = _Operand(what, "A", A, registers=True)
    b = _Operand(what, "B", B, registers=True)
    c = _Operand(what, "C", C, registers=True)
    accum = _accumulator_type(accum_dtype)
    if c.space == "register":
        if use_simdgroup:
            fail("gemm: use_simdgroup=True but C is a register tensor: "
                 "simdgroup tiles are stored to memory (pass a threadgroup "
                 "tensor or buffer as C)")
        _require_shape(c, (M, N))
        _require_shape(a, (K, M) if transpose_A else (M, K))
        _require_shape(b, (N, K) if transpose_B else (K, N))
        _check_types(a, b, c, accum)
        _gemm_registers(a, b, c, accum, M, N, K, transpose_A, transpose_B)
        return
    for op in (a, b):
        if op.space == "register":
            fail(f"gemm: {op.role} is a register tensor, so C must be one "
                 "too (each thread then computes its own tile); C is "
                 f"{c.label}")
    a.require(what, M * K, f"{'a K x M' if transpose_A else 'an M x K'} tile "
              f"(M={M}, K={K})", at_launch=True)
    b.require(what, K * N, f"{'an N x K' if transpose_B else 'a K x N'} tile "
              f"(K={K}, N={N})", at_launch=True)
    c.require(what, M * N, f"an M x N tile (M={M}, N={N})", at_launch=True)
    _check_types(a, b, c, accum)

    blocker = _simdgroup_blocker(a, b, c, accum, M, N, K)
    if use_simdgroup and blocker:
        fail(f"gemm: use_simdgroup=True but {blocker}")
    if barrier:
        spaces = {op.space for op in (a, b, c)}
        _barrier("mem_device_and_threadgroup" if len(spaces) == 2
                 else f"mem_{spaces.pop()}")
    if use_simdgroup is False or blocker:
        _gemm_scalar(a, b, c, accum, M, N, K, transpose_A, transpose_B)
        return
    # Simdgroup matrices need full simdgroups (CUDA's warp shuffles use all
    # 32 lanes), which only the dispatch decides: a group of another size
    # takes the scalar path. The condition is the same for every thread of
    # the group, so the simdgroup ops stay under uniform control flow.
    with if_(_group_size() % 32 == 0) as (full, partial):
        with full:
            _gemm_simdgroup(a, b, c, M, N, K, transpose_A, transpose_B)
        with partial:
            _gemm_scalar(a, b, c, accum, M, N, K, transpose_A, transpose_B)


def _require_shape(op, shape) -> None:
    """A register operand must have exactly the tile's shape."""
    if op.space == "register" and tuple(op.shape) != shape:
        fail(f"gemm: register tensor {op.role} has shape {tuple(op.shape)} "
             f"but the tile is {shape}")


def _gemm_registers(a, b, c, accum, M, N, K, transpose_A, transpose_B):
    """The calling thread computes the whole tile: for each k, the M values
    of column k of op(A) and the N values of row k of op(B) are read once
    and their outer product is added to the M x N accumulators (a register
    tensor, so they stay in registers). A traced k (a loop for large
    tiles) indexes memory operands only: register operands force the K
    loop to be unrolled."""
    C = c.memory
    acc = C
    if C.dtype != accum:
        acc = register_tensor((M, N), accum)
        for m in builtins.range(M):
            for n in builtins.range(N):
                acc[m, n] = C[m, n].cast(accum)

    def step(k):
        xs = [a.load(k * M + m if transpose_A else m * K + k).cast(accum)
              for m in builtins.range(M)]
        ys = [b.load(n * K + k if transpose_B else k * N + n).cast(accum)
              for n in builtins.range(N)]
        for m in builtins.range(M):
            for n in builtins.range(N):
                acc[m, n] = fma(xs[m], ys[n], acc[m, n]) if accum.is_float \
                    else acc[m, n] + xs[m] * ys[n]

    if "register" in (a.space, b.space) or \
            M * N * K <= _REGISTER_UNROLL_MACS:
        for k in builtins.range(K):
            step(k)
    else:
        with for_range(0, K, dtype="uint") as k:
            step(k)
    if acc is not C:
        for m in builtins.range(M):
            for n in builtins.range(N):
                C[m, n] = acc[m, n].cast(C.dtype)


def _gemm_scalar(a, b, c, accum, M, N, K, transpose_A, transpose_B):
    """Thread t owns the output elements t, t + T, ...; each is a dot
    product of length K accumulated in ``accum``."""
    tid = thread_index_in_threadgroup()
    with for_range(tid, M * N, _group_size(), dtype="uint") as e:
        m = e // N
        n = e % N

        def term(k, acc):
            x = a.load(k * M + m if transpose_A else m * K + k).cast(accum)
            y = b.load(n * K + k if transpose_B else k * N + n).cast(accum)
            return fma(x, y, acc) if accum.is_float else acc + x * y

        acc = c.load(e).cast(accum)
        if K <= _SCALAR_UNROLL_K:
            for k in builtins.range(K):
                acc = term(k, acc)
        else:
            with for_range(0, K, dtype="uint", init=[acc]) as (k, carry):
                carry[0] = term(k, carry[0])
            acc = carry[0]
        c.store(e, acc)


def _matrix_offset(op, offset):
    return (offset if isinstance(op.base, int) and op.base == 0
            else op.base + offset)


def _gemm_simdgroup(a, b, c, M, N, K, transpose_A, transpose_B):
    """Simdgroup s owns the 8x8 output tiles s, s + S, ... (S simdgroups);
    for each it walks K in steps of 8 with simdgroup_multiply_accumulate.
    A transposed operand is read with transposed tile loads (A stored K x M:
    the tile at (row0, k0) starts at k0 * M + row0, rows M apart).

    A matrix cannot be carried by a traced loop, so the accumulator tile is
    loaded from C, updated by up to _SIMD_UNROLL unrolled steps and stored
    back; longer K runs a traced loop of such blocks."""
    elem = a.dtype
    tiles_n = N // _SIMD_TILE
    steps = K // _SIMD_TILE
    flags = "mem_threadgroup" if c.space == "threadgroup" else "mem_device"
    sg = simdgroup_index_in_threadgroup()
    with for_range(sg, (M // _SIMD_TILE) * tiles_n,
                   simdgroups_per_threadgroup(), dtype="uint") as t:
        row0 = (t // tiles_n) * _SIMD_TILE
        col0 = (t % tiles_n) * _SIMD_TILE
        c_at = _matrix_offset(c, row0 * N + col0)

        def block(first_step, count):
            acc = simdgroup_matrix_load(c.memory, N, elem=elem,
                                        offset=c_at)
            for u in builtins.range(count):
                k0 = (first_step + u) * _SIMD_TILE
                tile_a = simdgroup_matrix_load(
                    a.memory, M if transpose_A else K, elem=elem,
                    offset=_matrix_offset(
                        a, k0 * M + row0 if transpose_A else row0 * K + k0),
                    transpose=transpose_A)
                tile_b = simdgroup_matrix_load(
                    b.memory, K if transpose_B else N, elem=elem,
                    offset=_matrix_offset(
                        b, col0 * K + k0 if transpose_B else k0 * N + col0),
                    transpose=transpose_B)
                acc = simdgroup_multiply_accumulate(tile_a, tile_b, acc)
            simdgroup_matrix_store(acc, c.memory, N, offset=c_at)

        if steps <= _SIMD_UNROLL:
            block(0, steps)
            return
        with for_range(0, steps // _SIMD_UNROLL, dtype="uint") as blk:
            block(blk * _SIMD_UNROLL, _SIMD_UNROLL)
            # The next block reloads the tile this one stored.
            simd_barrier(flags)
        if steps % _SIMD_UNROLL:
            block(steps - steps % _SIMD_UNROLL, steps % _SIMD_UNROLL)


# --------------------------------------------------------------------------
# pipeline
# --------------------------------------------------------------------------

class Pipeline:
    """Multi-buffered threadgroup memory, ``Pipeline(dtype, size,
    stages=2)`` (or :func:`pipeline`): ``stages`` (at least 2) buffers of
    ``size`` elements in one allocation, used as a ring so that one stage
    can be filled while another is computed on. Make it at the top level of
    the kernel body, like ``threadgroup_alloc``.

    Stage ``k`` (``0 <= k < stages``) is the buffer ``k`` places after the
    front in the ring. ``front()`` is stage 0 (the one to compute on),
    ``back()`` is stage ``stages - 1`` (the one to fill next), and
    ``advance()`` rotates the ring by one: the old stage 1 becomes the
    front, the old front becomes the back. ``rotate()`` is the same call;
    ``swap()`` is ``advance()`` for a double buffer (2 stages).

    The ring position is a traced ``uint`` kept with the kernel's carried
    values, so ``advance()`` works both in Python-unrolled loops (the
    position folds to a constant) and inside traced loops
    (``enigma.range``, ``for_range``, ``if_`` arms), where it becomes a
    loop-carried value and each stage's offset is computed at run time."""

    def __init__(self, dtype, size, stages=2):
        tracer = current_tracer("pipeline")
        for name, value in (("size", size), ("stages", stages)):
            if isinstance(value, bool) or not isinstance(value, int):
                fail(f"pipeline: {name} must be a Python int, got "
                     f"{type(value).__name__}")
        if size < 1:
            fail(f"pipeline: size must be at least 1, got {size}")
        if stages < 2:
            fail(f"pipeline: stages must be >= 2, got {stages} (a single "
                 "buffer is a threadgroup_alloc)")
        self._tensor = threadgroup_alloc(dtype, size * stages)
        self.dtype = self._tensor.dtype
        self.size = size
        self.stages = stages
        # The ring position lives in a control-flow slot: every loop or
        # branch traced from now on carries it, so advance() inside one is
        # seen by later iterations and by the code after it.
        self._position = Slot(to_value(0, _U32), "pipeline ring position")
        control_state(tracer).live.append(self._position)

    @property
    def position(self) -> IRValue:
        """The physical buffer (0..stages-1) that is the front now."""
        return self._position.value

    def stage(self, k) -> PipelineStage:
        """Stage ``k`` of the ring: a Python int in ``0..stages-1``, or a
        traced integer (taken modulo ``stages``)."""
        if isinstance(k, IRValue):
            if k.lanes != 1 or k.dtype.is_float or k.dtype.name == "b1":
                fail(f"pipeline.stage: k must be an integer, got a "
                     f"{k.dtype.name} value")
            k = k.cast(_U32)
        elif isinstance(k, bool) or not isinstance(k, int):
            fail(f"pipeline.stage: k must be an integer, got "
                 f"{type(k).__name__}")
        elif not 0 <= k < self.stages:
            fail(f"pipeline.stage: k must be in 0..{self.stages - 1} for a "
                 f"{self.stages}-stage pipeline, got {k}")
        if isinstance(k, int) and k == 0:
            buffer = self.position          # already in 0..stages-1
        else:
            buffer = (self.position + k) % self.stages
        label = f"pipeline stage {k}" if isinstance(k, int) \
            else "pipeline stage"
        return PipelineStage(self._tensor, buffer * self.size, self.size,
                             label)

    def front(self) -> PipelineStage:
        """Stage 0: the buffer being computed on."""
        return self.stage(0)

    def back(self) -> PipelineStage:
        """Stage ``stages - 1``: the buffer being filled."""
        return self.stage(self.stages - 1)

    def advance(self) -> None:
        """Rotates the ring forward by one stage (stage ``k + 1`` becomes
        stage ``k``, the front becomes the back). Barriers are the
        caller's."""
        current_tracer("pipeline.advance")
        self._position.value = (self.position + 1) % self.stages

    def rotate(self) -> None:
        """The same as :meth:`advance`."""
        self.advance()

    def swap(self) -> None:
        """Exchanges front and back of a 2-stage pipeline (an EnigmaError
        for any other number of stages: use advance())."""
        if self.stages != 2:
            fail(f"pipeline.swap: swap() exchanges the two buffers of a "
                 f"2-stage pipeline, this one has {self.stages} stages; use "
                 "advance()")
        self.advance()

    def __repr__(self) -> str:
        return (f"<pipeline of {self.stages} x threadgroup "
                f"{self.dtype.msl}[{self.size}]>")


def pipeline(dtype, size, stages=2) -> Pipeline:
    """Allocates ``stages`` (at least 2) threadgroup buffers of ``size``
    elements of ``dtype`` (one ``threadgroup_alloc`` of ``stages * size``
    elements) for multi-buffering: fill ``back()`` while computing on
    ``front()``, then ``advance()`` (``swap()`` for 2 stages). Call it at
    the top level of the kernel body, like ``threadgroup_alloc``; the
    threadgroup memory limit (Metal's 32 KiB, 227 KiB at most) counts all
    stages. ``size`` and ``stages`` are Python
    ints. The same as ``Pipeline(dtype, size, stages)``."""
    return Pipeline(dtype, size, stages)
