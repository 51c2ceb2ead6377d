"""Swizzles (docs/reference/layout.md): CuTe's ``Swizzle<B,M,S>``, which
XORs bits of an offset into lower bits, and :class:`SwizzledLayout`, a
layout whose offsets go through a swizzle (CuTe's ``ComposedLayout``), with
``swizzle()`` to make one. The layouts they wrap are in ``_layout``; the
algebra treats a swizzled layout in ``_layout_algebra``.
"""

from __future__ import annotations

from . import _core
from ._ir import IRValue, fail, located
from ._layout import Layout, WrapsLayout, as_layout, check_coord_leaf
from ._layout_tuples import is_integral

__all__ = ["Swizzle", "SwizzledLayout", "swizzle"]


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
            if not is_integral(v) or not -64 < v < 64:
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
        offset = check_coord_leaf(offset, "offset")
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


class SwizzledLayout(WrapsLayout):
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
            check_coord_leaf(offset, "offset")
        elif not is_integral(offset) or offset < 0:
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
