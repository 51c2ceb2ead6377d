"""A numpy interpretation of kernelgen programs: the expected outputs,
computed without Enigma, with Metal's semantics (docs/language.md,
docs/reference/math.md, docs/reference/simd.md, docs/execution-model.md).

All threads run in lock step: every value is an array over the grid's
threads. That is exact for the programs kernelgen writes, whose threads only
communicate through threadgroup memory across barriers, SIMD functions (at
the top level) and commutative atomics.

Integers are Python ints (object arrays) wrapped to their width after every
operation. Floats are float64 arrays holding values of their type: each
operation is computed in float64 and rounded to f32 / f16 / bf16 (exact
for + - * / and sqrt, since float64 has more than twice the bits).

Every value carries an error bound ``e`` (float64 per thread): 0 is exact,
a finite bound is a float tolerance, ``inf`` means "not determined" (for
instance a comparison of two values whose tolerances overlap). Math
functions add the ulp bound of ``MATH_ULPS``; with ``exact_arith=False``
(GPUs: FMA contraction, approximate division) basic operations add an
allowance too. Discontinuous operations (comparisons, floor, conversions to
integer...) become undetermined where the inputs' tolerance straddles a
jump, so tolerances never turn into false mismatches.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from kernelgen import (FLOATS, FP8_FORMAT, INTS, WIDTH, fp8_value, int_range,
                       is_float, is_floatlike, is_fp8, is_int, is_signed,
                       numpy_dtype, promote, unsigned_of)

INF = float("inf")

# Tolerance of each math function in ulps of float (the result's float
# ulp; half and bfloat results get one ulp of their own type on top, for the
# final rounding). These are the bounds Metal's specification gives for
# full-precision float functions (the same as OpenCL's); the CPU backend
# uses the host libm, which is well within them.
MATH_ULPS = {
    "sqrt": 3, "rsqrt": 2, "exp": 4, "exp2": 4, "log": 4, "log2": 4,
    "log10": 4, "sin": 4, "cos": 4, "tan": 6, "asin": 4, "acos": 4,
    "atan": 5, "sinh": 4, "cosh": 4, "tanh": 5, "pow": 16, "atan2": 6,
    "fma": 1, "mix": 2, "smoothstep": 8,
}
# Allowances for basic float operations where the backend may contract or
# approximate (exact_arith=False).
LENIENT_ULPS = {"+": 1, "-": 1, "*": 1, "/": 3, "//": 3}
MAX_WHILE_TRIPS = 1000  # kernelgen's while_ loops run at most 7 times

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


# --------------------------------------------------------------------------
# Float operations
# --------------------------------------------------------------------------

def _diff(a, b):
    with np.errstate(all="ignore"):
        d = np.abs(a - b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    d = np.where(same, 0.0, d)
    return np.where(np.isnan(d), INF, d)


def float_op(t, fn, args, ulps=0.0, own_ulps=0.0):
    """fn (float64 -> float64) applied to float Vals, rounded to t; the
    result's bound: propagated through fn by its values at the corners of
    the inputs' tolerance box, plus ``ulps`` float ulps and ``own_ulps`` of
    t's ulps (one more for half/bfloat when ulps > 0: the final rounding)."""
    xs = [a.v for a in args]
    with np.errstate(all="ignore"):
        exact = fn(*xs)
    out = round_float(t, exact)
    e = np.zeros(len(out))
    uncertain = np.zeros(len(out), bool)
    for a in args:
        uncertain |= a.e > 0
    if uncertain.any():
        idx = np.nonzero(uncertain)[0]
        base = exact[idx]
        for signs in itertools.product((-1.0, 1.0), repeat=len(args)):
            with np.errstate(all="ignore"):
                moved = [a.v[idx] + s * a.e[idx] for a, s in zip(args, signs)]
                e[idx] = np.maximum(e[idx], _diff(fn(*moved), base))
        # an input that moved may also round the other way: one more ulp
        e[idx] += ulp(t, out[idx])
    if ulps:
        e += ulps * ulp("f32", out)
        if t != "f32":
            own_ulps += 1
    if own_ulps:
        e += own_ulps * ulp(t, out)
    e = np.where(np.isnan(e), INF, e)
    # An undetermined input (an infinite bound) leaves the result
    # undetermined: its corners are NaN, which fmin/fmax-based functions
    # such as clamp hide (fuzz seed 1022860705: clamp(-inf +- inf, 0, 65504)
    # looked determined as 0).
    for a in args:
        e = np.where(np.isinf(a.e), INF, e)
    return Val(t, out, e)


