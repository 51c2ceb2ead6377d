"""The function-call form: ``kernel[n](a, b, c, n)`` and
``kernel.launch(grid=... | threadgroups=..., threads=...)(a, b, c, n)``.

Every buffer parameter takes an array that the kernel reads and writes in
place (numpy and other host arrays on the CPU backend; PyTorch, CuPy, JAX...
arrays on CUDA); scalar parameters take Python numbers, by position or by
keyword. The runtime follows from the arrays (host memory: the shared
CpuRuntime; CUDA device d: one CudaRuntime per device), or is given with
``runtime=`` / ``with enigma.use_runtime(rt):`` (MetalHostRuntime too).
The kernel is compiled on first use and kept per signature; the launch itself is C++
(python/src/LaunchCall.cpp), queued on the current stream of the
arrays' framework. docs/reference/launch.md is the reference,
docs/design/launch-form.md says why.

The spellings themselves are _kernel's; this module gives the C++ launch
path the helpers it calls back: the first launch on a runtime compiles and
loads the kernel, a name the body read that holds another value now has it
traced again, arrays of other libraries are described.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time

import numpy as np

from . import _compile, _core, _log, _progress
from ._interop import DLPACK_DTYPES, c_strides
from ._metal_host import MetalHostRuntime
from ._name_reads import names_read, same_value
from ._runtime import CpuRuntime, CudaRuntime

HOST = -1  # `where` of host memory; CUDA devices are their ordinals

_runtimes_lock = threading.Lock()
_host = []            # the shared CpuRuntime, made on first use
_cuda = {}            # device ordinal -> CudaRuntime


def host_runtime() -> CpuRuntime:
    """The CpuRuntime the function-call form uses for host arrays."""
    with _runtimes_lock:
        if not _host:
            _host.append(CpuRuntime())
        return _host[0]


def cuda_runtime(device: int) -> CudaRuntime:
    """The CudaRuntime the function-call form uses for arrays on CUDA
    device ``device`` (one per device, made on first use)."""
    with _runtimes_lock:
        runtime = _cuda.get(device)
        if runtime is None:
            runtime = _cuda[device] = CudaRuntime(device=device)
        return runtime


class use_runtime:
    """``with enigma.use_runtime(rt):`` makes ``rt`` the runtime of every
    function-call launch in the block (on this thread) that does not give
    ``runtime=``. Nestable."""

    def __init__(self, runtime):
        if not hasattr(runtime, "_core"):
            raise TypeError("use_runtime takes an Enigma runtime "
                            "(enigma.CpuRuntime(), enigma.CudaRuntime(...)), "
                            f"got {type(runtime).__name__}")
        self.runtime = runtime
        self._previous = []

    def __enter__(self):
        self._previous.append(_core.set_scoped_runtime(self.runtime))
        return self.runtime

    def __exit__(self, *exc):
        _core.set_scoped_runtime(self._previous.pop())


def scoped_runtime():
    """The runtime of the innermost ``use_runtime`` block of this thread,
    or None."""
    current = _core.set_scoped_runtime(None)
    _core.set_scoped_runtime(current)
    return current


# --------------------------------------------------------------------------
# Helpers of the C++ launch path
# --------------------------------------------------------------------------

# Traces kept per kernel for earlier values of the names its body reads.
_MAX_TRACES = 8


def _compiled_kernel(calls):
    """(CompiledKernel, whether it came from the memory cache) of a
    kernel's function-call state. A kernel has one signature: its
    parameters' dtypes and multiple_of promises come from its annotations
    (arrays must match them), and bounds-checked mode (ENIGMA_BOUNDS_CHECK)
    is read when it is first compiled, as enigma.compile reads it. The
    globals and closure variables the body reads are recorded first, for
    _globals_changed."""
    if calls.compiled is not None:
        return calls.compiled, True
    kernel = calls.source
    calls.reads = names_read(kernel.__wrapped__)
    key = _values_key(calls.reads)
    calls.compiled = calls.traced_for.get(key) if key is not None else None
    from_memory = calls.compiled is not None
    if not from_memory:
        calls.compiled = _compile.compile(kernel, emit_only=True)
        if key is not None:
            if len(calls.traced_for) >= _MAX_TRACES:
                calls.traced_for.clear()
            calls.traced_for[key] = calls.compiled
    calls.form.set_reads([read.as_tuple() for read in calls.reads])
    return calls.compiled, from_memory


def _values_key(reads):
    """The values the names held, as a dict key (None when one cannot be:
    an unhashable value)."""
    key = tuple((read.label, type(read.value), read.value) for read in reads)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _globals_changed(owner):
    """A launch found a name the body read holding another object: when
    its value changed (not only its object), the kernel is traced again on
    its next load, and the loaded kernels are dropped."""
    calls = owner()
    changed = []
    for read in calls.reads:
        present, now = read.current()
        if not present or not same_value(read.value, now):
            changed.append((read, present, now))
        else:
            read.value = now  # equal: the cheap test passes from now on
    if not changed:
        calls.form.set_reads([read.as_tuple() for read in calls.reads])
        return
    if _log.INFO:
        read, present, now = changed[0]
        _log.info("%s: %s is %s now (it was %r when the kernel was traced): "
                  "traced again", calls.name, read.label,
                  repr(now) if present else "gone", read.value)
    calls.compiled = None
    calls.form.set_reads([])
    calls.form.clear_targets()


def _first_call(owner, where, runtime, constants):
    """A launch needs the kernel on a runtime (with function constant
    values number ``constants``) it is not loaded on yet: compiles it (or
    takes it from the memory cache) and loads it (compiling for the target,
    or from the disk cache)."""
    calls = owner()
    name = calls.name
    implicit = runtime is None
    if implicit:
        runtime = host_runtime() if where == HOST else cuda_runtime(where)
        if _log.DEBUG:
            _log.debug("%s: %s arrays, so %s", name,
                       "host" if where == HOST else f"CUDA device {where}",
                       _runtime_label(runtime))
    elif isinstance(runtime, CudaRuntime):
        where = runtime.device
    elif isinstance(runtime, (CpuRuntime, MetalHostRuntime)):
        where = HOST
    else:
        raise _core.DispatchError(
            f"kernel {name}: the function-call form runs on CpuRuntime, "
            f"MetalHostRuntime and CudaRuntime, not "
            f"{type(runtime).__name__}; launch it with that runtime's "
            "execute() or prepare()")
    compiled, from_memory = _compiled_kernel(calls)
    if from_memory and _log.INFO and calls.source is not None:
        _log.info("%s: compiled kernel from the memory cache", name)
    label = _runtime_label(runtime)
    start = time.perf_counter()
    values = [tuple(v) for v in calls.constant_sets[constants]]
    try:
        with _progress.activity(f"building {name} for {label}"):
            how = calls.form.add_target(runtime._core, compiled._artifact,
                                        where, implicit, constants, values)
    except _core.DispatchError as e:
        if "function constant" not in str(e) or values:
            raise
        raise _core.DispatchError(
            f"{e}; the function-call form takes them as "
            "kernel.launch(grid=..., constants={index: (type_name, "
            "value)})(...)") from None
    if _log.INFO:
        _log.info("%s: loaded for %s in %s: %s", name, label,
                  _log.milliseconds(time.perf_counter() - start), how)


def _runtime_label(runtime) -> str:
    if isinstance(runtime, CudaRuntime):
        return f"cuda:{runtime.device}"
    return runtime.name


def _reader_of(cls) -> str:
    """How the C++ side reads arguments of type ``cls`` (once per type)."""
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(cls, torch.Tensor):
        return "torch"
    cupy = sys.modules.get("cupy")
    if cupy is not None and issubclass(cls, cupy.ndarray):
        # CuPy's own class: what the C++ side reads of an array cannot
        # change while it lives, so it is remembered (subclasses may
        # override attributes).
        return "cupy_ndarray" if cls is cupy.ndarray else "cupy"
    if issubclass(cls, (np.ndarray, bytearray, memoryview)):
        return "buffer"
    if issubclass(cls, (bool, int, float, complex, str, bytes, np.generic)):
        return "none"
    if any(hasattr(cls, name) for name in (
            "__cuda_array_interface__", "__dlpack__", "__array_interface__")):
        return "python"
    return "none"


# DLPack device types (dlpack.h).
_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_CUDA_HOST, _DLPACK_CUDA_MANAGED = 1, 2, 3, 13


def _describe_array(obj):
    """(address, bytes, dtype name or None, where, contiguous, writable,
    synchronous) of an array the C++ side does not read itself: JAX arrays
    and others with DLPack or an array interface, and numpy arrays of
    dtypes the buffer protocol does not export. None if not an array."""
    if isinstance(obj, np.ndarray):
        return _from_array_interface(obj.__array_interface__, HOST,
                                     dtype=obj.dtype)
    synchronous = False
    if type(obj).__module__.startswith(("jax", "jaxlib")):
        # JAX has no stream to queue on: wait for the array's producer.
        obj.block_until_ready()
        synchronous = True
    if hasattr(obj, "__dlpack_device__") and hasattr(obj, "__dlpack__"):
        kind, device = (int(v) for v in obj.__dlpack_device__())
        (address, nbytes, code, bits, lanes, _kind, _id,
         contiguous) = _core.Runtime.dlpack_info(obj.__dlpack__())
        name = DLPACK_DTYPES.get((code, bits)) if lanes == 1 else None
        where = (device if kind in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED)
                 else HOST if kind in (_DLPACK_CPU, _DLPACK_CUDA_HOST)
                 else -2)
        # Device arrays of other libraries: the launch goes to the
        # runtime's own stream and is waited for.
        return (address, nbytes, name, where, bool(contiguous), True,
                synchronous or where != HOST)
    if hasattr(obj, "__cuda_array_interface__"):
        # The interface names no device: the current one (device 0 unless
        # the program changed it) is assumed.
        return _from_array_interface(obj.__cuda_array_interface__, 0,
                                     synchronous=True)
    if hasattr(obj, "__array_interface__"):
        return _from_array_interface(obj.__array_interface__, HOST)
    return None


def _from_array_interface(interface, where, synchronous=False, dtype=None):
    """The description of an array from its (CUDA) array interface."""
    if dtype is None:
        dtype = np.dtype(interface["typestr"])
    shape = tuple(interface["shape"])
    strides = interface.get("strides")
    contiguous = strides is None or \
        tuple(strides) == c_strides(shape, dtype.itemsize)
    address, readonly = interface["data"]
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    name = "bf16" if dtype.name == "bfloat16" else _dtype_name(dtype)
    return (int(address or 0), nbytes, name, where, contiguous,
            not readonly, synchronous)


def _array_text(obj) -> str:
    """How an argument is named in messages: its type, dtype, shape and
    device."""
    cls = type(obj)
    name = f"{cls.__module__}.{cls.__qualname__}"
    if name.startswith("builtins."):
        name = cls.__qualname__
    text = f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
    dtype = getattr(obj, "dtype", None)
    if dtype is not None:
        text += f" of {dtype}"
    shape = getattr(obj, "shape", None)
    if shape is not None:
        try:
            text += f", shape {tuple(shape)}"
        except TypeError:
            pass
    device = getattr(obj, "device", None)
    if device is not None and not callable(device):
        text += f", on {device}"
    return text


def _dtype_name(dtype):
    """The Enigma dtype name of a numpy or PyTorch dtype object, or None."""
    text = str(dtype)
    if text.startswith("torch."):
        return text[len("torch."):]
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        return None
    if not dtype.isnative:
        return None
    return dtype.name


def _torch_stream(device):
    """PyTorch's current stream on ``device``; replaces itself with
    PyTorch's own C function after the first call."""
    import torch
    fast = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if fast is None:
        def fast(d):
            return torch.cuda.current_stream(d).cuda_stream
    _core.launch_setup({"torch_stream": fast})
    return fast(device)


