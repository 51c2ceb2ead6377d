"""Zero-copy device arrays: objects of PyTorch, CuPy, JAX, Numba... that
live in CUDA memory and expose ``__cuda_array_interface__`` or DLPack
(``__dlpack__`` / ``__dlpack_device__``) are bound to a kernel's buffers in
place by ``CudaRuntime`` — no host round trip, and outputs are written into
the caller's array.

Ordering: launches are queued on the runtime's own CUDA stream, a blocking
stream, so they wait for work on the legacy default stream (where PyTorch and
CuPy queue by default). DLPack is preferred where an array offers it: its
stream handshake makes the runtime's stream wait for the producer's current
stream, whichever it is. With ``__cuda_array_interface__`` alone, the
producer's ``stream`` entry is honoured when present.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _core
from ._dtypes import as_dtype

# DLPack device types (dlpack.h): CUDA memory, and CUDA managed memory.
_DLPACK_CUDA = 2
_DLPACK_CUDA_MANAGED = 13
# DLPack dtype codes -> Enigma dtype names by bit width.
DLPACK_DTYPES = {
    (0, 8): "i8", (0, 16): "i16", (0, 32): "i32", (0, 64): "i64",
    (1, 8): "u8", (1, 16): "u16", (1, 32): "u32", (1, 64): "u64",
    (2, 16): "f16", (2, 32): "f32", (4, 16): "bf16", (6, 8): "b1",
    # DLPack 1.1's kDLFloat8_e4m3fn and kDLFloat8_e5m2.
    (10, 8): "f8e4m3", (12, 8): "f8e5m2",
}
# Stream values of __cuda_array_interface__ that name a default stream,
# which the runtime's blocking stream already waits for.
_DEFAULT_STREAMS = (None, 1, 2)


class DeviceArray(NamedTuple):
    """What binding a device array to a buffer needs."""
    address: int
    nbytes: int
    dtype: str        # Enigma short dtype name ("f32", ...)
    readonly: bool    # the producer marked it read-only


def is_device_array(value) -> bool:
    """Whether ``value`` is an array in CUDA memory that Enigma can bind
    without copying."""
    if isinstance(value, (np.ndarray, bytes, bytearray, memoryview)):
        return False
    if hasattr(type(value), "__cuda_array_interface__"):
        return True
    device = getattr(value, "__dlpack_device__", None)
    if device is None:
        return False
    try:
        kind = device()[0]
    except Exception:  # noqa: BLE001 - a broken protocol means "not one"
        return False
    return kind in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED)


def describe(value, what: str, runtime) -> DeviceArray:
    """Reads ``value``'s device array protocol; orders ``runtime``'s stream
    after the producer's. Raises DispatchError for arrays that cannot be
    bound in place (not contiguous, unsupported dtype)."""
    # DLPack first: its stream handshake orders the producer's pending work
    # (on whatever stream) before ours. __cuda_array_interface__ only does
    # when the producer fills in its optional "stream" entry, which PyTorch
    # does not.
    if hasattr(value, "__dlpack__"):
        return _from_dlpack(value, what, runtime)
    return _from_cuda_array_interface(value.__cuda_array_interface__, what,
                                      runtime)


def _cai_dtype(interface):
    """The Enigma dtype of a __cuda_array_interface__, or None."""
    try:
        return as_dtype(np.dtype(interface["typestr"]), strict=False)
    except TypeError:
        return None


def _from_cuda_array_interface(interface, what, runtime) -> DeviceArray:
    shape = tuple(interface["shape"])
    typestr = interface["typestr"]
    dtype = _cai_dtype(interface)
    if dtype is None:
        raise _core.DispatchError(f"{what} has element type {typestr!r}, "
                                  "which Enigma has no dtype for")
    itemsize = np.dtype(typestr).itemsize
    strides = interface.get("strides")
    if strides is not None and tuple(strides) != c_strides(shape, itemsize):
        raise _core.DispatchError(
            f"{what} is not contiguous (strides {tuple(strides)}); pass a "
            "contiguous array (e.g. .contiguous() or cupy.ascontiguousarray)")
    address, readonly = interface["data"]
    stream = interface.get("stream")
    if stream not in _DEFAULT_STREAMS:
        runtime._core.wait_for_stream(int(stream))
    nbytes = int(np.prod(shape, dtype=np.int64)) * itemsize
    # Which device the memory belongs to is checked by the C++ side when
    # it binds the address.
    return DeviceArray(int(address or 0), nbytes, dtype.name, bool(readonly))


def _from_dlpack(value, what, runtime) -> DeviceArray:
    # Passing our stream makes the producer order its pending work before
    # anything queued on it (the DLPack stream handshake).
    try:
        capsule = value.__dlpack__(stream=runtime._core.stream)
    except TypeError:
        capsule = value.__dlpack__()
    # The device itself is checked by the C++ side when it binds the
    # address.
    (address, nbytes, code, bits, lanes, _device_type, _device_id,
     contiguous) = _core.Runtime.dlpack_info(capsule)
    name = DLPACK_DTYPES.get((code, bits)) if lanes == 1 else None
    if name is None:
        raise _core.DispatchError(
            f"{what} has a DLPack element type (code {code}, {bits} bits, "
            f"{lanes} lanes) that Enigma has no dtype for")
    if not contiguous:
        raise _core.DispatchError(
            f"{what} is not contiguous; pass a contiguous array "
            "(e.g. .contiguous())")
    return DeviceArray(int(address), int(nbytes), name, False)


def c_strides(shape, itemsize):
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))

