"""``enigma.tuple``: the original DSL's hierarchical-tuple helpers (rank,
depth, flatten, product, crd2idx, idx2crd, compact strides, ...), with its
semantics. ``product``, ``select`` and ``repeat_like`` are also top-level
names (``enigma.tuple.product is enigma.product``); the code lives in
``enigma._layout_tuples`` (``select``, which also takes a Layout, in
``enigma._layout``)."""

from ._layout import select  # noqa: F401
from ._layout_tuples import (  # noqa: F401
    Coord, Int, Shape, Stride, ceil_div, compact_col_major, compact_order,
    crd2idx, depth, elem_scale, flatten, gcd, idx2crd, inner_product,
    is_compatible, is_congruent, is_int, is_tuple, prefix_product, product,
    rank, repeat_like, shape_div)

__all__ = [
    "Int", "Shape", "Stride", "Coord",
    "is_int", "is_tuple", "rank", "depth", "flatten", "product",
    "inner_product", "crd2idx", "idx2crd", "compact_col_major",
    "compact_order", "prefix_product", "ceil_div", "gcd", "shape_div",
    "elem_scale", "select", "repeat_like", "is_congruent", "is_compatible",
]
