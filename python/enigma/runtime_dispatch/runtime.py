"""``enigma.runtime_dispatch.runtime``: the original DSL's module of the
Metal runtime, with this package's other runtimes beside it. Every name is
the top-level object."""

from .._compile import CompiledKernel
from .._metal_host import MetalHostRuntime
from .._runtime import (CpuRuntime, CudaRuntime, DeviceCapabilities,
                        MetalRuntime, PreparedKernel)

__all__ = ["MetalRuntime", "PreparedKernel", "DeviceCapabilities",
           "CompiledKernel", "CpuRuntime", "CudaRuntime", "MetalHostRuntime"]
