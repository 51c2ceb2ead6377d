"""CuTe's layout algebra (docs/reference/layout.md).

A :class:`Layout` is a function from coordinates to offsets given by a
hierarchical shape and stride (nested tuples of ints), column-major
(colexicographic) by default: ``Layout((4, 8))`` is ``(4,8):(1,4)``.

The algebra on layouts (composition, complement, divide, product, ...) runs
in the C++ core (include/enigma/Layout). Evaluating a layout at a coordinate
runs here, with generic arithmetic, so the same call works on Python ints
(giving an int) and inside a traced kernel on ``uint`` IRValues (giving an
IRValue built from the fewest ops: strides of 1 are not multiplied, modes of
extent 1 or stride 0 add nothing).

Every mistake (incompatible shapes, non-divisible divides, coordinates out
of range or of the wrong rank) raises :class:`enigma.EnigmaError` naming the
caller's file:line.
"""

from __future__ import annotations

import numbers
from typing import Tuple, Union

from . import _core
from . import _layout_dynamic as _dynamic
from ._ir import IRValue, fail, located

__all__ = [
    "Layout", "IdentityLayout", "Swizzle", "SwizzledLayout",
    "make_layout", "make_ordered_layout", "make_identity_layout",
    "size", "cosize", "coalesce", "complement", "composition",
    "right_inverse", "left_inverse",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "zipped_product", "tiled_product", "flat_product",
    "blocked_product", "raked_product",
    "recast_layout", "make_layout_tv", "swizzle",
    "product", "repeat_like", "select",
]


# --------------------------------------------------------------------------
# Errors and argument checking
# --------------------------------------------------------------------------

def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


# The core computes in int64; keeping inputs well inside it leaves room for
# the products the algebra forms.
_INT_LIMIT = 1 << 48


def _small_int(x, what: str) -> int:
    x = int(x)
    if not -_INT_LIMIT < x < _INT_LIMIT:
        fail(f"{what} {x} is too large for a layout (|x| < 2**48)")
    return x


def _int_tuple(x, what: str):
    """x as nested tuples of Python ints (lists and numpy ints accepted)."""
    if _is_int(x):
        return _small_int(x, what)
    if isinstance(x, (tuple, list)):
        return tuple(_int_tuple(e, what) for e in x)
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
    t = _int_tuple(t, "product's argument")
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
        fail(f"inner_product: {_str(a)} and {_str(b)} have {len(fa)} and "
              f"{len(fb)} leaves")
    return sum(x * y for x, y in zip(fa, fb))


def crd2idx(crd, shape, stride):
    """The offset of coordinate ``crd`` under ``shape:stride``. A tuple
    coordinate goes mode by mode; an integer into a tuple shape is split
    colexicographically, every mode taken modulo its size (so indices past
    the end wrap, as in the original DSL). Works on ints and on traced
    integer values."""
    if is_tuple(crd):
        if not is_tuple(shape) or len(crd) != len(shape):
            fail(f"crd2idx: coordinate {_coord_str(crd)} does not match the "
                  f"shape {_str(shape)}")
        return _sum_terms([crd2idx(c, s, d)
                           for c, s, d in zip(crd, shape, stride)])
    if is_tuple(shape):
        terms = []
        for s, d in zip(shape, stride):
            n = product(s)
            terms.append(crd2idx(crd % n, s, d))
            crd = crd // n
        return _sum_terms(terms)
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
              f"mode of {_str(shape)}")
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


def select(x, mode):
    """Top-level mode ``mode`` of a tuple (an int mode gives that mode, a
    list of modes the tuple of them in that order): ``select((5, 6, 7), 2)
    == 7``, ``select((5, 6, 7), [2, 0]) == (7, 5)``. A Layout gives the
    layout of those modes."""
    several = isinstance(mode, (list, tuple))
    modes = list(mode) if several else [mode]
    if isinstance(x, Layout):
        shape = select(x.shape, modes if several else modes[0])
        return Layout._of(shape, select(x.stride, modes if several
                                        else modes[0]))
    t = x if is_tuple(x) else (x,)
    for m in modes:
        if not _is_int(m) or not -len(t) <= m < len(t):
            fail(f"select: mode {m!r} is out of range for {_str(x)} of rank "
                  f"{len(t)}")
    picked = tuple(t[m] for m in modes)
    return picked if several else picked[0]


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


def _shape_at(shape, mode, what: str):
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
        if not _is_int(m) or not 0 <= m < len(modes):
            fail(f"{what}: mode {m!r} (of {list(path)}) is out of range for "
                  f"{_str(part)} of rank {len(modes)}")
        part = modes[int(m)]
    return part


