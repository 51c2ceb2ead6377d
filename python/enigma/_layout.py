"""CuTe's layouts (docs/reference/layout.md).

A :class:`Layout` is a function from coordinates to offsets given by a
hierarchical shape and stride (nested tuples of ints), column-major
(colexicographic) by default: ``Layout((4, 8))`` is ``(4,8):(1,4)``.

This module holds the layout types (:class:`Layout`,
:class:`IdentityLayout`), their evaluation and the ways to make one
(``make_layout``, ...). Evaluating a layout at a coordinate runs here, with
generic arithmetic, so the same call works on Python ints (giving an int)
and inside a traced kernel on ``uint`` IRValues (giving an IRValue built
from the fewest ops: strides of 1 are not multiplied, modes of extent 1 or
stride 0 add nothing). The algebra on layouts (composition, complement,
divide, product, ...) is in ``_layout_algebra`` and runs in the C++ core
(include/enigma/Layout); swizzles are in ``_layout_swizzle``, the nested
tuples and ``enigma.tuple``'s helpers in ``_layout_tuples``, layouts with
run-time extents in ``_layout_dynamic``.

Every mistake (incompatible shapes, non-divisible divides, coordinates out
of range or of the wrong rank) raises :class:`enigma.EnigmaError` naming the
caller's file:line.
"""

from __future__ import annotations

from . import _core
from . import _layout_dynamic as _dynamic
from ._ir import IRValue, fail, located
from ._layout_tuples import (coord_str, depth, int_tuple, is_integral,
                             is_tuple, product, rank, shape_at, sum_terms,
                             tuple_str)

__all__ = [
    "Layout", "IdentityLayout",
    "make_layout", "make_ordered_layout", "make_identity_layout", "select",
]


# --------------------------------------------------------------------------
# Evaluation with ints or traced values
# --------------------------------------------------------------------------

def check_coord_leaf(c, what="coordinate"):
    """An int, or a scalar integer IRValue of a traced kernel."""
    if is_integral(c):
        return int(c)
    if isinstance(c, IRValue):
        if c.lanes != 1 or c.dtype.is_float or c.dtype.name == "b1":
            fail(f"a layout {what} must be a scalar integer, got {c!r}")
        return c
    fail(f"a layout {what} must be an int, a tuple of ints or a traced "
          f"integer value, got {c!r}")


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
    return is_integral(x) and x == 1


def _is_zero(x) -> bool:
    return is_integral(x) and x == 0


def _offset_terms(coord, shape, stride, terms):
    """Appends to ``terms`` the products coordinate * stride of every leaf
    mode that contributes (CuTe's crd2idx)."""
    if isinstance(coord, (tuple, list)):
        if isinstance(shape, int) or len(coord) != len(shape):
            fail(f"coordinate {coord_str(coord)} has rank {len(coord)} "
                  f"but the shape {tuple_str(shape)} has rank {rank(shape)}")
        for c, s, d in zip(coord, shape, stride):
            _offset_terms(c, s, d, terms)
        return
    c = check_coord_leaf(coord)
    extent = product(shape)
    if isinstance(c, int) and is_integral(extent) and not 0 <= c < extent:
        fail(f"coordinate {c} is out of range [0, {extent}) of shape "
              f"{tuple_str(shape)}")
    if not isinstance(shape, tuple):
        if not _is_one(shape) and not _is_zero(stride):
            terms.append(c if _is_one(stride) else _dynamic.mul(c, stride))
        return
    if isinstance(c, int) and is_integral(extent):
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


