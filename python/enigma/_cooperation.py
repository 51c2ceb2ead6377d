"""Threadgroup memory, atomics and function constants
(docs/reference/cooperation.md).

``threadgroup_alloc(dtype, size)`` returns a :class:`ThreadgroupTensor`.
Atomics are free functions (``enigma.atomic_fetch_add(buf, i, v)``) and
methods of buffer parameters and threadgroup tensors
(``buf.atomic_fetch_add(i, v)``); they return the old value.
``atomic_compare_exchange_weak`` returns ``(success, observed)``.
"""

from __future__ import annotations

from ._dtypes import as_dtype
from ._ir import (BufferProxy, ElementsOnly, IRValue, current_tracer, fail,
                  kind_of, plain_index, to_value)

MEMORY_ORDERS = ("relaxed", "acquire", "release", "acq_rel")


def _call(what: str, function: str, *args):
    """``_core.coop_<function>`` through the located call (``what`` names
    the operation outside a kernel body)."""
    return current_tracer(what).call("coop_" + function, *args)


def _order(order, what: str) -> str:
    if not isinstance(order, str) or order not in MEMORY_ORDERS:
        fail(f"{what}: unknown memory order {order!r}; use one of "
             + ", ".join(repr(o) for o in MEMORY_ORDERS))
    return order


# --------------------------------------------------------------------------
# Threadgroup memory
# --------------------------------------------------------------------------

# The longest threadgroup array `for x in t` reads element by element.
MAX_ITERATED_ELEMENTS = 256


class ThreadgroupTensor(ElementsOnly):
    """``threadgroup T name[size]``: an array shared by the threads of one
    threadgroup. ``t[i]`` loads, ``t[i] = v`` stores (converting ``v`` to
    the element type); the atomic methods of buffers work on it too. Its
    contents are undefined until written; separate writes and reads by
    other threads with ``enigma.barrier()``."""

    def __init__(self, tracer, array, dtype, size):
        self._tracer = tracer
        self._array = array
        self.dtype = dtype
        self.size = size  # None: the dynamic array, sized at each launch
        self.name = (f"threadgroup_alloc({dtype.name}, {size})"
                     if size is not None else
                     f"dynamic_threadgroup_alloc({dtype.name})")

    def _what(self) -> str:
        return self.name

    def _size_hint(self) -> str:
        if self.size is None:
            return ("its size is given at each launch (threadgroup_memory= "
                    "bytes); pass the element count as a scalar parameter")
        return f"it holds t.size = len(t) = {self.size} elements, in one row"

    def _has(self) -> str:
        return ("a threadgroup array has t[i], t[i] = v, t.size, t.dtype and "
                "the atomic methods (t.atomic_fetch_add(i, v), ...)")

    def __len__(self) -> int:
        if self.size is None:
            fail(f"len() of {self.name}: its size is given at each launch "
                 "(threadgroup_memory= bytes); pass the element count as a "
                 "scalar parameter")
        return self.size

    def __iter__(self):
        # Python's fallback iteration (t[0], t[1], ... until an error)
        # ended in "index out of range"; a static array reads its elements
        # in order, each load written out, so a long one is refused.
        if self.size is None:
            fail(f"{self.name} cannot be iterated: its length is given at "
                 "each launch; loop over indices with enigma.range(n) and "
                 "read t[i], n a scalar parameter")
        if self.size > MAX_ITERATED_ELEMENTS:
            fail(f"iterating {self.name} would unroll {self.size} loads (at "
                 f"most {MAX_ITERATED_ELEMENTS}); loop over indices with "
                 f"enigma.range({self.size}) and read t[i]")
        return (self[i] for i in range(self.size))

    def __bool__(self):
        # True, as any object: Python's truth test would call __len__.
        return True

    def _index(self, index) -> IRValue:
        if isinstance(index, IRValue):
            return index
        index = plain_index(index)
        if isinstance(index, bool) or not isinstance(index, int):
            fail(f"index of {self.name} must be an integer, got "
                 f"{kind_of(index)}")
        if index < 0 or (self.size is not None and index >= self.size):
            fail(f"index {index} is out of range for {self.name}")
        return to_value(index, as_dtype("u32"))

    def __getitem__(self, index) -> IRValue:
        idx = self._index(index)
        return IRValue(self._tracer, _call("threadgroup load",
                                           "threadgroup_load", self._array,
                                           idx._value))

    def __setitem__(self, index, value):
        idx = self._index(index)
        value = to_value(value, self.dtype)
        _call("threadgroup store", "threadgroup_store", self._array,
              idx._value, value._value)

    def __repr__(self) -> str:
        size = "" if self.size is None else self.size
        return f"<threadgroup {self.dtype.msl}[{size}]>"