def _str(t) -> str:
    if isinstance(t, tuple):
        return "(" + ",".join(_str(e) for e in t) + ")"
    return "?" if isinstance(t, IRValue) else str(t)


def _rank(t) -> int:
    return len(t) if isinstance(t, tuple) else 1


def _depth(t) -> int:
    if not isinstance(t, tuple):
        return 0
    return 1 + max((_depth(e) for e in t), default=0)


def _leaves(t):
    if not isinstance(t, tuple):
        yield t
    else:
        for e in t:
            yield from _leaves(e)


def _mode(t, i: int):
    if not isinstance(t, tuple):
        return t
    return t[i]


def _is_one(x) -> bool:
    return _is_int(x) and x == 1


def _is_zero(x) -> bool:
    return _is_int(x) and x == 0


# --------------------------------------------------------------------------
# Evaluation with ints or traced values
# --------------------------------------------------------------------------

def _check_coord_leaf(c, what="coordinate"):
    """An int, or a scalar integer IRValue of a traced kernel."""
    if _is_int(c):
        return int(c)
    if isinstance(c, IRValue):
        if c.lanes != 1 or c.dtype.is_float or c.dtype.name == "b1":
            fail(f"a layout {what} must be a scalar integer, got {c!r}")
        return c
    fail(f"a layout {what} must be an int, a tuple of ints or a traced "
          f"integer value, got {c!r}")


def _offset_terms(coord, shape, stride, terms):
    """Appends to ``terms`` the products coordinate * stride of every leaf
    mode that contributes (CuTe's crd2idx)."""
    if isinstance(coord, (tuple, list)):
        if isinstance(shape, int) or len(coord) != len(shape):
            fail(f"coordinate {_coord_str(coord)} has rank {len(coord)} "
                  f"but the shape {_str(shape)} has rank {_rank(shape)}")
        for c, s, d in zip(coord, shape, stride):
            _offset_terms(c, s, d, terms)
        return
    c = _check_coord_leaf(coord)
    extent = product(shape)
    if isinstance(c, int) and _is_int(extent) and not 0 <= c < extent:
        fail(f"coordinate {c} is out of range [0, {extent}) of shape "
              f"{_str(shape)}")
    if not isinstance(shape, tuple):
        if not _is_one(shape) and not _is_zero(stride):
            terms.append(c if _is_one(stride) else _dynamic.mul(c, stride))
        return
    if isinstance(c, int) and _is_int(extent):
        for s, d in zip(shape, stride):
            mode_size = product(s)
            _offset_terms(c % mode_size, s, d, terms)
            c //= mode_size
        return
    # A traced 1-D index (or any index into a mode with run-time extents)
    # into a nested mode: colexicographic decomposition over the leaves;
    # the last contributing leaf needs no modulo when no extent follows it.
    extents, strides = list(_leaves(shape)), list(_leaves(stride))
    live = [k for k, (s, d) in enumerate(zip(extents, strides))
            if not _is_one(s) and not _is_zero(d)]
    prefix = 1
    for k, (s, d) in enumerate(zip(extents, strides)):
        if k in live:
            leaf = c if _is_one(prefix) else c // prefix
            if k != live[-1] or not all(_is_one(x) for x in extents[k + 1:]):
                leaf = leaf % s
            terms.append(leaf if _is_one(d) else _dynamic.mul(leaf, d))
        prefix = _dynamic.mul(prefix, s)


def _coord_str(coord) -> str:
    if isinstance(coord, (tuple, list)):
        return "(" + ",".join(_coord_str(c) for c in coord) + ")"
    return str(coord) if _is_int(coord) else repr(coord)


def _sum_terms(terms):
    """Sums ints at Python time and traced values as ops; an int when every
    term is an int."""
    constant, traced = 0, None
    for t in terms:
        if _is_int(t):
            constant += t
        else:
            traced = t if traced is None else traced + t
    if traced is None:
        return constant
    return traced + constant if constant else traced


def _evaluate(shape, stride, coord):
    terms = []
    _offset_terms(coord, shape, stride, terms)
    return _sum_terms(terms)


def _index_to_coord(index, shape):
    """The coordinate of 1-D ``index`` in ``shape`` (CuTe's idx2crd, the
    last mode unbounded), with ints or traced values."""
    if not isinstance(shape, tuple):
        return index
    coord, prefix = [], 1
    for i, mode in enumerate(shape):
        mode_size = product(mode)
        part = index if _is_one(prefix) else index // prefix
        if i != len(shape) - 1 and not _is_one(mode_size):
            part = part % mode_size
        elif _is_one(mode_size) and i != len(shape) - 1:
            part = 0
        coord.append(_index_to_coord(part, mode))
        prefix = _dynamic.mul(prefix, mode_size)
    return tuple(coord)


