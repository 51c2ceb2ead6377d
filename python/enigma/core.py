"""``enigma.core``: the original DSL's module path for the layout algebra.
Every name is the top-level object (``enigma.core.Layout is
enigma.Layout``); the code lives in ``enigma._layout`` and the modules
beside it (``_layout_tuples``, ``_layout_swizzle``, ``_layout_algebra``)."""

from ._layout import (  # noqa: F401
    IdentityLayout, Layout, make_identity_layout, make_layout,
    make_ordered_layout)
from ._layout_algebra import (  # noqa: F401
    blocked_product, coalesce, complement, composition, cosize, flat_divide,
    flat_product, left_inverse, logical_divide, logical_product,
    make_layout_tv, raked_product, recast_layout, right_inverse, size,
    tiled_divide, tiled_product, zipped_divide, zipped_product)
from ._layout_swizzle import Swizzle, SwizzledLayout, swizzle  # noqa: F401
from ._layout_tuples import (  # noqa: F401
    Coord, Shape, Stride, ceil_div, compact_col_major, compact_order,
    crd2idx, depth, flatten, gcd, is_int, is_tuple, product)

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
