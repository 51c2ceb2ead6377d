"""``enigma.compiler.kernel``: the original DSL's module path for the
``kernel`` and ``jit`` decorators. ``KernelDef``, ``JitDef`` and
``KernelHandle`` are the original's names for what they return (and what
calling a kernel inside a jit function returns)."""

from .._jit import JitFunction, KernelLaunch, jit
from .._kernel import KernelDefinition, kernel

KernelDef = KernelDefinition
JitDef = JitFunction
KernelHandle = KernelLaunch

__all__ = ["kernel", "jit", "KernelDef", "JitDef", "KernelHandle"]
