"""The MSL host runtime: runs the Metal Shading Language itself on the CPU.

Each kernel's Metal source (``compiled.metal_source``, or hand-written MSL
given to ``execute_source``) is compiled by clang++ against a host
implementation of ``metal_stdlib`` with real address spaces, and run with
Metal's execution model: the threads of a threadgroup run concurrently as
fibers, threadgroups in parallel on all cores. See docs/runtimes.md and
docs/design/msl-host-runtime.md.
"""

from __future__ import annotations

import numpy as np

from . import _core
from ._compile import CompiledKernel, params_of
from . import _runtime
from ._grid import is_int
from ._runtime import RuntimeBase

BackendUnavailableError = _core.BackendUnavailableError


class MetalHostRuntime(RuntimeBase):
    """Runs kernels by compiling their Metal Shading Language with clang++
    against Enigma's host ``metal_stdlib`` and running it with Metal's
    execution model on the CPU (fibers for the threads of a threadgroup).
    Raises BackendUnavailableError where no clang++ is installed."""

    def __init__(self):
        factory = getattr(_core.Runtime, "metal_host", None)
        if factory is None:
            raise BackendUnavailableError(
                "this build of Enigma has no MSL host runtime")
        super().__init__(factory())

    def _from_source(self, compiled, constants):
        """A kernel made with CompiledKernel(kernel_name, ..., metal_source)
        compiled here with the function constants the dispatch defines."""
        if not getattr(compiled, "_metal_source_only", False):
            return compiled
        ours = self.compile_source(compiled.metal_source, compiled.kernel_name,
                                   constants)
        ours.grid, ours.block = compiled.grid, compiled.block
        return ours

    def execute(self, compiled, inputs, output_size=None, grid=None,
                threads=None, **kwargs):
        ours = self._from_source(compiled, kwargs.get("constants"))
        if ours is not compiled:
            inputs = _raw_struct_inputs(ours, inputs)
        return super().execute(ours, inputs, output_size, grid, threads,
                               **kwargs)

    def prepare(self, compiled, inputs, output_size=None, **kwargs):
        ours = self._from_source(compiled, kwargs.get("constants"))
        if ours is not compiled:
            inputs = _raw_struct_inputs(ours, inputs)
        return super().prepare(ours, inputs, output_size, **kwargs)

    def compile_source(self, source: str, kernel_name: str,
                       constants=None) -> CompiledKernel:
        """A CompiledKernel for the kernel function ``kernel_name`` of the
        hand-written Metal ``source``, for ``execute`` and ``prepare``. Its
        buffer and scalar parameters are bound in ``[[buffer(n)]]`` order;
        ``constants`` (``{index: (type_name, value)}``) says which function
        constants will be given (the others stay undefined)."""
        if not isinstance(source, str):
            raise TypeError("source must be the Metal source text (str), got "
                            f"{type(source).__name__}")
        if not isinstance(kernel_name, str):
            raise TypeError("kernel_name must be a str, got "
                            f"{type(kernel_name).__name__}")
        defined = sorted(int(i) for i in (constants or {}) if is_int(i))
        artifact, bytes_params = _core.msl_host_artifact(source, kernel_name,
                                                         defined)
        params = params_of(artifact)
        compiled = CompiledKernel._make(artifact, params, None)
        compiled._bytes_params = [p for p, raw in zip(params, bytes_params)
                                  if raw]
        return compiled

    def execute_source(self, source: str, kernel_name: str, inputs=None,
                       output_size=None, grid=None, threads=None, *,
                       scalars=None, output_sizes=None, constants=None):
        """Runs the kernel function ``kernel_name`` of hand-written Metal
        ``source`` once, as ``execute`` runs a compiled kernel: inputs bind
        to the leading buffer parameters (in ``[[buffer(n)]]`` order),
        scalars to the ``constant T&`` parameters of scalar type, every
        remaining buffer is an output of ``output_size`` bytes (or
        ``output_sizes[k]``), zero-filled. A buffer whose element type is a
        struct takes any array as its bytes. Returns the output's bytes (a
        list with several outputs or with ``output_sizes``)."""
        compiled = self.compile_source(source, kernel_name, constants)
        inputs = _raw_struct_inputs(compiled, inputs)
        return super().execute(compiled, inputs, output_size, grid, threads,
                            scalars=scalars, output_sizes=output_sizes,
                            constants=constants)

    @staticmethod
    def check_source(source: str, file_name: str = "kernel.metal") -> None:
        """Checks that every kernel function of ``source`` can run here and
        that the source compiles against the host ``metal_stdlib`` (function
        constants undefined); raises EnigmaRuntimeError with the line and
        the compiler's messages otherwise."""
        _core.msl_host_check(source, file_name)


def _raw_struct_inputs(compiled, inputs):
    """Inputs with the arrays for struct-typed buffers taken as bytes."""
    if inputs is None or not isinstance(inputs, (list, tuple)):
        return inputs
    buffers = [p for p in compiled.params if p.kind == "buffer"]
    return [_as_raw(value) if k < len(buffers)
            and buffers[k] in compiled._bytes_params else value
            for k, value in enumerate(inputs)]


def _as_raw(value):
    """The bytes of an array, for a parameter of struct type."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return value
    return np.ascontiguousarray(value).reshape(-1).view(np.uint8)


_runtime.metal_source_runtime = MetalHostRuntime
