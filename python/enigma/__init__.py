"""Enigma: GPU kernels written in Python, compiled through the ``enigma``
MLIR dialect to Metal Shading Language, CUDA and host C++.

See docs/ for the language reference and the execution model.
"""

import os as _os

# A development build keeps the compiled module in its build tree; point
# ENIGMA_CORE_DIR at <build>/python/enigma to use it with these sources.
if _os.environ.get("ENIGMA_CORE_DIR"):
    __path__.append(_os.environ["ENIGMA_CORE_DIR"])  # noqa: F821

from . import _core, _kernel, _threads  # noqa: E402
from ._threads import *  # noqa: F401,F403  (thread queries, barriers)
from ._math import *  # noqa: F401,F403
from ._vectors import *  # noqa: F401,F403
from ._cooperation import *  # noqa: F401,F403
from ._matrix import *  # noqa: F401,F403
from ._simd import *  # noqa: F401,F403
from ._control import *  # noqa: F401,F403
from ._layout import *  # noqa: F401,F403  (CuTe layouts: Layout, make_layout)
from ._layout_tuples import *  # noqa: F401,F403  (product, repeat_like)
from ._layout_swizzle import *  # noqa: F401,F403  (Swizzle, swizzle)
from ._layout_algebra import *  # noqa: F401,F403  (CuTe layout algebra)
from ._tile import *  # noqa: F401,F403  (copy)
from ._tile_gemm import *  # noqa: F401,F403  (gemm)
from ._tile_pipeline import *  # noqa: F401,F403  (pipeline, Pipeline)
from ._mma import *  # noqa: F401,F403  (fragments, mma, copy_tile)
from ._fp8 import *  # noqa: F401,F403  (8-bit floats)
from ._gemm_fp8 import *  # noqa: F401,F403  (scaled 8-bit float GEMM)
from ._gemm_fp8_launch import *  # noqa: F401,F403  (enigma.gemm_fp8)
from ._async_copy import *  # noqa: F401,F403  (simdgroup async copies)
from ._pipeline import *  # noqa: F401,F403  (pipelines with roles)
from ._gemm import *  # noqa: F401,F403  (gemm_block, MmaConfig)
from ._gemm_f32 import *  # noqa: F401,F403  (TF32 warpgroup GEMM tiles)
from ._threads import arch, metal_cast  # noqa: F401
from ._compile import CompiledKernel, compile  # noqa: F401
from ._tensor import *  # noqa: F401,F403  (Tensor, IdentityTensor)
from ._tensor_fragments import *  # noqa: F401,F403  (Fragment, VectorFragment)
from ._tensor_algebra import *  # noqa: F401,F403  (tensor_zipped_divide, ...)
from ._jit import *  # noqa: F401,F403  (jit, dispatch_shape)
from ._dtypes import (  # noqa: F401
    BFloat16, Bool, DType, Float16, Float32, Int8, Int16, Int32, Int64,
    Scalar, ShapedBuffer, UInt8, UInt16, UInt32, UInt64, b1, bf16, f16, f32,
    i8, i16, i32, i64, u8, u16, u32, u64, Float8E4M3, Float8E5M2, f8e4m3,
    f8e5m2)
from ._runtime import (  # noqa: F401
    BackendUnavailableError, CpuRuntime, CudaRuntime, EnigmaRuntimeError,
    DeviceCapabilities, MetalRuntime, MetalUnavailableError, PreparedKernel,
    best_runtime)
from ._metal_host import MetalHostRuntime  # noqa: F401
from ._launch import use_runtime  # noqa: F401  (kernel[n](...))
from ._log import set_log_level  # noqa: F401
from ._ir import EnigmaError, IRValue  # noqa: F401
from ._kernel import KernelDefinition, kernel  # noqa: F401
from . import _log, benchmark, testing  # noqa: F401,E402
# 4-bit weight-only quantized matrices (MLX's format).
from .quantized import dequantize, quantize, quantized_matmul  # noqa: F401,E402
# The original DSL's module paths, thin re-exports of the names above.
from . import _tracing, compiler, core, ops, runtime_dispatch, tensor, tuple, typing  # noqa: F401,E402,E501

DispatchError = _core.DispatchError
BoundsCheckError = _core.BoundsCheckError
KernelFaultError = _core.KernelFaultError

__version__ = "0.1.0"
_log.configure_from_environment()  # ENIGMA_LOG
# A wrong-arity call of one of these names in a kernel body is reported at
# the user's line (the kernel layer cannot import this package).
_kernel.set_package_namespace(globals())


def __getattr__(name):
    # `enigma.thread_position_in_grid` is an attribute, not a call
    # (docs/reference/core.md): it reads the x position of the thread being
    # traced.
    if name == "thread_position_in_grid":
        return _threads.thread_position_value()
    if name in ("torch", "attention"):
        # PyTorch integration and the attention library, imported on first
        # use, so that `import enigma` then `enigma.attention.attention(...)`
        # works as `import enigma.attention` does.
        import importlib
        return importlib.import_module("." + name, __name__)
    _kernel.missing_package_name(name)
