"""Hierarchical integer tuples, the shapes, strides and coordinates of
layouts (CuTe's IntTuple): checking what a caller passes as one, the
original DSL's ``enigma.tuple`` helpers with its semantics (rank, depth,
flatten, product, crd2idx, idx2crd, compact strides, ...) and how a tuple
is written in messages (``(4,(2,3))``). ``product`` and ``repeat_like`` are
also top-level names.

The layout types that use them are in ``_layout``; a leaf that is a traced
integer (a run-time extent) is handled by ``_layout_dynamic``.
"""

from __future__ import annotations

import numbers
from typing import Tuple, Union

from . import _layout_dynamic as _dynamic
from ._ir import IRValue, fail

__all__ = ["product", "repeat_like"]


# --------------------------------------------------------------------------
# Errors and argument checking
# --------------------------------------------------------------------------

def is_integral(x) -> bool:
    """An int or numpy integer, not a bool (``is_int`` below is the
    original DSL's test, for Python ints)."""
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


# The core computes in int64; keeping inputs well inside it leaves room for
# the products the algebra forms.
_INT_LIMIT = 1 << 48


def small_int(x, what: str) -> int:
    """``int(x)``, an EnigmaError when it is too large for the core."""
    x = int(x)
    if not -_INT_LIMIT < x < _INT_LIMIT:
        fail(f"{what} {x} is too large for a layout (|x| < 2**48)")
    return x


def int_tuple(x, what: str):
    """x as nested tuples of Python ints (lists and numpy ints accepted)."""
    if is_integral(x):
        return small_int(x, what)
    if isinstance(x, (tuple, list)):
        return tuple(int_tuple(e, what) for e in x)
    fail(f"{what} must be an int or a (nested) tuple of ints, got {x!r}")


# --------------------------------------------------------------------------
# Tuple helpers (the original DSL's enigma.tuple, with its semantics)
# --------------------------------------------------------------------------

Int = int
Shape = Union[int, Tuple["Shape", ...]]
Stride = Union[int, Tuple["Stride", ...]]
Coord = Union[int, Tuple["Coord", ...]]


def is_int(x) -> bool:
    """True for a Python int (not for a tuple)."""
    return isinstance(x, int)


def is_tuple(x) -> bool:
    """True for a tuple (the nested shapes and strides)."""
    return isinstance(x, tuple)


def rank(x) -> int:
    """Number of top-level modes: ``len(x)`` for a tuple, 1 for an int."""
    return len(x) if is_tuple(x) else 1


def depth(x) -> int:
    """Nesting depth: 0 for an int, ``1 + max(depth(mode))`` for a tuple."""
    if not is_tuple(x):
        return 0
    return 1 + max((depth(e) for e in x), default=0)


def flatten(x) -> tuple:
    """The leaves of a nested tuple, in order: ``flatten((4, (2, 3))) ==
    (4, 2, 3)``; ``flatten(5) == (5,)``."""
    if not is_tuple(x):
        return (x,)
    return tuple(leaf for e in x for leaf in flatten(e))


def product(t) -> int:
    """The product of every integer in the (nested) tuple ``t``:
    ``product(((2, 2), 8)) == 32``; ``product(())`` is 1. Inside a kernel
    the leaves may be traced integers (a traced product then)."""
    if _dynamic.has_traced(t):
        return _dynamic.product(_dynamic.leaf_tuple(t, "product's argument"))
    t = int_tuple(t, "product's argument")
    if isinstance(t, int):
        return t
    result = 1
    for e in t:
        result *= product(e)
    return result


def inner_product(a, b) -> int:
    """Sum of the products of the leaves of ``a`` and ``b`` (same count)."""
    fa, fb = flatten(a), flatten(b)
    if len(fa) != len(fb):
        fail(f"inner_product: {tuple_str(a)} and {tuple_str(b)} have "
              f"{len(fa)} and {len(fb)} leaves")
    return sum(x * y for x, y in zip(fa, fb))


def crd2idx(crd, shape, stride):
    """The offset of coordinate ``crd`` under ``shape:stride``. A tuple
    coordinate goes mode by mode; an integer into a tuple shape is split
    colexicographically, every mode taken modulo its size (so indices past
    the end wrap, as in the original DSL). Works on ints and on traced
    integer values."""
    if is_tuple(crd):
        if not is_tuple(shape) or len(crd) != len(shape):
            fail(f"crd2idx: coordinate {coord_str(crd)} does not match the "
                  f"shape {tuple_str(shape)}")
        return sum_terms([crd2idx(c, s, d)
                          for c, s, d in zip(crd, shape, stride)])
    if is_tuple(shape):
        terms = []
        for s, d in zip(shape, stride):
            n = product(s)
            terms.append(crd2idx(crd % n, s, d))
            crd = crd // n
        return sum_terms(terms)
    return crd * stride


def idx2crd(idx, shape):
    """The coordinate of linear index ``idx`` in ``shape``, colexicographic
    (first mode fastest), every mode taken modulo its size:
    ``idx2crd(13, (4, (2, 3))) == (1, (1, 1))``."""
    if not is_tuple(shape):
        return idx % shape
    coord = []
    for s in shape:
        n = product(s)
        coord.append(idx2crd(idx % n, s))
        idx = idx // n
    return tuple(coord)