def threadgroup_alloc(dtype, size) -> ThreadgroupTensor:
    """Allocates ``threadgroup <dtype> t[size]``, one array per threadgroup,
    and returns it as an indexable tensor with the atomic methods.

    Call it at the top level of the kernel body (not inside a loop or if).
    The kernel's threadgroup memory may not exceed 227 KiB, the most any
    target allows; a runtime whose device allows less refuses the kernel
    when it loads it (Metal: 32 KiB). ``size`` must be a positive Python
    int."""
    tracer = current_tracer("threadgroup_alloc")
    dtype = as_dtype(dtype)
    size = plain_index(size)
    if isinstance(size, bool) or not isinstance(size, int):
        fail(f"threadgroup_alloc: size must be a Python int, got "
             f"{type(size).__name__}")
    if size <= 0:
        fail(f"threadgroup_alloc: size must be positive, got {size}")
    if size >= 2**32:
        fail(f"threadgroup_alloc: size {size} is far beyond the 227 KiB of "
             "threadgroup memory any target allows")
    array = _call("threadgroup_alloc", "threadgroup_alloc", dtype.name, size)
    return ThreadgroupTensor(tracer, array, dtype, size)


def dynamic_threadgroup_alloc(dtype) -> ThreadgroupTensor:
    """The kernel's threadgroup array whose length is given at each launch:
    ``threadgroup_memory=`` bytes of ``execute``, ``prepare`` and the call
    form (Metal's ``threadgroup T* [[threadgroup(0)]]`` sized by
    ``setThreadgroupMemoryLength``, CUDA's dynamic shared memory).

    At most one per kernel, called at the top level of the kernel body; it
    starts on a 16-byte boundary. Take several arrays from it by offset.
    The kernel does not know the length (as in Metal): pass the element
    count as a scalar parameter. Indexing, stores and the atomic methods
    work as for ``threadgroup_alloc``; ``len()`` is an error."""
    tracer = current_tracer("dynamic_threadgroup_alloc")
    dtype = as_dtype(dtype)
    array = _call("dynamic_threadgroup_alloc", "dynamic_threadgroup_alloc",
                  dtype.name)
    return ThreadgroupTensor(tracer, array, dtype, None)


# --------------------------------------------------------------------------
# Atomics
# --------------------------------------------------------------------------

def _memory(mem, what: str):
    """(C++ memory object, dtype, index normaliser) of a buffer parameter or
    threadgroup tensor."""
    if isinstance(mem, BufferProxy):
        return mem._buffer, mem.dtype, mem._index
    if isinstance(mem, ThreadgroupTensor):
        return mem._array, mem.dtype, mem._index
    fail(f"{what} works on a buffer parameter or a threadgroup_alloc tensor, "
         f"got {type(mem).__name__}")


def _rmw(op: str, what: str, mem, index, value, order):
    handle, dtype, norm = _memory(mem, what)
    order = _order(order, what)
    idx = norm(index)
    value = to_value(value, dtype)
    return IRValue(idx._tracer, _call(what, "atomic_rmw", handle, idx._value,
                                      value._value, op, order))


def atomic_load(buf, index, order="relaxed") -> IRValue:
    """``atomic_load_explicit``: reads ``buf[index]`` atomically."""
    handle, dtype, norm = _memory(buf, "atomic_load")
    order = _order(order, "atomic_load")
    idx = norm(index)
    return IRValue(idx._tracer, _call("atomic_load", "atomic_load", handle,
                                      idx._value, order))


def atomic_store(buf, index, value, order="relaxed") -> None:
    """``atomic_store_explicit``: writes ``value`` to ``buf[index]``
    atomically."""
    handle, dtype, norm = _memory(buf, "atomic_store")
    order = _order(order, "atomic_store")
    idx = norm(index)
    value = to_value(value, dtype)
    _call("atomic_store", "atomic_store", handle, idx._value, value._value,
          order)


def atomic_exchange(buf, index, value, order="relaxed") -> IRValue:
    """``atomic_exchange_explicit``: stores ``value``, returns the old value."""
    return _rmw("exchange", "atomic_exchange", buf, index, value, order)


def atomic_fetch_add(buf, index, value, order="relaxed") -> IRValue:
    """``atomic_fetch_add_explicit``: ``buf[index] += value``; returns the
    old value. int, uint and float memory."""
    return _rmw("add", "atomic_fetch_add", buf, index, value, order)


def atomic_fetch_sub(buf, index, value, order="relaxed") -> IRValue:
    """``atomic_fetch_sub_explicit``: ``buf[index] -= value``; returns the
    old value. int, uint and float memory."""
    return _rmw("sub", "atomic_fetch_sub", buf, index, value, order)


