"""``enigma.ops.gemm``: the original DSL's module path for ``gemm`` (the
code lives in ``enigma._tile_gemm``)."""

from .._tile_gemm import gemm

__all__ = ["gemm"]
