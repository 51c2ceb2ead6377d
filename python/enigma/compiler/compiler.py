"""``enigma.compiler.compiler``: the original DSL's module path for
``compile`` and ``CompiledKernel`` (the code lives in ``enigma._compile``)."""

from .._compile import CompiledKernel, compile

__all__ = ["CompiledKernel", "compile"]