def _round_half_away(x):
    # copysign, not sign(x) * ...: np.sign(-0.0) is +0.0, but C's round
    # keeps the sign of zero.
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _sign(x):
    return np.where(np.isnan(x), 0.0, np.where(x > 0, 1.0, np.where(x < 0, -1.0, x)))


def _fmin(a, b):
    return np.fmin(a, b)


UNARY_F64 = {
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "exp": np.exp,
    "exp2": np.exp2, "log": np.log, "log2": np.log2, "log10": np.log10,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh,
}
# Exact, piecewise functions: no rounding error, but jumps.
STEP_F64 = {"ceil": np.ceil, "floor": np.floor, "trunc": np.trunc,
            "round": _round_half_away, "sign": _sign}


def float_call(fn, args):
    t = args[0].t
    if fn in UNARY_F64:
        r = float_op(t, UNARY_F64[fn], args, MATH_ULPS[fn])
        if fn in ("sin", "cos", "tan"):
            _periodic_bound(fn, args[0], r)
        return r
    if fn in STEP_F64:
        f = STEP_F64[fn]
        r = float_op(t, f, args)
        r.e = _jumps(args[0], f, np.where(np.isinf(args[0].e), INF, 0.0))
        return r
    if fn == "abs":
        return float_op(t, np.abs, args)
    if fn == "saturate":
        r = float_op(t, lambda x: np.fmin(np.fmax(x, 0.0), 1.0), args)
        return _zero_sign_free(r, args + [Val(t, np.zeros(len(r.v)))])
    if fn == "fract":
        below_one = 1.0 - ulp(t, 0.75)
        r = float_op(t, lambda x: x - np.floor(x), args)
        x = args[0].v
        v = np.where(np.isinf(x), np.copysign(0.0, x), np.minimum(r.v, below_one))
        v = np.where(x == 0.0, x, v)
        r.v = v
        r.e = _jumps(args[0], np.floor, r.e)
        return r
    if fn in ("fmin", "fmax"):
        r = float_op(t, np.fmin if fn == "fmin" else np.fmax, args)
        return _zero_sign_free(r, args)
    if fn == "pow":
        r = float_op(t, np.power, args, MATH_ULPS["pow"])
        # The corners assume pow is monotonic over the box; a base box that
        # reaches 0 holds the pole (y < 0) or the sign change: undetermined.
        x = args[0]
        with np.errstate(invalid="ignore"):
            reaches_zero = (x.e > 0) & (np.abs(x.v) <= x.e)
        r.e = np.where(reaches_zero, INF, r.e)
        return r
    if fn == "atan2":
        r = float_op(t, np.arctan2, args, MATH_ULPS["atan2"])
        y, x = args
        # the branch cut: y's sign decides +-pi where x < 0 or x is -0
        with np.errstate(invalid="ignore"):
            cut = (y.e > 0) & (np.abs(y.v) <= y.e) & ~(x.v - x.e > 0)
        r.e = np.where(cut, INF, r.e)
        return r
    if fn == "fmod":
        r = float_op(t, np.fmod, args)
        r.e = np.where((args[0].e > 0) | (args[1].e > 0), INF, r.e)
        return r
    if fn == "step":
        r = float_op(t, lambda edge, x: np.where(x < edge, 0.0, 1.0), args)
        return _discontinuous(r, args, lambda edge, x: x < edge)
    if fn == "copysign":
        r = float_op(t, np.copysign, args)
        r.e = np.where(np.isnan(args[1].v), INF, r.e)  # NaN's sign bit varies
        return _discontinuous(r, args, lambda x, y: np.signbit(y))
    if fn == "clamp":
        r = float_op(t, lambda x, lo, hi: np.fmin(np.fmax(x, lo), hi), args)
        return _zero_sign_free(r, args)
    if fn == "fma":
        return float_op(t, lambda a, b, c: a * b + c, args, MATH_ULPS["fma"])
    if fn == "mix":
        r = float_op(t, lambda a, b, s: a + (b - a) * s, args, MATH_ULPS["mix"])
        a, b, s = (x.v for x in args)
        with np.errstate(all="ignore"):
            r.e = r.e + 2 * (ulp(t, a) + ulp(t, b)) * np.fmax(1.0, np.abs(s))
        return r

    if fn == "smoothstep":
        def smooth(e0, e1, x):
            s = np.fmin(np.fmax((x - e0) / (e1 - e0), 0.0), 1.0)
            return s * s * (3.0 - 2.0 * s)
        r = float_op(t, smooth, args, 0, MATH_ULPS["smoothstep"])
        r.e = r.e + MATH_ULPS["smoothstep"] * ulp(t, 1.0)
        e0, e1 = args[0].v, args[1].v
        r.e = np.where(~(e0 < e1), INF, r.e)  # undefined in Metal
        # unbounded inputs make the corners NaN, which the clamp hides: the
        # result is anywhere in [0, 1] (fuzz seed 934039)
        unbounded = np.zeros(len(r.v), bool)
        for a in args:
            unbounded |= np.isinf(a.e)
        r.e = np.where(unbounded, np.maximum(r.e, 1.0), r.e)
        return r
    raise InterpretError(f"unknown float function {fn}")


