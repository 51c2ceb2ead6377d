"""Math, integer, bit, comparison, selection and reinterpretation functions
(docs/reference/math.md), with Metal's definitions on every backend.

Operands may be IRValues or Python numbers; a number takes the dtype of the
first traced operand (a float number with an integer operand becomes f32),
and mixed dtypes promote as the arithmetic operators do. Float functions
compute integer operands in f32; integer functions reject floats. Vector
IRValues work lane-wise where Metal's function does.
"""

from __future__ import annotations

from . import _core
from ._dtypes import as_dtype
from ._ir import (IRValue, current_tracer, fragment_math, fragment_where,
                  to_value)
from ._ir import Fragment as _Fragment


def _build(what, fn, *args):
    """``fn(builder, *args)`` through the located call, as an IRValue."""
    tracer = current_tracer(what)
    return IRValue(tracer, tracer.call(fn, *args))


def _values(args):
    """IRValues for ``args``; numbers adopt the first IRValue's dtype."""
    like = next((a.dtype for a in args if isinstance(a, IRValue)), None)
    return [to_value(a, like) for a in args]


def _apply(name, *args):
    current_tracer(name)
    if any(isinstance(a, _Fragment) for a in args):
        return fragment_math(name, *args)
    values = _values(args)
    return _build(name, _core.math_call, name, [v._value for v in values])


# --- Float functions, one operand -------------------------------------------

def sqrt(x):
    """Square root (MSL ``sqrt``)."""
    return _apply("sqrt", x)


def rsqrt(x):
    """Reciprocal square root 1/sqrt(x) (MSL ``rsqrt``)."""
    return _apply("rsqrt", x)


def abs(x):  # noqa: A001 - Metal's name
    """Absolute value (MSL ``abs``). Floats clear the sign bit; signed
    integers wrap ``abs(INT_MIN)`` to ``INT_MIN``; unsigned values pass."""
    return _apply("abs", x)


def ceil(x):
    """Round toward +infinity (MSL ``ceil``)."""
    return _apply("ceil", x)


def floor(x):
    """Round toward -infinity (MSL ``floor``)."""
    return _apply("floor", x)


def round(x):  # noqa: A001 - Metal's name
    """Round to nearest, halfway cases away from zero (MSL ``round``)."""
    return _apply("round", x)


def trunc(x):
    """Round toward zero (MSL ``trunc``)."""
    return _apply("trunc", x)


def sign(x):
    """1.0 for x > 0, -1.0 for x < 0, x itself for +-0, 0 for NaN (MSL
    ``sign``)."""
    return _apply("sign", x)


def saturate(x):
    """x clamped to [0, 1] (MSL ``saturate``)."""
    return _apply("saturate", x)


def fract(x):
    """x - floor(x), clamped to the largest value below 1 (MSL ``fract``)."""
    return _apply("fract", x)


def exp(x):
    """e to the x (MSL ``exp``)."""
    return _apply("exp", x)


def exp2(x):
    """2 to the x (MSL ``exp2``)."""
    return _apply("exp2", x)


def log(x):
    """Natural logarithm (MSL ``log``)."""
    return _apply("log", x)


def log2(x):
    """Base-2 logarithm (MSL ``log2``)."""
    return _apply("log2", x)


def log10(x):
    """Base-10 logarithm (MSL ``log10``)."""
    return _apply("log10", x)


def sin(x):
    """Sine of x radians (MSL ``sin``)."""
    return _apply("sin", x)


def cos(x):
    """Cosine of x radians (MSL ``cos``)."""
    return _apply("cos", x)


def tan(x):
    """Tangent of x radians (MSL ``tan``)."""
    return _apply("tan", x)


def asin(x):
    """Arc sine in radians (MSL ``asin``)."""
    return _apply("asin", x)


def acos(x):
    """Arc cosine in radians (MSL ``acos``)."""
    return _apply("acos", x)


def atan(x):
    """Arc tangent in radians (MSL ``atan``)."""
    return _apply("atan", x)


def sinh(x):
    """Hyperbolic sine (MSL ``sinh``)."""
    return _apply("sinh", x)


def cosh(x):
    """Hyperbolic cosine (MSL ``cosh``)."""
    return _apply("cosh", x)


def tanh(x):
    """Hyperbolic tangent (MSL ``tanh``)."""
    return _apply("tanh", x)


# --- Float functions, two and three operands --------------------------------