def _evaluate(shape, stride, coord):
    terms = []
    _offset_terms(coord, shape, stride, terms)
    return sum_terms(terms)


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
        shape = int_tuple(shape, "a layout shape")
        if stride is not None:
            stride = int_tuple(stride, "a layout stride")
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
        return product(shape_at(self._shape, mode, "Layout.size"))

    def rank(self) -> int:
        """Number of top-level modes (1 for an integral shape)."""
        return rank(self._shape)

    def depth(self) -> int:
        """Nesting depth of the shape (0 for an integral shape)."""
        return depth(self._shape)

    def cosize(self) -> int:
        """One past the largest offset: ``L(size - 1) + 1``."""
        if self.dynamic:
            return _dynamic.cosize(self._shape, self._stride)
        return located(_core.layout_cosize, self._pair())

    def mode(self, i: int) -> "Layout":
        """Top-level mode ``i`` as a layout of its own."""
        return Layout._of(self._shape_mode(i), _mode(self._stride, int(i)))

    def _shape_mode(self, i):
        if not is_integral(i) or not 0 <= i < self.rank():
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
        return hash(tuple_str(self._shape))

    def __str__(self):
        return f"{tuple_str(self._shape)}:{tuple_str(self._stride)}"

    __repr__ = __str__


class WrapsLayout:
    """The size, rank and depth of a layout that wraps an inner ``layout``
    (IdentityLayout, SwizzledLayout): those of the inner one."""

    __slots__ = ()

    def size(self, mode=None) -> int:
        """As :meth:`Layout.size`."""
        return self.layout.size(mode)

    def rank(self) -> int:
        """As :meth:`Layout.rank`."""
        return self.layout.rank()

    def depth(self) -> int:
        """As :meth:`Layout.depth`."""
        return self.layout.depth()


class IdentityLayout(WrapsLayout):
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
            int_tuple(coord_shape, "an identity layout shape")
        self.layout = Layout(self.coord_shape) if layout is None else layout

    @property
    def shape(self):
        """The shape of the coordinates this layout takes."""
        return self.layout.shape

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
            return (f"{tuple_str(self.coord_shape)}:"
                    f"{_basis_str(self.coord_shape)}")
        return f"idx2crd{tuple_str(self.coord_shape)} o {self.layout}"

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
# Construction
# --------------------------------------------------------------------------

def as_layout(x, what: str) -> Layout:
    """``x`` as a Layout: a Layout as it is, a shape (an int or a tuple) as
    its compact column-major layout; ``what`` names ``x`` in the error."""
    if isinstance(x, Layout):
        return x
    if is_integral(x) or isinstance(x, (tuple, list)):
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
        order = int_tuple(order, "make_ordered_layout's order")
        return Layout(shape, _dynamic.compact_order(
            shape, order if isinstance(order, tuple) else (order,)))
    shape = int_tuple(shape, "make_ordered_layout's shape")
    order = int_tuple(order, "make_ordered_layout's order")
    return Layout._from_core(located(_core.layout_ordered, shape, order))


def make_identity_layout(shape) -> Layout:
    """The compact column-major layout of ``shape`` (the original DSL's
    meaning): ``make_identity_layout((4, 8))`` is ``(4,8):(1,4)``, so a
    coordinate maps to its linear index. CuTe's identity layout, which maps
    a coordinate to itself, is :class:`IdentityLayout`."""
    return Layout(shape)


def select(x, mode):
    """Top-level mode ``mode`` of a tuple (an int mode gives that mode, a
    list of modes the tuple of them in that order): ``select((5, 6, 7), 2)
    == 7``, ``select((5, 6, 7), [2, 0]) == (7, 5)``. A Layout gives the
    layout of those modes."""
    if isinstance(mode, IRValue):
        # select(a, cond): Metal's select, which is enigma.where here.
        fail(f"select(x, mode) picks modes of a tuple or a Layout, and mode "
             f"must be a Python int, got {mode!r}; to choose between two "
             "values per thread write enigma.where(false_value, true_value, "
             "condition) (Metal's select(f, t, c))")
    several = isinstance(mode, (list, tuple))
    modes = list(mode) if several else [mode]
    if isinstance(x, Layout):
        shape = select(x.shape, modes if several else modes[0])
        return Layout._of(shape, select(x.stride, modes if several
                                        else modes[0]))
    t = x if is_tuple(x) else (x,)
    for m in modes:
        if not is_integral(m) or not -len(t) <= m < len(t):
            fail(f"select: mode {m!r} is out of range for {tuple_str(x)} of "
                  f"rank {len(t)}")
    picked = tuple(t[m] for m in modes)
    return picked if several else picked[0]
