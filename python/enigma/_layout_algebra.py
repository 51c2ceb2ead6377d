"""The layout algebra (docs/reference/layout.md) on every kind of layout:
``size`` and ``cosize``, and composition, complement, the inverses, the
divides and products, ``recast_layout`` and ``make_layout_tv``, which run
in the C++ core (include/enigma/Layout). Identity and swizzled layouts keep
their outer function; a layout with run-time extents takes what
``_layout_dynamic`` computes and refuses the rest.
"""

from __future__ import annotations

from . import _core
from . import _layout_dynamic as _dynamic
from ._ir import fail, located
from ._layout import IdentityLayout, Layout, as_layout, make_layout
from ._layout_swizzle import Swizzle, SwizzledLayout
from ._layout_tuples import (flatten, int_tuple, is_integral, product,
                             shape_at, small_int)

__all__ = [
    "size", "cosize", "coalesce", "complement", "composition",
    "right_inverse", "left_inverse",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "zipped_product", "tiled_product", "flat_product",
    "blocked_product", "raked_product",
    "recast_layout", "make_layout_tv",
]


# --------------------------------------------------------------------------
# Sizes
# --------------------------------------------------------------------------

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
        _dynamic.has_traced(x) else int_tuple(x, "size's argument")
    return product(shape_at(t, mode, "size"))


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
    if is_integral(t):
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
        profile = int_tuple(profile, "coalesce's profile")
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
    if cosize is not None and not is_integral(cosize):
        fail(f"complement's cosize must be an int, got {cosize!r}")
    return Layout._from_core(located(
        _core.layout_complement, layout._pair("complement"),
        None if cosize is None else small_int(cosize, "complement's cosize")))


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
    return is_integral(t)


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
        if not is_integral(v):
            fail(f"recast_layout's {name} must be an int, got {v!r}")
    layout = _layout_arg(layout, "recast_layout's layout")
    return Layout._from_core(located(
        _core.layout_recast, small_int(new_bits, "new_bits"),
        small_int(old_bits, "old_bits"), layout._pair("recast_layout")))


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