def _coord_args(args):
    if len(args) == 1:
        return args[0]
    if not args:
        fail("a layout is called with a coordinate, e.g. L(3) or L((1, 2))")
    return tuple(args)


# --------------------------------------------------------------------------
# Layout
# --------------------------------------------------------------------------

class Layout:
    """A CuTe layout: ``shape`` and ``stride`` are congruent nested tuples of
    ints (or ints); ``stride`` defaults to compact column-major. Extents are
    >= 1 and strides >= 0.

    ``L(coord)`` gives the offset of a coordinate: an int (a 1-D
    colexicographic index), a tuple with one entry per mode (each an int or a
    nested tuple), or the modes as separate arguments ``L(i, j)``. Entries may
    be traced integer values inside a kernel; the result is then traced too.

    >>> Layout((4, 8))
    (4,8):(1,4)
    >>> Layout(((2, 2), 8), ((1, 4), 2))((1, 3))
    7
    """

    __slots__ = ("_shape", "_stride")

    def __init__(self, shape, stride=None):
        if _dynamic.has_traced(shape) or _dynamic.has_traced(stride):
            # Run-time extents (_layout_dynamic): checked and made here.
            shape = _dynamic.leaf_tuple(shape, "a layout shape")
            stride = _dynamic.compact_col_major(shape) if stride is None \
                else _dynamic.leaf_tuple(stride, "a layout stride")
            _dynamic.check(shape, stride)
            self._shape, self._stride = shape, stride
            return
        shape = _int_tuple(shape, "a layout shape")
        if stride is not None:
            stride = _int_tuple(stride, "a layout stride")
        self._shape, self._stride = located(_core.layout_make, shape, stride)

    @classmethod
    def _of(cls, shape, stride) -> "Layout":
        """A layout from an already checked (shape, stride)."""
        layout = object.__new__(cls)
        layout._shape, layout._stride = shape, stride
        return layout

    @classmethod
    def _from_core(cls, pair) -> "Layout":
        return cls._of(pair[0], pair[1])

    @property
    def dynamic(self) -> bool:
        """Whether an extent or stride is a traced value (known only when
        the kernel runs)."""
        return _dynamic.has_traced((self._shape, self._stride))

    def _pair(self, operation: str = "this layout algebra operation"):
        """(shape, stride) for the core, which needs the numbers."""
        if self.dynamic:
            _dynamic.refuse(operation, str(self))
        return (self._shape, self._stride)

    @property
    def shape(self):
        """The shape: an int or a nested tuple of ints."""
        return self._shape

    @property
    def stride(self):
        """The stride, congruent to the shape."""
        return self._stride

    def size(self, mode=None) -> int:
        """Number of coordinates (the product of the shape), or of the mode
        ``mode`` names: an int is a top-level mode, a list a path into the
        shape (``size([0, 1])`` is the size of mode 1 of mode 0)."""
        return product(_shape_at(self._shape, mode, "Layout.size"))

    def rank(self) -> int:
        """Number of top-level modes (1 for an integral shape)."""
        return _rank(self._shape)

    def depth(self) -> int:
        """Nesting depth of the shape (0 for an integral shape)."""
        return _depth(self._shape)

    def cosize(self) -> int:
        """One past the largest offset: ``L(size - 1) + 1``."""
        if self.dynamic:
            return _dynamic.cosize(self._shape, self._stride)
        return located(_core.layout_cosize, self._pair())

    def mode(self, i: int) -> "Layout":
        """Top-level mode ``i`` as a layout of its own."""
        return Layout._of(self._shape_mode(i), _mode(self._stride, int(i)))

    def _shape_mode(self, i):
        if not _is_int(i) or not 0 <= i < self.rank():
            fail(f"mode {i!r} is out of range for the layout {self} of rank "
                  f"{self.rank()}")
        return _mode(self._shape, int(i))

    def __call__(self, *coord):
        return _evaluate(self._shape, self._stride, _coord_args(coord))

    def __eq__(self, other):
        if not (isinstance(other, Layout) and type(other) is type(self)):
            return False
        if self.dynamic or other.dynamic:  # the same traced values
            return _same_leaves((self._shape, self._stride),
                                (other._shape, other._stride))
        return self._pair() == other._pair()

    def __hash__(self):
        return hash(_str(self._shape))

    def __str__(self):
        return f"{_str(self._shape)}:{_str(self._stride)}"

    __repr__ = __str__


