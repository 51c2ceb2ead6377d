"""Vectors, geometry, packing and quantisation (docs/reference/vectors.md).

Vectors are IRValues with ``lanes`` > 1; their element type is ``dtype``.
The exact formulas are in that page.
"""

from __future__ import annotations

import builtins

from ._dtypes import as_dtype, f32
from ._ir import IRValue, current_tracer, fail, to_value
from ._ir import is_number as _is_number

__all__ = [
    "make_vec", "make_float2", "make_float3", "make_float4", "vec_extract",
    "any", "all",
    "dot", "length", "distance", "normalize", "cross", "reflect", "refract",
    "faceforward",
    "pack_float_to_snorm4x8", "pack_float_to_unorm4x8",
    "pack_float_to_snorm2x16", "pack_float_to_unorm2x16",
    "pack_float_to_srgb_unorm4x8", "pack_float_to_unorm10a2",
    "unpack_snorm4x8_to_float", "unpack_unorm4x8_to_float",
    "unpack_snorm2x16_to_float", "unpack_unorm2x16_to_float",
    "unpack_unorm4x8_srgb_to_float", "unpack_srgb_unorm4x8_to_float",
    "unpack_unorm10a2_to_float",
    "pack_uint8x4", "unpack_uint8x4", "pack_int4x2", "unpack_int4x2",
    "dequantize_int8",
]


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
    v = _value(v, "vec_extract")
    if isinstance(lane, bool) or not isinstance(lane, int):
        fail(f"vec_extract needs a constant (Python int) lane, got "
             f"{type(lane).__name__}")
    if lane < 0:
        fail(f"lane {lane} is out of range for a {v.lanes}-lane vector")
    return _call("vec_extract", v, lane)


# --------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------

def dot(a, b) -> IRValue:
    """Metal ``dot(a, b)``: sum of the lane products, a scalar."""
    return _call("dot", _value(a, "dot"), _value(b, "dot"))


def length(v) -> IRValue:
    """Metal ``length(v)`` = ``sqrt(dot(v, v))``."""
    return _call("length", _value(v, "length"))


def distance(a, b) -> IRValue:
    """Metal ``distance(a, b)`` = ``length(a - b)``."""
    return _call("distance", _value(a, "distance"), _value(b, "distance"))


def normalize(v) -> IRValue:
    """Metal ``normalize(v)`` = ``v * rsqrt(dot(v, v))``."""
    return _call("normalize", _value(v, "normalize"))


def cross(a, b) -> IRValue:
    """Metal ``cross(a, b)`` of two float3 vectors."""
    return _call("cross", _value(a, "cross"), _value(b, "cross"))


def reflect(i, n) -> IRValue:
    """Metal ``reflect(i, n)`` = ``i - 2 * dot(n, i) * n`` (n normalized)."""
    return _call("reflect", _value(i, "reflect"), _value(n, "reflect"))


def refract(i, n, eta) -> IRValue:
    """Metal ``refract(i, n, eta)``: with ``k = 1 - eta^2 (1 - dot(n, i)^2)``,
    zero when ``k < 0``, else ``eta * i - (eta * dot(n, i) + sqrt(k)) * n``."""
    i = _value(i, "refract")
    return _call("refract", i, _value(n, "refract"), to_value(eta, i.dtype))


def faceforward(n, i, nref) -> IRValue:
    """Metal ``faceforward(n, i, nref)``: ``n`` if ``dot(nref, i) < 0``,
    else ``-n``."""
    return _call("faceforward", _value(n, "faceforward"),
                 _value(i, "faceforward"), _value(nref, "faceforward"))


# --------------------------------------------------------------------------
# Normalized-integer packing
# --------------------------------------------------------------------------

def _pack(fmt: str, components) -> IRValue:
    lanes = 2 if fmt.endswith("2x16") else 4
    if len(components) == 1:
        v = _value(components[0], f"pack_float_to_{fmt}")
    else:
        v = _make_float(lanes, components)
    return _call("pack_float", fmt, v)


def _unpack(fmt: str, packed) -> IRValue:
    return _call("unpack_to_float", fmt, to_value(packed, as_dtype("u32")))


def pack_float_to_snorm4x8(*v) -> IRValue:
    """Metal ``pack_float_to_snorm4x8(float4)`` -> uint: each lane clamped to
    [-1, 1] (NaN -> 0), times 127, rounded to nearest even, lane 0 in the
    low byte. Takes a float4 or 4 components."""
    return _pack("snorm4x8", v)


def pack_float_to_unorm4x8(*v) -> IRValue:
    """Metal ``pack_float_to_unorm4x8(float4)`` -> uint: lanes clamped to
    [0, 1] (NaN -> 0), times 255, rounded to nearest even."""
    return _pack("unorm4x8", v)


def pack_float_to_snorm2x16(*v) -> IRValue:
    """Metal ``pack_float_to_snorm2x16(float2)`` -> uint (scale 32767)."""
    return _pack("snorm2x16", v)


def pack_float_to_unorm2x16(*v) -> IRValue:
    """Metal ``pack_float_to_unorm2x16(float2)`` -> uint (scale 65535)."""
    return _pack("unorm2x16", v)


def pack_float_to_srgb_unorm4x8(*v) -> IRValue:
    """Metal ``pack_float_to_srgb_unorm4x8(float4)``: r, g, b through the
    linear-to-sRGB curve, alpha linear, then as unorm4x8."""
    return _pack("srgb_unorm4x8", v)


def pack_float_to_unorm10a2(*v) -> IRValue:
    """Metal ``pack_float_to_unorm10a2(float4)``: r, g, b as 10-bit unorm in
    bits 0-29, alpha as 2-bit unorm in bits 30-31."""
    return _pack("unorm10a2", v)


def unpack_snorm4x8_to_float(packed) -> IRValue:
    """Metal ``unpack_snorm4x8_to_float(uint)`` -> float4:
    ``max(-1, char(byte) / 127)`` per lane, lane 0 from the low byte."""
    return _unpack("snorm4x8", packed)


def unpack_unorm4x8_to_float(packed) -> IRValue:
    """Metal ``unpack_unorm4x8_to_float(uint)`` -> float4: ``byte / 255``."""
    return _unpack("unorm4x8", packed)


def unpack_snorm2x16_to_float(packed) -> IRValue:
    """Metal ``unpack_snorm2x16_to_float(uint)`` -> float2:
    ``max(-1, short(half) / 32767)``."""
    return _unpack("snorm2x16", packed)


def unpack_unorm2x16_to_float(packed) -> IRValue:
    """Metal ``unpack_unorm2x16_to_float(uint)`` -> float2: ``half / 65535``."""
    return _unpack("unorm2x16", packed)


def unpack_unorm4x8_srgb_to_float(packed) -> IRValue:
    """Metal ``unpack_unorm4x8_srgb_to_float(uint)`` -> float4: unorm4x8,
    then r, g, b through the sRGB-to-linear curve; alpha linear. Emitted as
    the call of Metal's function (op ``enigma.unpack_unorm4x8_srgb``)."""
    return _unpack("srgb_unorm4x8", packed)


def unpack_srgb_unorm4x8_to_float(packed) -> IRValue:
    """The original DSL's name of :func:`unpack_unorm4x8_srgb_to_float`
    (the inverse of ``pack_float_to_srgb_unorm4x8``)."""
    return _unpack("srgb_unorm4x8", packed)


def unpack_unorm10a2_to_float(packed) -> IRValue:
    """Metal ``unpack_unorm10a2_to_float(uint)`` -> float4."""
    return _unpack("unorm10a2", packed)


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
