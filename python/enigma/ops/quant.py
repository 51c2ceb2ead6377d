"""``enigma.ops.quant``: the original DSL's module path for the pack /
unpack / dequantise helpers (the code lives in ``enigma._vectors``)."""

from .._vectors import (dequantize_int8, pack_int4x2, pack_uint8x4,
                        unpack_int4x2, unpack_uint8x4)

__all__ = ["pack_uint8x4", "unpack_uint8x4", "pack_int4x2", "unpack_int4x2",
           "dequantize_int8"]
