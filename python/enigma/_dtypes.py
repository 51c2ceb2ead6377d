"""Element types of the Enigma language (docs/reference/core.md), and
numpy integers as the ints that sizes and indices are (``plain_index``)."""

from __future__ import annotations

import numbers

import numpy as np

from . import _core


def plain_index(x):
    """A numpy integer (an offset or a size computed on the host) as the
    Python int it holds; a tuple element by element; anything else as it
    is. Every check that wants an int takes numpy integers through this,
    in kernels and on the host alike (``QmvConfig(np.int64(8))`` is
    ``QmvConfig(8)``); bools and floats pass unchanged, for the check to
    refuse."""
    if isinstance(x, tuple):
        return tuple(plain_index(i) for i in x)
    if isinstance(x, numbers.Integral) and type(x) is not int and \
            not isinstance(x, bool):
        return int(x)
    return x


class DType:
    """An element type: ``enigma.f32`` (also ``enigma.Float32``, ``"float"``).

    ``name`` is the short name (``"f32"``), ``msl`` the Metal spelling
    (``"float"``, also ``metal_name`` as in the original DSL), ``width`` the
    width in bits (1 for bool), ``itemsize`` the size in bytes (bool is one
    byte, as in a Metal buffer). The attributes are on the classes too:
    ``enigma.Float32.metal_name``.
    """

    name: str = ""
    msl: str = ""
    metal_name: str = ""
    width: int = 0
    numpy_name: str = ""

    @property
    def itemsize(self) -> int:
        return _core.dtype_size(self.name)

    @property
    def is_float(self) -> bool:
        return self.name in ("f32", "f16", "bf16", "f8e4m3", "f8e5m2")

    @property
    def is_float8(self) -> bool:
        """An 8-bit float (``enigma.f8e4m3``, ``enigma.f8e5m2``): stored as
        a byte, computed with in f32 (docs/reference/fp8.md)."""
        return self.name in ("f8e4m3", "f8e5m2")

    @property
    def is_signed(self) -> bool:
        return self.is_float or self.name in ("i8", "i16", "i32", "i64")

    @property
    def numpy_dtype(self):
        """The numpy dtype of a host array for this type: ml_dtypes' type
        where ml_dtypes is installed, else the bits (bf16 -> uint16, the
        8-bit floats -> uint8)."""
        if self.name == "bf16" or self.is_float8:
            try:
                import ml_dtypes  # noqa: F401  (optional)
                return np.dtype(self.numpy_name)
            except ImportError:
                return np.dtype(np.uint16 if self.name == "bf16" else np.uint8)
        return np.dtype(self.numpy_name)

    def __repr__(self) -> str:
        return f"enigma.{self.name}"

    def __new__(cls, *args, **kwargs):
        # enigma.Int32() makes the element type (the original's spelling);
        # enigma.Int32(x) is the conversion mistake that __call__ names.
        if args or kwargs:
            raise _not_a_conversion(cls)
        return super().__new__(cls)

    def __call__(self, *args, **kwargs):
        """``enigma.i32(x)`` reads like numpy's ``np.int32(x)`` but an
        element type converts nothing: the error names the spellings that
        do."""
        raise _not_a_conversion(self)

    def __eq__(self, other) -> bool:
        other = as_dtype(other, strict=False)
        return other is not None and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __getitem__(self, shape) -> "ShapedBuffer":
        """``enigma.f32["H", "W"]``: a buffer parameter of this type with a
        shape (see :class:`ShapedBuffer`)."""
        return ShapedBuffer(self, shape)

    def __class_getitem__(cls, shape) -> "ShapedBuffer":
        return ShapedBuffer(as_dtype(cls), shape)


class ShapedBuffer:
    """The annotation ``A: enigma.f32["H", "W"]`` (or ``enigma.f32[64,
    "W"]``): a buffer parameter declared with a row-major shape, indexed
    ``A[y, x]`` in the kernel body (docs/reference/core.md, "Buffers with a
    shape"). Each extent is the name of an integer ``enigma.Scalar``
    parameter of the kernel or a positive Python int."""

    def __init__(self, dtype, shape):
        self.dtype = as_dtype(dtype)
        if not isinstance(shape, tuple):
            shape = (shape,)
        shape = plain_index(shape)
        if not shape:
            raise _core.EnigmaError(
                f"{self.dtype!r}[...] needs at least one extent")
        for extent in shape:
            if isinstance(extent, str):
                if not extent.isidentifier():
                    raise _core.EnigmaError(
                        f"{self.dtype!r}[...]: the extent {extent!r} is not "
                        "the name of a parameter")
            elif isinstance(extent, bool) or not isinstance(extent, int) \
                    or extent < 1:
                raise _core.EnigmaError(
                    f"{self.dtype!r}[...]: an extent is the name of an "
                    "integer Scalar parameter (a string, \"W\") or a "
                    f"positive int, got {extent!r}")
        self.shape = tuple(shape)

    def __repr__(self) -> str:
        return f"{self.dtype!r}[{', '.join(repr(e) for e in self.shape)}]"

    def __eq__(self, other) -> bool:
        return isinstance(other, ShapedBuffer) and \
            (self.dtype, self.shape) == (other.dtype, other.shape)

    def __hash__(self) -> int:
        return hash((self.dtype, self.shape))


