"""The layout algebra on tensors (docs/reference/tensor.md): a Tensor seen
through a composition or a divide of its layout, CuTe's ``local_tile`` and
``local_partition``, and ``make_identity_tensor``. The Tensor itself is in
``_tensor``.
"""

from __future__ import annotations

from ._ir import EnigmaError, fail
from ._layout import as_layout
from ._layout_algebra import composition, size, zipped_divide
from ._layout_tuples import is_integral
from ._tensor import IdentityTensor, Tensor
from ._tensor_offsets import add, div, mod, mul

__all__ = ["tensor_composition", "tensor_zipped_divide", "local_tile",
           "local_partition", "make_identity_tensor"]


def _check_tensor(t, what):
    if not isinstance(t, Tensor):
        raise EnigmaError(f"{what} expects an enigma.Tensor, got "
                          f"{type(t).__name__}")
    if t.layout is None:
        fail(f"{what}: tensor {t.name} has no layout")


def tensor_composition(tensor, layout, tiler=None) -> Tensor:
    """``tensor`` seen through ``composition(tensor.layout, layout)``: the
    element at ``c`` is the old element ``layout(c)``, ``layout(c)`` being a
    linear (column-major) index into the tensor.

    ``tiler``, the original DSL's third argument, is the shape of the tile
    that ``layout`` (a TV layout) indexes column-major, as
    ``make_layout_tv`` returns it; it must have the tensor's size (the
    tensor is that tile), and then adds nothing to the composition."""
    _check_tensor(tensor, "tensor_composition")
    if tiler is not None:
        if not (is_integral(tiler) or isinstance(tiler, tuple)):
            fail(f"tensor_composition: tiler must be a shape (an int or a "
                 f"tuple of ints), got {tiler!r}")
        if is_integral(tensor.size()) and size(tiler) != tensor.size():
            fail(f"tensor_composition: the tiler {tiler} has "
                 f"{size(tiler)} elements but tensor {tensor.name} "
                 f"(shape {tensor.shape}) has {tensor.size()}; the tiler is "
                 "the shape of the tile the tensor is")
    composed = composition(tensor.layout, layout)
    return tensor._with(composed, tensor.base_offset)


def tensor_zipped_divide(tensor, tiler) -> Tensor:
    """``tensor`` seen through ``zipped_divide(tensor.layout, tiler)``: mode
    0 walks inside one tile, mode 1 picks the tile, so ``t[None, k]`` is
    tile ``k``."""
    _check_tensor(tensor, "tensor_zipped_divide")
    divided = zipped_divide(tensor.layout, tiler)
    return tensor._with(divided, tensor.base_offset)


def local_tile(tensor, tiler, coord) -> Tensor:
    """Tile ``coord`` of ``tensor`` cut into ``tiler``-shaped tiles (CuTe's
    ``local_tile``): ``tensor_zipped_divide(tensor, tiler)[None, coord]``.
    ``coord`` picks the tile, one entry per mode of ``tiler`` (ints or
    traced integers, e.g. from ``enigma.arch.block_idx()``)."""
    _check_tensor(tensor, "local_tile")
    return tensor_zipped_divide(tensor, tiler)[None, coord]


def local_partition(tensor, thr_layout, index) -> Tensor:
    """The elements thread ``index`` owns when the threads, arranged by
    ``thr_layout``, tile ``tensor`` over and over (CuTe's
    ``local_partition``): the thread's coordinate ``c`` in ``thr_layout``
    (``thr_layout(c) == index``) selects element ``c`` of every
    ``shape(thr_layout)`` tile, so neighbouring threads own neighbouring
    elements. ``index`` is an int or a traced integer (a thread index)."""
    _check_tensor(tensor, "local_partition")
    layout = as_layout(thr_layout, "local_partition: thr_layout")
    shape, stride = layout.shape, layout.stride
    if not isinstance(shape, tuple):
        shape, stride = (shape,), (stride,)
    tile, coord = [], []
    for mode_shape, mode_stride in zip(shape, stride):
        # The mode's leaves from index (idx2crd with strides), folded into
        # one coordinate of the mode, colexicographically (CuTe's flat
        # coordinate).
        leaves = list(zip(_leaves(mode_shape), _leaves(mode_stride)))
        flat, scale = 0, 1
        for s, d in leaves:
            if d:  # a stride-0 mode: every thread has coordinate 0 there
                flat = add(flat, mul(mod(div(index, d), s), scale))
            scale *= s
        tile.append(scale)
        coord.append(flat)
    if len(tile) == 1:
        tile, coord = tile[0], coord[0]
    else:
        tile, coord = tuple(tile), tuple(coord)
    return tensor_zipped_divide(tensor, tile)[coord, None]


def _leaves(t) -> list:
    return [x for leaf in t for x in _leaves(leaf)] if isinstance(t, tuple) \
        else [t]


def make_identity_tensor(shape) -> IdentityTensor:
    """A tensor of shape ``shape`` whose element at each coordinate is that
    coordinate; divide and slice it like a data tensor to learn which
    coordinates a thread touches (for bounds checks)."""
    if not (is_integral(shape) or isinstance(shape, tuple)):
        raise EnigmaError(f"make_identity_tensor: shape must be an int or a "
                          f"tuple of ints, got {shape!r}")
    return IdentityTensor(shape)
