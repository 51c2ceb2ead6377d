"""``enigma.ops.gemm``: the original DSL's module path for ``gemm`` (the
code lives in ``enigma._tile``)."""

from .._tile import gemm

__all__ = ["gemm"]
