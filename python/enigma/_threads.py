"""Thread queries, barriers and casts: how a thread finds its place in the
grid and meets the others (docs/reference/core.md, docs/reference/math.md,
docs/reference/cooperation.md)."""

from __future__ import annotations

import functools

from ._dtypes import as_dtype
from ._ir import IRValue, current_tracer, fail, is_number, kind_of, to_value

_DIMS = {"x": 0, "y": 1, "z": 2}


def _dim(dim) -> int:
    if dim not in _DIMS:
        fail(f"dim must be 'x', 'y' or 'z', got {dim!r}")
    return _DIMS[dim]


def _query(name: str, dim: int = 0) -> IRValue:
    tracer = current_tracer(name)
    return IRValue(tracer, tracer.call("thread_query", name, dim))


class QueryValue(IRValue):
    """A thread query read as an attribute (``enigma.thread_position_in_grid``):
    the x position. Called with a dimension (``("y")``, ``dim="y"``) it
    gives that dimension's position, as the other thread queries do;
    called with nothing it is a mistake with a message of its own (the
    value itself is meant)."""

    __slots__ = ("_query",)

    def _lane(self, name: str):
        # .x .y .z of a thread position, as CUDA's threadIdx.x is written.
        fail(f"enigma.{self._query} is already the x position (one uint), "
             f"read without .{name}; the y and z positions are "
             f"enigma.{self._query}_xyz(\"y\") and (\"z\")")

    def __call__(self, *args, **kwargs):
        if len(args) + len(kwargs) == 1 and set(kwargs) <= {"dim"}:
            dim = args[0] if args else kwargs["dim"]
            return _query(self._query, _dim(dim))
        fail(f"enigma.{self._query} is a value, not a function: write it "
             f"without parentheses (i = enigma.{self._query}), or name the "
             f"dimension ({self._query}('y') or {self._query}_xyz('y'))")


class QueryFunction:
    """A thread query that is a function (``enigma.thread_index_in_
    threadgroup``, ``enigma.threadgroup_position_in_grid``, ...). Called,
    it is the function. Used as if it were the value, the call left out
    (``t = enigma.thread_position_in_threadgroup``, written as
    ``enigma.thread_position_in_grid`` is, then ``t == 0``), it is an
    EnigmaError saying to call it: Python would compare the function
    itself and give False, a branch that silently never runs. It compares
    equal only to itself and hashes as an object."""

    def __init__(self, function):
        functools.update_wrapper(self, function)
        self._function = function

    def __call__(self, *args, **kwargs):
        return self._function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<enigma thread query {self.__name__}>"

    def _as_value(self, *_):
        fail(f"expected a traced value, got {kind_of(self)}")

    def _compared(self, other):
        if isinstance(other, IRValue) or is_number(other):
            self._as_value()
        return NotImplemented

    __hash__ = object.__hash__
    __bool__ = __index__ = __int__ = __float__ = _as_value
    __neg__ = __pos__ = __invert__ = __abs__ = _as_value


for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(QueryFunction, f"__{_op}__", QueryFunction._compared)
for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
            "and", "or", "xor", "lshift", "rshift"):
    setattr(QueryFunction, f"__{_op}__", QueryFunction._as_value)
    setattr(QueryFunction, f"__r{_op}__", QueryFunction._as_value)
del _op


def thread_position_value() -> IRValue:
    """``enigma.thread_position_in_grid``: the x position, as a value."""
    value = _query("thread_position_in_grid")
    made = QueryValue(value._tracer, value._value)
    made._query = "thread_position_in_grid"
    return made


@QueryFunction
def thread_position_in_grid_xyz(dim="x") -> IRValue:
    """Metal ``[[thread_position_in_grid]]`` along ``dim`` (a ``uint``)."""
    return _query("thread_position_in_grid", _dim(dim))


@QueryFunction
def thread_position_in_threadgroup(dim="x") -> IRValue:
    """Metal ``[[thread_position_in_threadgroup]]`` along ``dim``."""
    return _query("thread_position_in_threadgroup", _dim(dim))


@QueryFunction
def threadgroup_position_in_grid(dim="x") -> IRValue:
    """Metal ``[[threadgroup_position_in_grid]]`` along ``dim``."""
    return _query("threadgroup_position_in_grid", _dim(dim))


