"""Runtimes with one surface on every backend.

The binding of inputs, scalars and outputs to parameters, and its
validation, happen once in C++ (lib/Runtime/Dispatch.cpp); this layer only
turns Python objects into contiguous bytes and numbers.
"""

from __future__ import annotations

import atexit
import math
import re
import sys
import warnings

import numpy as np

from . import _compile, _core, _interop, _log
from ._compile import CompiledKernel
from ._dtypes import as_dtype
from ._grid import dims3, function_constants, is_int

EnigmaRuntimeError = _core.EnigmaRuntimeError
BackendUnavailableError = _core.BackendUnavailableError
KernelFaultError = _core.KernelFaultError
BoundsCheckError = _core.BoundsCheckError


# When the interpreter exits, compiles and launches still running in other
# threads (daemon threads) are stopped, and those threads wait for the end
# instead of coming back into an interpreter that is shutting down
# (docs/design/process-life.md).
atexit.register(_core.process_exiting)


class MetalUnavailableError(BackendUnavailableError):
    """Metal cannot run on this machine (not macOS, or no Metal device)."""


def _buffer_params(compiled):
    return [p for p in compiled.params if p.kind == "buffer"]


# PyTorch's 8-bit float dtypes (by name) -> Enigma's.
_TORCH_FLOAT8 = {"torch.float8_e4m3fn": "f8e4m3", "torch.float8_e5m2": "f8e5m2"}


def _as_bytes(value, param, position: int):
    """(uint8 view, dtype name) of one input, copied if not contiguous."""
    label = (f"input {position} ({param.name})" if param is not None
             else f"input {position}")
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = np.frombuffer(value, dtype=np.uint8)
        dtype = param.dtype.name if param is not None else "u8"
        return raw, dtype
    if value is None:  # numpy would read None as one NaN
        raise TypeError(f"{label} is None; give a numpy array, a list of "
                        "numbers or bytes")
    if _mlx_dtype_name(getattr(value, "dtype", None)) == "bfloat16":
        # An mlx.core.array of bfloat16, which numpy cannot hold: its bits.
        import mlx.core as mx
        bits = np.ascontiguousarray(np.asarray(value.view(mx.uint16)))
        return bits.reshape(-1).view(np.uint8), "bf16"
    if str(getattr(value, "dtype", "")) in _TORCH_FLOAT8:
        # A PyTorch tensor of 8-bit floats, which numpy cannot hold: its
        # bits.
        import torch
        bits = value.detach().contiguous().view(torch.uint8).cpu().numpy()
        return bits.reshape(-1), _TORCH_FLOAT8[str(value.dtype)]
    if param is not None and isinstance(value, (list, tuple, range, bool,
                                                int, float, np.generic)):
        return _numbers_as_bytes(value, param, label)
    if not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{label} cannot be read as an array"
                            f"{'' if param is None else ' of ' + param.dtype.name}"
                            f" ({type(value).__name__}: {e})") from None
    if not value.dtype.isnative:
        # numpy keeps the values; the bytes a kernel would read are swapped.
        order = "big" if value.dtype.byteorder == ">" else "little"
        raise TypeError(f"{label} is a {order}-endian array "
                        f"({value.dtype.str}); convert it to native byte "
                        f"order with .astype({value.dtype.newbyteorder('=').str!r})")
    dtype = as_dtype(value.dtype, strict=False)
    if dtype is None:
        expected = f" but parameter {param.name} is {param.dtype.name}" \
            if param is not None else ""
        raise TypeError(f"{label} has numpy dtype {value.dtype}{expected}; "
                        "convert it with .astype(...)")
    if (param is not None and param.dtype.name == "bf16"
            and value.dtype == np.uint16):
        dtype = param.dtype  # bf16 bits carried in a uint16 array
    if (param is not None and param.dtype.is_float8
            and value.dtype == np.uint8):
        dtype = param.dtype  # 8-bit float bits carried in a uint8 array
    array = np.ascontiguousarray(value)
    return array.reshape(-1).view(np.uint8), dtype.name


