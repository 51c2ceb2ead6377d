"""Simdgroup asynchronous copies (docs/reference/async-copy.md).

A copy moves elements between a buffer parameter (device memory) and a
``threadgroup_alloc`` tensor (threadgroup memory) on behalf of the whole
simdgroup: every lane of the simdgroup calls it with the same arguments and
the copy happens once. It returns an :class:`AsyncCopyEvent`;
:func:`async_copy_wait` blocks until the given events have completed, after
which every lane of the simdgroup sees the copied elements. Other
simdgroups see them after ``enigma.barrier()``.

Issue copies unconditionally or under a condition that is the same for the
lanes of a simdgroup (``with enigma.if_(enigma.simdgroup_index_in_threadgroup()
== 0):``); one under a lane-dependent ``if_`` or loop is an EnigmaError.

Metal prints Apple's undocumented AIR intrinsics (docs/design/async-copy.md),
CUDA uses ``cp.async``, the CPU plain copies.
"""

from __future__ import annotations

from ._control import RegisterTensor
from ._cooperation import ThreadgroupTensor
from ._dtypes import as_dtype
from ._ir import (BufferProxy, IRValue, current_tracer, fail, plain_index,
                  to_value)
from ._tensor import Tensor

__all__ = ["AsyncCopyEvent", "async_copy_1d_d2t", "async_copy_1d_t2d",
           "async_copy_2d_d2t", "async_copy_2d_t2d", "async_copy_wait",
           "async_copy_to_threadgroup", "async_copy_commit"]

_U32 = as_dtype("uint")
_U64 = as_dtype("ulong")


class AsyncCopyEvent:
    """What an async copy returns: pass it to :func:`async_copy_wait`. It
    has no value to compute with. Wait for it in the loop or branch that
    issued the copy (or one nested in it): events are not carried out of
    ``enigma.range`` / ``if_`` bodies."""

    __slots__ = ("_tracer", "_event", "_what")

    def __init__(self, tracer, event, what: str):
        self._tracer = tracer
        self._event = event
        self._what = what

    def __bool__(self):
        fail("an async copy event has no truth value; wait for it with "
             "enigma.async_copy_wait(event)")

    def __repr__(self) -> str:
        return f"<async copy event of {self._what}>"


def _call(what: str, function: str, *args):
    """``_core.<function>`` through the located call (``what`` names the
    operation outside a kernel body)."""
    return current_tracer(what).call(function, *args)


def _memory(x, what: str, role: str):
    """(core memory handle, base element offset) of a copy's dst or src."""
    if isinstance(x, BufferProxy):
        return x._buffer, 0
    if isinstance(x, ThreadgroupTensor):
        # A view of part of an allocation (a pipeline stage) starts inside it.
        start = getattr(x, "_view_start", None)
        return x._array, (start() if start is not None else 0)
    if isinstance(x, Tensor):
        # A Tensor stands for its memory (a buffer parameter or its
        # threadgroup array) from its base offset on.
        if x.swizzled:
            fail(f"{what}: {role} is tensor {x.name}, whose swizzled layout "
                 "does not keep its elements in order from its base offset; "
                 "copy an unswizzled view of the memory")
        return x._memory()[1], x.base_offset
    if isinstance(x, str):
        tracer = current_tracer(what)
        for proxy in getattr(tracer, "buffers", {}).values():
            if proxy.name == x:
                return proxy._buffer, 0
        fail(f"{what}: {role} names buffer {x!r}, but the kernel has no "
             "buffer parameter of that name")
    if isinstance(x, RegisterTensor):
        fail(f"{what}: {role} is a register tensor (per-thread memory); "
             "async copies move elements between buffers (device memory) "
             "and threadgroup_alloc tensors (threadgroup memory)")
    fail(f"{what}: {role} must be a buffer parameter, a threadgroup_alloc "
         "tensor, a pipeline stage, a Tensor or a buffer parameter's name, "
         f"got {type(x).__name__}")


def _index(x, what: str, name: str) -> IRValue:
    """An offset, row length or extent: a Python int >= 0 or a traced
    integer scalar."""
    if isinstance(x, IRValue):
        if x.lanes != 1 or x.dtype.is_float or x.dtype.name == "b1":
            shape = f"{x.lanes}-lane " if x.lanes != 1 else ""
            fail(f"{what}: {name} must be an integer scalar, got a "
                 f"{shape}{x.dtype.name} value")
        return x
    x = plain_index(x)
    if isinstance(x, bool) or not isinstance(x, int):
        fail(f"{what}: {name} must be an integer or a traced integer, got "
             f"{type(x).__name__}")
    if x < 0:
        fail(f"{what}: {name} must not be negative, got {x}")
    if x >= 2**64:
        fail(f"{what}: {name} {x} does not fit in 64 bits")
    return to_value(x, _U32 if x < 2**32 else _U64)


