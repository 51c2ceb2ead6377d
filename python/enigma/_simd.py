"""SIMD-group (32 lanes) and quad-group (4 lanes) functions.

Metal's names and semantics on every backend (docs/reference/simd.md):
the lanes of a simdgroup are 32 consecutive ``thread_index_in_threadgroup``
values (lane = index % 32), the lanes of a quad 4 consecutive ones. Lanes
that do not exist (the tail of a partial threadgroup) take no part.

Every lane of a simdgroup must reach the call: one under an ``if_`` or loop
whose condition depends on the lane is an :class:`enigma.EnigmaError`.
Compute unconditionally and select with :func:`enigma.where` instead.

Fragments (what ``Tensor.load()`` returns) and vectors hold several values
per thread. As in the original DSL, a reduction (sum, product, min, max,
and, or, xor) of one first combines the thread's own values and then
reduces across the group, giving one scalar; prefix scans and shuffles
apply to each element (lane) on its own.
"""

from __future__ import annotations

from . import _core, _math
from ._cooperation import ThreadgroupTensor
from ._dtypes import as_dtype
from ._functions import define
from ._ir import (BufferProxy, EnigmaError, IRValue, current_tracer, fail,
                  to_value)
from ._tensor_fragments import Fragment, VectorFragment

_U32 = as_dtype("uint")


def _call(name, x=None, lane=None) -> IRValue:
    tracer = current_tracer(name)
    args = [] if x is None else [to_value(x)._value]  # lane queries: none
    if lane is not None:
        args.append(to_value(lane, _U32)._value)
    return IRValue(tracer, tracer.call("simd_call", name, *args))


# --------------------------------------------------------------------------
# Fragments and vectors: several values per thread
# --------------------------------------------------------------------------

def _thread_values(x):
    """The values a thread holds in a Fragment or a vector, or None for a
    scalar (or anything else, which _call reports)."""
    if isinstance(x, Fragment):
        return list(x.values)
    if isinstance(x, IRValue) and x.lanes > 1:
        return [x._lane(lane) for lane in "xyzw"[:x.lanes]]
    return None


def _like(x, values):
    """``values`` in the container ``x`` came in: a Fragment, a
    VectorFragment or a plain vector."""
    if isinstance(x, Fragment):
        return Fragment(values, x.shape)
    tracer = current_tracer("a simdgroup function")
    vec = IRValue(tracer, tracer.call("make_vec",
                                      [v._value for v in values]))
    return VectorFragment(vec, x.shape) if isinstance(x, VectorFragment) \
        else vec


def _combine(op: str, a: IRValue, b: IRValue) -> IRValue:
    """``a op b`` for combining a thread's own values before a reduction."""
    if op == "sum":
        return a + b
    if op == "product":
        return a * b
    if op in ("min", "max"):
        fn = {("min", True): _math.fmin, ("max", True): _math.fmax,
              ("min", False): _math.imin, ("max", False): _math.imax}
        return fn[(op, a.dtype.is_float)](a, b)
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    return a ^ b


def _group_function(row, x=None, operand=None) -> IRValue:
    """A simdgroup / quad function of the table: reductions combine a
    thread's own values (fragment or vector) first, scans and shuffles go
    element by element; votes and lane queries take one bool or nothing."""
    if row.rule in ("GroupVote", "GroupBallot", "GroupLaneQuery"):
        if _thread_values(x) is not None:
            fail(f"{row.name} takes one bool per thread, got several "
                 f"values; combine them first (e.g. with &, |)")
        return _call(row.name, x)
    values = _thread_values(x)
    if row.rule == "GroupShuffle":
        if values is not None:
            return _like(x, [_call(row.name, v, operand) for v in values])
        return _call(row.name, x, operand)
    if values is None:
        return _call(row.name, x)
    if row.rule == "GroupScan":
        return _like(x, [_call(row.name, v) for v in values])
    acc = values[0]
    for v in values[1:]:
        acc = _combine(row.name.split("_", 1)[1], acc, v)
    return _call(row.name, acc)


# One function per row of the simd family's table (EnigmaSimdOps.td): name,
# parameters and docstring come from the row.
__all__ = define(globals(), "simd", _group_function)


# --------------------------------------------------------------------------
# Simdgroup matrices (8x8)
# --------------------------------------------------------------------------

class SimdgroupMatrix:
    """An 8x8 ``float`` or ``half`` tile held by the 32 lanes of a
    simdgroup (Metal's ``simdgroup_float8x8`` / ``simdgroup_half8x8``).

    Each lane holds two elements: lane ``l`` has elements ``2l`` and
    ``2l + 1`` of the tile in row-major order (row ``l // 4``, columns
    ``2 * (l % 4)`` and the next). Make one with
    :func:`simdgroup_matrix_load` or :func:`make_filled_simdgroup_matrix`;
    it is not an arithmetic value. Matrices are not carried through
    ``enigma.range`` loops: store the accumulator and load it again (or
    unroll with ``range_constexpr``)."""

    def __init__(self, tracer, value, elem):
        self._tracer = tracer
        self._value = value
        self.elem = elem
        self.rows = self.cols = 8

    def __repr__(self) -> str:
        return f"<simdgroup_{self.elem.msl}8x8>"


def _matrix_call(what, function, *args):
    return current_tracer(what).call(function, *args)