def fmin(x, y):
    """Smaller of x and y; when one is NaN, the other (MSL ``fmin``)."""
    return _apply("fmin", x, y)


def fmax(x, y):
    """Larger of x and y; when one is NaN, the other (MSL ``fmax``)."""
    return _apply("fmax", x, y)


def pow(x, y):  # noqa: A001 - Metal's name
    """x to the y (MSL ``pow``)."""
    return _apply("pow", x, y)


def fmod(x, y):
    """x - y * trunc(x / y), the sign of x (MSL ``fmod``)."""
    return _apply("fmod", x, y)


def atan2(y, x):
    """Arc tangent of y / x using both signs for the quadrant (MSL
    ``atan2``)."""
    return _apply("atan2", y, x)


def step(edge, x):
    """0.0 when x < edge, else 1.0 (MSL ``step``)."""
    return _apply("step", edge, x)


def copysign(x, y):
    """The magnitude of x with the sign of y (MSL ``copysign``)."""
    return _apply("copysign", x, y)


def clamp(x, lo, hi):
    """min(max(x, lo), hi) for floats and integers (MSL ``clamp``)."""
    return _apply("clamp", x, lo, hi)


def fma(a, b, c):
    """a * b + c with one rounding (MSL ``fma``)."""
    return _apply("fma", a, b, c)


def mix(a, b, t):
    """Linear blend a + (b - a) * t (MSL ``mix``)."""
    return _apply("mix", a, b, t)


def smoothstep(edge0, edge1, x):
    """Hermite interpolation: t*t*(3 - 2t) with t = clamp((x - edge0) /
    (edge1 - edge0), 0, 1) (MSL ``smoothstep``)."""
    return _apply("smoothstep", edge0, edge1, x)


# --- Float predicates ----------------------------------------------------------

def isnan(x):
    """True where x is NaN (MSL ``isnan``); a bool IRValue."""
    return _apply("isnan", x)


def isinf(x):
    """True where x is +-infinity (MSL ``isinf``)."""
    return _apply("isinf", x)


def isfinite(x):
    """True where x is neither infinite nor NaN (MSL ``isfinite``)."""
    return _apply("isfinite", x)


def signbit(x):
    """True where the sign bit of x is set, -0.0 included (MSL
    ``signbit``)."""
    return _apply("signbit", x)


def isnormal(x):
    """True where x is a normal number of its type: not zero, subnormal,
    infinite or NaN (MSL ``isnormal``)."""
    return _apply("isnormal", x)


# --- Integer functions ---------------------------------------------------------

def imin(x, y):
    """Smaller of two integers, signed or unsigned by dtype (MSL ``min``)."""
    return _apply("imin", x, y)


def imax(x, y):
    """Larger of two integers, signed or unsigned by dtype (MSL ``max``)."""
    return _apply("imax", x, y)


def iclamp(x, lo, hi):
    """Integer clamp min(max(x, lo), hi) (MSL ``clamp``)."""
    return _apply("iclamp", x, lo, hi)


def abs_diff(x, y):
    """|x - y| without overflow; the result is the unsigned type of the
    operands' width (MSL ``absdiff``)."""
    return _apply("abs_diff", x, y)


def abs_diff_unary(x):
    """|x| as the unsigned type of x's width, so |INT_MIN| is exact (MSL
    ``abs``, read as unsigned)."""
    return _apply("abs_diff_unary", x)


def add_sat(x, y):
    """x + y saturated to the type's range (MSL ``addsat``)."""
    return _apply("add_sat", x, y)


def sub_sat(x, y):
    """x - y saturated to the type's range (MSL ``subsat``)."""
    return _apply("sub_sat", x, y)


def mul_hi(x, y):
    """The high half of the double-width product x * y (MSL ``mulhi``)."""
    return _apply("mul_hi", x, y)


def rotate(v, i):
    """v rotated left by i bits, i taken modulo the width (MSL
    ``rotate``)."""
    return _apply("rotate", v, i)


def mad_sat(a, b, c):
    """a * b + c computed exactly, then saturated (MSL ``madsat``)."""
    return _apply("mad_sat", a, b, c)


# --- Bits ------------------------------------------------------------------

def popcount(x):
    """Number of set bits (MSL ``popcount``)."""
    return _apply("popcount", x)


def clz(x):
    """Number of leading zero bits; clz(0) is the width (MSL ``clz``)."""
    return _apply("clz", x)


def ctz(x):
    """Number of trailing zero bits; ctz(0) is the width (MSL ``ctz``)."""
    return _apply("ctz", x)


