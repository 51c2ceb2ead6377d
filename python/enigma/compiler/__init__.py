"""``enigma.compiler``: the original DSL's module path for ``compile`` and
``kernel`` (its submodules ``compiler`` and ``kernel`` hold the rest)."""

from .compiler import compile
from .kernel import kernel

__all__ = ["compile", "kernel"]
