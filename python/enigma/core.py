"""``enigma.core``: the original DSL's module path for the layout algebra.
Every name is the top-level object (``enigma.core.Layout is
enigma.Layout``); the code lives in ``enigma._layout``."""

from ._layout import (  # noqa: F401
    Coord, IdentityLayout, Layout, Shape, Stride, Swizzle, SwizzledLayout,
    blocked_product, ceil_div, coalesce, compact_col_major, compact_order,
    complement, composition, cosize, crd2idx, depth, flat_divide,
    flat_product, flatten, gcd, is_int, is_tuple, left_inverse,
    logical_divide, logical_product, make_identity_layout, make_layout,
    make_layout_tv, make_ordered_layout, product, raked_product,
    recast_layout, right_inverse, size, swizzle, tiled_divide, tiled_product,
    zipped_divide, zipped_product)

__all__ = [
    "Layout", "Swizzle", "SwizzledLayout", "swizzle", "make_layout",
    "make_ordered_layout", "make_identity_layout", "size", "cosize",
    "coalesce", "complement", "composition", "right_inverse", "left_inverse",
    "logical_divide", "zipped_divide", "blocked_product", "recast_layout",
    "make_layout_tv",
    # Also here, as in this package's top level:
    "IdentityLayout", "tiled_divide", "flat_divide", "logical_product",
    "zipped_product", "tiled_product", "flat_product", "raked_product",
]