def _offset(base, offset, what: str, name: str) -> IRValue:
    """``base + offset`` as a traced integer (``base`` from a stage or
    Tensor)."""
    if isinstance(base, int) and isinstance(offset, int) and \
            not isinstance(offset, bool):
        return _index(base + offset, what, name)
    value = _index(offset, what, name)
    if isinstance(base, int) and base == 0:
        return value
    return value + base


def _copy(what: str, direction: str, dst, dst_offset, dst_per_row, src,
          src_offset, src_per_row, cols, rows) -> AsyncCopyEvent:
    tracer = current_tracer(what)
    dst_mem, dst_base = _memory(dst, what, "dst")
    src_mem, src_base = _memory(src, what, "src")
    args = [dst_mem, _offset(dst_base, dst_offset, what, "dst_offset")._value]
    if rows is not None:
        args.append(_index(dst_per_row, what, "dst_elements_per_row")._value)
    args += [src_mem, _offset(src_base, src_offset, what, "src_offset")._value]
    if rows is None:
        args.append(_index(cols, what, "count")._value)
        event = _call(what, "async_copy_1d", direction, *args)
    else:
        args += [_index(src_per_row, what, "src_elements_per_row")._value,
                 _index(cols, what, "tile_cols")._value,
                 _index(rows, what, "tile_rows")._value]
        event = _call(what, "async_copy_2d", direction, *args)
    return AsyncCopyEvent(tracer, event, what)


def async_copy_1d_d2t(dst, dst_offset, src, src_offset, count) -> AsyncCopyEvent:
    """Copies ``count`` elements from device memory to threadgroup memory:
    ``dst[dst_offset + i] = src[src_offset + i]``. ``dst`` is a
    threadgroup tensor (or pipeline stage), ``src`` a buffer parameter (a
    Tensor, or a buffer parameter's name); both of one element type.
    Returns the event to wait for."""
    return _copy("async_copy_1d_d2t", "d2t", dst, dst_offset, None, src,
                 src_offset, None, count, None)


def async_copy_1d_t2d(dst, dst_offset, src, src_offset, count) -> AsyncCopyEvent:
    """Copies ``count`` elements from threadgroup memory to device memory:
    ``dst[dst_offset + i] = src[src_offset + i]``, ``dst`` a buffer
    parameter, ``src`` a threadgroup tensor. Returns the event to wait for."""
    return _copy("async_copy_1d_t2d", "t2d", dst, dst_offset, None, src,
                 src_offset, None, count, None)


def async_copy_2d_d2t(dst, dst_offset, dst_elements_per_row, src, src_offset,
                      src_elements_per_row, tile_cols, tile_rows
                      ) -> AsyncCopyEvent:
    """Copies a tile of ``tile_rows`` rows of ``tile_cols`` elements from
    device memory to threadgroup memory: ``dst[dst_offset + r *
    dst_elements_per_row + c] = src[src_offset + r * src_elements_per_row +
    c]``. Returns the event to wait for."""
    return _copy("async_copy_2d_d2t", "d2t", dst, dst_offset,
                 dst_elements_per_row, src, src_offset, src_elements_per_row,
                 tile_cols, tile_rows)


def async_copy_2d_t2d(dst, dst_offset, dst_elements_per_row, src, src_offset,
                      src_elements_per_row, tile_cols, tile_rows
                      ) -> AsyncCopyEvent:
    """The tile copy of :func:`async_copy_2d_d2t` from threadgroup memory
    (``src``) to device memory (``dst``). Returns the event to wait for."""
    return _copy("async_copy_2d_t2d", "t2d", dst, dst_offset,
                 dst_elements_per_row, src, src_offset, src_elements_per_row,
                 tile_cols, tile_rows)


def async_copy_wait(*events) -> None:
    """Blocks the simdgroup until the copies of every event have completed;
    afterwards every lane of the simdgroup sees their elements (call
    ``enigma.barrier()`` before other simdgroups read them). Lists and
    tuples of events are flattened; with no events nothing happens."""
    what = "async_copy_wait"
    current_tracer(what)
    flat = []
    for e in events:
        flat.extend(e if isinstance(e, (list, tuple)) else (e,))
    for e in flat:
        if not isinstance(e, AsyncCopyEvent):
            fail(f"{what} takes the events that async copies return, got "
                 f"{type(e).__name__}")
    if flat:
        _call(what, "async_copy_wait", [e._event for e in flat])


def async_copy_to_threadgroup(src, dst, count, src_offset=0,
                              dst_offset=0) -> AsyncCopyEvent:
    """The original's first form of :func:`async_copy_1d_d2t` (note the
    argument order: source first)."""
    return _copy("async_copy_to_threadgroup", "d2t", dst, dst_offset, None,
                 src, src_offset, None, count, None)


def async_copy_commit(token) -> None:
    """Kept for programs written against the original's first async copy
    API: copies are committed when issued, so this does nothing (``token``
    must be an event)."""
    current_tracer("async_copy_commit")
    if not isinstance(token, AsyncCopyEvent):
        fail("async_copy_commit takes the event an async copy returned, got "
             f"{type(token).__name__}")
