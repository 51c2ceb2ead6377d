"""The types of the fuzzer's programs (tools/fuzz): their names and
widths, which are floats, 8-bit floats and integers, integer ranges, the
common type of two operands, the host arrays of buffers, bfloat16 and
8-bit float bits, and the float bounds of a float -> integer conversion.
kernelgen.py generates programs over them, interpret.py evaluates them."""

from __future__ import annotations

import numpy as np


SINTS = ("i8", "i16", "i32", "i64")
UINTS = ("u8", "u16", "u32", "u64")
INTS = SINTS + UINTS
FLOATS = ("f32", "f16", "bf16")
FP8 = ("f8e4m3", "f8e5m2")
ALL_TYPES = FLOATS + INTS + ("b1",)
WIDTH = {"i8": 8, "u8": 8, "i16": 16, "u16": 16, "i32": 32, "u32": 32,
         "i64": 64, "u64": 64, "f16": 16, "bf16": 16, "f32": 32, "b1": 8,
         "f8e4m3": 8, "f8e5m2": 8}


def is_float(t):
    return t in FLOATS


def is_fp8(t):
    return t in FP8


def is_floatlike(t):
    """Values compared as floats (NaN matches NaN, tolerances)."""
    return t in FLOATS or t in FP8


def is_int(t):
    return t in INTS


def is_signed(t):
    return t in SINTS


def int_range(t):
    w = WIDTH[t]
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if is_signed(t) else (0, (1 << w) - 1)


def unsigned_of(t):
    return "u" + t[1:]


def promote(a, b):
    """The common type of two operand types (docs/language.md)."""
    if a == b:
        return a if not is_fp8(a) else "f32"
    if is_fp8(a) or is_fp8(b):    # 8-bit floats compute in f32
        return "f32"
    if is_float(a) or is_float(b):
        if is_float(a) and is_float(b):
            if "f32" in (a, b):
                return "f32"
            return "f32"  # f16 with bf16
        return a if is_float(a) else b
    if a == "b1":
        return b
    if b == "b1":
        return a
    if WIDTH[a] != WIDTH[b]:
        return a if WIDTH[a] > WIDTH[b] else b
    return a if not is_signed(a) else b


def numpy_dtype(t):
    """Host array dtype of a buffer of Enigma type ``t`` (bf16: uint16 bits;
    8-bit floats: uint8 bits)."""
    return np.dtype({"f32": np.float32, "f16": np.float16, "bf16": np.uint16,
                     "f8e4m3": np.uint8, "f8e5m2": np.uint8,
                     "b1": np.bool_, "i8": np.int8, "u8": np.uint8,
                     "i16": np.int16, "u16": np.uint16, "i32": np.int32,
                     "u32": np.uint32, "i64": np.int64, "u64": np.uint64}[t])


def bf16_bits(x):
    """float32 values rounded to bfloat16 (nearest even) as uint16 bits."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    rounded[nan] = 0x7FC0
    return rounded


# (significand bits, smallest normal exponent, largest finite, infinities)
# of the OCP 8-bit formats.
FP8_FORMAT = {"f8e4m3": (4, -6, 448.0, False),
              "f8e5m2": (3, -14, 57344.0, True)}


def fp8_value(fmt, bits):
    """The value of an 8-bit pattern, from the format's fields."""
    p, emin, _, has_inf = FP8_FORMAT[fmt]
    man_bits = p - 1
    exp_bits = 7 - man_bits
    sign = -1.0 if bits & 0x80 else 1.0
    e = (bits >> man_bits) & ((1 << exp_bits) - 1)
    f = bits & ((1 << man_bits) - 1)
    top = (1 << exp_bits) - 1
    if has_inf and e == top:
        return sign * float("inf") if f == 0 else float("nan")
    if not has_inf and e == top and f == (1 << man_bits) - 1:
        return float("nan")
    bias = 1 - emin
    if e == 0:
        return sign * f * 2.0 ** (emin - man_bits)
    return sign * (1 + f / (1 << man_bits)) * 2.0 ** (e - bias)


def float_to_int_bounds(ft, it):
    """(lo, hi): the float values of type ``ft`` nearest inside ``it``'s
    range, so clamp(x, lo, hi) converts to ``it`` without overflow."""
    lo_i, hi_i = int_range(it)

    def fits(v):
        return np.isfinite(v) and lo_i <= int(v) <= hi_i

    out = []
    for target, toward in ((lo_i, 1.0), (hi_i, -1.0)):
        if ft == "f16":
            v = np.float16(np.clip(target, -65504, 65504))
            while not fits(v):
                v = np.nextafter(v, np.float16(toward * 65504))
        else:
            v = np.float32(target)
            while not fits(v):
                v = np.nextafter(v, np.float32(toward * 3e38))
            if ft == "bf16":  # truncate toward zero to a bfloat16 value
                v = np.array([v], np.float32).view(np.uint32) & 0xFFFF0000
                v = v.view(np.float32)[0]
        out.append(float(v))
    return out[0], out[1]
