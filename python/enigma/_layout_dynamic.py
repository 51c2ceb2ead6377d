"""Layouts with run-time extents (docs/reference/layout.md, "Run-time
extents"): inside a kernel body a shape or stride leaf may be a traced
integer (a scalar parameter ``M``, ``N // 2``), as CuTe's dynamic integers.
The C++ core's algebra works on numbers, so what these layouts support is
computed here, on nested tuples whose leaves are ints or IRValues:

* building them (compact strides are products of the extents) and reading
  ``size``, ``cosize``, ``rank``, modes;
* evaluating a coordinate, and slicing (a Tensor of such a layout);
* composition with, and the divides by, a tuple of Python ints applied mode
  by mode (each top-level mode one extent): ``local_tile``,
  ``local_partition``.

Everything else (complement, inverses, products, coalesce, recast,
make_layout_tv, composition with a layout) needs the numbers and is an
EnigmaError naming the operation. A divide's rest mode has
``ceil_div(extent, tile)`` tiles, so the last tile may reach past the extent
(guard it with an identity tensor, as in CuTe)."""

from __future__ import annotations

import numbers

from ._ir import IRValue, fail

SUPPORTED = ("make_layout, make_ordered_layout, size, cosize, evaluation, "
             "slicing, composition with and logical/zipped/tiled/flat_divide "
             "by a tuple of ints, local_tile, local_partition")


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


class Basis:
    """The stride of an identity tensor of run-time extents: an offset that
    keeps one component per mode of the coordinate, CuTe's scaled basis
    elements (``1@0``, ``1@1``). A linear offset could not be decoded: a
    coordinate past a run-time extent (the last, partial tile of a divide)
    would wrap into the next mode."""

    __slots__ = ("parts",)

    def __init__(self, parts):
        self.parts = tuple(parts)

    @classmethod
    def unit(cls, mode: int, rank: int) -> "Basis":
        return cls(1 if k == mode else 0 for k in range(rank))

    def __add__(self, other):
        if _is_int(other) and other == 0:
            return self
        if not isinstance(other, Basis) or len(other.parts) != \
                len(self.parts):
            fail("an identity tensor's coordinates cannot be combined "
                 f"with {other!r}")
        return Basis(a if _is_int(b) and b == 0 else
                     b if _is_int(a) and a == 0 else a + b
                     for a, b in zip(self.parts, other.parts))

    __radd__ = __add__

    def scale(self, k) -> "Basis":
        return Basis(mul(p, k) for p in self.parts)

    def __repr__(self) -> str:
        return "(" + ",".join(show(p) for p in self.parts) + ")@"


def is_traced(x) -> bool:
    """A leaf known only when the kernel runs (or an identity tensor's
    basis stride, which needs the same treatment)."""
    return isinstance(x, (IRValue, Basis))


def has_traced(t) -> bool:
    """Whether a nested tuple has a traced leaf."""
    if isinstance(t, (tuple, list)):
        return any(has_traced(e) for e in t)
    return is_traced(t)


def leaves(t) -> list:
    if isinstance(t, tuple):
        return [x for e in t for x in leaves(e)]
    return [t]


def leaf_tuple(x, what: str):
    """x as nested tuples of ints and traced scalar integers."""
    if isinstance(x, Basis):
        return x
    if is_traced(x):
        if x.lanes != 1 or x.dtype.is_float or x.dtype.name == "b1":
            fail(f"{what} holds a {x!r}; a run-time extent or stride is a "
                 "scalar integer")
        return x
    if _is_int(x):
        return int(x)
    if isinstance(x, (tuple, list)):
        return tuple(leaf_tuple(e, what) for e in x)
    fail(f"{what} must be an int, a traced integer or a (nested) tuple of "
         f"them, got {x!r}")


def mul(a, b):
    """a * b folding Python ints (1 and 0 included)."""
    if isinstance(a, Basis) or isinstance(b, Basis):
        basis, k = (a, b) if isinstance(a, Basis) else (b, a)
        return basis if _is_int(k) and k == 1 else basis.scale(k)
    if _is_int(a) and _is_int(b):
        return a * b
    if _is_int(a) and a == 1 or _is_int(b) and b == 0:
        return b
    if _is_int(b) and b == 1 or _is_int(a) and a == 0:
        return a
    return a * b


def product(t):
    """The product of the leaves: an int when all are ints."""
    if isinstance(t, tuple):
        result = 1
        for e in t:
            result = mul(result, product(e))
        return result
    return t


def compact_col_major(shape, current=1):
    if not isinstance(shape, tuple):
        return current
    strides = []
    for s in shape:
        strides.append(compact_col_major(s, current))
        current = mul(current, product(s))
    return tuple(strides)


def compact_order(shape, order):
    """Compact strides giving the top-level modes increasing strides in
    `order` (as make_ordered_layout)."""
    if not isinstance(shape, tuple) or len(shape) == 1:
        return compact_col_major(shape)
    if len(order) != len(shape):
        fail(f"make_ordered_layout: order {order} does not have one entry per "
             "mode of the shape")
    strides, current = [None] * len(shape), 1
    for mode in sorted(range(len(shape)), key=lambda i: order[i]):
        strides[mode] = compact_col_major(shape[mode], current)
        current = mul(current, product(shape[mode]))
    return tuple(strides)


