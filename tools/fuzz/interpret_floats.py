"""The float operations of interpret.py (the fuzzer's numpy interpreter):
each computed in float64 and rounded to its type with the error bound it
adds (the math functions' ulps of MATH_ULPS), the exact piecewise
functions with their jumps, and the predicates isnan, isinf, isfinite,
signbit."""

from __future__ import annotations

import itertools

import numpy as np

from interpret_values import (INF, _PRECISION, InterpretError, Val, _diff,
                              _jumps, round_float, ulp)


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


# --------------------------------------------------------------------------
# Float operations
# --------------------------------------------------------------------------

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
