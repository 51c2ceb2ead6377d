"""``enigma.typing``: the original DSL's module path for the element types
(``Float32`` ... ``Bool``, the shorthands ``f32`` ... ``b1``), their base
class ``Numeric`` and ``Scalar``. Every name is the top-level object; the
code lives in ``enigma._dtypes``."""

from ._dtypes import (BFloat16, Bool, DType, Float16, Float32, Int8, Int16,
                      Int32, Int64, Numeric, Scalar, UInt8, UInt16, UInt32,
                      UInt64, b1, bf16, f16, f32, i8, i16, i32, i64, u8, u16,
                      u32, u64)

__all__ = ["Numeric", "DType", "Scalar",
           "Float32", "Float16", "BFloat16", "Int8", "UInt8", "Int16",
           "UInt16", "Int32", "UInt32", "Int64", "UInt64", "Bool",
           "f32", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32",
           "i64", "u64", "b1"]