def check(shape, stride):
    """Congruent nesting; static extents >= 1 and strides >= 0."""
    if isinstance(shape, tuple) != isinstance(stride, tuple) or (
            isinstance(shape, tuple) and len(shape) != len(stride)):
        fail(f"a layout's stride {show(stride)} is not congruent to its "
             f"shape {show(shape)}")
    if isinstance(shape, tuple):
        for s, d in zip(shape, stride):
            check(s, d)
        return
    if _is_int(shape) and shape < 1:
        fail(f"a layout extent must be >= 1, got {shape}")
    if _is_int(stride) and stride < 0:
        fail(f"a layout stride must be >= 0, got {stride}")


def cosize(shape, stride):
    """1 + sum over leaves of (extent - 1) * stride."""
    total = 1
    for s, d in zip(leaves(shape), leaves(stride)):
        total = total + mul(s - 1, d) if not (_is_int(s) and s == 1) \
            else total
    return total


def show(t) -> str:
    if isinstance(t, tuple):
        return "(" + ",".join(show(e) for e in t) + ")"
    return "?" if is_traced(t) else str(t)


def refuse(operation: str, layout_text: str):
    fail(f"{operation} needs a layout with static extents, and "
         f"{layout_text} has run-time extents; with those a layout takes: "
         f"{SUPPORTED}")


def _tile_extent(t):
    """A by-mode tile: a positive int, or a layout n:1."""
    if _is_int(t):
        return int(t) if t >= 1 else None
    shape, stride = getattr(t, "shape", None), getattr(t, "stride", None)
    if _is_int(shape) and shape >= 1 and _is_int(stride) and stride == 1:
        return int(shape)
    return None


def _tile_ints(tiler, operation: str, layout_text: str, rank: int):
    if not isinstance(tiler, (tuple, list)):
        tiler = (tiler,)
    tiles = [_tile_extent(t) for t in tiler]
    if None in tiles:
        fail(f"{operation} of {layout_text}, which has run-time extents, "
             "takes one tile per mode: a tuple of positive ints (or of "
             f"layouts n:1), got {tiler!r}")
    if len(tiles) > rank:
        fail(f"{operation}: the tiler {tuple(tiler)} has more modes than "
             f"{layout_text}")
    return tuple(tiles)


def _single(shape, stride, i, operation, layout_text):
    s, d = (shape[i], stride[i]) if isinstance(shape, tuple) else \
        (shape, stride)
    if isinstance(s, tuple):
        fail(f"{operation} of {layout_text}, which has run-time extents, "
             f"divides mode by mode, each mode one extent; mode {i} is "
             f"{show(s)}")
    return s, d


def divide(kind: str, shape, stride, tiler, layout_text: str):
    """logical/zipped/tiled/flat_divide of a layout with run-time extents by
    a tuple of ints: (shape, stride) of the result."""
    rank = len(shape) if isinstance(shape, tuple) else 1
    tiles = _tile_ints(tiler, kind, layout_text, rank)
    tile_modes, rest_modes = [], []
    for i in range(rank):
        s, d = _single(shape, stride, i, kind, layout_text)
        if i >= len(tiles):
            rest_modes.append((s, d))
            continue
        t = tiles[i]
        if _is_int(s):
            if s % t:
                fail(f"{kind}: the tile {t} does not divide the extent {s} "
                     f"of mode {i} of {layout_text}")
            rest = s // t
        else:
            rest = s if t == 1 else (s + (t - 1)) // t  # ceil_div
        tile_modes.append((t, d))
        rest_modes.append((rest, mul(t, d)))
    if kind == "logical_divide":
        out = [((t, r), (dt, dr)) for (t, dt), (r, dr) in
               zip(tile_modes, rest_modes)] + rest_modes[len(tile_modes):]
        if rank == 1:
            return out[0]
        return tuple(s for s, _ in out), tuple(d for _, d in out)

    def mode(modes):
        if len(modes) == 1:
            return modes[0]
        return tuple(s for s, _ in modes), tuple(d for _, d in modes)

    tile, rest = mode(tile_modes), mode(rest_modes)
    if kind == "zipped_divide":
        return (tile[0], rest[0]), (tile[1], rest[1])
    if kind == "tiled_divide":
        return ((tile[0],) + tuple(s for s, _ in rest_modes),
                (tile[1],) + tuple(d for _, d in rest_modes))
    if kind == "flat_divide":
        modes = tile_modes + rest_modes
        return tuple(s for s, _ in modes), tuple(d for _, d in modes)
    refuse(kind, layout_text)


def composition(shape, stride, tiler, layout_text: str):
    """composition(layout, (t0, t1, ...)) mode by mode: the first t_i
    coordinates of each mode (the layout's own extent is not checked, as
    CuTe cannot check a run-time one either)."""
    rank = len(shape) if isinstance(shape, tuple) else 1
    tiles = _tile_ints(tiler, "composition", layout_text, rank)
    out = []
    for i in range(rank):
        s, d = _single(shape, stride, i, "composition", layout_text)
        out.append((tiles[i], d) if i < len(tiles) else (s, d))
    if rank == 1:
        return out[0]
    return tuple(s for s, _ in out), tuple(d for _, d in out)
