"""Vectors, geometry, packing and quantisation (docs/reference/vectors.md).

Vectors are IRValues with ``lanes`` > 1; their element type is ``dtype``.
The exact formulas are in that page.
"""

from __future__ import annotations

import builtins

from ._dtypes import as_dtype, f32
from ._functions import define
from ._ir import IRValue, current_tracer, fail, to_value
from ._ir import is_number as _is_number

__all__ = [
    "make_vec", "make_float2", "make_float3", "make_float4", "vec_extract",
    "any", "all",
    "pack_uint8x4", "unpack_uint8x4", "pack_int4x2", "unpack_int4x2",
    "dequantize_int8",
]  # and the table's geometry and packing functions (below)


def _call(function: str, *args) -> IRValue:
    tracer = current_tracer(f"enigma.{function}")
    raw = [a._value if isinstance(a, IRValue) else a for a in args]
    return IRValue(tracer, tracer.call(function, *raw))


def _value(x, what: str) -> IRValue:
    if not isinstance(x, IRValue):
        fail(f"{what} takes traced vector values, got {type(x).__name__}")
    return x


# --------------------------------------------------------------------------
# Construction and lanes
# --------------------------------------------------------------------------

def make_vec(*components) -> IRValue:
    """A vector of 2 to 4 scalars of one type: Metal's ``T2(a, b)`` ..
    ``T4(a, b, c, d)``. Python numbers adopt the type of the traced
    components (i32 / f32 when all are numbers); traced components of
    different types are an error (convert with ``metal_cast``).

    ``v = enigma.make_vec(a, b, 0.0, 1.0)  # float4(a, b, 0.0f, 1.0f)``
    """
    if not 2 <= len(components) <= 4:
        fail(f"make_vec takes 2, 3 or 4 components, got {len(components)}")
    traced = [c for c in components if isinstance(c, IRValue)]
    for c in components:
        if not isinstance(c, IRValue) and not _is_number(c):
            fail(f"make_vec components must be scalars, got "
                 f"{type(c).__name__}")
    if traced:
        dtype = traced[0].dtype
        for c in traced:
            if c.lanes != 1:
                fail(f"make_vec takes scalars, got a {c.lanes}-lane vector")
            if c.dtype != dtype:
                fail(f"make_vec components have different types "
                     f"({dtype.name} and {c.dtype.name}); convert them with "
                     "metal_cast")
    elif builtins.any(isinstance(c, float) for c in components):
        dtype = f32
    else:
        dtype = as_dtype("i32")
    return _call("make_vec", [to_value(c, dtype)._value for c in components])


def _make_float(n: int, components) -> IRValue:
    if len(components) == 1:
        value = to_value(components[0], f32)
        if value.lanes == 1:
            return _call("broadcast", value.cast(f32), n)
        if value.lanes == n:
            return value.cast(f32)
        fail(f"make_float{n} of a {value.lanes}-lane vector")
    if len(components) != n:
        fail(f"make_float{n} takes {n} components (or one to broadcast), "
             f"got {len(components)}")
    return make_vec(*[to_value(c, f32).cast(f32) for c in components])


def make_float2(*components) -> IRValue:
    """Metal ``float2(x, y)``; components are converted to float. One
    argument is broadcast: ``make_float2(0.0)`` is ``float2(0.0f)``."""
    return _make_float(2, components)


def make_float3(*components) -> IRValue:
    """Metal ``float3(x, y, z)``; components are converted to float. One
    argument is broadcast."""
    return _make_float(3, components)


def make_float4(*components) -> IRValue:
    """Metal ``float4(x, y, z, w)``; components are converted to float. One
    argument is broadcast."""
    return _make_float(4, components)


def vec_extract(v, lane) -> IRValue:
    """Lane ``lane`` (a Python int, 0 = ``.x``) of vector ``v``: Metal
    ``v[lane]``. A lane outside the vector is an error."""
    return _value(v, "vec_extract")._lane_at(lane, "vec_extract lane {}")


# --------------------------------------------------------------------------
# Geometry and normalized-integer packing: the rows of the geometry and pack
# families' tables (EnigmaMathOps.td), which give each function its name,
# parameters and docstring; the core types and builds them (callFunction).
# --------------------------------------------------------------------------

def _table_function(row, *args) -> IRValue:
    if row.rule == "Pack":  # a float vector, or its components
        if len(args) == 1:
            values = [_value(args[0], row.name)]
        else:
            values = [_make_float(row.lanes, args)]
    elif row.rule == "Unpack":
        values = [to_value(args[0], as_dtype("u32"))]
    elif row.rule == "VectorAndScalar":  # refract's eta takes the dtype
        vectors = [_value(a, row.name) for a in args[:-1]]
        values = vectors + [to_value(args[-1], vectors[0].dtype)]
    else:
        values = [_value(a, row.name) for a in args]
    return _call("call_function", row.name, [v._value for v in values])


