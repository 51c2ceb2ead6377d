"""Runtimes with one surface on every backend (API.md section 4).

The binding of inputs, scalars and outputs to parameters, and its
validation, happen once in C++ (lib/Runtime/Dispatch.cpp); this layer only
turns Python objects into contiguous bytes and numbers.
"""

from __future__ import annotations

import numbers
import sys

import numpy as np

from . import _core
from ._compile import CompiledKernel
from ._dtypes import as_dtype

EnigmaRuntimeError = _core.EnigmaRuntimeError
BackendUnavailableError = _core.BackendUnavailableError


class MetalUnavailableError(BackendUnavailableError):
    """Metal cannot run on this machine (not macOS, or no Metal device)."""


def _shape(value, what: str):
    if isinstance(value, numbers.Integral):
        value = (int(value),)
    try:
        dims = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, "
                        f"got {value!r}") from None
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{what} must have 1 to 3 dimensions, got {value!r}")
    for d in dims:
        if d < 0 or d >= 2**32:
            raise ValueError(f"{what} {value!r} has a dimension outside "
                             "0..2^32-1")
    return dims + (1,) * (3 - len(dims))


def _buffer_params(compiled):
    return [p for p in compiled.params if p.kind == "buffer"]


def _as_bytes(value, param, position: int):
    """(uint8 view, dtype name) of one input, copied if not contiguous."""
    label = (f"input {position} ({param.name})" if param is not None
             else f"input {position}")
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = np.frombuffer(value, dtype=np.uint8)
        dtype = param.dtype.name if param is not None else "u8"
        return raw, dtype
    if not isinstance(value, np.ndarray):
        if param is None:
            value = np.asarray(value)
        else:
            value = np.asarray(value, dtype=param.dtype.numpy_dtype)
    dtype = as_dtype(value.dtype, strict=False)
    if dtype is None:
        expected = f" but parameter {param.name} is {param.dtype.name}" \
            if param is not None else ""
        raise TypeError(f"{label} has numpy dtype {value.dtype}{expected}; "
                        "convert it with .astype(...)")
    if (param is not None and param.dtype.name == "bf16"
            and value.dtype == np.uint16):
        dtype = param.dtype  # bf16 bits carried in a uint16 array
    array = np.ascontiguousarray(value)
    return array.reshape(-1).view(np.uint8), dtype.name


def _scalar_values(compiled, scalars):
    names = [p.name for p in compiled.params if p.kind == "scalar"]
    if scalars is None:
        return []
    if isinstance(scalars, dict):
        unknown = set(scalars) - set(names)
        if unknown:
            raise ValueError(f"scalars names {sorted(unknown)} but the "
                             f"kernel's scalar parameters are {names}")
        missing = [n for n in names if n not in scalars]
        if missing:
            raise ValueError(f"no value for scalar parameter(s) {missing}")
        values = [scalars[n] for n in names]
    elif isinstance(scalars, (list, tuple)):
        values = list(scalars)
    else:
        values = [scalars]
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    params = [p for p in compiled.params if p.kind == "scalar"]
    for param, v in zip(params, values):
        what = f"scalar parameter {param.name} ({param.dtype.name})"
        if not isinstance(v, (bool, int, float)):
            raise _core.DispatchError(
                f"{what} needs a number, got {type(v).__name__}")
        if isinstance(v, int) and not -2**63 <= v < 2**64:
            raise _core.DispatchError(f"{what}: {v} does not fit in 64 bits")
    return values


def _constants(constants):
    out = {}
    for index, spec in (constants or {}).items():
        if not (isinstance(spec, tuple) and len(spec) == 2):
            raise TypeError(f"constants[{index}] must be (type_name, value), "
                            f"got {spec!r}")
        type_name, value = spec
        if isinstance(value, np.generic):
            value = value.item()
        out[int(index)] = (str(type_name), value)
    return out


def _output_sizes(output_size, output_sizes):
    if output_sizes is not None:
        return [int(s) for s in output_sizes]
    if output_size is not None:
        return [int(output_size)]
    return []


def _artifact(compiled):
    if not isinstance(compiled, CompiledKernel):
        raise TypeError("expected the CompiledKernel returned by "
                        f"enigma.compile, got {type(compiled).__name__}")
    return compiled._artifact