def _numbers_as_bytes(value, param, label):
    """A list (tuple, range, nested regular list, or one number), which has
    no dtype of its own, as bytes of the parameter's dtype: each element
    converted and checked by the rules of a scalar of that dtype (the same
    C++ conversion), never by numpy's casts, which parse strings, truncate
    floats and wrap integers."""
    flat = np.asarray(value if isinstance(value, (list, tuple, range))
                      else [value], dtype=object).reshape(-1).tolist()
    raw = _core.pack_numbers(flat, param.dtype.name, label)
    return np.frombuffer(raw, dtype=np.uint8), param.dtype.name


def _listed(items) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    return items[0] if len(items) == 1 else \
        f"{', '.join(items[:-1])} and {items[-1]}"


def _warn_of_written_inputs(compiled, buffers, inputs):
    """For a launch that returns nothing: a UserWarning naming the buffers
    the kernel may store into that are bound to copied inputs (host
    arrays), since nothing it stores there is seen (the caller's arrays
    stay as they were). With outputs bound, written inputs are scratch
    space, as the original Enigma's programs use them: not warned."""
    written = [f"{p.name} (input {i})" for i, (p, v) in
               enumerate(zip(buffers, inputs))
               if getattr(p, "written", False) and
               not _interop.is_device_array(v)]
    if not written:
        return
    warnings.warn(
        f"kernel {compiled.kernel_name} returns nothing and writes "
        f"{_listed(written)}, which execute copies: what the kernel stores there is "
        "not returned and the arrays passed stay as they were. To read "
        "them back, bind them "
        "as outputs (after the inputs: output_size(s) or output_shapes), "
        "or launch the kernel with the call form, kernel[grid](...), "
        "which writes the arrays in place (docs/reference/runtimes.md)",
        UserWarning, stacklevel=4)


def _check_numbers_among_inputs(compiled, inputs):
    """A DispatchError when the kernel has scalar parameters, none were
    given, and some inputs are numbers: their values were meant for the
    scalars, which ``execute`` takes through ``scalars=[...]`` (inputs
    bind to the buffer parameters only)."""
    params = [p for p in compiled.params if p.kind == "scalar"]
    numbers = [i for i, v in enumerate(inputs)
               if isinstance(v, (int, float, np.generic))]
    if not params or not numbers:
        return
    which = (f"inputs {_listed(map(str, numbers))} are numbers"
             if len(numbers) > 1 else f"input {numbers[0]} is a number")
    described = ", ".join(f"{p.name} ({p.dtype.name})" for p in params)
    raise _core.DispatchError(
        f"kernel {compiled.kernel_name} takes scalar parameters "
        f"({described}) through scalars=[...], in declaration order, and "
        f"{which}: execute's inputs bind to the buffer parameters only. "
        f"Call execute(compiled, [arrays...], scalars=[...], ...), or "
        "launch the kernel with every argument in order: "
        "kernel[grid](args...) (docs/reference/launch.md)")


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
    params = [p for p in compiled.params if p.kind == "scalar"]
    numbers = []
    for k, v in enumerate(values):
        param = params[k] if k < len(params) else None
        what = (f"scalar parameter {param.name} ({param.dtype.name})"
                if param is not None else f"scalar {k}")
        # The call form reads numbers with the same C++ function.
        number = _core.host_number(v, what)
        if number is None:
            raise _core.DispatchError(
                f"{what} needs a number, got {type(v).__name__}")
        numbers.append(number)
    return numbers


def _byte_count(value, what: str) -> int:
    if not is_int(value):
        raise TypeError(f"{what} must be an int number of bytes, got "
                        f"{value!r}")
    if value < 0:
        raise ValueError(f"{what} must not be negative, got {value}")
    return int(value)


def _output_sizes(output_size, output_sizes):
    """Byte counts of the outputs: ``output_sizes`` (one per output) wins
    over ``output_size`` (ONE output), as in the original runtime."""
    if output_sizes is not None:
        if not isinstance(output_sizes, (list, tuple)):
            raise TypeError("output_sizes must be a list of byte counts, got "
                            f"{type(output_sizes).__name__}")
        return [_byte_count(s, f"output_sizes[{k}]")
                for k, s in enumerate(output_sizes)]
    if output_size is not None:
        return [_byte_count(output_size, "output_size")]
    return []