def compact_col_major(shape, current: int = 1):
    """Column-major strides (first mode fastest) starting at ``current``:
    ``compact_col_major((4, (2, 3))) == (1, (4, 8))``."""
    if not is_tuple(shape):
        return current if shape > 0 else 0
    strides = []
    for s in shape:
        strides.append(compact_col_major(s, current))
        current *= product(s)
    return tuple(strides)


def compact_order(shape, order):
    """Compact strides that give the modes of ``shape`` increasing strides
    in ``order`` (``order[i]`` is the priority of mode ``i``, 0 innermost):
    ``compact_order((4, 64), (1, 0)) == (64, 1)``."""
    if not is_tuple(shape) or len(shape) == 1:
        return compact_col_major(shape)
    order = tuple(order)
    if len(order) != len(shape):
        fail(f"compact_order: order {order} does not have one entry per "
              f"mode of {tuple_str(shape)}")
    strides, current = [0] * len(shape), 1
    for mode in sorted(range(len(shape)), key=lambda i: order[i]):
        strides[mode] = current
        current *= product(shape[mode])
    return tuple(strides)


def prefix_product(shape, init: int = 1) -> tuple:
    """Exclusive running product of the leaves: ``prefix_product((2, (3,
    4))) == (1, 2, 6)``."""
    out, current = [], init
    for s in flatten(shape):
        out.append(current)
        current *= s
    return tuple(out)


def ceil_div(a: int, b: int) -> int:
    """``a / b`` rounded up (positive ints)."""
    return (a + b - 1) // b


def gcd(a: int, b: int) -> int:
    """Greatest common divisor (Euclid's algorithm)."""
    while b:
        a, b = b, a % b
    return a


def shape_div(a: int, b: int) -> int:
    """The original DSL's shape division: ``a // b`` (at least 1), and 1
    when ``b`` exceeds ``a``."""
    if b == 1:
        return a
    return max(1, a // b) if a >= b else 1


def elem_scale(a, b):
    """Leaf-by-leaf product of two congruent shapes; an int scales every
    leaf of the other: ``elem_scale((2, 3), (10, 100)) == (20, 300)``."""
    if not is_tuple(a) and not is_tuple(b):
        return a * b
    if not is_tuple(a):
        return tuple(elem_scale(a, e) for e in b)
    if not is_tuple(b):
        return tuple(elem_scale(e, b) for e in a)
    return tuple(elem_scale(x, y) for x, y in zip(a, b))


def repeat_like(val, ref):
    """A tuple shaped like ``ref`` with every leaf replaced by ``val`` (the
    original DSL's argument order): ``repeat_like(0, (4, (2, 3))) == (0,
    (0, 0))``; ``val`` itself when ``ref`` is an int."""
    if not is_tuple(ref):
        return val
    return tuple(repeat_like(val, r) for r in ref)


def is_congruent(a, b) -> bool:
    """True when ``a`` and ``b`` have the same nesting and the same values
    (the original DSL's definition): ``is_congruent((4, 8), (8, 4))`` is
    False."""
    if not is_tuple(a) and not is_tuple(b):
        return a == b
    if is_tuple(a) and is_tuple(b) and len(a) == len(b):
        return all(is_congruent(x, y) for x, y in zip(a, b))
    return False


def is_compatible(a, b) -> bool:
    """True when ``a`` and ``b`` have the same size (product)."""
    return product(a) == product(b)


# --------------------------------------------------------------------------
# Modes, messages and sums of the layout functions
# --------------------------------------------------------------------------

def shape_at(shape, mode, what: str):
    """The part of ``shape`` that ``mode`` names: all of it for None, the
    top-level mode for an int, and for a list a path of modes, one level
    each (``[0, 1]`` is mode 1 of mode 0). An int shape has the single
    mode 0."""
    if mode is None:
        return shape
    path = list(mode) if isinstance(mode, (list, tuple)) else [mode]
    part = shape
    for m in path:
        modes = part if is_tuple(part) else (part,)
        if not is_integral(m) or not 0 <= m < len(modes):
            fail(f"{what}: mode {m!r} (of {list(path)}) is out of range for "
                  f"{tuple_str(part)} of rank {len(modes)}")
        part = modes[int(m)]
    return part


def tuple_str(t) -> str:
    """A shape or stride as CuTe writes it, ``(4,(2,3))``; a traced leaf
    is ``?``."""
    if isinstance(t, tuple):
        return "(" + ",".join(tuple_str(e) for e in t) + ")"
    return "?" if isinstance(t, IRValue) else str(t)


def coord_str(coord) -> str:
    """A coordinate as an error message shows it."""
    if isinstance(coord, (tuple, list)):
        return "(" + ",".join(coord_str(c) for c in coord) + ")"
    return str(coord) if is_integral(coord) else repr(coord)


def sum_terms(terms):
    """Sums ints at Python time and traced values as ops; an int when every
    term is an int."""
    constant, traced = 0, None
    for t in terms:
        if is_integral(t):
            constant += t
        else:
            traced = t if traced is None else traced + t
    if traced is None:
        return constant
    return traced + constant if constant else traced
