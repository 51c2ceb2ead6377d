"""Offsets of tensor elements (docs/reference/tensor.md): CuTe's
``crd2idx`` and ``idx2crd`` on nested tuples whose leaves are ints or
traced integers, slicing (``None`` keeps a mode), the checks of a tensor
coordinate, and the power of two an offset is known to be a multiple of.
Fixed coordinates fold into Python ints at trace time, traced coordinates
(IRValues) become integer ops in the kernel. The Tensor that uses them is
in ``_tensor``.
"""

from __future__ import annotations

from ._ir import IRValue, fail
# a * b folding ints (and 0 and 1), an identity tensor's basis strides
# scaled component by component: the layouts' product serves the tensors.
from ._layout_dynamic import mul
from ._layout_tuples import is_integral


# --------------------------------------------------------------------------
# Nested integer tuples (CuTe's IntTuple), as the layout module shapes them
# --------------------------------------------------------------------------

def _is_scalar_coord(x) -> bool:
    return is_integral(x) or isinstance(x, IRValue)


def shape_size(shape):
    """The number of elements of a shape: an int, or a traced value for
    run-time extents."""
    if isinstance(shape, tuple):
        total = 1
        for s in shape:
            total = mul(total, shape_size(s))
        return total
    return shape if isinstance(shape, IRValue) else int(shape)


def add(a, b):
    """a + b for ints or IRValues; adding an int 0 makes no op."""
    if is_integral(a) and a == 0:
        return b
    if is_integral(b) and b == 0:
        return a
    return a + b


def crd2idx(coord, shape, stride):
    """The offset of ``coord`` in the layout ``shape:stride`` (CuTe's
    crd2idx). A scalar coordinate into a nested mode is split
    colexicographically (first sub-mode fastest); the last sub-mode takes
    the remaining quotient unreduced, as in CuTe."""
    if isinstance(shape, tuple):
        if isinstance(coord, tuple):
            if len(coord) != len(shape):
                fail(f"coordinate {show_coord(coord)} has {len(coord)} modes "
                     f"but the shape {shape} has {len(shape)}")
            total = 0
            for c, s, d in zip(coord, shape, stride):
                total = add(total, crd2idx(c, s, d))
            return total
        total, rest = 0, coord
        for k, (s, d) in enumerate(zip(shape, stride)):
            if k == len(shape) - 1:
                total = add(total, crd2idx(rest, s, d))
            else:
                n = shape_size(s)
                total = add(total, crd2idx(mod(rest, n), s, d))
                rest = div(rest, n)
        return total
    if isinstance(coord, tuple):
        fail(f"coordinate {show_coord(coord)} is nested deeper than the shape "
             f"{shape}")
    return mul(coord, stride)


def div(a, n):
    """a // n; dividing by an int 1 makes no op."""
    if is_integral(n) and n == 1:
        return a
    return a // n


def mod(a, n):
    """a % n; modulo an int 1 is 0."""
    if is_integral(n) and n == 1:
        return 0
    return a % n


def idx2crd(index, shape):
    """The coordinate of linear ``index`` in ``shape``, colexicographic (the
    inverse of the compact column-major layout), nested like ``shape``."""
    if isinstance(shape, tuple):
        out, rest = [], index
        for k, s in enumerate(shape):
            if k == len(shape) - 1:
                out.append(idx2crd(rest, s))
            else:
                n = shape_size(s)
                out.append(idx2crd(mod(rest, n), s))
                rest = div(rest, n)
        return tuple(out)
    return index


# --------------------------------------------------------------------------
# Coordinates: checks, messages and slices
# --------------------------------------------------------------------------

def show_coord(coord) -> str:
    """A tensor coordinate as an error message shows it."""
    if isinstance(coord, tuple):
        return "(" + ", ".join(show_coord(c) for c in coord) + (
            ",)" if len(coord) == 1 else ")")
    if isinstance(coord, IRValue):
        return "<traced>"
    return repr(coord)


def has_none(coord) -> bool:
    """Whether ``coord`` keeps a mode (a None anywhere in it): a slice."""
    if coord is None:
        return True
    if isinstance(coord, tuple):
        return any(has_none(c) for c in coord)
    return False


def check_coord(coord):
    """An EnigmaError unless ``coord`` is an int, a scalar traced integer,
    None or a (nested) tuple of those."""
    if isinstance(coord, tuple):
        for c in coord:
            check_coord(c)
    elif coord is not None and not _is_scalar_coord(coord):
        fail(f"a tensor coordinate is an int, a traced integer, None (keep "
             f"the mode) or a tuple of those; got {type(coord).__name__}")
    elif isinstance(coord, IRValue) and (coord.dtype.is_float or
                                         coord.lanes != 1):
        fail(f"a tensor coordinate must be an integer, got a {coord!r}")


def slice_offset(coord, shape, stride, kept):
    """Offset of the fixed part of ``coord``; appends the (shape, stride) of
    every mode given None to ``kept``. A tuple with fewer entries than the
    shape has modes drops the trailing modes (fixes them at 0), as the
    original DSL does: ``((None,), k)`` keeps only the first sub-mode of
    mode 0."""
    if coord is None:
        kept.append((shape, stride))
        return 0
    if isinstance(coord, tuple):
        if not isinstance(shape, tuple):
            shape, stride = (shape,), (stride,)
        if len(coord) > len(shape):
            fail(f"slice {show_coord(coord)} has {len(coord)} modes but the "
                 f"shape {shape} has {len(shape)}")
        total = 0
        for c, s, d in zip(coord, shape, stride):
            total = add(total, slice_offset(c, s, d, kept))
        return total
    return crd2idx(coord, shape, stride)


def power_of_two_divisor(offset) -> int:
    """The largest power of two ``offset`` is known to be a multiple of."""
    if is_integral(offset):
        if offset == 0:
            return 1 << 31
        return offset & -offset
    return int(offset._tracer.call("known_power_of_two_divisor",
                                   offset._value))