@QueryFunction
def threads_per_threadgroup(dim="x") -> IRValue:
    """Metal ``[[threads_per_threadgroup]]`` along ``dim``: the size of this
    threadgroup, smaller for the partial edge group."""
    return _query("threads_per_threadgroup", _dim(dim))


@QueryFunction
def threads_per_grid(dim="x") -> IRValue:
    """Metal ``[[threads_per_grid]]``: the dispatch's ``grid`` along ``dim``."""
    return _query("threads_per_grid", _dim(dim))


@QueryFunction
def threadgroups_per_grid(dim="x") -> IRValue:
    """Metal ``[[threadgroups_per_grid]]`` along ``dim``."""
    return _query("threadgroups_per_grid", _dim(dim))


@QueryFunction
def grid_size(dim="x") -> IRValue:
    """Alias of :func:`threadgroups_per_grid`."""
    return threadgroups_per_grid(dim)


@QueryFunction
def thread_index_in_threadgroup() -> IRValue:
    """Metal ``[[thread_index_in_threadgroup]]``: the linear index of the
    thread in its group (x fastest)."""
    return _query("thread_index_in_threadgroup")


@QueryFunction
def thread_index_in_simdgroup() -> IRValue:
    """Metal ``[[thread_index_in_simdgroup]]``: the lane, 0..31."""
    return _query("thread_index_in_simdgroup")


@QueryFunction
def simdgroup_index_in_threadgroup() -> IRValue:
    """Metal ``[[simdgroup_index_in_threadgroup]]``."""
    return _query("simdgroup_index_in_threadgroup")


@QueryFunction
def threads_per_simdgroup() -> IRValue:
    """Metal ``[[threads_per_simdgroup]]``: 32 on every backend."""
    return _query("threads_per_simdgroup")


@QueryFunction
def simdgroups_per_threadgroup() -> IRValue:
    """Metal ``[[simdgroups_per_threadgroup]]``."""
    return _query("simdgroups_per_threadgroup")


class _Arch:
    """``enigma.arch``: CUDA-style names for the x dimension of the queries;
    each returns ``(x_value, 0, 0)``."""

    @staticmethod
    def thread_idx():
        return (thread_position_in_threadgroup("x"), 0, 0)

    @staticmethod
    def block_idx():
        return (threadgroup_position_in_grid("x"), 0, 0)

    @staticmethod
    def block_dim():
        return (threads_per_threadgroup("x"), 0, 0)


arch = _Arch()

_MEM_FLAGS = {
    "mem_none": 0,
    "mem_device": 1,
    "mem_threadgroup": 2,
    "mem_device_and_threadgroup": 3,
    "mem_texture": 4,
}
mem_none = "mem_none"
mem_device = "mem_device"
mem_threadgroup = "mem_threadgroup"
mem_device_and_threadgroup = "mem_device_and_threadgroup"
mem_texture = "mem_texture"


def _flags(mem_flags) -> int:
    if mem_flags not in _MEM_FLAGS:
        fail(f"unknown mem_flags {mem_flags!r}; use one of "
             + ", ".join(_MEM_FLAGS))
    return _MEM_FLAGS[mem_flags]


def barrier(mem_flags="mem_threadgroup") -> None:
    """``threadgroup_barrier(mem_flags)``: every thread of the group waits
    here. Must be reached by all threads of the group."""
    tracer = current_tracer("barrier")
    tracer.call("barrier", _flags(mem_flags))


def simd_barrier(mem_flags="mem_threadgroup") -> None:
    """``simdgroup_barrier(mem_flags)``."""
    tracer = current_tracer("simd_barrier")
    tracer.call("simd_barrier", _flags(mem_flags))


def metal_cast(x, dtype) -> IRValue:
    """Value conversion to ``dtype`` (Metal's ``static_cast`` rules); Python
    numbers are allowed."""
    dtype = as_dtype(dtype)
    return to_value(x, dtype).cast(dtype)


__all__ = [n for n in dir() if not n.startswith("_") and n not in (
    "annotations", "as_dtype", "EnigmaError", "IRValue", "current_tracer",
    "fail", "to_value", "QueryValue", "thread_position_value",
    "QueryFunction", "functools", "is_number", "kind_of")]