def _not_a_conversion(dtype) -> Exception:
    """The error of ``enigma.i32(x)`` and ``enigma.Int32(x)`` (``dtype``
    the element type or its class)."""
    name = f"enigma.{dtype.name}"
    return _core.EnigmaError(
        f"{name} is an element type, not a conversion: convert a value "
        f"with v.cast({name}) or enigma.metal_cast(v, {dtype.msl!r}) (a "
        f"Python number: enigma.metal_cast(3, {dtype.msl!r}))")


def _make(cls_name: str, name: str, msl: str, width: int, numpy_name: str):
    cls = type(cls_name, (DType,), {
        "name": name, "msl": msl, "metal_name": msl, "width": width,
        "numpy_name": numpy_name,
        "__doc__": f"The ``{msl}`` element type (``enigma.{name}``)."})
    return cls, cls()


Float32, f32 = _make("Float32", "f32", "float", 32, "float32")
Float16, f16 = _make("Float16", "f16", "half", 16, "float16")
BFloat16, bf16 = _make("BFloat16", "bf16", "bfloat", 16, "bfloat16")
Int8, i8 = _make("Int8", "i8", "char", 8, "int8")
UInt8, u8 = _make("UInt8", "u8", "uchar", 8, "uint8")
Int16, i16 = _make("Int16", "i16", "short", 16, "int16")
UInt16, u16 = _make("UInt16", "u16", "ushort", 16, "uint16")
Int32, i32 = _make("Int32", "i32", "int", 32, "int32")
UInt32, u32 = _make("UInt32", "u32", "uint", 32, "uint32")
Int64, i64 = _make("Int64", "i64", "long", 64, "int64")
UInt64, u64 = _make("UInt64", "u64", "ulong", 64, "uint64")
Bool, b1 = _make("Bool", "b1", "bool", 1, "bool")
# The OCP 8-bit floats, stored as bytes (Metal spells them uchar).
Float8E4M3, f8e4m3 = _make("Float8E4M3", "f8e4m3", "uchar", 8, "float8_e4m3fn")
Float8E5M2, f8e5m2 = _make("Float8E5M2", "f8e5m2", "uchar", 8, "float8_e5m2")
Float8E4M3.__doc__ = (
    "The 8-bit float e4m3 (``enigma.f8e4m3``): 4 exponent bits, 3 fraction "
    "bits, no infinities, largest finite 448; stored as a byte.")
Float8E5M2.__doc__ = (
    "The 8-bit float e5m2 (``enigma.f8e5m2``): 5 exponent bits, 2 fraction "
    "bits, IEEE-like with infinities, largest finite 57344; stored as a "
    "byte.")

# The original DSL's name for the base class of the element types.
Numeric = DType

ALL_DTYPES = (f32, f16, bf16, i8, u8, i16, u16, i32, u32, i64, u64, b1,
              f8e4m3, f8e5m2)
_BY_NAME = {d.name: d for d in ALL_DTYPES}


def as_dtype(value, strict: bool = True) -> DType | None:
    """Turns ``enigma.f32``, ``enigma.Float32``, ``"float"`` or a numpy dtype
    into a DType. Raises EnigmaError for anything else (or returns None when
    ``strict`` is False)."""
    if isinstance(value, DType):
        return value
    if isinstance(value, type) and issubclass(value, DType) and value is not DType:
        return _BY_NAME[value.name]
    try:
        if isinstance(value, str):
            return _BY_NAME[_core.canonical_dtype(value)]
        if isinstance(value, np.dtype) or (isinstance(value, type) and
                                           issubclass(value, np.generic)):
            return _BY_NAME[_core.canonical_dtype(np.dtype(value).name)]
    except (_core.EnigmaError, KeyError, TypeError):
        pass
    if strict:
        raise _core.EnigmaError(
            f"{value!r} is not an Enigma element type; use one of "
            + ", ".join(f"enigma.{d.name}" for d in ALL_DTYPES)
            + " or a name such as 'float', 'uint', 'half'")
    return None


class Scalar:
    """Annotates a by-value scalar kernel parameter:
    ``def k(A: enigma.f32, n: enigma.Scalar(enigma.u32))``. The runtime takes
    its value from ``execute(..., scalars=...)``.

    ``multiple_of=N`` (integer scalars) promises that the value is a
    multiple of N: the runtime refuses other values with a DispatchError,
    and offsets built from the scalar (``row * n``) count as multiples, so
    ``copy`` and ``Tensor.load()`` can use aligned vector accesses.

    ``metal_name`` and ``width`` are those of the dtype."""

    def __init__(self, dtype, multiple_of=1):
        self.dtype = as_dtype(dtype)
        self.metal_name = self.dtype.metal_name
        self.width = self.dtype.width
        multiple_of = plain_index(multiple_of)
        if isinstance(multiple_of, bool) or not isinstance(multiple_of, int) \
                or multiple_of < 1:
            raise _core.EnigmaError(f"Scalar: multiple_of must be a positive int, "
                              f"got {multiple_of!r}")
        if multiple_of > 1 and (self.dtype.is_float or
                                self.dtype.name == "b1"):
            raise _core.EnigmaError(f"Scalar: multiple_of is for integer scalars, "
                              f"not {self.dtype.name}")
        self.multiple_of = multiple_of

    def __repr__(self) -> str:
        extra = f", multiple_of={self.multiple_of}" if self.multiple_of > 1 \
            else ""
        return f"enigma.Scalar({self.dtype!r}{extra})"