def _mlx_dtype_name(dtype):
    """The name of an ``mlx.core`` dtype ("float32", "bfloat16", ...), or
    None for anything else."""
    if not type(dtype).__module__.startswith("mlx"):
        return None
    return str(dtype).rsplit(".", 1)[-1]


class _ShapedOutput:
    """One output given by ``output_shapes[k]`` and ``output_dtypes[k]``,
    returned as an array of that shape: an ``mlx.core.array`` for an mlx
    dtype (as the original does), a numpy array otherwise."""

    def __init__(self, shape, dtype, k):
        if is_int(shape):
            shape = (shape,)
        if not isinstance(shape, (list, tuple)) or \
                not all(is_int(d) and d >= 0 for d in shape):
            raise _core.DispatchError(
                f"output_shapes[{k}] must be a tuple of non-negative ints, "
                f"got {shape!r}")
        self.shape = tuple(int(d) for d in shape)
        self.mlx = _mlx_dtype_name(dtype)
        name = "u16" if self.mlx == "bfloat16" else self.mlx or dtype
        dt = as_dtype(name, strict=False)
        if dt is None:
            raise _core.DispatchError(
                f"output_dtypes[{k}] = {dtype!r} is not a dtype Enigma knows")
        self.numpy = dt.numpy_dtype
        # Python integers: numpy's int64 product would wrap.
        self.nbytes = math.prod(self.shape) * self.numpy.itemsize
        if self.nbytes >= 2**63:
            raise _core.DispatchError(
                f"output_shapes[{k}] = {self.shape} of {dt.name} needs "
                f"{self.nbytes} bytes, more than a 64-bit size (2^63 - 1 "
                "bytes, the most a numpy array can hold)")

    def array(self, raw: bytes):
        out = np.frombuffer(raw, self.numpy).reshape(self.shape).copy()
        if self.mlx is None:
            return out
        import mlx.core as mx
        if self.mlx == "bfloat16":
            return mx.array(out).view(mx.bfloat16)
        return mx.array(out)


def _shaped_outputs(output_shapes, output_dtypes):
    if not isinstance(output_shapes, (list, tuple)):
        raise _core.DispatchError("output_shapes must be a list of shapes, "
                                  f"got {type(output_shapes).__name__}")
    if not isinstance(output_dtypes, (list, tuple)) or \
            len(output_dtypes) != len(output_shapes):
        raise _core.DispatchError(
            "output_shapes needs output_dtypes: a list of the same length "
            f"({len(output_shapes)}), one dtype per output; got "
            f"{output_dtypes!r}")
    return [_ShapedOutput(shape, dtype, k)
            for k, (shape, dtype) in enumerate(zip(output_shapes,
                                                   output_dtypes))]


def _launch_or_default(compiled, grid, threads):
    """A jit kernel's own launch (grid in threads, block) for the shape the
    caller leaves out; (1, 1, 1) for other kernels."""
    if getattr(compiled, "block", None) is not None:
        grid = compiled.grid if grid is None else grid
        threads = compiled.block if threads is None else threads
    return ((1, 1, 1) if grid is None else grid,
            (1, 1, 1) if threads is None else threads)