class IdentityLayout:
    """A layout whose value is the coordinate itself (CuTe's identity layout,
    strides ``1@0, 1@1, ...``): ``make_identity_layout((4, 8))((1, 2)) ==
    (1, 2)``. Composing, dividing or tiling it keeps that meaning: the
    result maps its coordinates to coordinates of the original shape.

    Internally it is ``idx2crd(coord_shape) o layout`` where ``layout``
    starts as the compact layout of ``coord_shape``; the algebra acts on
    ``layout``."""

    __slots__ = ("coord_shape", "layout")

    def __init__(self, coord_shape, layout: Layout | None = None):
        self.coord_shape = _dynamic.leaf_tuple(
            coord_shape, "an identity layout shape") if \
            _dynamic.has_traced(coord_shape) else \
            _int_tuple(coord_shape, "an identity layout shape")
        self.layout = Layout(self.coord_shape) if layout is None else layout

    @property
    def shape(self):
        """The shape of the coordinates this layout takes."""
        return self.layout.shape

    def size(self, mode=None) -> int:
        """As :meth:`Layout.size`."""
        return self.layout.size(mode)

    def rank(self) -> int:
        """As :meth:`Layout.rank`."""
        return self.layout.rank()

    def depth(self) -> int:
        """As :meth:`Layout.depth`."""
        return self.layout.depth()

    def __call__(self, *coord):
        """The coordinate of ``coord_shape`` (a tuple congruent to it, or an
        int for an integral shape) that ``coord`` maps to."""
        return _index_to_coord(self.layout(*coord), self.coord_shape)

    def __eq__(self, other):
        return (isinstance(other, IdentityLayout)
                and other.coord_shape == self.coord_shape
                and other.layout == self.layout)

    def __hash__(self):
        return hash((self.coord_shape, self.layout))

    def __str__(self):
        if self.layout == Layout(self.coord_shape):
            return f"{_str(self.coord_shape)}:{_basis_str(self.coord_shape)}"
        return f"idx2crd{_str(self.coord_shape)} o {self.layout}"

    __repr__ = __str__