def atomic_fetch_min(buf, index, value, order="relaxed") -> IRValue:
    """``atomic_fetch_min_explicit``: keeps the smaller value (signed for
    int memory, unsigned for uint); returns the old value."""
    return _rmw("min", "atomic_fetch_min", buf, index, value, order)


def atomic_fetch_max(buf, index, value, order="relaxed") -> IRValue:
    """``atomic_fetch_max_explicit``: keeps the larger value (signed for
    int memory, unsigned for uint); returns the old value."""
    return _rmw("max", "atomic_fetch_max", buf, index, value, order)


def atomic_fetch_and(buf, index, value, order="relaxed") -> IRValue:
    """``atomic_fetch_and_explicit``: ``buf[index] &= value``; returns the
    old value. int and uint memory."""
    return _rmw("and", "atomic_fetch_and", buf, index, value, order)


def atomic_fetch_or(buf, index, value, order="relaxed") -> IRValue:
    """``atomic_fetch_or_explicit``: ``buf[index] |= value``; returns the
    old value. int and uint memory."""
    return _rmw("or", "atomic_fetch_or", buf, index, value, order)


def atomic_fetch_xor(buf, index, value, order="relaxed") -> IRValue:
    """``atomic_fetch_xor_explicit``: ``buf[index] ^= value``; returns the
    old value. int and uint memory."""
    return _rmw("xor", "atomic_fetch_xor", buf, index, value, order)


def atomic_compare_exchange_weak(buf, index, expected, desired,
                                 success_order="relaxed",
                                 failure_order="relaxed"):
    """``atomic_compare_exchange_weak_explicit``: if ``buf[index] ==
    expected`` stores ``desired``. Returns ``(success, observed)``: a bool
    IRValue that is true when the store happened, and the value found in
    memory (equal to ``expected`` on success). Like Metal's, it may fail
    spuriously, so use it in a retry loop; the CPU and CUDA backends never
    fail spuriously."""
    what = "atomic_compare_exchange_weak"
    handle, dtype, norm = _memory(buf, what)
    success_order = _order(success_order, what)
    failure_order = _order(failure_order, what)
    idx = norm(index)
    expected = to_value(expected, dtype)
    desired = to_value(desired, dtype)
    ok, observed = _call(what, "atomic_compare_exchange_weak", handle,
                         idx._value, expected._value, desired._value,
                         success_order, failure_order)
    return IRValue(idx._tracer, ok), IRValue(idx._tracer, observed)


_ATOMICS = {
    "atomic_load": atomic_load,
    "atomic_store": atomic_store,
    "atomic_exchange": atomic_exchange,
    "atomic_fetch_add": atomic_fetch_add,
    "atomic_fetch_sub": atomic_fetch_sub,
    "atomic_fetch_min": atomic_fetch_min,
    "atomic_fetch_max": atomic_fetch_max,
    "atomic_fetch_and": atomic_fetch_and,
    "atomic_fetch_or": atomic_fetch_or,
    "atomic_fetch_xor": atomic_fetch_xor,
    "atomic_compare_exchange_weak": atomic_compare_exchange_weak,
}


def _as_method(function):
    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)
    method.__name__ = function.__name__
    method.__qualname__ = function.__name__
    method.__doc__ = (function.__doc__ or "") + (
        "\n\n(Method form of enigma.%s with this memory as ``buf``.)"
        % function.__name__)
    return method


# Buffer parameters and threadgroup tensors both get the atomic methods.
# BufferProxy lives in the leaf (_ir.py), below this module; the methods
# are attached from here.
for _name, _function in _ATOMICS.items():
    setattr(ThreadgroupTensor, _name, _as_method(_function))
    setattr(BufferProxy, _name, _as_method(_function))
del _name, _function


# --------------------------------------------------------------------------
# Function constants
# --------------------------------------------------------------------------

def function_constant(dtype, index) -> IRValue:
    """``constant T name [[function_constant(index)]]``: a value fixed at
    dispatch, given with ``execute(..., constants={index: (type_name,
    value)})``. The same compiled kernel runs with different values; a
    dispatch that omits a constant the kernel reads fails with an error
    naming it. Types: bool, char, uchar, short, ushort, int, uint, half,
    float."""
    dtype = as_dtype(dtype)
    if isinstance(index, bool) or not isinstance(index, int):
        fail(f"function_constant: index must be a Python int, got "
             f"{type(index).__name__}")
    if not 0 <= index <= 65535:
        fail(f"function_constant: index must be in 0..65535, got {index}")
    tracer = current_tracer("function_constant")
    return IRValue(tracer, _call("function_constant", "function_constant",
                                 dtype.name, index))


__all__ = ["ThreadgroupTensor", "threadgroup_alloc", "dynamic_threadgroup_alloc",
           "function_constant",
           "MEMORY_ORDERS"] + list(_ATOMICS)