def _threadgroup_memory(compiled, value):
    """The bytes of dynamic threadgroup memory of a launch: ``value``, else
    what an ``@enigma.jit`` launch recorded (``smem=``); None for none."""
    if value is None:
        value = getattr(compiled, "threadgroup_memory", None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or value < 0:
        raise _core.DispatchError(
            f"threadgroup_memory must be a number of bytes (an int >= 0), "
            f"got {value!r}")
    return int(value)


def _device_arrays(inputs, outputs):
    """The device arrays among inputs and outputs (kept alive by prepared
    kernels that bind them)."""
    if outputs is None:
        outputs = []
    elif not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    return [v for v in [*(inputs or []), *outputs]
            if _interop.is_device_array(v)]


def _bounds_checked_twin(compiled):
    """``compiled`` compiled again in bounds-checked mode (it keeps the
    kernel it was compiled from in ``_bounds_check_source``)."""
    kernel, vec_width = compiled._bounds_check_source
    return _compile.compile(kernel, vec_width=vec_width, emit_only=True,
                          bounds_check=True)


def _artifact(compiled):
    if not isinstance(compiled, CompiledKernel):
        raise TypeError("expected the CompiledKernel returned by "
                        f"enigma.compile, got {type(compiled).__name__}")
    return compiled._artifact


class PreparedKernel:
    """A kernel bound to device buffers by ``Runtime.prepare``, for repeated
    dispatches without re-uploading inputs."""

    def __init__(self, core, keep_alive=(), kernel_name=""):
        self._core = core
        self._kernel_name = kernel_name  # labels (enigma.benchmark)
        # Device arrays bound in place must outlive the prepared kernel.
        self._keep_alive = tuple(keep_alive)
        # The launch-overhead path goes straight to C++, which parses the
        # shapes itself (see dispatch_async below for the documentation).
        self.dispatch_async = core.dispatch_async

    def dispatch(self, grid, threads) -> None:
        """Runs the kernel once and waits for it."""
        self._core.dispatch(dims3(grid, "grid"), dims3(threads, "threads"))

    def dispatch_timed(self, grid, threads) -> float:
        """Runs the kernel once; returns its device time in microseconds."""
        return self._core.dispatch_timed(dims3(grid, "grid"),
                                         dims3(threads, "threads"))

    def dispatch_async(self, grid, threads) -> None:
        """Queues a launch and returns at once (CUDA); other backends run it
        before returning. Reads and synchronize() wait for queued launches."""
        self._core.dispatch_async(dims3(grid, "grid"),
                                  dims3(threads, "threads"))

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
        """Frees the device buffers; the kernel cannot be used afterwards.
        Device arrays bound in place are the caller's and stay untouched."""
        self._core.release()
        self._keep_alive = ()


class DeviceCapabilities:
    """What the device of a runtime offers, with the original Enigma's
    fields (``runtime.device_capabilities()``). ``gpu_family`` names the
    backend ("cpu", "cuda", "metal-host", "metal"); ``gpu_family_raw`` is
    Metal's MTLGPUFamily number where known (0 elsewhere). Every feature
    Enigma has (async copies, simdgroup matrices) runs on the CPU and CUDA
    backends, so ``is_m3_or_newer`` (Apple family 9: what async copies need
    on a Mac) is True there."""

    def __init__(self, gpu_family, gpu_family_raw, supports_async_copy,
                 supports_simdgroup_matrix, simdgroup_size,
                 max_threadgroup_memory, max_threads_per_threadgroup,
                 device_name):
        self.gpu_family = gpu_family
        self.gpu_family_raw = gpu_family_raw
        self.supports_async_copy = supports_async_copy
        self.supports_simdgroup_matrix = supports_simdgroup_matrix
        self.simdgroup_size = simdgroup_size
        self.max_threadgroup_memory = max_threadgroup_memory
        self.max_threads_per_threadgroup = max_threads_per_threadgroup
        self.device_name = device_name

    @property
    def is_m3_or_newer(self) -> bool:
        """True where async copies run: Apple family 9 (M3) or newer on a
        Mac; always on the CPU and CUDA backends."""
        return self.supports_async_copy

    def require_m3(self, feature: str) -> None:
        """Raises RuntimeError naming ``feature`` where the device lacks
        Apple family 9's features."""
        if not self.is_m3_or_newer:
            raise RuntimeError(
                f"enigma: {feature} requires Apple GPU family 9 (M3/A17) or "
                f"newer. Current device: {self.device_name} "
                f"({self.gpu_family})")

    def __repr__(self) -> str:
        return (f"DeviceCapabilities({self.device_name!r}, "
                f"family={self.gpu_family}, simdgroup={self.simdgroup_size}, "
                f"threads<={self.max_threads_per_threadgroup}, "
                f"threadgroup memory={self.max_threadgroup_memory})")


def _host_cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


class RuntimeBase:
    """The surface every runtime shares."""

    def __init__(self, core):
        self._core = core

    @property
    def name(self) -> str:
        return self._core.name

    def device_capabilities(self) -> DeviceCapabilities:
        """The device's family, simdgroup width and limits (the original
        Enigma's MetalRuntime.device_capabilities, on every runtime)."""
        name = self._core.device_name or _host_cpu_name()
        return DeviceCapabilities(
            gpu_family=self.name, gpu_family_raw=0, supports_async_copy=True,
            supports_simdgroup_matrix=True, simdgroup_size=32,
            max_threadgroup_memory=int(self._core.max_threadgroup_memory),
            max_threads_per_threadgroup=int(
                self._core.max_threads_per_threadgroup),
            device_name=name)

    def _bind(self, compiled, inputs, scalars, output_size, output_sizes,
              constants, outputs):
        artifact = _artifact(compiled)
        if getattr(compiled, "_metal_source_only", False):
            raise _core.DispatchError(
                f"{compiled.kernel_name} was made from Metal source "
                "(CompiledKernel(kernel_name, ..., metal_source)); the "
                f"{self.name} runtime runs kernels made by enigma.compile. "
                "Run it with enigma.MetalHostRuntime() or enigma.CpuRuntime() "
                "(both run its MSL on the CPU), or MetalRuntime on a Mac")
        if inputs is None:
            inputs = []
        if isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
            raise TypeError("inputs must be a list of arrays")
        if not scalars:
            _check_numbers_among_inputs(compiled, inputs)
        buffers = _buffer_params(compiled)
        if output_size is None and not output_sizes and outputs is None:
            _warn_of_written_inputs(compiled, buffers, inputs)
        converted = []
        for i, value in enumerate(inputs):
            param = buffers[i] if i < len(buffers) else None
            label = (f"input {i} ({param.name})" if param is not None
                     else f"input {i}")
            if _interop.is_device_array(value):
                converted.append(self._device_input(value, label))
            else:
                converted.append(_as_bytes(value, param, i))
        output_arrays = self._device_outputs(outputs, buffers[len(inputs):],
                                             output_size, output_sizes)
        return (artifact, converted, _scalar_values(compiled, scalars),
                _output_sizes(output_size, output_sizes), output_arrays,
                function_constants(constants))

    def _device_input(self, value, label):
        array = self._describe_device_array(value, label)
        return (array.address, array.nbytes), array.dtype

    def _describe_device_array(self, value, label):
        if self.name != "cuda":
            raise _core.DispatchError(
                f"{label} is an array in CUDA memory, but the {self.name} "
                "runtime works on host memory: copy it to the host first "
                "(e.g. tensor.cpu() or cupy.asnumpy), or use CudaRuntime")
        return _interop.describe(value, label, self)

    def _device_outputs(self, outputs, output_params, output_size,
                        output_sizes):
        if outputs is None:
            return []
        if output_size is not None or output_sizes is not None:
            raise _core.DispatchError("give outputs= or output_size / "
                                      "output_sizes, not both")
        if not isinstance(outputs, (list, tuple)):
            outputs = [outputs]
        described = []
        for k, value in enumerate(outputs):
            param = output_params[k] if k < len(output_params) else None
            label = (f"output {k} ({param.name})" if param is not None
                     else f"output {k}")
            if not _interop.is_device_array(value):
                raise _core.DispatchError(
                    f"{label}: outputs= takes device arrays (PyTorch, CuPy, "
                    f"JAX... on CUDA), written in place; got "
                    f"{type(value).__name__}. For host results give "
                    "output_size and use the returned bytes")
            array = self._describe_device_array(value, label)
            if array.readonly:
                raise _core.DispatchError(f"{label} is read-only")
            described.append((array.address, array.nbytes, array.dtype))
        return described

    def execute(self, compiled, inputs, output_size=None, grid=None,
                threads=None, *, scalars=None, output_sizes=None,
                constants=None, outputs=None, output_shapes=None,
                output_dtypes=None, threadgroup_memory=None):
        """Runs ``compiled`` once. Inputs, scalars and outputs together
        cover the kernel's parameters exactly once (else DispatchError):
        inputs bind to the leading buffer parameters, scalars to the scalar
        parameters, outputs to the buffer parameters after the inputs,
        zero-filled before the launch. ``output_size`` is ONE output (its
        bytes are returned); ``output_sizes=[...]`` gives one size per
        output and returns a list of bytes (it wins over ``output_size``);
        ``output_shapes`` with ``output_dtypes`` returns arrays of those
        shapes (a list when there are several).

        Device arrays (PyTorch/CuPy/JAX... in CUDA memory) are bound in
        place on CudaRuntime: as inputs without a copy, and through
        ``outputs=[array, ...]`` (one per output, instead of sizes) as
        outputs the kernel writes directly, which are not cleared first;
        ``execute`` then returns ``outputs`` as given.

        ``grid``/``threads`` default to the launch recorded by an
        ``@enigma.jit`` kernel (``compiled.grid`` threads in groups of
        ``compiled.block``), and to ``(1, 1, 1)`` for other kernels.

        ``threadgroup_memory`` is the size in bytes of the kernel's dynamic
        threadgroup array (``enigma.dynamic_threadgroup_alloc``): required
        for such a kernel, refused for others; an ``@enigma.jit`` kernel's
        ``launch(smem=...)`` is the default."""
        grid, threads = _launch_or_default(compiled, grid, threads)
        threadgroup_memory = _threadgroup_memory(compiled, threadgroup_memory)
        shaped = None
        if output_shapes is not None or output_dtypes is not None:
            if output_shapes is None:
                raise _core.DispatchError("output_dtypes needs output_shapes")
            shaped = _shaped_outputs(output_shapes, output_dtypes)
            output_size, output_sizes = None, [o.nbytes for o in shaped]
        artifact, ins, sc, sizes, outs, consts = self._bind(
            compiled, inputs, scalars, output_size, output_sizes, constants,
            outputs)
        launch = (ins, sc, sizes, outs, dims3(grid, "grid"),
                  dims3(threads, "threads"), consts, threadgroup_memory)
        if _log.INFO:
            _log.info("launch %s grid %s threads %s on %s (execute)",
                      artifact.kernel_name, launch[4], launch[5], self.name)
        try:
            results = self._core.execute(artifact, *launch)
        except KernelFaultError as fault:
            in_place = bool(_device_arrays(inputs, outputs))
            raise self._locate_fault(fault, compiled, launch,
                                     in_place) from None
        if outputs is not None:
            return outputs
        if shaped is not None:
            arrays = [o.array(raw) for o, raw in zip(shaped, results)]
            return arrays[0] if len(arrays) == 1 else arrays
        if output_sizes is None and output_size is not None:
            return results[0]
        return results  # a list: output_sizes, or no outputs at all

    def _locate_fault(self, fault, compiled, launch, in_place):
        """The KernelFaultError to raise for a faulting ``execute``: its
        buffers were copies, so the same dispatch runs again compiled in
        bounds-checked mode, which names the out-of-bounds access and its
        file:line. On CUDA the re-run is on the CPU (the same kernel, with
        the same Metal semantics): CUDA keeps an illegal address for the
        whole process. Arrays bound in place are not run again (the
        faulting kernel may have written them)."""
        if in_place or getattr(compiled, "_bounds_check_source", None) \
                is None or compiled.bounds_checked:
            return KernelFaultError(str(fault))
        core, where = self._core, "bounds-checked mode"
        if self.name == "cuda":
            core, where = CpuRuntime()._core, "bounds-checked mode on the CPU"
        try:
            checked = _bounds_checked_twin(compiled)
            core.execute(checked._artifact, *launch)
            found = ("it found no out-of-bounds access, so the fault is "
                     "elsewhere (simdgroup matrix loads and stores are not "
                     "checked)")
        except BoundsCheckError as violation:
            found = f"it reports: {violation}"
        except KernelFaultError as again:
            found = ("it faulted again, so the fault is not an "
                     "out-of-bounds access of a buffer or threadgroup array: "
                     f"{str(again).splitlines()[0]}")
        except Exception as e:  # the fault stays the error to report
            found = f"that failed: {type(e).__name__}: {e}"
        return KernelFaultError(f"{fault}\nRun again in {where}, {found}")

    def prepare(self, compiled, inputs, output_size=None, *, scalars=None,
                output_sizes=None, constants=None, outputs=None,
                threadgroup_memory=None) -> PreparedKernel:
        """Binds and uploads once; returns a PreparedKernel. The same
        exactly-once rule as ``execute``: ``output_size`` is ONE output
        (read it with ``read_output()``), ``output_sizes`` one per output
        (``read_outputs()``). Device arrays are bound in place as in
        ``execute`` (``outputs=`` included) and must stay alive while the
        prepared kernel is used (it keeps a reference). ``threadgroup_memory``
        (bytes of the dynamic threadgroup array) is fixed for its dispatches,
        as the buffers are."""
        threadgroup_memory = _threadgroup_memory(compiled, threadgroup_memory)
        artifact, ins, sc, sizes, outs, consts = self._bind(
            compiled, inputs, scalars, output_size, output_sizes, constants,
            outputs)
        if _log.INFO:
            _log.info("prepare %s on %s", artifact.kernel_name, self.name)
        return PreparedKernel(self._core.prepare(artifact, ins, sc, sizes,
                                                 outs, consts,
                                                 threadgroup_memory),
                              _device_arrays(inputs, outputs),
                              artifact.kernel_name)

    def __repr__(self) -> str:
        return f"<enigma.{type(self).__name__}>"


# The runtime that runs kernels made from hand-written Metal source on the
# CPU; the MSL host runtime's module sets it (it builds on this one).
metal_source_runtime = None


class CpuRuntime(RuntimeBase):
    """Runs kernels on the host CPU with Metal's semantics: the host C++
    flavour of the kernel is compiled with the system C++ compiler (cached
    on disk) and threadgroups run in parallel on all cores. A kernel made
    from hand-written Metal source (``CompiledKernel(kernel_name, ...,
    metal_source)``) runs through the MSL host runtime instead."""

    def __init__(self):
        super().__init__(_core.Runtime.cpu())
        self._msl = None

    def _metal_source(self, compiled):
        if not getattr(compiled, "_metal_source_only", False) \
                or metal_source_runtime is None:
            return None
        if self._msl is None:
            self._msl = metal_source_runtime()
        return self._msl

    def execute(self, compiled, *args, **kwargs):
        msl = self._metal_source(compiled)
        if msl is not None:
            return msl.execute(compiled, *args, **kwargs)
        return super().execute(compiled, *args, **kwargs)

    def prepare(self, compiled, *args, **kwargs) -> PreparedKernel:
        msl = self._metal_source(compiled)
        if msl is not None:
            return msl.prepare(compiled, *args, **kwargs)
        return super().prepare(compiled, *args, **kwargs)


class CudaRuntime(RuntimeBase):
    """Runs kernels on an NVIDIA GPU (CUDA driver + NVRTC, loaded at run
    time). Raises BackendUnavailableError where there is no CUDA device."""

    def __init__(self, device: int = 0):
        super().__init__(_core.Runtime.cuda(int(device)))
        self.device = int(device)

    @property
    def stream(self) -> int:
        """The CUstream handle this runtime queues launches on, for ordering
        work of other libraries with it (e.g.
        ``torch.cuda.ExternalStream(rt.stream)``)."""
        return self._core.stream

    @property
    def multiprocessors(self) -> int:
        """The GPU's streaming multiprocessors: the threadgroups of a
        persistent launch (``MmaConfig.launch(m, n, processors=...)``)."""
        return int(self._core.multiprocessors)

    @property
    def architecture(self) -> int:
        """The architecture number kernels are compiled for: 90 for
        ``sm_90a`` (Hopper's wgmma and TMA), 80 for ``sm_80``; 0 where the
        runtime does not say."""
        digits = re.search(r"\d+", self._core.architecture or "")
        return int(digits.group()) if digits else 0


class MetalRuntime(RuntimeBase):
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