__all__ += define(globals(), ("geometry", "pack"), _table_function)


# --------------------------------------------------------------------------
# Quantisation (the original DSL's helpers, with its result types)
# --------------------------------------------------------------------------

_U32 = as_dtype("u32")


def _as_uint(x) -> IRValue:
    """``metal_cast(x, "uint")``, as the original's helpers convert."""
    return to_value(x, _U32).cast(_U32)


def _lanes(v: IRValue) -> tuple:
    return tuple(_call("vec_extract", v, k) for k in builtins.range(v.lanes))


def _uint_vector(what: str, lanes: int, values) -> IRValue:
    """One integer vector of ``lanes`` lanes as given, or ``lanes`` values
    each converted to uint."""
    if len(values) == 1 and isinstance(values[0], IRValue) and \
            values[0].lanes > 1:
        return values[0]
    if len(values) != lanes:
        fail(f"{what} takes {lanes} values (or one {lanes}-lane integer "
             f"vector), got {len(values)} arguments")
    return make_vec(*[_as_uint(v) for v in values])


def pack_uint8x4(*values) -> IRValue:
    """``pack_uint8x4(b0, b1, b2, b3)`` -> uint: each value converted to
    uint, its low 8 bits placed at bits ``8 * i`` (lane 0 lowest, as
    ``as_type<uint>(uchar4)``). Also takes one 4-lane integer vector."""
    return _call("pack_uint8x4", _uint_vector("pack_uint8x4", 4, values))


def unpack_uint8x4(packed) -> tuple:
    """uint -> a tuple of four uint bytes ``(u >> 8i) & 0xff``, lane 0 from
    the lowest bits: ``b0, b1, b2, b3 = enigma.unpack_uint8x4(p)``. The
    inverse of :func:`pack_uint8x4`."""
    return _lanes(_call("unpack_uint8x4", _as_uint(packed)))


def pack_int4x2(*values) -> IRValue:
    """``pack_int4x2(lo, hi)`` -> uint ``(lo & 0xf) | ((hi & 0xf) << 4)``:
    two signed 4-bit values (-8..7; others wrap, two's complement), each
    converted to uint first. Also takes one 2-lane integer vector."""
    return _call("pack_int4x2", _uint_vector("pack_int4x2", 2, values))


def unpack_int4x2(packed) -> tuple:
    """uint -> a tuple ``(lo, hi)`` of two ints: the sign-extended low and
    high nibbles of the low byte (``0xf7`` -> ``(7, -1)``). The inverse of
    :func:`pack_int4x2`."""
    return _lanes(_call("unpack_int4x2", _as_uint(packed)))


def dequantize_int8(x, scale, zero_point=0) -> IRValue:
    """``float(int(x) - int(zero_point)) * float(scale)``, a float (the
    original DSL's formula: ``x`` and ``zero_point`` are converted to int,
    ``scale`` to float). ``x`` may also be an integer vector (lane by
    lane)."""
    x = to_value(x)
    scale = to_value(scale, f32)
    zero_point = to_value(zero_point, as_dtype("i32"))
    return _call("dequantize_int8", x, scale, zero_point)


# --------------------------------------------------------------------------
# Relational: any / all of a bool vector
# --------------------------------------------------------------------------

def _bool_lanes(v, what: str) -> list:
    if isinstance(v, bool):
        return [to_value(v)]
    if not isinstance(v, IRValue) or v.dtype.name != "b1":
        fail(f"{what} takes a bool vector (a comparison of vectors), got "
             f"{getattr(v, 'dtype', type(v).__name__)}")
    if v.lanes == 1:
        return [v]
    return [v._lane(name) for name in "xyzw"[:v.lanes]]


def any(v) -> IRValue:  # noqa: A001 - MSL's name, as enigma.any
    """True when some lane of the bool vector ``v`` is true (MSL ``any``);
    a scalar bool is returned as it is."""
    lanes = _bool_lanes(v, "any")
    out = lanes[0]
    for lane in lanes[1:]:
        out = out | lane
    return out


def all(v) -> IRValue:  # noqa: A001 - MSL's name, as enigma.all
    """True when every lane of the bool vector ``v`` is true (MSL
    ``all``); a scalar bool is returned as it is."""
    lanes = _bool_lanes(v, "all")
    out = lanes[0]
    for lane in lanes[1:]:
        out = out & lane
    return out