def _same_leaves(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and \
            len(a) == len(b) and all(_same_leaves(x, y)
                                     for x, y in zip(a, b))
    if isinstance(a, IRValue) or isinstance(b, IRValue):
        return a is b
    return a == b


def _basis_str(shape) -> str:
    """CuTe's scaled-basis strides of an identity layout: ((1@0,2@0),1@1)."""
    if isinstance(shape, int):
        return "1@0"
    parts = []
    for i, mode in enumerate(shape):
        prefix = [1]

        def strides(m):
            if isinstance(m, int):
                s = prefix[0]
                prefix[0] *= m
                return f"{s}@{i}"
            return "(" + ",".join(strides(e) for e in m) + ")"
        parts.append(strides(mode))
    return "(" + ",".join(parts) + ")"


# --------------------------------------------------------------------------
# Swizzles
# --------------------------------------------------------------------------

class Swizzle:
    """CuTe's ``Swizzle<B,M,S>``: XORs the ``bits`` bits found ``shift`` bits
    above bit ``base`` into the ``bits`` bits at ``base``:
    ``x ^ ((x & yyy_mask) >> shift)`` (a negative shift moves bits up), which
    for ``shift >= 0`` is the original DSL's ``x ^ ((x >> shift) & (((1 <<
    bits) - 1) << base))``. Needs ``bits, base >= 0`` and, for a negative
    shift, ``|shift| >= bits``. Callable on ints and on traced integer
    values.

    >>> Swizzle(3, 4, 3)(0b1010000000)
    720
    """

    __slots__ = ("bits", "base", "shift", "yyy_mask", "zzz_mask")

    def __init__(self, bits: int, base: int, shift: int):
        for name, v in (("bits", bits), ("base", base), ("shift", shift)):
            if not _is_int(v) or not -64 < v < 64:
                fail(f"Swizzle {name} must be an int in (-64, 64), got {v!r}")
        self.bits, self.base, self.shift = int(bits), int(base), int(shift)
        if 0 <= self.shift < self.bits and self.base >= 0:
            # The original DSL allows a shift below the bit count (CuTe does
            # not): x ^ ((x >> shift) & mask), read and written bits overlap.
            mask = (1 << self.bits) - 1
            self.yyy_mask = mask << (self.base + self.shift)
            self.zzz_mask = mask << self.base
        else:
            self.yyy_mask, self.zzz_mask = located(
                _core.swizzle_masks, self.bits, self.base, self.shift)

    def __call__(self, offset):
        offset = _check_coord_leaf(offset, "offset")
        if self.bits == 0:
            return offset
        read = offset & self.yyy_mask
        moved = read >> self.shift if self.shift >= 0 else read << -self.shift
        return offset ^ moved

    def __eq__(self, other):
        return (isinstance(other, Swizzle)
                and (self.bits, self.base, self.shift)
                == (other.bits, other.base, other.shift))

    def __hash__(self):
        return hash((self.bits, self.base, self.shift))

    def __str__(self):
        return f"Sw<{self.bits},{self.base},{self.shift}>"

    __repr__ = __str__


class SwizzledLayout:
    """CuTe's ``ComposedLayout`` of a swizzle, an offset and a layout:
    ``coord -> swizzle(offset + layout(coord))``. Composition, division and
    products act on ``layout``; the swizzle stays outermost.

    ``SwizzledLayout(layout, swizzle)`` (the original DSL's argument order)
    is ``SwizzledLayout(swizzle, 0, layout)``.

    ``offset`` is an int >= 0, or inside a kernel a traced integer: a
    Tensor sliced with traced coordinates keeps the offset of the fixed
    coordinates here, under the swizzle, as CuTe does."""

    __slots__ = ("swizzle", "offset", "layout")

    def __init__(self, swizzle, offset=0, layout=None):
        if isinstance(swizzle, Layout) and isinstance(offset, Swizzle) \
                and layout is None:
            swizzle, offset, layout = offset, 0, swizzle
        if not isinstance(swizzle, Swizzle):
            fail(f"SwizzledLayout needs a Swizzle, got {swizzle!r}")
        if not isinstance(layout, Layout):
            fail(f"SwizzledLayout needs a Layout, got {layout!r}")
        if isinstance(offset, IRValue):
            _check_coord_leaf(offset, "offset")
        elif not _is_int(offset) or offset < 0:
            fail(f"SwizzledLayout offset must be an int >= 0, got {offset!r}")
        else:
            offset = int(offset)
        self.swizzle, self.offset, self.layout = swizzle, offset, layout

    @property
    def shape(self):
        """The inner layout's shape."""
        return self.layout.shape

    @property
    def stride(self):
        """The inner layout's stride."""
        return self.layout.stride

    def size(self, mode=None) -> int:
        """As :meth:`Layout.size`."""
        return self.layout.size(mode)

    def rank(self) -> int:
        """As :meth:`Layout.rank`."""
        return self.layout.rank()

    def depth(self) -> int:
        """As :meth:`Layout.depth`."""
        return self.layout.depth()

    def cosize(self) -> int:
        """One past the largest offset over all coordinates (computed by
        evaluating every coordinate, since the swizzle permutes offsets)."""
        if isinstance(self.offset, IRValue):
            fail("the cosize of a swizzled layout with a traced offset is "
                 "known only when the kernel runs")
        return max(self(i) for i in range(self.size())) + 1

    def __call__(self, *coord):
        inner = self.layout(*coord)
        if isinstance(self.offset, IRValue) or self.offset:
            inner = self.offset + inner
        return self.swizzle(inner)

    def __eq__(self, other):
        if not isinstance(other, SwizzledLayout):
            return False
        if isinstance(self.offset, IRValue) or \
                isinstance(other.offset, IRValue):
            same = self.offset is other.offset
        else:
            same = self.offset == other.offset
        return same and (self.swizzle, self.layout) == \
            (other.swizzle, other.layout)

    def __hash__(self):
        return hash((self.swizzle, self.layout))

    def __str__(self):
        offset = "<traced>" if isinstance(self.offset, IRValue) \
            else self.offset
        return f"{self.swizzle} o {offset} o {self.layout}"

    __repr__ = __str__


def swizzle(layout, bits: int, base: int, shift: int, offset: int = 0):
    """``SwizzledLayout(Swizzle(bits, base, shift), offset, layout)``: the
    layout followed by CuTe's ``Swizzle<bits,base,shift>``. ``layout`` may be
    a Layout or a shape (made compact column-major).

    >>> swizzle(Layout((8, 64), (64, 1)), 3, 4, 3)
    Sw<3,4,3> o 0 o (8,64):(64,1)
    """
    return SwizzledLayout(Swizzle(bits, base, shift), offset,
                          as_layout(layout, "swizzle's layout"))


# --------------------------------------------------------------------------
# Construction
# --------------------------------------------------------------------------

def as_layout(x, what: str) -> Layout:
    if isinstance(x, Layout):
        return x
    if _is_int(x) or isinstance(x, (tuple, list)):
        return Layout(x)
    fail(f"{what} must be a Layout or a shape, got {x!r}")


def make_layout(*args, stride=None):
    """``make_layout(shape, stride=None)`` is ``Layout(shape, stride)``;
    ``make_layout(a, b, ...)`` with Layouts is the layout whose modes are
    ``a, b, ...``: ``make_layout(Layout(4, 2), Layout(8, 8))`` is
    ``(4,8):(2,8)`` (a single layout is returned as it is)."""
    if args and all(isinstance(a, Layout) for a in args):
        if stride is not None:
            fail("make_layout of layouts takes no stride")
        if len(args) == 1:
            return args[0]
        return Layout._of(tuple(a.shape for a in args),
                          tuple(a.stride for a in args))
    if len(args) == 2 and stride is None:
        return Layout(args[0], args[1])
    if len(args) != 1:
        fail("make_layout takes a shape (and optionally a stride), or "
              "Layouts to concatenate")
    return Layout(args[0], stride)


def make_ordered_layout(shape, order) -> Layout:
    """A compact layout of ``shape`` whose modes get strides in increasing
    ``order`` (ties keep mode order): ``make_ordered_layout((4, 8), (1, 0))``
    is the row-major ``(4,8):(8,1)``."""
    if _dynamic.has_traced(shape):
        shape = _dynamic.leaf_tuple(shape, "make_ordered_layout's shape")
        order = _int_tuple(order, "make_ordered_layout's order")
        return Layout(shape, _dynamic.compact_order(
            shape, order if isinstance(order, tuple) else (order,)))
    shape = _int_tuple(shape, "make_ordered_layout's shape")
    order = _int_tuple(order, "make_ordered_layout's order")
    return Layout._from_core(located(_core.layout_ordered, shape, order))


def make_identity_layout(shape) -> Layout:
    """The compact column-major layout of ``shape`` (the original DSL's
    meaning): ``make_identity_layout((4, 8))`` is ``(4,8):(1,4)``, so a
    coordinate maps to its linear index. CuTe's identity layout, which maps
    a coordinate to itself, is :class:`IdentityLayout`."""
    return Layout(shape)


def size(x, mode=None) -> int:
    """Size of a layout (of any kind), a Tensor or a shape tuple, or of the
    mode ``mode`` names: an int is a top-level mode, a list a path into the
    shape. ``size((4, 8)) == 32``, ``size(Layout((4, 8)), 1) == 8``,
    ``size(((4, 64), 16), mode=[0, 1]) == 64``."""
    if isinstance(x, (Layout, IdentityLayout, SwizzledLayout)):
        return x.size(mode)
    if hasattr(x, "layout") and callable(getattr(x, "size", None)):
        return x.size(mode)  # a Tensor
    t = _dynamic.leaf_tuple(x, "size's argument") if \
        _dynamic.has_traced(x) else _int_tuple(x, "size's argument")
    return product(_shape_at(t, mode, "size"))


def cosize(x) -> int:
    """One past the largest offset of a layout: ``cosize(Layout((2, 3), (1,
    10))) == 22``."""
    if not isinstance(x, (Layout, SwizzledLayout)):
        fail(f"cosize needs a Layout, got {x!r}")
    return x.cosize()


# --------------------------------------------------------------------------
# The algebra (in the C++ core)
# --------------------------------------------------------------------------

def _tiler(t):
    """A tiler in the core's form: (shape, stride) for a layout, a list for
    a by-mode tuple. An int n means the layout n:1."""
    if isinstance(t, Layout):
        return t._pair("a tiler")
    if _is_int(t):
        return (int(t), 1)
    if isinstance(t, (tuple, list)):
        return [_tiler(e) for e in t]
    fail(f"a tiler must be a Layout, an int or a tuple of them, got {t!r}")


def _layout_arg(x, what: str) -> Layout:
    if not isinstance(x, Layout):
        fail(f"{what} must be a Layout, got {x!r}")
    return x


def _tiled(function, a, tiler, name: str):
    """Applies a (layout, tiler) function to any kind of layout; identity and
    swizzled layouts keep their outer function."""
    if isinstance(a, IdentityLayout):
        return IdentityLayout(a.coord_shape, _tiled(function, a.layout, tiler, name))
    if isinstance(a, SwizzledLayout):
        return SwizzledLayout(a.swizzle, a.offset,
                              _tiled(function, a.layout, tiler, name))
    a = _layout_arg(a, f"{name}'s first argument")
    if a.dynamic:
        # Run-time extents: the divides and composition by a tuple of
        # ints, computed in Python (_layout_dynamic).
        if name == "composition":
            return Layout(*_dynamic.composition(a.shape, a.stride, tiler,
                                                str(a)))
        if name.endswith("_divide"):
            return Layout(*_dynamic.divide(name, a.shape, a.stride, tiler,
                                           str(a)))
        _dynamic.refuse(name, str(a))
    return Layout._from_core(located(function, a._pair(), _tiler(tiler)))


def coalesce(layout: Layout, profile=None) -> Layout:
    """The same function with the fewest modes: ``coalesce(Layout((2, (1,
    6)), (1, (6, 2))))`` is ``12:1``. With ``profile`` (a tuple), coalesces
    each top-level mode on its own and keeps the profile's rank."""
    layout = _layout_arg(layout, "coalesce's argument")
    if profile is not None:
        profile = _int_tuple(profile, "coalesce's profile")
    return Layout._from_core(located(_core.layout_coalesce,
                                     layout._pair("coalesce"), profile))


def complement(layout: Layout, cosize=None, *, cosize_val=None) -> Layout:
    """The layout of the offsets below ``cosize`` (default:
    ``layout.cosize()``; ``cosize_val`` is the original DSL's name for it)
    that ``layout`` misses, so that ``make_layout(layout, complement(layout,
    n))`` is a bijection onto at least ``n`` offsets: ``complement(Layout(4,
    1), 24)`` is ``6:4``."""
    layout = _layout_arg(layout, "complement's argument")
    if cosize_val is not None:
        if cosize is not None:
            fail("complement: give cosize or cosize_val, not both")
        cosize = cosize_val
    if cosize is not None and not _is_int(cosize):
        fail(f"complement's cosize must be an int, got {cosize!r}")
    return Layout._from_core(located(
        _core.layout_complement, layout._pair("complement"),
        None if cosize is None else _small_int(cosize, "complement's cosize")))


def composition(a, b):
    """``a o b``: ``composition(a, b)(c) == a(b(c))``, shaped like ``b``. ``b``
    is a Layout, an int ``n`` (``n:1``) or a tuple of those applied mode by
    mode (a by-mode tiler). ``a`` may be a Layout, an IdentityLayout, a
    SwizzledLayout, or a Swizzle (giving a SwizzledLayout)."""
    if isinstance(a, Swizzle):
        return SwizzledLayout(a, 0, as_layout(b, "composition's second argument"))
    return _tiled(_core.layout_composition, a, b, "composition")


def right_inverse(layout: Layout) -> Layout:
    """A layout ``R`` with ``layout(R(i)) == i`` for ``i`` below
    ``size(R)``, the longest contiguous run of offsets from 0."""
    layout = _layout_arg(layout, "right_inverse's argument")
    return Layout._from_core(located(_core.layout_right_inverse,
                                     layout._pair("right_inverse")))


def left_inverse(layout: Layout) -> Layout:
    """A layout ``L`` with ``L(layout(i)) == i`` for every ``i`` below
    ``size(layout)``, for an injective layout (CuTe's
    ``right_inverse(make_layout(layout, complement(layout)))``)."""
    layout = _layout_arg(layout, "left_inverse's argument")
    layout._pair("left_inverse")
    # complement() ignores stride-0 modes; they make the layout repeat.
    if any(s > 1 and d == 0 for s, d in zip(flatten(layout.shape),
                                            flatten(layout.stride))):
        fail(f"left_inverse: {layout} is not injective (a mode of stride "
              "0 repeats offsets)")
    return right_inverse(make_layout(layout, complement(layout)))


def logical_divide(layout, tiler):
    """``layout o (tiler, complement(tiler, size(layout)))``: mode 0 walks a
    tile, mode 1 the tiles: ``logical_divide(Layout((4, 2, 3), (2, 1, 8)),
    Layout(4, 2))`` is ``((2,2),(2,3)):((4,1),(2,8))``. A shape (a tuple of
    ints) is the compact layout of that shape, as in the original DSL:
    ``logical_divide(Layout(64), (2, 2))`` divides by ``(2,2):(1,2)``. A
    tuple holding Layouts divides mode by mode (CuTe's by-mode tiler)."""
    if isinstance(tiler, (tuple, list)) and _is_shape(tiler):
        tiler = Layout(tiler)
    return _tiled(_core.layout_logical_divide, layout, tiler, "logical_divide")


def _is_shape(t) -> bool:
    """A (nested) tuple of ints, with no Layout inside."""
    if isinstance(t, (tuple, list)):
        return all(_is_shape(e) for e in t)
    return _is_int(t)


def zipped_divide(layout, tiler):
    """:func:`logical_divide` with the tile modes gathered in mode 0 and the
    rest in mode 1: ``((tile modes), (rest modes))``."""
    return _tiled(_core.layout_zipped_divide, layout, tiler, "zipped_divide")


def tiled_divide(layout, tiler):
    """:func:`zipped_divide` with the rest modes unpacked:
    ``((tile modes), rest0, rest1, ...)``."""
    return _tiled(_core.layout_tiled_divide, layout, tiler, "tiled_divide")


def flat_divide(layout, tiler):
    """:func:`zipped_divide` with both modes unpacked: ``(tile0, tile1,
    ..., rest0, rest1, ...)``."""
    return _tiled(_core.layout_flat_divide, layout, tiler, "flat_divide")


def _product(function, a, b, name):
    a = as_layout(a, f"{name}'s first argument")
    b = as_layout(b, f"{name}'s second argument")
    return Layout._from_core(located(function, a._pair(name),
                                     b._pair(name)))


def logical_product(a, b) -> Layout:
    """``(a, complement(a, size(a) * cosize(b)) o b)``: ``b`` copies of ``a``."""
    return _product(_core.layout_logical_product, a, b, "logical_product")


def zipped_product(layout, tiler) -> Layout:
    """:func:`logical_product` with the block modes gathered in mode 0 and
    the products in mode 1: ``((layout modes), (rest modes))``. A by-mode
    tiler (a tuple) multiplies mode i of ``layout`` by its mode i, as CuTe
    does; a Layout multiplies the whole layout."""
    return _tiled(_core.layout_zipped_product, layout, tiler,
                  "zipped_product")


def tiled_product(layout, tiler) -> Layout:
    """:func:`zipped_product` with the rest modes unpacked:
    ``((layout modes), rest0, rest1, ...)``."""
    return _tiled(_core.layout_tiled_product, layout, tiler, "tiled_product")


def flat_product(layout, tiler) -> Layout:
    """:func:`zipped_product` with both modes unpacked: ``(layout0,
    layout1, ..., rest0, rest1, ...)``."""
    return _tiled(_core.layout_flat_product, layout, tiler, "flat_product")


def blocked_product(a, b, *, by_mode=False) -> Layout:
    """One copy of ``a`` for each element of ``b`` (the original DSL's
    meaning): the leaf modes of ``a`` followed by those of ``b``, whose
    strides are scaled by ``cosize(a)``:
    ``blocked_product(Layout((2, 5), (5, 1)), Layout((3, 4), (1, 3)))`` is
    ``(2,5,3,4):(5,1,10,30)``. With ``by_mode=True``, CuTe's blocked
    product, mode by mode ``(a_i, b_i)``:
    ``((2,3),(5,4)):((5,10),(1,30))``."""
    if by_mode:
        return _product(_core.layout_blocked_product, a, b, "blocked_product")
    a = as_layout(a, "blocked_product's first argument")
    b = as_layout(b, "blocked_product's second argument")
    a._pair("blocked_product")
    b._pair("blocked_product")
    scale = a.cosize()
    shape = flatten(a.shape) + flatten(b.shape)
    stride = flatten(a.stride) + tuple(d * scale for d in flatten(b.stride))
    if len(shape) == 1:
        return Layout(shape[0], stride[0])
    return Layout(shape, stride)


def raked_product(a, b) -> Layout:
    """Like :func:`blocked_product` with each mode ``(b_i, a_i)``: the
    elements of ``a`` are interleaved across the tiles."""
    return _product(_core.layout_raked_product, a, b, "raked_product")


def recast_layout(new_bits: int, old_bits: int, layout: Layout) -> Layout:
    """The layout of the same memory read as ``new_bits``-bit elements
    instead of ``old_bits``-bit ones (CuTe's recast_layout):
    ``recast_layout(8, 32, Layout((4, 8)))`` is ``(16,8):(1,16)``."""
    for name, v in (("new_bits", new_bits), ("old_bits", old_bits)):
        if not _is_int(v):
            fail(f"recast_layout's {name} must be an int, got {v!r}")
    layout = _layout_arg(layout, "recast_layout's layout")
    return Layout._from_core(located(
        _core.layout_recast, _small_int(new_bits, "new_bits"),
        _small_int(old_bits, "old_bits"), layout._pair("recast_layout")))


def make_layout_tv(thr_layout, val_layout):
    """CuTe DSL's make_layout_tv: ``(tiler, tv_layout)`` where ``tiler`` is
    the tile shape (per mode, thread extent times value extent) and
    ``tv_layout`` maps ``(thread_index, value_index)`` to the index of that
    element in the column-major tile. Thread ``t`` is the thread whose
    ``thr_layout`` value is ``t``; likewise for values.
    ``make_layout_tv(Layout((4, 32), (32, 1)), Layout((4, 4), (4, 1)))[0]``
    is ``(16, 128)``."""
    thr = as_layout(thr_layout, "make_layout_tv's thread layout")
    val = as_layout(val_layout, "make_layout_tv's value layout")
    tiler, tv = located(_core.layout_tv, thr._pair("make_layout_tv"),
                        val._pair("make_layout_tv"))
    return tiler, Layout._from_core(tv)
