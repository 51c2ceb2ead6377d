"""``enigma.runtime_dispatch``: the original DSL's module path for the
runtimes. Every name is the top-level object; the code lives in
``enigma._runtime`` (and ``enigma._metal_host``)."""

from .._runtime import MetalRuntime

__all__ = ["MetalRuntime"]