def _zero_sign_free(r, args):
    """fmin/fmax (and the clamps built from them) of -0 and +0 may return
    either zero (docs/reference/math.md): such a zero result gets the
    smallest tolerance there is, so that whatever depends on its sign
    (signbit, atan2, division) is not held to one choice."""
    zeros = [(a.v == 0.0) for a in args]
    signs = [np.signbit(a.v) for a in args]
    mixed = np.zeros(len(r.v), bool)
    for z1, s1 in zip(zeros, signs):
        for z2, s2 in zip(zeros, signs):
            mixed |= z1 & z2 & (s1 != s2)
    p, emin = _PRECISION[r.t]
    smallest = np.ldexp(1.0, emin - (p - 1))  # the smallest subnormal
    r.e = np.where(mixed & (r.v == 0.0), np.maximum(r.e, smallest), r.e)
    return r


def _periodic_bound(fn, x, r):
    """The corners of x's tolerance interval say nothing once it spans a
    peak or a period: sin and cos move by at most the input's error (slope
    1); tan is undetermined when the interval holds a pole."""
    e = x.e
    risky = e > 0
    if not risky.any():
        return
    with np.errstate(all="ignore"):
        if fn == "tan":
            lo = np.floor((x.v - e) / np.pi - 0.5)
            hi = np.floor((x.v + e) / np.pi - 0.5)
            r.e = np.where(risky & ~(lo == hi), INF, r.e)
        else:
            r.e = np.where(risky, np.maximum(r.e, np.minimum(e, 2.0) + ulp(r.t, 1.0)), r.e)


def _discontinuous(r, args, jump):
    """Marks r undetermined where ``jump`` (bool) changes within the inputs'
    tolerance box."""
    risky = np.zeros(len(r.v), bool)
    for a in args:
        risky |= a.e > 0
    if risky.any():
        with np.errstate(all="ignore"):
            centre = jump(*(a.v for a in args))
            for signs in itertools.product((-1.0, 1.0), repeat=len(args)):
                moved = jump(*(a.v + s * a.e for a, s in zip(args, signs)))
                r.e[risky & (moved != centre)] = INF
    return r


def predicate(fn, x: Val) -> Val:
    v = x.v
    if fn == "isnan":
        f = np.isnan
    elif fn == "isinf":
        f = np.isinf
    elif fn == "isfinite":
        f = np.isfinite
    elif fn == "signbit":
        f = np.signbit
    else:
        raise InterpretError(f"unknown predicate {fn}")
    e = _jumps(x, f, np.where(np.isinf(x.e), INF, 0.0))
    if fn == "signbit":
        e = np.where(np.isnan(v), INF, e)  # the sign of a computed NaN varies
    return Val("b1", f(v), e)


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


# --------------------------------------------------------------------------
# The machine
# --------------------------------------------------------------------------

