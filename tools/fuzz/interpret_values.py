"""The values of interpret.py (the fuzzer's numpy interpreter) and the
operations on them that are not float arithmetic: ``Val`` (an array over
the grid's threads with an error bound per thread), rounding to each
float type, ulps, wrapping to integer widths, conversions between every
pair of types (8-bit floats included), and the integer operators and
functions (Python ints, wrapped)."""

from __future__ import annotations

import numpy as np

from fuzz_types import (FP8_FORMAT, WIDTH, int_range, is_float, is_fp8,
                        is_int, is_signed, unsigned_of)


INF = float("inf")

_PRECISION = {"f32": (24, -126), "f16": (11, -14), "bf16": (8, -126)}


class InterpretError(Exception):
    """The program is malformed (a generator bug), not an Enigma bug."""


class Val:
    """Per-thread values of one dtype with their error bounds."""
    __slots__ = ("t", "v", "e")

    def __init__(self, t, v, e=None):
        self.t, self.v = t, v
        self.e = np.zeros(len(v)) if e is None else e


# --------------------------------------------------------------------------
# Rounding and conversions
# --------------------------------------------------------------------------

def round_float(t, x):
    """float64 values rounded to float type t (nearest even)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        if t == "f32":
            return x.astype(np.float32).astype(np.float64)
        if t == "f16":
            return x.astype(np.float16).astype(np.float64)
        f = x.astype(np.float32)
        bits = f.view(np.uint32).astype(np.uint64)
        r = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32)
        out = r.view(np.float32).astype(np.float64)
        out[np.isnan(x)] = np.nan
        return out


# The largest finite value of each float type.
_MAX_FINITE = {"f32": float(np.finfo(np.float32).max), "f16": 65504.0,
               "bf16": float(np.ldexp(255.0, 120))}


def ulp(t, x):
    """The spacing of type t at |x| (the smallest normal's below it)."""
    p, emin = _PRECISION[t]
    with np.errstate(all="ignore"):
        ax = np.abs(np.asarray(x, dtype=np.float64))
        _, ex = np.frexp(np.where(np.isfinite(ax) & (ax > 0), ax, 1.0))
        ex = np.maximum(ex - 1, emin)
        out = np.ldexp(1.0, ex - (p - 1))
    return np.where(np.isfinite(ax), out, INF)


def wrap(t, x):
    lo, hi = int_range(t)
    span = hi - lo + 1
    return np.array([((int(v) - lo) % span) + lo for v in x], dtype=object)


def as_unsigned(t, x):
    return np.array([int(v) & ((1 << WIDTH[t]) - 1) for v in x], dtype=object)


def round_fp8(fmt, x, saturate=False):
    """float64 values rounded to the 8-bit float ``fmt`` (nearest, ties to
    even, subnormals), then beyond the largest finite value (infinities
    included): ``saturate`` clamps to it, else NaN (e4m3, which has no
    infinity) or infinity of the sign (e5m2); NaN stays NaN."""
    p, emin, top, has_inf = FP8_FORMAT[fmt]
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        finite = np.isfinite(x)
        ax = np.abs(np.where(finite, x, 0.0))
        _, ex = np.frexp(np.where(ax > 0, ax, 1.0))
        step = np.ldexp(1.0, np.maximum(ex - 1, emin) - (p - 1))
        # x / step is exact (a power of two) and np.round ties to even.
        r = np.round(np.where(finite, x, 0.0) / step) * step
        over = (~finite & ~np.isnan(x)) | (np.abs(r) > top)
        if saturate:
            big = np.copysign(top, x)
        else:
            big = np.copysign(INF, x) if has_inf else np.full(len(x), np.nan)
        out = np.where(over, big, r)
    return np.where(np.isnan(x), np.nan, out)


def to_fp8(val: Val, fmt: str, saturate=False) -> Val:
    """``val`` converted to an 8-bit float as Enigma does (float values
    exactly through f32, integers and bools rounded to f32 first). The
    rounding is monotonic, so the ends of the input's interval bound the
    result."""
    if not is_float(val.t):
        val = convert(val, "f32")
    out = round_fp8(fmt, val.v, saturate)
    e = np.zeros(len(out))
    risky = val.e > 0
    if risky.any():
        for sign in (-1.0, 1.0):
            with np.errstate(all="ignore"):
                moved = round_fp8(fmt, val.v + sign * val.e, saturate)
            e = np.maximum(e, np.where(risky, _diff(moved, out), 0.0))
    return Val(fmt, out, np.where(np.isinf(val.e), INF, e))


def convert(val: Val, to: str) -> Val:
    """C / Metal value conversion of ``val`` to type ``to``."""
    t, v = val.t, val.v
    if t == to:
        return val
    if is_fp8(t):   # exactly to f32, then as a float
        return convert(Val("f32", v, val.e), to)
    if is_fp8(to):
        return to_fp8(val, to)
    e = val.e.copy()
    if to == "b1":
        if is_float(t):
            out = v != 0.0
            return Val(to, out, _jumps(val, lambda x: x != 0.0, e))
        return Val(to, np.array([bool(x) for x in v]), e)
    if t == "b1":
        ints = np.array([int(bool(x)) for x in v], dtype=object)
        return Val(to, ints.astype(np.float64) if is_float(to) else ints, e)
    if is_int(to):
        if is_int(t):
            return Val(to, wrap(to, v), e)
        # Enigma's definition (metal_float_to_int.h): truncation toward
        # zero, NaN -> 0, saturation at both ends of the range.
        lo, hi = int_range(to)

        def saturated(x):
            with np.errstate(all="ignore"):
                return np.clip(np.trunc(np.where(np.isnan(x), 0.0, x)),
                               float(lo), float(hi))
        ints = np.array([0 if np.isnan(x) else lo if x <= lo else
                         hi if x >= hi else int(np.trunc(x)) for x in v],
                        dtype=object)
        return Val(to, ints, _jumps(val, saturated, e))
    if is_int(t):
        bits = _PRECISION[to][0]
        exact = np.array([float(_round_int(int(x), bits)) for x in v])
        return Val(to, round_float(to, exact), e)
    out = round_float(to, v)
    return Val(to, out, e + (np.where(e > 0, ulp(to, out), 0.0)))


def _round_int(x, bits):
    """x rounded to `bits` significant bits, ties to even: exact in float64,
    so that the conversion to the target type rounds once (float(x) first
    would round twice above 2**53)."""
    drop = abs(x).bit_length() - bits
    if drop <= 0:
        return x
    q, r = divmod(abs(x), 1 << drop)
    half = 1 << (drop - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return (q << drop) * (-1 if x < 0 else 1)


def _jumps(val, fn, e):
    """e, made inf where fn differs across val's tolerance interval."""
    e = e.copy()
    risky = (val.e > 0)
    if risky.any():
        with np.errstate(all="ignore"):
            centre = fn(val.v)
            for sgn in (-1.0, 1.0):
                moved = fn(val.v + sgn * val.e)
                same = (moved == centre) | (_isnan(moved) & _isnan(centre))
                e[risky & ~same] = INF
    return e


def _isnan(x):
    return np.isnan(x) if np.asarray(x).dtype.kind == "f" else np.zeros(len(x), bool)


def _diff(a, b):
    with np.errstate(all="ignore"):
        d = np.abs(a - b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    d = np.where(same, 0.0, d)
    return np.where(np.isnan(d), INF, d)


# --------------------------------------------------------------------------
# Integer operations (Python ints, wrapped)
# --------------------------------------------------------------------------

def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _trem(a, b):
    return a - b * _tdiv(a, b)


def int_binary(op, t, a, b, e):
    w = WIDTH[t]
    out = []
    e = e.copy()
    for k, (x, y) in enumerate(zip(a, b)):
        x, y = int(x), int(y)
        if op in ("/", "//", "%"):
            if y == 0 or (is_signed(t) and x == int_range(t)[0] and y == -1):
                e[k] = INF  # undefined in Metal; kernelgen guards it
                out.append(0)
                continue
            out.append(_tdiv(x, y) if op != "%" else _trem(x, y))
        elif op in ("<<", ">>"):
            if not 0 <= y < w:
                e[k] = INF
                out.append(0)
                continue
            out.append(x << y if op == "<<" else x >> y)
        else:
            out.append({"+": x + y, "-": x - y, "*": x * y, "&": x & y,
                        "|": x | y, "^": x ^ y}[op])
    return Val(t, wrap(t, out), e)


def _signed_view(t, x):
    w = WIDTH[t]
    x = int(x) & ((1 << w) - 1)
    return x - (1 << w) if x >> (w - 1) else x


def int_call(fn, args):
    t = args[0].t
    w = WIDTH[t]
    lo, hi = int_range(t)
    mask = (1 << w) - 1
    e = np.zeros(len(args[0].v))
    for a in args:
        e = np.maximum(e, a.e)
    cols = [[int(x) for x in a.v] for a in args]
    rows = list(zip(*cols))
    rt = t

    def sat(x):
        return min(max(x, lo), hi)

    if fn == "imin":
        out = [min(x, y) for x, y in rows]
    elif fn == "imax":
        out = [max(x, y) for x, y in rows]
    elif fn == "iclamp":
        out = [min(max(x, a), b) for x, a, b in rows]
    elif fn == "abs_diff":
        rt = unsigned_of(t)
        out = [abs(x - y) for x, y in rows]
    elif fn == "abs_diff_unary":
        rt = unsigned_of(t)
        out = [abs(x) for (x,) in rows]
    elif fn == "abs":
        out = [abs(x) for (x,) in rows]
    elif fn == "add_sat":
        out = [sat(x + y) for x, y in rows]
    elif fn == "sub_sat":
        out = [sat(x - y) for x, y in rows]
    elif fn == "mad_sat":
        out = [sat(x * y + z) for x, y, z in rows]
    elif fn == "mul_hi":
        out = [(x * y) >> w for x, y in rows]
    elif fn == "rotate":
        out = []
        for x, i in rows:
            s = i % w
            u = x & mask
            out.append(((u << s) | (u >> (w - s))) & mask if s else u)
    elif fn == "popcount":
        out = [bin(x & mask).count("1") for (x,) in rows]
    elif fn == "clz":
        out = [w - (x & mask).bit_length() for (x,) in rows]
    elif fn == "ctz":
        out = [w if x & mask == 0 else ((x & mask) & -(x & mask)).bit_length() - 1
               for (x,) in rows]
    elif fn == "reverse_bits":
        out = [int(format(x & mask, f"0{w}b")[::-1], 2) for (x,) in rows]
    elif fn == "extract_bits":
        out = []
        for x, off, bits in rows:
            if bits == 0:
                out.append(0)
                continue
            field = ((x & mask) >> off) & ((1 << bits) - 1)
            if is_signed(t) and field >> (bits - 1):
                field -= 1 << bits
            out.append(field)
    elif fn == "insert_bits":
        out = []
        for base, ins, off, bits in rows:
            if bits == 0:
                out.append(base)
                continue
            m = ((1 << bits) - 1) << off
            out.append(((base & mask) & ~m) | ((ins << off) & m))
    else:
        raise InterpretError(f"unknown integer function {fn}")
    return Val(rt, wrap(rt, out), e)