class PreparedKernel:
    """A kernel bound to device buffers by ``Runtime.prepare``, for repeated
    dispatches without re-uploading inputs."""

    def __init__(self, core):
        self._core = core

    def dispatch(self, grid, threads) -> None:
        """Runs the kernel once and waits for it."""
        self._core.dispatch(_shape(grid, "grid"), _shape(threads, "threads"))

    def dispatch_timed(self, grid, threads) -> float:
        """Runs the kernel once; returns its device time in microseconds."""
        return self._core.dispatch_timed(_shape(grid, "grid"),
                                         _shape(threads, "threads"))

    def dispatch_async(self, grid, threads) -> None:
        """Queues a launch and returns at once (CUDA); other backends run it
        before returning. Reads and synchronize() wait for queued launches."""
        self._core.dispatch_async(_shape(grid, "grid"),
                                  _shape(threads, "threads"))

    def synchronize(self) -> None:
        """Waits for every launch queued with dispatch_async."""
        self._core.synchronize()

    def read_output(self) -> bytes:
        """The bytes of the (first) output buffer."""
        return self._core.read_output()

    def read_outputs(self) -> list:
        """The bytes of every output buffer, in parameter order."""
        return self._core.read_outputs()

    def release(self) -> None:
        """Frees the device buffers; the kernel cannot be used afterwards."""
        self._core.release()


class _Runtime:
    """The surface every runtime shares."""

    def __init__(self, core):
        self._core = core

    @property
    def name(self) -> str:
        return self._core.name

    def _bind(self, compiled, inputs, scalars, output_size, output_sizes,
              constants):
        artifact = _artifact(compiled)
        if inputs is None:
            inputs = []
        if isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
            raise TypeError("inputs must be a list of arrays")
        buffers = _buffer_params(compiled)
        converted = [
            _as_bytes(v, buffers[i] if i < len(buffers) else None, i)
            for i, v in enumerate(inputs)]
        return (artifact, converted, _scalar_values(compiled, scalars),
                _output_sizes(output_size, output_sizes), _constants(constants))

    def execute(self, compiled, inputs, output_size=None, grid=(1, 1, 1),
                threads=(1, 1, 1), *, scalars=None, output_sizes=None,
                constants=None):
        """Runs ``compiled`` once. Inputs bind to the leading buffer
        parameters, scalars to the scalar parameters, and every remaining
        buffer parameter is an output of ``output_size`` bytes (or
        ``output_sizes[k]``), zero-filled before the launch. Returns the
        output's bytes, or a list of bytes with several outputs or when
        ``output_sizes`` is given."""
        artifact, ins, sc, sizes, consts = self._bind(
            compiled, inputs, scalars, output_size, output_sizes, constants)
        outputs = self._core.execute(artifact, ins, sc, sizes,
                                     _shape(grid, "grid"),
                                     _shape(threads, "threads"), consts)
        if output_sizes is None and len(outputs) == 1:
            return outputs[0]
        return outputs

    def prepare(self, compiled, inputs, output_size=None, *, scalars=None,
                output_sizes=None, constants=None) -> PreparedKernel:
        """Binds and uploads once; returns a PreparedKernel."""
        artifact, ins, sc, sizes, consts = self._bind(
            compiled, inputs, scalars, output_size, output_sizes, constants)
        return PreparedKernel(self._core.prepare(artifact, ins, sc, sizes,
                                                 consts))

    def __repr__(self) -> str:
        return f"<enigma.{type(self).__name__}>"


class CpuRuntime(_Runtime):
    """Runs kernels on the host CPU with Metal's semantics: the host C++
    flavour of the kernel is compiled with the system C++ compiler (cached
    on disk) and threadgroups run in parallel on all cores."""

    def __init__(self):
        super().__init__(_core.Runtime.cpu())


class CudaRuntime(_Runtime):
    """Runs kernels on an NVIDIA GPU (CUDA driver + NVRTC, loaded at run
    time). Raises BackendUnavailableError where there is no CUDA device."""

    def __init__(self, device: int = 0):
        super().__init__(_core.Runtime.cuda(int(device)))


class MetalRuntime(_Runtime):
    """Runs kernels on Apple GPUs through Metal (macOS only)."""

    def __init__(self, dylib_path=None):
        if sys.platform != "darwin":
            raise MetalUnavailableError(
                f"Metal is not available on this OS ({sys.platform}): "
                "MetalRuntime needs macOS with a Metal GPU. Use "
                "enigma.CpuRuntime() (runs anywhere) or enigma.CudaRuntime() "
                "(NVIDIA GPUs) instead; both run the same kernels with "
                "Metal's semantics.")
        metal = getattr(_core.Runtime, "metal", None)
        if metal is None:
            raise MetalUnavailableError(
                "this build of Enigma has no Metal backend (it was built "
                "without Apple's Metal framework); use enigma.CpuRuntime()")
        try:
            core = metal(dylib_path)
        except BackendUnavailableError as e:
            raise MetalUnavailableError(str(e)) from None
        super().__init__(core)


def best_runtime():
    """The fastest runtime that works here: Metal, then CUDA, then CPU."""
    for cls in (MetalRuntime, CudaRuntime):
        try:
            return cls()
        except RuntimeError:
            continue
    return CpuRuntime()
