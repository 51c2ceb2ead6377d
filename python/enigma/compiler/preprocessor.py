"""``enigma.compiler.preprocessor``: the original DSL's module path for the
kernel-source rewriting of ``enigma.range`` loops (the code lives in
``enigma._source_rewrite``)."""

from .._source_rewrite import prepare_kernel_function as preprocess_kernel

__all__ = ["preprocess_kernel"]
