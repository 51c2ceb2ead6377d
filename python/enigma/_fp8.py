"""The 8-bit floats ``enigma.f8e4m3`` and ``enigma.f8e5m2``
(docs/reference/fp8.md, docs/design/fp8.md).

In a kernel they are buffer element types, scalars and vectors that convert
to and from the other numbers; arithmetic on them computes in f32.
:func:`saturating_cast` is the conversion that clamps to the largest finite
value instead of overflowing. On the host, :func:`fp8_encode` and
:func:`fp8_decode` convert numpy arrays with the same definitions the
kernels use (the semantics library's ``metal_fp8.h``).
"""

from __future__ import annotations

import numpy as np

from . import _core
from ._dtypes import as_dtype
from ._ir import Fragment, IRValue, current_tracer, fail, to_value

__all__ = ["saturating_cast", "fp8_encode", "fp8_decode", "FP8_MAX"]

#: The largest finite value of each 8-bit float.
FP8_MAX = {"f8e4m3": 448.0, "f8e5m2": 57344.0}


def _float8(dtype, what):
    t = as_dtype(dtype, strict=False)
    if t is None or not t.is_float8:
        raise _core.EnigmaError(
            f"{what}: {t if t is not None else dtype!r} is not an 8-bit "
            "float; use enigma.f8e4m3 or enigma.f8e5m2")
    return t


def saturating_cast(x, dtype):
    """``x`` (a traced number, vector or fragment, or a Python number)
    converted to the 8-bit float ``dtype``, rounding to nearest even and
    clamping magnitudes beyond the largest finite value (448 for e4m3,
    57344 for e5m2), infinities included, to it; NaN stays NaN. The plain
    conversion (``metal_cast``, ``.cast``, a store) instead gives NaN (e4m3)
    or infinity (e5m2) there."""
    tracer = current_tracer("saturating_cast")
    try:
        t = _float8(dtype, "saturating_cast")
    except _core.EnigmaError as e:
        fail(str(e))
    if isinstance(x, Fragment):
        return IRValue(tracer, tracer.call("mma_saturating_cast", x._value,
                                           t.name))
    value = to_value(x, as_dtype("f32"))
    return IRValue(tracer, tracer.call("saturating_cast", value._value,
                                       t.name))


def fp8_encode(values, dtype, *, saturate: bool = False) -> np.ndarray:
    """The 8-bit patterns (a uint8 array of ``values``' shape) of
    ``values`` in ``dtype``, as a kernel converts them: rounded to nearest
    even from float32 (other inputs are first converted to float32, as a
    kernel would receive them), overflowing to NaN (e4m3) or infinity
    (e5m2), or with ``saturate=True`` clamped to the largest finite
    value."""
    t = _float8(dtype, "fp8_encode")
    if str(getattr(values, "dtype", "")).startswith("torch."):
        # numpy has no bfloat16: PyTorch converts to float32 itself
        # (exactly from half and bfloat, as the definition above wants).
        import torch
        values = values.detach().to(torch.float32).cpu().numpy()
    array = np.ascontiguousarray(np.asarray(values, dtype=np.float32))
    bits = _core.fp8_encode(array.tobytes(), t.name, bool(saturate))
    return np.frombuffer(bits, dtype=np.uint8).reshape(array.shape).copy()


def fp8_decode(bits, dtype) -> np.ndarray:
    """The float32 values (exact) of 8-bit patterns ``bits`` (a uint8
    array, an ml_dtypes float8 array or a PyTorch float8 tensor) of
    ``dtype``."""
    t = _float8(dtype, "fp8_decode")
    if str(getattr(bits, "dtype", "")).startswith("torch."):
        import torch
        own = {torch.float8_e4m3fn: "f8e4m3",
               torch.float8_e5m2: "f8e5m2"}.get(bits.dtype)
        if own is not None and own != t.name:
            raise _core.EnigmaError(
                f"fp8_decode: the tensor is {bits.dtype}, which is not "
                f"{t.name}; pass its own format (or its uint8 bits)")
        bits = bits.detach().contiguous().view(torch.uint8).cpu().numpy()
    array = np.ascontiguousarray(np.asarray(bits))
    own = {"float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2"}.get(
        array.dtype.name)
    if own is not None and own != t.name:
        raise _core.EnigmaError(
            f"fp8_decode: the array is {array.dtype.name}, which is not "
            f"{t.name}; pass its own format (or its uint8 bits)")
    if array.dtype != np.uint8 and own is None:
        # int8, bool...: numbers of their own, not bit patterns.
        raise _core.EnigmaError(
            f"fp8_decode takes 8-bit patterns (uint8, or a float8 array), "
            f"got {array.dtype}")
    floats = _core.fp8_decode(array.view(np.uint8).tobytes(), t.name)
    return np.frombuffer(floats, dtype=np.float32).reshape(array.shape).copy()