def _matrix_elem(elem, rows, cols, what):
    try:
        dtype = as_dtype(elem)
    except (EnigmaError, ValueError, TypeError, KeyError) as e:
        fail(f"{what}: {e}")
    for n, v in (("rows", rows), ("cols", cols)):
        if isinstance(v, bool) or not isinstance(v, int):
            fail(f"{what}: {n} must be a Python int, got {type(v).__name__}")
    try:
        _core.simd_matrix_check_shape(dtype.name, rows, cols)
    except EnigmaError as e:
        fail(f"{what}: {e}")
    return dtype


def _matrix_memory(buf, what):
    if isinstance(buf, BufferProxy):
        return buf._buffer
    if isinstance(buf, ThreadgroupTensor):
        return buf._array
    fail(f"{what} works on a buffer parameter or a threadgroup_alloc tensor, "
         f"got {type(buf).__name__}")


def _matrix_index(x, what, name):
    if isinstance(x, bool) or not isinstance(x, (int, IRValue)):
        fail(f"{what}: {name} must be an integer, got {type(x).__name__}")
    if isinstance(x, int) and not 0 <= x < 2**32:
        fail(f"{what}: {name} {x} is out of range")
    return to_value(x, _U32)._value


def simdgroup_matrix_load(buf, elements_per_row, elem="float", rows=8, cols=8,
                          *, offset=0, transpose=False) -> SimdgroupMatrix:
    """``simdgroup_load(m, buf + offset, elements_per_row)``: the 8x8 tile
    whose element (0, 0) is ``buf[offset]``, rows ``elements_per_row``
    elements apart. ``buf`` is a buffer parameter or threadgroup tensor of
    dtype ``elem`` (``"float"`` or ``"half"``). With ``transpose=True`` the
    tile is the transpose of that one: element (r, c) is ``buf[offset + c *
    elements_per_row + r]`` (Metal's ``transpose_matrix``). Every lane of
    the simdgroup must reach the call with the same ``offset`` and
    ``elements_per_row``."""
    what = "simdgroup_matrix_load"
    dtype = _matrix_elem(elem, rows, cols, what)
    mem = _matrix_memory(buf, what)
    epr = _matrix_index(elements_per_row, what, "elements_per_row")
    off = _matrix_index(offset, what, "offset")
    if hasattr(buf, "_view_start"):  # a pipeline stage: part of an array
        off = _matrix_index(buf._view_start() + offset, what, "offset")
    tracer = current_tracer(what)
    if not isinstance(transpose, bool):
        fail(f"{what}: transpose must be True or False, got {transpose!r}")
    value = _matrix_call(what, "simd_matrix_load", mem, epr, off, dtype.name,
                         rows, cols, transpose)
    return SimdgroupMatrix(tracer, value, dtype)


def _check_matrix(m, what, name="m"):
    if not isinstance(m, SimdgroupMatrix):
        fail(f"{what}: {name} must be a simdgroup matrix, got "
             f"{type(m).__name__}")
    return m


def simdgroup_matrix_store(m, buf, elements_per_row, *, offset=0) -> None:
    """``simdgroup_store(m, buf + offset, elements_per_row)``: writes the
    tile to ``buf[offset + row * elements_per_row + col]``."""
    what = "simdgroup_matrix_store"
    _check_matrix(m, what)
    mem = _matrix_memory(buf, what)
    epr = _matrix_index(elements_per_row, what, "elements_per_row")
    off = _matrix_index(offset, what, "offset")
    if hasattr(buf, "_view_start"):  # a pipeline stage: part of an array
        off = _matrix_index(buf._view_start() + offset, what, "offset")
    _matrix_call(what, "simd_matrix_store", m._value, m.elem.name, mem, epr,
                 off)


def simdgroup_multiply_accumulate(a, b, c) -> SimdgroupMatrix:
    """``simdgroup_multiply_accumulate(d, a, b, c)``: returns ``a @ b + c``
    (all three of one element type)."""
    what = "simdgroup_multiply_accumulate"
    for name, m in (("a", a), ("b", b), ("c", c)):
        _check_matrix(m, what, name)
    if not (a.elem == b.elem == c.elem):
        fail(f"{what}: a, b and c must share one element type, got "
             f"{a.elem.msl}, {b.elem.msl} and {c.elem.msl}")
    tracer = current_tracer(what)
    value = _matrix_call(what, "simd_matrix_mma", a._value, b._value,
                         c._value, a.elem.name)
    return SimdgroupMatrix(tracer, value, a.elem)


def make_filled_simdgroup_matrix(value, elem="float", rows=8,
                                 cols=8) -> SimdgroupMatrix:
    """``make_filled_simdgroup_matrix<elem, 8, 8>(value)``: a tile with every
    element ``value`` (the same in every lane of the simdgroup)."""
    what = "make_filled_simdgroup_matrix"
    dtype = _matrix_elem(elem, rows, cols, what)
    tracer = current_tracer(what)
    v = to_value(value, dtype)
    result = _matrix_call(what, "simd_matrix_fill", v._value, dtype.name,
                          rows, cols)
    return SimdgroupMatrix(tracer, result, dtype)


__all__ += ["SimdgroupMatrix", "simdgroup_matrix_load", "simdgroup_matrix_store",
            "simdgroup_multiply_accumulate", "make_filled_simdgroup_matrix"]
