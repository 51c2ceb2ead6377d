"""``enigma.tensor``: the original DSL's module path for tensors. Every name
is the top-level object (``enigma.tensor.Tensor is enigma.Tensor``); the
code lives in ``enigma._tensor`` and the modules beside it
(``_tensor_fragments``, ``_tensor_algebra``)."""

from ._layout import Layout
# The original module imported these tuple helpers, so programs took them
# from here too (``from enigma.tensor import idx2crd``).
from ._layout_tuples import (flatten, idx2crd, is_int,  # noqa: F401
                             is_tuple, product)
from ._tensor import IdentityTensor, Tensor
from ._tensor_algebra import (local_partition, local_tile,
                              make_identity_tensor, tensor_composition,
                              tensor_zipped_divide)
from ._tensor_fragments import Fragment, VectorFragment

__all__ = ["Tensor", "tensor_composition", "tensor_zipped_divide",
           "make_identity_tensor", "Layout", "Fragment", "VectorFragment",
           "IdentityTensor", "local_tile", "local_partition"]