class Machine:
    """Runs one program over all threads of its grid."""

    def __init__(self, program, exact_arith=True):
        self.p = program
        self.exact = exact_arith
        n, tg = program["grid"], program["threads"]
        self.n = n
        gid = np.arange(n)
        self.group = gid // tg
        self.lid = gid % tg
        self.group_size = np.minimum(tg, n - self.group * tg)
        self.env = {}
        self.inputs = {b["name"]: load_input(b) for b in program["inputs"]}
        self.outputs = {}
        for b in program["outputs"]:
            zeros = (np.zeros(b["size"]) if is_floatlike(b["dtype"]) else
                     np.zeros(b["size"], bool) if b["dtype"] == "b1" else
                     np.array([0] * b["size"], dtype=object))
            self.outputs[b["name"]] = Val(b["dtype"], zeros)
        self.tg = {}
        self.undetermined = np.zeros(n, bool)

    # -- expressions ---------------------------------------------------------
    def literal(self, x, like):
        """A Python number as a constant next to an operand of type like."""
        n = self.n
        if isinstance(x, bool):
            return Val("b1", np.full(n, x))
        if isinstance(x, int):
            t = like or "i32"
            if is_float(t):
                return Val(t, round_float(t, np.full(n, float(x))))
            if t == "b1":
                return Val("b1", np.full(n, bool(x)))
            return Val(t, wrap(t, [x] * n))
        t = like if like in FLOATS else "f32"
        return Val(t, round_float(t, np.full(n, float(x))))

    def operands(self, exprs, mask):
        """Evaluates operands; numbers adopt the first traced operand's type."""
        vals = [None if e[0] == "lit" else self.eval(e, mask) for e in exprs]
        like = next((v.t for v in vals if v is not None), None)
        return [self.literal(e[1], like) if v is None else v
                for e, v in zip(exprs, vals)]

    def query(self, name):
        n = self.n
        if name == "thread_position_in_grid":
            v = np.arange(n)
        elif name == "thread_index_in_threadgroup":
            v = self.lid
        elif name == "threads_per_threadgroup":
            v = self.group_size
        elif name == "simdgroup_index_in_threadgroup":
            v = self.lid // 32
        else:
            raise InterpretError(f"unknown query {name}")
        return Val("u32", np.array([int(x) for x in v], dtype=object))

    def eval(self, e, mask) -> Val:
        kind = e[0]
        if kind == "var":
            return self.env[e[1]]
        if kind == "query":
            return self.query(e[1])
        if kind == "load":
            idx = self.eval(e[2], mask)
            buf = self.inputs[e[1]]
            k = np.array([int(i) for i in idx.v])
            return Val(buf.t, buf.v[k], buf.e[k])
        if kind == "tgload":
            idx = self.eval(e[2], mask)
            vals, errs, t = self.tg[e[1]]
            k = np.array([int(i) for i in idx.v])
            outside = (k < 0) | (k >= vals.shape[1])
            if (outside & mask).any():
                raise InterpretError(f"{e[1]}: threadgroup index out of range")
            k = np.where(outside, 0, k)  # threads not running this load
            return Val(t, vals[self.group, k], np.maximum(errs[self.group, k], idx.e))
        if kind == "cast":
            (a,) = self.operands([e[2]], mask)
            return convert(a, e[1])
        if kind == "satcast":
            (a,) = self.operands([e[2]], mask)
            return to_fp8(convert(a, "f32") if is_fp8(a.t) else a, e[1],
                          saturate=True)
        if kind == "vec8":   # only the lane read matters
            _, fmt, saturate, lane, args = e
            a = convert(self.eval(args[lane], mask), "f32")
            return to_fp8(a, fmt, saturate=saturate)
        if kind == "un":
            return self.unary(e[1], self.eval(e[2], mask))
        if kind == "bin":
            a, b = self.operands([e[2], e[3]], mask)
            return self.binary(e[1], a, b)
        if kind == "call":
            return self.call(e[1], e[2:], mask)
        raise InterpretError(f"unknown expression {e!r}")

    def unary(self, op, a):
        if is_fp8(a.t):
            a = convert(a, "f32")
        if a.t == "b1":
            return Val("b1", ~a.v.astype(bool), a.e)
        if is_float(a.t):
            return Val(a.t, -a.v, a.e)
        if op == "-":
            return Val(a.t, wrap(a.t, [-int(x) for x in a.v]), a.e)
        return Val(a.t, wrap(a.t, [~int(x) for x in a.v]), a.e)

    def binary(self, op, a, b):
        t = promote(a.t, b.t)
        a, b = convert(a, t), convert(b, t)
        e = np.maximum(a.e, b.e)
        if op in ("<", "<=", ">", ">=", "==", "!="):
            return self.compare(op, a, b)
        if t == "b1":
            x, y = a.v.astype(bool), b.v.astype(bool)
            v = {"&": x & y, "|": x | y, "^": x ^ y}[op]
            return Val("b1", v, e)
        if is_float(t):
            fns = {"+": np.add, "-": np.subtract, "*": np.multiply,
                   "/": np.divide, "%": np.fmod}
            ulps = 0.0 if self.exact else LENIENT_ULPS.get(op, 0)
            # a divisor that may be 0 (or of either sign) bounds nothing
            near_pole = (b.e > 0) & (np.abs(b.v) <= b.e)
            if op == "//":
                q = float_op(t, np.divide, [a, b], 0, ulps)
                q.e = np.where(near_pole, INF, q.e)
                r = float_op(t, np.floor, [q])
                r.e = _jumps(q, np.floor, np.where(np.isinf(q.e), INF, 0.0))
                return r
            r = float_op(t, fns[op], [a, b], 0, ulps)
            if op == "%":
                r.e = np.where((a.e > 0) | (b.e > 0), INF, r.e)
            if op == "/":
                r.e = np.where(near_pole, INF, r.e)
            return r
        return int_binary(op, t, a.v, b.v, e)

    def compare(self, op, a, b, unsigned=None):
        fns = {"<": np.less, "<=": np.less_equal, ">": np.greater,
               ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal}
        f = fns[op]
        if is_float(a.t):
            r = Val("b1", f(a.v, b.v), np.maximum(np.where(np.isinf(a.e), INF, 0.0),
                                                   np.where(np.isinf(b.e), INF, 0.0)))
            return _discontinuous(r, [a, b], f)
        if a.t == "b1":
            x = np.array([int(bool(v)) for v in a.v], dtype=object)
            y = np.array([int(bool(v)) for v in b.v], dtype=object)
        elif unsigned is None:
            x, y = a.v, b.v
        elif unsigned:
            x, y = as_unsigned(a.t, a.v), as_unsigned(b.t, b.v)
        else:
            x = np.array([_signed_view(a.t, v) for v in a.v], dtype=object)
            y = np.array([_signed_view(b.t, v) for v in b.v], dtype=object)
        v = np.array([bool(f(int(p), int(q))) for p, q in zip(x, y)])
        return Val("b1", v, np.maximum(a.e, b.e))

    def call(self, fn, arg_exprs, mask):
        if fn.startswith(("simd_", "quad_")):
            # Lanes of one group must agree on running it (Metal's rule);
            # groups that do not run it compute values nobody uses.
            width = 32 if fn.startswith("simd_") else 4
            seg = self.group * 100000 + self.lid // width
            for key in np.unique(seg):
                if len(set(mask[seg == key].tolist())) > 1:
                    raise InterpretError(f"{fn} under divergent control flow")
            args = self.operands(arg_exprs, mask)
            return self.simd(fn, args)
        args = self.operands(arg_exprs, mask)
        if fn == "where":
            f, t_, c = args
            t = promote(f.t, t_.t)
            f, t_ = convert(f, t), convert(t_, t)
            cond = c.v.astype(bool)
            v = np.where(cond, t_.v, f.v)
            if v.dtype != object and not is_float(t) and t != "b1":
                v = v.astype(object)
            e = np.where(c.e > 0, INF, np.where(cond, t_.e, f.e))
            return Val(t, v, e)
        if fn.startswith("cmp_"):
            a, b = args
            t = promote(a.t, b.t)
            a, b = convert(a, t), convert(b, t)
            pred = fn[4:]
            unordered = pred.startswith("u")
            op = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">",
                  "ge": ">="}[pred[1:] if unordered else pred]
            if is_float(t):
                r = self.compare(op, a, b)
                either_nan = np.isnan(a.v) | np.isnan(b.v)
                r.v = np.where(either_nan, unordered, r.v if op != "!=" else
                               np.not_equal(a.v, b.v))
                return r
            return self.compare(op, a, b, unsigned=unordered)
        if fn in ("isnan", "isinf", "isfinite", "signbit"):
            return predicate(fn, args[0])
        if fn in ("extract_bits", "insert_bits"):
            # offset and bits are uint numbers; keep them as plain ints
            t = args[0].t
            nums = [int(a.v[0]) for a in args[len(args) - 2:]]
            vals = list(args[:len(args) - 2])
            if fn == "insert_bits":
                vals[1] = convert(vals[1], t)
            n = self.n
            cols = vals + [Val(t, np.array([x] * n, dtype=object)) for x in nums]
            return int_call(fn, cols)
        if fn == "abs" and is_float(args[0].t):
            return float_call(fn, args)
        t = args[0].t
        for a in args[1:]:
            t = promote(t, a.t)
        args = [convert(a, t) for a in args]
        if is_float(t):
            return float_call(fn, args)
        return int_call(fn, args)

    # -- SIMD ----------------------------------------------------------------
    def simd(self, fn, args):
        x = args[0]
        width = 32 if fn.startswith("simd_") else 4
        name = fn.split("_", 1)[1]
        segment = self.lid // width
        lane = self.lid % width
        key = self.group * 100000 + segment
        out = x.v.copy()
        e = x.e.copy()
        order = np.lexsort((lane, key))
        members = {}
        for i in order:
            members.setdefault(int(key[i]), []).append(int(i))
        t = x.t
        for idx in members.values():
            vals = [x.v[i] for i in idx]
            errs = [x.e[i] for i in idx]
            if name in ("shuffle", "broadcast", "shuffle_xor", "shuffle_up",
                        "shuffle_down"):
                arg = args[1]
                for me, i in enumerate(idx):
                    a = int(arg.v[i])
                    src = {"shuffle": a % width, "broadcast": a % width,
                           "shuffle_xor": me ^ (a % width), "shuffle_up": me - a,
                           "shuffle_down": me + a}[name]
                    if not 0 <= src < len(idx):
                        src = me
                    out[i] = vals[src]
                    e[i] = max(errs[src], arg.e[i])
                continue
            res, res_e = self._reduce(name, t, vals, errs)
            for me, i in enumerate(idx):
                out[i] = res[me]
                e[i] = res_e[me]
        return Val(t, out, e)

    def _reduce(self, name, t, vals, errs):
        """Per-lane results of a reduction or prefix over one group."""
        n = len(vals)
        if is_float(t):
            arr = np.array(vals, dtype=np.float64)
            err = np.array(errs)
            if name in ("min", "max"):
                if np.isnan(arr).any():
                    return [0.0] * n, [INF] * n
                r = arr.min() if name == "min" else arr.max()
                return [r] * n, [err.max()] * n
            if name == "sum":
                parts = [(arr, err)]
            elif name == "prefix_inclusive_sum":
                parts = [(arr[:k + 1], err[:k + 1]) for k in range(n)]
            else:
                raise InterpretError(f"unsupported float SIMD op {name}")
            res, res_e = [], []
            for a, ea in (parts * n if name == "sum" else parts):
                with np.errstate(all="ignore"):
                    s = float(round_float(t, np.array([a.sum()]))[0])
                    bound = (len(a) + 1) * float(np.abs(a).sum()) * float(
                        ulp(t, 1.0)) + float(ea.sum()) + float(ulp(t, s))
                # The target adds in its own order: a partial sum may pass
                # the largest finite value whenever the magnitudes can.
                if float(np.abs(a).sum()) + float(ea.sum()) > _MAX_FINITE[t]:
                    bound = INF
                res.append(s)
                res_e.append(bound if np.isfinite(bound) or not np.isfinite(s) else INF)
            return res, res_e
        ints = [int(v) for v in vals]
        e = max(errs) if errs else 0.0
        if name in ("sum", "product", "min", "max", "and", "or", "xor"):
            acc = ints[0]
            for v in ints[1:]:
                acc = {"sum": acc + v, "product": acc * v, "min": min(acc, v),
                       "max": max(acc, v), "and": acc & v, "or": acc | v,
                       "xor": acc ^ v}[name]
            r = wrap(t, [acc])[0]
            return [r] * n, [e] * n
        if name in ("prefix_inclusive_sum", "prefix_exclusive_sum"):
            out, run = [], 0
            for v in ints:
                if name == "prefix_exclusive_sum":
                    out.append(run)
                run += v
                if name == "prefix_inclusive_sum":
                    out.append(run)
            return list(wrap(t, out)), [e] * n
        raise InterpretError(f"unknown SIMD op {name}")

    # -- statements ----------------------------------------------------------
    def assign(self, name, val, mask):
        old = self.env.get(name)
        if old is None:
            self.env[name] = val
            return
        val = convert(val, old.t)
        v = np.where(mask, val.v, old.v)
        if old.t in INTS:
            v = v.astype(object)
        e = np.where(self.undetermined, INF, val.e)
        self.env[name] = Val(old.t, v, np.where(mask, e, old.e))

    def store(self, name, idx: Val, val: Val, mask):
        """buf[idx] = val for the threads in mask (an output buffer, or
        threadgroup memory: the row of each thread's group)."""
        if name in self.tg:
            vals, errs, t = self.tg[name]
        else:
            target = self.outputs[name]
            vals, errs, t = target.v, target.e, target.t
        val = convert(val, t)
        for i in np.nonzero(mask)[0]:
            k = int(idx.v[i])
            row = (int(self.group[i]),) if name in self.tg else ()
            if not 0 <= k < vals.shape[-1]:
                raise InterpretError(f"{name}: store index {k} out of range")
            vals[row + (k,)] = val.v[i]
            errs[row + (k,)] = INF if self.undetermined[i] else max(val.e[i], idx.e[i])

    def run(self, body=None, mask=None):
        if body is None:
            body = self.p["body"]
            mask = np.ones(self.n, bool)
        for s in body:
            kind = s[0]
            if kind == "let":
                v = self.eval(s[3], mask)
                if v.t != s[2]:
                    raise InterpretError(f"{s[1]}: computed {v.t}, declared {s[2]}")
                self.env[s[1]] = v
            elif kind == "set":
                self.assign(s[1], self.eval(s[2], mask), mask)
            elif kind == "store":
                idx = self.eval(s[2], mask)
                val = self.eval(s[3], mask)
                self.store(s[1], idx, val, mask)
            elif kind == "if":
                c = self.env[s[1]]
                cond = c.v.astype(bool)
                unknown = c.e > 0
                self.branch(s[2], mask & cond, mask & unknown)
                if s[3] is not None:
                    self.branch(s[3], mask & ~cond, mask & unknown)
            elif kind == "for":
                _, ivar, lo, hi, step, loop_body = s
                for i in range(lo, hi, step):
                    self.env[ivar] = Val("i32", np.array([i] * self.n, dtype=object))
                    self.run(loop_body, mask)
            elif kind == "while":
                active = mask.copy()
                # Threads whose trip count is undetermined leave the loop
                # here; what the loop assigns is then undetermined for them.
                unknown = mask & (self.env[s[1]].e > 0)
                active &= ~unknown
                for _ in range(MAX_WHILE_TRIPS):
                    counter = self.env[s[1]]
                    active &= np.array([int(c) > 0 for c in counter.v])
                    if not active.any():
                        break
                    self.run(s[2], active)
                else:
                    raise InterpretError("while_ loop did not finish")
                for name in _assigned(s[2]):
                    v = self.env[name]
                    self.env[name] = Val(v.t, v.v, np.where(unknown, INF, v.e))
            elif kind == "tg_alloc":
                _, name, t, size = s
                groups = int(self.group.max()) + 1
                vals = (np.zeros((groups, size)) if is_float(t) else
                        np.zeros((groups, size), dtype=object))
                self.tg[name] = (vals, np.full((groups, size), INF), t)
            elif kind == "copy":
                self.copy(s)
            elif kind == "barrier":
                pass  # lock step: every write before it is visible after it
            elif kind == "atomic":
                self.atomic(s, mask)
            else:
                raise InterpretError(f"unknown statement {s!r}")

    def copy(self, s):
        """enigma.copy(src, tg, count, ...) at the top level: every group's
        row of tg gets the same converted slice of the input."""
        _, src, dst, count, src_off, dst_off, _width = s
        buf = self.inputs[src]
        vals, errs, t = self.tg[dst]
        part = slice(src_off, src_off + count)
        piece = convert(Val(buf.t, buf.v[part], buf.e[part]), t)
        if src_off + count > len(buf.v) or dst_off + count > vals.shape[1]:
            raise InterpretError(f"copy into {dst}: out of range")
        vals[:, dst_off:dst_off + count] = piece.v
        errs[:, dst_off:dst_off + count] = piece.e

    def branch(self, body, taken, unknown):
        """Runs an arm for the threads that take it. Threads whose condition
        is undetermined run it too, but everything they write becomes
        undetermined (``self.undetermined``)."""
        before = set(self.env)
        saved = self.undetermined
        self.undetermined = saved | unknown
        self.run(body, taken | unknown)
        self.undetermined = saved
        for k in list(self.env):
            if k not in before:
                del self.env[k]  # the arm's own variables go out of scope

    def atomic(self, s, mask):
        _, fn, buf, idx_e, val_e = s
        target = self.outputs[buf]
        idx = self.eval(idx_e, mask)
        val = convert(self.eval(val_e, mask), target.t)
        kind = fn[len("atomic_fetch_"):]
        for i in np.nonzero(mask)[0]:
            k = int(idx.v[i])
            if idx.e[i] > 0 or val.e[i] > 0 or self.undetermined[i]:
                target.e[k] = INF
                continue
            old, v = int(target.v[k]), int(val.v[i])
            new = {"add": old + v, "sub": old - v, "min": min(old, v),
                   "max": max(old, v), "and": old & v, "or": old | v,
                   "xor": old ^ v}[kind]
            target.v[k] = wrap(target.t, [new])[0]