def reverse_bits(x):
    """The bits of x in reverse order (MSL ``reverse_bits``)."""
    return _apply("reverse_bits", x)


def _field(v):
    """A bit offset or count: Metal takes them as uint."""
    return to_value(v, as_dtype("u32"))._value


def extract_bits(v, offset, bits):
    """Bits [offset, offset + bits) of v moved to the bottom: zero-extended
    for unsigned v, sign-extended for signed v; bits == 0 gives 0 (MSL
    ``extract_bits``)."""
    current_tracer("extract_bits")
    (x,) = _values([v])
    return _build("extract_bits", _core.extract_bits, x._value,
                  _field(offset), _field(bits))


def insert_bits(base, insert, offset, bits):
    """base with bits [offset, offset + bits) replaced by the low bits of
    insert; bits == 0 gives base (MSL ``insert_bits``)."""
    current_tracer("insert_bits")
    b, i = _values([base, insert])
    return _build("insert_bits", _core.insert_bits, b._value, i._value,
                  _field(offset), _field(bits))


# --- Comparisons and selection ---------------------------------------------

def _compare(name, a, b):
    current_tracer(name)
    x, y = _values([a, b])
    return _build(name, _core.compare_by, name, x._value, y._value)


def cmp_eq(a, b):
    """a == b; false when either float is NaN."""
    return _compare("cmp_eq", a, b)


def cmp_ne(a, b):
    """a != b, ordered: false when either float is NaN (unlike ``!=``)."""
    return _compare("cmp_ne", a, b)


def cmp_lt(a, b):
    """a < b, integers compared as signed whatever their dtype."""
    return _compare("cmp_lt", a, b)


def cmp_le(a, b):
    """a <= b, integers compared as signed whatever their dtype."""
    return _compare("cmp_le", a, b)


def cmp_gt(a, b):
    """a > b, integers compared as signed whatever their dtype."""
    return _compare("cmp_gt", a, b)


def cmp_ge(a, b):
    """a >= b, integers compared as signed whatever their dtype."""
    return _compare("cmp_ge", a, b)


def cmp_ult(a, b):
    """a < b, integers compared as unsigned whatever their dtype; for
    floats unordered (true when either is NaN)."""
    return _compare("cmp_ult", a, b)


def cmp_ule(a, b):
    """a <= b, integers compared as unsigned; floats unordered."""
    return _compare("cmp_ule", a, b)


def cmp_ugt(a, b):
    """a > b, integers compared as unsigned; floats unordered."""
    return _compare("cmp_ugt", a, b)


def cmp_uge(a, b):
    """a >= b, integers compared as unsigned; floats unordered."""
    return _compare("cmp_uge", a, b)


def where(false_val, true_val, cond):
    """``cond ? true_val : false_val`` (MSL ``select(false_val, true_val,
    cond)``; note the argument order). ``cond`` must be a bool."""
    current_tracer("where")
    if any(isinstance(a, _Fragment) for a in (false_val, true_val, cond)):
        return fragment_where(false_val, true_val, cond)
    f, t = _values([false_val, true_val])
    c = to_value(cond)
    return _build("where", _core.where, f._value, t._value, c._value)


def as_type(x, dtype):
    """The bits of x read as ``dtype`` (MSL ``as_type<T>``); the widths must
    be equal. For a value conversion use ``metal_cast``."""
    current_tracer("as_type")
    dtype = as_dtype(dtype)
    value = to_value(x)
    return _build("as_type", _core.as_type, value._value, dtype.name)


__all__ = [
    "sqrt", "rsqrt", "abs", "ceil", "floor", "round", "trunc", "sign",
    "saturate", "fract", "exp", "exp2", "log", "log2", "log10", "sin", "cos",
    "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "fmin", "fmax", "pow", "fmod", "atan2", "step", "copysign",
    "clamp", "fma", "mix", "smoothstep",
    "isnan", "isinf", "isfinite", "signbit", "isnormal",
    "imin", "imax", "iclamp", "abs_diff", "abs_diff_unary", "add_sat",
    "sub_sat", "mul_hi", "rotate", "mad_sat",
    "popcount", "clz", "ctz", "reverse_bits", "extract_bits", "insert_bits",
    "cmp_eq", "cmp_ne", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge",
    "cmp_ult", "cmp_ule", "cmp_ugt", "cmp_uge",
    "where", "as_type",
]
