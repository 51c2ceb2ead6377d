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

This module holds the memory operands and ``copy``; ``gemm`` is in
``_tile_gemm``, ``pipeline`` and its stages in ``_tile_pipeline``.
"""

from __future__ import annotations

import builtins

from ._threads import thread_index_in_threadgroup, threads_per_threadgroup
from ._control import RegisterTensor, for_range, if_
from ._cooperation import ThreadgroupTensor
from ._dtypes import as_dtype
from ._ir import (BufferProxy, IRValue, current_tracer, fail, plain_index,
                  to_value)
from ._tensor import MAX_VECTOR_BYTES, Tensor
from ._tensor_offsets import power_of_two_divisor
from ._tile_pipeline import PipelineStage

__all__ = ["copy"]

_U32 = as_dtype("uint")
_I32 = as_dtype("int")
COPY_WIDTHS = (1, 2, 4, 8)
# Element counts are indexed with uint loops that scf.for compares as
# signed integers, so every extent must stay below 2**31.
MAX_EXTENT = 2**31 - 1


# --------------------------------------------------------------------------
# Memory operands
# --------------------------------------------------------------------------

class TileOperand:
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


def threads_in_group() -> IRValue:
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
    value = plain_index(value)
    if isinstance(value, bool) or not isinstance(value, int):
        fail(f"{what}: {name} must be an integer or a traced integer, got "
             f"{type(value).__name__}")
    if not 0 <= value <= MAX_EXTENT:
        fail(f"{what}: {name} must be in 0..{MAX_EXTENT}, got {value}")
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
    src_op = TileOperand(what, "src", src)
    dst_op = TileOperand(what, "dst", dst)
    if not isinstance(cooperative, bool):
        fail(f"{what}: cooperative must be True or False, got "
             f"{cooperative!r}")
    if isinstance(coalesced_width, bool) or \
            coalesced_width not in COPY_WIDTHS:
        fail(f"{what}: coalesced_width must be one of "
             f"{', '.join(map(str, COPY_WIDTHS))}, got {coalesced_width!r}")
    width = coalesced_width
    count = plain_index(count)
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
    elif count > MAX_EXTENT:
        fail(f"{what}: count {count} is too large (at most {MAX_EXTENT})")
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
            threads_in_group() * width
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