def _cupy_stream(device):
    """CuPy's current stream on ``device``; replaces itself with the
    fastest way this CuPy offers after the first call."""
    import cupy
    get_current = cupy.cuda.get_current_stream
    try:
        get_current(device)  # CuPy takes the device (recent versions)

        def on_device(d, _get=get_current):
            return _get(d).ptr
    except TypeError:
        get_device = cupy.cuda.runtime.getDevice

        def on_device(d, _get=get_current, _device=get_device):
            if _device() == d:
                return _get().ptr
            with cupy.cuda.Device(d):
                return _get().ptr
    _core.launch_setup({"cupy_stream": on_device})
    stream = on_device(device)
    _cupy_fast_stream(cupy, device, stream)
    return stream


def _cupy_fast_stream(cupy, device, stream):
    """Hands the C++ side CuPy's C function for the current stream (the
    capsule Cython exports for it: a direct call per launch instead of a
    Python function), when this CuPy has it and it agrees with
    get_current_stream now."""
    try:
        from cupy_backends.cuda import stream as backend
        capsule = (getattr(backend, "__pyx_capi__", None) or {}).get(
            "get_current_stream_ptr")
        current_device = cupy.cuda.runtime.getDevice
        if capsule is None or current_device() != device:
            return
        if cupy.cuda.runtime.getDeviceCount() == 1:
            # The arrays' device is the current one: no call per launch.
            current_device = None
    except Exception:  # noqa: BLE001  (an older or different CuPy)
        return
    _core.launch_setup({"cupy_current_device": current_device,
                        "cupy_current_stream": capsule,
                        "cupy_expected_stream": stream})


_core.launch_setup({
    "describe_array": _describe_array, "array_text": _array_text,
    "reader_of": _reader_of, "dtype_name": _dtype_name,
    "torch_stream": _torch_stream, "cupy_stream": _cupy_stream,
    "first_call": _first_call, "globals_changed": _globals_changed,
})
atexit.register(_core.launch_teardown)