def _assigned(body) -> set:
    """Variables a statement list reassigns (``set``), nested ones included."""
    names = set()
    for s in body:
        if s[0] == "set":
            names.add(s[1])
        elif s[0] == "if":
            names |= _assigned(s[2]) | _assigned(s[3] or [])
        elif s[0] == "for":
            names |= _assigned(s[5])
        elif s[0] == "while":
            names |= _assigned(s[2])
    return names


def load_input(b) -> Val:
    t, data = b["dtype"], b["data"]
    if is_fp8(t):
        return Val(t, np.array([fp8_value(t, int(x)) for x in data]))
    if t == "bf16":
        bits = np.array(data, dtype=np.uint32) << 16
        return Val(t, bits.view(np.float32).astype(np.float64))
    if is_float(t):
        return Val(t, round_float(t, np.array(data, dtype=np.float64)))
    if t == "b1":
        return Val(t, np.array(data, dtype=bool))
    return Val(t, np.array([int(x) for x in data], dtype=object))


def expected_outputs(program, exact_arith=True):
    """{output name: Val} after running the program."""
    m = Machine(program, exact_arith)
    m.run()
    return m.outputs


def input_arrays(program):
    """The input buffers as numpy arrays for a runtime (bf16 as uint16 bits)."""
    out = []
    for b in program["inputs"]:
        out.append(np.array(b["data"], dtype=numpy_dtype(b["dtype"])))
    return out


def observed_values(t, raw: bytes):
    """Output bytes as comparable values (float64 for floats, ints, bools)."""
    arr = np.frombuffer(raw, dtype=numpy_dtype(t))
    if is_fp8(t):
        return np.array([fp8_value(t, int(x)) for x in arr])
    if t == "bf16":
        return (arr.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if is_float(t):
        return arr.astype(np.float64)
    if t == "b1":
        return arr.astype(bool)
    return np.array([int(x) for x in arr], dtype=object)


def compare(expected: Val, observed) -> list:
    """Indices where observed disagrees with expected beyond its bound."""
    bad = []
    for k in range(len(expected.v)):
        e = expected.e[k]
        if math.isinf(e):
            continue
        x, y = expected.v[k], observed[k]
        if is_floatlike(expected.t):
            if math.isnan(x) and math.isnan(y):
                continue
            if x == y:
                continue
            if e > 0 and abs(x - y) <= e:
                continue
            bad.append(k)
        elif bool(x != y) if expected.t == "b1" else int(x) != int(y):
            bad.append(k)
    return bad
