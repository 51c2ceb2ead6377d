"""``enigma.ops``: the original DSL's module path for the tile-level ops
(``gemm``) and the quantisation helpers. Every name is the top-level object
(``enigma.ops.gemm is enigma.gemm``)."""

from .gemm import gemm
from .quant import (dequantize_int8, pack_int4x2, pack_uint8x4, unpack_int4x2,
                    unpack_uint8x4)

__all__ = ["gemm", "pack_uint8x4", "unpack_uint8x4", "pack_int4x2",
           "unpack_int4x2", "dequantize_int8"]
