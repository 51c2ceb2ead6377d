"""Random well-typed Enigma kernels for differential fuzzing.

A program is a plain JSON-able dict (so a reproducer is a file): launch
shape, input buffers with their data, output buffers, and a body of
statements over SSA-like variables. ``generate(seed)`` builds one at random;
``to_source(program)`` prints it as the Python text of an ``@enigma.kernel``
(the readable form that is compiled); tools/fuzz/interpret.py evaluates the
same program with numpy to get the expected outputs.

Statements (lists, first element the kind):
  ["let", var, dtype, expr]          var = expr (expr's type is dtype)
  ["set", var, expr]                 reassign a variable (carried by if_/range)
  ["store", buf, index, expr]        buf[index] = expr
  ["if", cond, then_body, else_body] with enigma.if_(cond) (else_body may be None)
  ["for", ivar, lo, hi, step, body]  for ivar in enigma.range(lo, hi, step)
  ["while", counter, body]           with enigma.while_(lambda: counter > 0)
  ["tg_alloc", name, dtype, size]    threadgroup memory (top level only)
  ["copy", src, tg, count, src_off, dst_off, width]
                                     enigma.copy(src, tg, count, ...) of an
                                     input buffer into threadgroup memory
  ["barrier"]                        enigma.barrier()
  ["atomic", fn, buf, index, value]  enigma.<fn>(buf, index, value)
Expressions:
  ["var", name]  ["lit", number]  ["query", name]  ["load", buf, index]
  ["bin", op, a, b]  ["un", op, a]  ["call", fn, args...]  ["cast", dtype, a]
  ["satcast", fmt, a]               enigma.saturating_cast(a, enigma.<fmt>)
  ["vec8", fmt, saturate, lane, [a, ...]]
                                     lane ``lane`` (x, y, z, w) of 2 or 4 f32
                                     values made a vector (make_float2/4) and
                                     converted to the 8-bit float ``fmt``
                                     (metal_cast, or saturating_cast)

8-bit floats (f8e4m3, f8e5m2) are values of their own kind: loaded from
8-bit input buffers, made by conversions (plain, saturating, lane by lane
from vectors), converted to every type, compared and combined with
``+ - * /`` (which compute in f32), stored into 8-bit or float buffers.
Other steps leave them alone (``visible`` hides them unless asked).

Undefined behaviour is avoided the way a careful Metal programmer would:
integer divisors are guarded (no x / 0, no INT_MIN / -1), shift amounts are
masked to the width, and pow takes |x|. Float -> integer conversions of NaN
and out-of-range values are defined by Enigma (they saturate); half of them
are NaN-guarded and clamped into range first, the others are not.
"""

from __future__ import annotations

import random

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
# Categories whose kernels may hold 8-bit floats, and how often: the
# chance of each input buffer being 8-bit, and of each arithmetic step
# being an 8-bit one.
FP8_CATEGORIES = {"arith": (0.1, 0.04), "math": (0.08, 0.025),
                  "control": (0.08, 0.025)}
CATEGORIES = ("arith", "math", "control", "threadgroup", "simd", "atomic")

# Known Enigma bugs the generator steers around, so that a fuzzing run keeps
# finding new ones; each has a corpus entry and a test in
# python/tests/test_fuzz_regressions.py. Remove an entry once it is fixed.
AVOID_KNOWN_BUGS = {
}

MAX_OUTPUTS = 10  # output buffers per kernel (Metal allows 31 buffers)

# Threadgroup sizes: powers of two, and odd sizes that leave partial
# simdgroups and quads.
THREADGROUP_SIZES = (1, 3, 4, 32, 33, 64, 100, 128, 256)

UNARY_MATH = ("sqrt", "rsqrt", "abs", "ceil", "floor", "round", "trunc",
              "sign", "saturate", "fract", "exp", "exp2", "log", "log2",
              "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
              "cosh", "tanh")
BINARY_MATH = ("fmin", "fmax", "pow", "fmod", "atan2", "step", "copysign")
TERNARY_MATH = ("clamp", "fma", "mix", "smoothstep")
PREDICATES = ("isnan", "isinf", "isfinite", "signbit")
INT_BINARY = ("imin", "imax", "abs_diff", "add_sat", "sub_sat", "mul_hi",
              "rotate")
INT_UNARY = ("popcount", "clz", "ctz", "reverse_bits", "abs",
             "abs_diff_unary")
SIMD_INT = ("simd_sum", "simd_min", "simd_max", "simd_and", "simd_or",
            "simd_xor", "simd_product", "simd_prefix_inclusive_sum",
            "simd_prefix_exclusive_sum", "quad_sum", "quad_min", "quad_max",
            "quad_prefix_exclusive_sum")
SIMD_SHUFFLE = ("simd_shuffle", "simd_shuffle_xor", "simd_shuffle_up",
                "simd_shuffle_down", "simd_broadcast", "quad_shuffle",
                "quad_shuffle_xor", "quad_broadcast")
SIMD_FLOAT = ("simd_sum", "simd_min", "simd_max", "simd_prefix_inclusive_sum",
              "quad_sum")
ATOMIC_FNS = ("atomic_fetch_add", "atomic_fetch_sub", "atomic_fetch_min",
              "atomic_fetch_max", "atomic_fetch_and", "atomic_fetch_or",
              "atomic_fetch_xor")


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


# --------------------------------------------------------------------------
# Random data
# --------------------------------------------------------------------------

def random_data(rng: random.Random, t: str, n: int, special_floats: bool):
    """n values of type t as a list of JSON numbers (bf16: uint16 bits;
    8-bit floats: their bits, any finite pattern, with zeros, the largest
    and, with ``special_floats``, NaN and infinities)."""
    nrng = np.random.default_rng(rng.getrandbits(64))
    if is_fp8(t):
        finite = [b for b in range(256) if np.isfinite(fp8_value(t, b))]
        vals = [int(x) for x in nrng.choice(finite, n)]
        specials = [0x00, 0x80, 0x7E if t == "f8e4m3" else 0x7B, 0x01]
        if special_floats:
            specials += [0x7F, 0xFF] + ([0x7C, 0xFC] if t == "f8e5m2" else [])
        for k in range(min(n // 8, len(specials))):
            vals[rng.randrange(n)] = specials[k]
        return vals
    if t == "b1":
        return [bool(x) for x in nrng.integers(0, 2, n)]
    if is_int(t):
        lo, hi = int_range(t)
        style = rng.random()
        if style < 0.4:
            vals = [int(x) for x in nrng.integers(-20, 21, n)]
            vals = [v if lo <= v <= hi else v & hi for v in vals]
        else:
            vals = [int(x) for x in nrng.integers(lo, hi, n, endpoint=True,
                                                  dtype=numpy_dtype(t))]
        edges = [lo, hi, 0, 1, lo + 1, hi - 1] + ([-1] if lo < 0 else [])
        for k in range(min(n // 4, len(edges))):
            vals[rng.randrange(n)] = edges[k]
        return vals
    scale = rng.choice((1.0, 4.0, 100.0))
    vals = nrng.uniform(-scale, scale, n)
    if rng.random() < 0.3:  # exact small values: ties for round/floor
        vals = np.round(vals * 4) / 4
    specials = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5]
    if special_floats:
        specials += [float("inf"), float("-inf"), float("nan")]
    for k in range(min(n // 8, len(specials))):
        vals[rng.randrange(n)] = specials[k]
    if t == "bf16":
        return [int(b) for b in bf16_bits(vals.astype(np.float32))]
    return [float(x) for x in vals.astype(numpy_dtype(t)).astype(np.float64)]


# --------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------

class _Gen:
    def __init__(self, seed, category):
        self.rng = random.Random(seed)
        self.seed = seed
        self.category = category
        self.count = 0
        self.scopes = [[]]       # variables visible, innermost last
        self.bodies = [[]]       # statement lists being filled
        self.n = 0
        self.fixed = set()  # names that hold thread queries

    # -- bookkeeping -------------------------------------------------------
    def fresh(self, prefix="v"):
        self.count += 1
        return f"{prefix}{self.count}"

    def emit(self, stmt):
        self.bodies[-1].append(stmt)

    def visible(self, pred=lambda t: True, fp8=False):
        """Variables of a type ``pred`` accepts (8-bit floats only with
        ``fp8``: the other steps do not handle them)."""
        return [(v, t) for scope in self.scopes for (v, t) in scope
                if pred(t) and (fp8 or not is_fp8(t))]

    def let(self, dtype, expr, prefix="v"):
        name = self.fresh(prefix)
        if expr[0] == "query":
            self.fixed.add(name)
        self.emit(["let", name, dtype, expr])
        self.scopes[-1].append((name, dtype))
        return name

    def pick(self, pred=lambda t: True, fp8=False):
        cands = self.visible(pred, fp8)
        return self.rng.choice(cands) if cands else None

    def lit_for(self, t):
        """A Python number that adopts type t as an operand."""
        r = self.rng
        if is_float(t):
            return r.choice((0.5, 2.0, -1.5, 3.0, 0.25, 1.0, -7.0, 10.0))
        lo, hi = int_range(t)
        if t == "u64" and "u64_literal_above_int64" in AVOID_KNOWN_BUGS:
            hi = (1 << 63) - 1
        # a literal may be any value of the width read as signed or unsigned
        small = r.randint(0, min(300, (1 << WIDTH[t]) - 1))
        return r.choice((r.randint(-5, 9), small, lo, hi)) \
            if lo < 0 else r.choice((r.randint(0, 9), small, hi))

    def cast(self, var, t, to):
        if t == to:
            return var
        return self.safe_cast(var, t, to)

    def safe_cast(self, var, t, to):
        """metal_cast(var, to). Enigma defines a float -> int conversion of
        NaN and of values past the range (they saturate); half of these
        conversions are guarded the way a careful Metal programmer would
        write them, the others convert whatever comes."""
        if is_float(t) and is_int(to) and self.rng.random() < 0.5:
            nonan = self.let(t, ["call", "where", ["var", var], ["lit", 0.0],
                                 ["call", "isnan", ["var", var]]])
            lo, hi = float_to_int_bounds(t, to)
            clamped = self.let(t, ["call", "clamp", ["var", nonan],
                                   ["lit", lo], ["lit", hi]])
            return self.let(to, ["cast", to, ["var", clamped]])
        return self.let(to, ["cast", to, ["var", var]])

    # -- arithmetic ----------------------------------------------------------
    def guarded_divisor(self, a, d, t):
        """d with 0 (and -1 where a is INT_MIN) replaced by 1."""
        zero = self.let("b1", ["bin", "==", ["var", d], ["lit", 0]])
        if is_signed(t):
            lo = int_range(t)[0]
            amin = self.let("b1", ["bin", "==", ["var", a], ["lit", lo]])
            mone = self.let("b1", ["bin", "==", ["var", d], ["lit", -1]])
            both = self.let("b1", ["bin", "&", ["var", amin], ["var", mone]])
            zero = self.let("b1", ["bin", "|", ["var", zero], ["var", both]])
        return self.let(t, ["call", "where", ["var", d], ["lit", 1],
                            ["var", zero]])

    def arith_binary(self):
        r = self.rng
        a, ta = self.pick(lambda t: t != "b1")
        use_lit = r.random() < 0.3
        if use_lit:
            if is_float(ta) or r.random() < 0.8:
                lit = self.lit_for(ta)
            else:
                lit = r.choice((0.5, 1.5, -2.0))
            tb = ta if isinstance(lit, int) or is_float(ta) else "f32"
            tp = promote(ta, tb)
        else:
            b, tb = self.pick(lambda t: t != "b1")
            tp = promote(ta, tb)
        ops = ["+", "-", "*", "/", "//", "%"]
        if is_int(tp):
            ops += ["&", "|", "^", "<<", ">>"]
        op = r.choice(ops)
        if use_lit:
            lit_left = r.random() < 0.3
            if op in ("/", "//", "%") and is_int(tp):
                if lit_left:  # guard the traced divisor
                    a = self.cast(a, ta, tp)
                    d = self.guarded_divisor_lit(lit, a, tp)
                    return self.let(tp, ["bin", op, ["lit", lit], ["var", d]])
                lit = r.choice((2, 3, 5, 7))
            if op in ("<<", ">>"):
                lit = r.randrange(WIDTH[tp])
                lit_left = False
            if lit_left:
                return self.let(tp, ["bin", op, ["lit", lit], ["var", a]])
            return self.let(tp, ["bin", op, ["var", a], ["lit", lit]])
        if op in ("/", "//", "%") and is_int(tp):
            a = self.cast(a, ta, tp)
            b = self.cast(b, tb, tp)
            b = self.guarded_divisor(a, b, tp)
        elif op in ("<<", ">>"):
            if is_float(tb):
                b, tb = self.pick(is_int) or (a, ta)
                tp = promote(ta, tb)
            b = self.let(tb, ["bin", "&", ["var", b], ["lit", WIDTH[tp] - 1]])
        return self.let(tp, ["bin", op, ["var", a], ["var", b]])

    def guarded_divisor_lit(self, lit, d, t):
        """d guarded for `lit / d` (lit is the dividend)."""
        zero = self.let("b1", ["bin", "==", ["var", d], ["lit", 0]])
        if is_signed(t) and lit == int_range(t)[0]:
            mone = self.let("b1", ["bin", "==", ["var", d], ["lit", -1]])
            zero = self.let("b1", ["bin", "|", ["var", zero], ["var", mone]])
        return self.let(t, ["call", "where", ["var", d], ["lit", 1],
                            ["var", zero]])

    def arith_unary(self):
        a, ta = self.pick()
        if ta == "b1":
            return self.let("b1", ["un", "~", ["var", a]])
        if is_float(ta):
            return self.let(ta, ["un", "-", ["var", a]])
        return self.let(ta, ["un", self.rng.choice(("-", "~")), ["var", a]])

    def compare(self):
        r = self.rng
        a, ta = self.pick(lambda t: t != "b1")
        if r.random() < 0.3:
            return self.let("b1", ["bin", r.choice(("<", "<=", ">", ">=", "==", "!=")),
                                   ["var", a], ["lit", self.lit_for(ta)]])
        b, tb = self.pick(lambda t: t != "b1")
        if r.random() < 0.25:
            fn = r.choice(("cmp_eq", "cmp_ne", "cmp_lt", "cmp_le", "cmp_gt",
                           "cmp_ge", "cmp_ult", "cmp_ule", "cmp_ugt", "cmp_uge"))
            return self.let("b1", ["call", fn, ["var", a], ["var", b]])
        op = r.choice(("<", "<=", ">", ">=", "==", "!="))
        return self.let("b1", ["bin", op, ["var", a], ["var", b]])

    def select(self):
        c, _ = self.pick(lambda t: t == "b1") or (self.compare(), "b1")
        a, ta = self.pick()
        kinds = (lambda t: t == "b1") if ta == "b1" else (
            (lambda t: is_float(t)) if is_float(ta) else is_int)
        b, tb = self.pick(kinds)
        return self.let(promote(ta, tb),
                        ["call", "where", ["var", a], ["var", b], ["var", c]])

    def bool_op(self):
        c1, _ = self.pick(lambda t: t == "b1") or (self.compare(), "b1")
        c2, _ = self.pick(lambda t: t == "b1")
        return self.let("b1", ["bin", self.rng.choice(("&", "|", "^")),
                               ["var", c1], ["var", c2]])

    def conversion(self):
        a, ta = self.pick()
        to = self.rng.choice(ALL_TYPES)
        if to == ta:
            to = "i32" if ta != "i32" else "f32"
        if ta == "b1" or to == "b1":
            if is_float(ta) and to == "b1":
                return self.let("b1", ["bin", "!=", ["var", a], ["lit", 0.0]])
            return self.let(to, ["cast", to, ["var", a]])
        return self.safe_cast(a, ta, to)

    def int_function(self):
        r = self.rng
        pick = self.pick(is_int)
        if pick is None:
            return self.conversion()
        a, ta = pick
        roll = r.random()
        if roll < 0.35:
            fn = r.choice(INT_UNARY)
            rt = unsigned_of(ta) if fn == "abs_diff_unary" else ta
            return self.let(rt, ["call", fn, ["var", a]])
        if roll < 0.5:
            off = r.randrange(WIDTH[ta])
            bits = r.randrange(WIDTH[ta] - off + 1)
            if r.random() < 0.5:
                return self.let(ta, ["call", "extract_bits", ["var", a],
                                     ["lit", off], ["lit", bits]])
            b, tb = self.pick(is_int)
            b = self.cast(b, tb, ta)
            return self.let(ta, ["call", "insert_bits", ["var", a], ["var", b],
                                 ["lit", off], ["lit", bits]])
        b, tb = self.pick(is_int)
        b = self.cast(b, tb, ta)
        if roll < 0.6:
            c, tc = self.pick(is_int)
            c = self.cast(c, tc, ta)
            fn = r.choice(("mad_sat", "iclamp"))
            if fn == "iclamp":  # lo <= hi
                lo = self.let(ta, ["call", "imin", ["var", b], ["var", c]])
                hi = self.let(ta, ["call", "imax", ["var", b], ["var", c]])
                return self.let(ta, ["call", "iclamp", ["var", a], ["var", lo], ["var", hi]])
            return self.let(ta, ["call", fn, ["var", a], ["var", b], ["var", c]])
        fn = r.choice(INT_BINARY)
        rt = unsigned_of(ta) if fn == "abs_diff" else ta
        return self.let(rt, ["call", fn, ["var", a], ["var", b]])

    def float_function(self):
        r = self.rng
        pick = self.pick(is_float)
        if pick is None:
            a, ta = self.pick()
            pick = (self.safe_cast(a, ta, "f32"), "f32")
        x, tx = pick
        roll = r.random()
        if roll < 0.55:
            fn = r.choice(UNARY_MATH)
            if fn in ("sqrt", "rsqrt", "log", "log2", "log10") and r.random() < 0.7:
                x = self.let(tx, ["call", "abs", ["var", x]])
            if fn in ("asin", "acos") and r.random() < 0.7:
                x = self.let(tx, ["call", "clamp", ["var", x], ["lit", -1.0], ["lit", 1.0]])
            return self.let(tx, ["call", fn, ["var", x]])
        if roll < 0.65:
            return self.let("b1", ["call", r.choice(PREDICATES), ["var", x]])
        y, ty = self.pick(is_float)
        y = self.cast(y, ty, tx)
        if roll < 0.85:
            fn = r.choice(BINARY_MATH)
            if fn == "pow":
                x = self.let(tx, ["call", "abs", ["var", x]])
                y = self.let(tx, ["call", "clamp", ["var", y], ["lit", -4.0], ["lit", 4.0]])
            return self.let(tx, ["call", fn, ["var", x], ["var", y]])
        z, tz = self.pick(is_float)
        z = self.cast(z, tz, tx)
        fn = r.choice(TERNARY_MATH)
        if fn == "smoothstep":  # edges ordered (Metal: undefined otherwise)
            lo = self.let(tx, ["call", "fmin", ["var", y], ["var", z]])
            hi = self.let(tx, ["call", "fmax", ["var", y], ["var", z]])
            return self.let(tx, ["call", fn, ["var", lo], ["var", hi], ["var", x]])
        if fn == "clamp":
            lo = self.let(tx, ["call", "fmin", ["var", y], ["var", z]])
            hi = self.let(tx, ["call", "fmax", ["var", y], ["var", z]])
            return self.let(tx, ["call", "clamp", ["var", x], ["var", lo], ["var", hi]])
        return self.let(tx, ["call", fn, ["var", x], ["var", y], ["var", z]])

    # -- 8-bit floats ----------------------------------------------------------
    def fp8_step(self):
        """An 8-bit float made (a plain, saturating or vector conversion)
        or used (converted, compared, in f32 arithmetic)."""
        r = self.rng
        have = self.pick(is_fp8, fp8=True)
        roll = r.random()
        if have is None or roll < 0.45:
            return self.fp8_make()
        x, tx = have
        if roll < 0.7:    # to any type, the other format included
            to = r.choice(ALL_TYPES + FP8)
            if to == tx:
                to = "f32"
            if to == "b1":   # as for other floats: x != 0
                return self.let("b1", ["bin", "!=", ["var", x], ["lit", 0.0]])
            return self.let(to, ["cast", to, ["var", x]])
        other = self.pick(is_fp8, fp8=True)
        if r.random() < 0.3 or other is None:
            rhs = ["lit", r.choice((0.5, -2.0, 3.0, 0.1, 448.0, 1e4))]
        else:
            rhs = ["var", other[0]]
        if roll < 0.8:
            op = r.choice(("<", "<=", ">", ">=", "==", "!="))
            return self.let("b1", ["bin", op, ["var", x], rhs])
        op = r.choice(("+", "-", "*", "/"))
        return self.let("f32", ["bin", op, ["var", x], rhs])

    def fp8_make(self):
        r = self.rng
        fmt = r.choice(FP8)
        roll = r.random()
        if roll < 0.6:
            src = self.pick(lambda t: is_float(t) or is_int(t) or t == "b1")
            x, tx = src
            if roll < 0.35 or tx == "b1":
                return self.let(fmt, ["cast", fmt, ["var", x]])
            return self.let(fmt, ["satcast", fmt, ["var", x]])
        lanes = r.choice((2, 4))
        args = []
        for _ in range(lanes):
            x, tx = self.pick(lambda t: is_float(t) or is_int(t))
            args.append(["var", self.cast(x, tx, "f32")])
        if r.random() < 0.5:   # a large value: overflow and saturation
            k = r.randrange(lanes)
            big = self.let("f32", ["bin", "*", args[k], ["lit", 1000.0]])
            args[k] = ["var", big]
        return self.let(fmt, ["vec8", fmt, r.random() < 0.5,
                              r.randrange(lanes), args])

    def arith_step(self, math_weight=0.1):
        r = self.rng.random()
        fp8_weight = FP8_CATEGORIES.get(self.category, (0, 0))[1]
        if self.rng.random() < fp8_weight:
            return self.fp8_step()
        if r < math_weight:
            return self.float_function()
        steps = [(0.35, self.arith_binary), (0.45, self.arith_unary),
                 (0.55, self.compare), (0.65, self.select),
                 (0.72, self.bool_op), (0.85, self.conversion),
                 (1.0, self.int_function)]
        x = self.rng.random()
        for bound, fn in steps:
            if x < bound:
                if fn == self.bool_op and not self.visible(lambda t: t == "b1"):
                    return self.compare()
                return fn()
        return self.arith_binary()

    # -- control flow --------------------------------------------------------
    def assignable(self):
        """Variables a block may reassign (not the thread queries, not
        8-bit floats)."""
        return [(v, t) for scope in self.scopes for (v, t) in scope
                if v not in self.fixed and not is_fp8(t)]

    def carry_sets(self, carried):
        """Reassigns some carried variables from same-kind values."""
        done = set()
        for var, t in carried:
            avoid = done if "carried_type_mid_block" in AVOID_KNOWN_BUGS else set()
            cand = self.pick(lambda u: (u == "b1") == (t == "b1")
                             and is_float(u) == is_float(t))
            if cand and cand[0] in avoid:
                continue
            if cand and var not in self.fixed:
                self.carry_set(var, t, cand[0])
                done.add(var)

    def carry_set(self, var, t, cand):
        """Reassigns carried ``var`` (type t) from ``cand`` (same kind)."""
        if "if_carry_liveness" in AVOID_KNOWN_BUGS or self.rng.random() < 0.5:
            op = "+" if is_float(t) else "^"
            self.emit(["set", var, ["bin", op, ["var", var], ["var", cand]]])
        else:
            self.emit(["set", var, ["var", cand]])

    def body_steps(self, k, math_weight):
        for _ in range(k):
            self.arith_step(math_weight)

    def block(self, k, math_weight, carried):
        """Runs k random steps in a new scope, then reassigns some carried
        variables from the block's values; returns the statements."""
        self.scopes.append([])
        self.bodies.append([])
        self.body_steps(k, math_weight)
        self.carry_sets([c for c in carried if self.rng.random() < 0.7])
        self.scopes.pop()
        return self.bodies.pop()

    def if_statement(self, math_weight):
        c = self.pick(lambda t: t == "b1")
        c = c[0] if c else self.compare()
        carried = self.rng.sample(self.assignable(), min(2, len(self.assignable())))
        then_b = self.block(self.rng.randint(1, 4), math_weight, carried)
        else_b = (self.block(self.rng.randint(1, 3), math_weight, carried)
                  if self.rng.random() < 0.5 else None)
        self.emit(["if", c, then_b, else_b])

    def for_statement(self, math_weight):
        r = self.rng
        lo = r.randint(-2, 3)
        hi = lo + r.randint(0, 6)
        step = r.choice((1, 1, 1, 2, 3))
        ivar = self.fresh("i")
        # the loop counter is visible in the body as an i32
        carried = r.sample(self.assignable(), min(2, len(self.assignable())))
        self.scopes.append([(ivar, "i32")])
        self.bodies.append([])
        self.body_steps(r.randint(1, 4), math_weight)
        if r.random() < 0.3:
            self.if_statement(math_weight)
        self.carry_sets(carried)
        self.scopes.pop()
        body = self.bodies.pop()
        self.emit(["for", ivar, lo, hi, step, body])

    def while_statement(self, math_weight):
        """A loop whose trip count differs between threads (0..7): a
        counter from the data, decremented in the body, carried values."""
        x, tx = self.pick(lambda t: t != "b1")
        u = self.cast(x, tx, "u32")
        cnt = self.let("u32", ["bin", "&", ["var", u], ["lit", 7]])
        carried = self.rng.sample(self.assignable(), min(2, len(self.assignable())))
        self.open_block()
        self.body_steps(self.rng.randint(1, 3), math_weight)
        self.carry_sets([c for c in carried if c[0] != cnt])
        self.emit(["set", cnt, ["bin", "-", ["var", cnt], ["lit", 1]]])
        body = self.close_block()
        self.emit(["while", cnt, body])

    # -- cooperation ---------------------------------------------------------
    def threadgroup_exchange(self, tname, ttype, size):
        r = self.rng
        lid = self.let("u32", ["query", "thread_index_in_threadgroup"])
        tsize = self.let("u32", ["query", "threads_per_threadgroup"])
        v, tv = self.pick(lambda t: t != "b1" or ttype == "b1")
        self.emit(["store", tname, ["var", lid], ["var", self.cast(v, tv, ttype) if (is_float(tv) and is_int(ttype)) else v]])
        self.emit(["barrier"])
        k = r.randint(1, 5)
        plus = self.let("u32", ["bin", "+", ["var", lid], ["lit", k]])
        nb = self.let("u32", ["bin", "%", ["var", plus], ["var", tsize]])
        got = self.let(ttype, ["tgload", tname, ["var", nb]])
        self.emit(["barrier"])
        return got

    def threadgroup_copy(self, tname, ttype, size):
        """enigma.copy of a slice of an input buffer into threadgroup
        memory, with widths, offsets and counts that do and do not allow
        vector accesses; then each thread reads one copied element."""
        r = self.rng
        sources = [(b["name"], b["dtype"]) for b in self.inputs
                   if not (is_float(b["dtype"]) and is_int(ttype))]
        if not sources:  # float -> int would need the generator's guards
            return self.threadgroup_exchange(tname, ttype, size)
        src, _ = r.choice(sources)
        width = r.choice((1, 2, 4, 8))
        align = r.choice((1, 2, 4, 8))
        src_off = align * r.randint(0, (self.n - 1) // align)
        dst_off = align * r.randint(0, (size - 1) // align)
        count = r.randint(1, min(self.n - src_off, size - dst_off))
        if r.random() < 0.5 and count >= width:
            count -= count % width
        self.emit(["copy", src, tname, count, src_off, dst_off, width])
        self.emit(["barrier"])
        lid = self.let("u32", ["query", "thread_index_in_threadgroup"])
        k = self.let("u32", ["bin", "%", ["var", lid], ["lit", count]])
        at = self.let("u32", ["bin", "+", ["var", k], ["lit", dst_off]])
        got = self.let(ttype, ["tgload", tname, ["var", at]])
        self.emit(["barrier"])
        return got

    def threadgroup_reduction(self, tname, ttype, size):
        """Tree sum over the group in threadgroup memory (barriers between
        unrolled levels), read back by every thread."""
        lid = self.let("u32", ["query", "thread_index_in_threadgroup"])
        tsize = self.let("u32", ["query", "threads_per_threadgroup"])
        v, tv = self.pick(is_int) or self.pick()
        self.emit(["store", tname, ["var", lid], ["var", self.cast(v, tv, ttype)]])
        self.emit(["barrier"])
        stride = 1
        while stride < size:
            stride *= 2
        stride //= 2
        while stride >= 1:
            other = self.let("u32", ["bin", "+", ["var", lid], ["lit", stride]])
            in1 = self.let("b1", ["bin", "<", ["var", lid], ["lit", stride]])
            in2 = self.let("b1", ["bin", "<", ["var", other], ["var", tsize]])
            ok = self.let("b1", ["bin", "&", ["var", in1], ["var", in2]])
            self.bodies.append([])
            self.scopes.append([])
            mine = self.let(ttype, ["tgload", tname, ["var", lid]])
            theirs = self.let(ttype, ["tgload", tname, ["var", other]])
            s = self.let(ttype, ["bin", "+", ["var", mine], ["var", theirs]])
            self.emit(["store", tname, ["var", lid], ["var", s]])
            self.scopes.pop()
            self.emit(["if", ok, self.bodies.pop(), None])
            self.emit(["barrier"])
            stride //= 2
        zero = self.let("u32", ["bin", "*", ["var", lid], ["lit", 0]])
        total = self.let(ttype, ["tgload", tname, ["var", zero]])
        self.emit(["barrier"])
        return total

    def simd_step(self):
        r = self.rng
        if r.random() < 0.2 and self.visible(is_float):
            x, tx = self.pick(is_float)
            fn = r.choice(SIMD_FLOAT)
            return self.let(tx, ["call", fn, ["var", x]])
        pick = self.pick(is_int)
        if pick is None:
            return self.conversion()
        x, tx = pick
        if r.random() < 0.6:
            return self.let(tx, ["call", r.choice(SIMD_INT), ["var", x]])
        fn = r.choice(SIMD_SHUFFLE)
        if fn == "simd_shuffle" and r.random() < 0.5:
            lane, tl = self.pick(is_int)
            lane = self.cast(lane, tl, "u32")
            return self.let(tx, ["call", fn, ["var", x], ["var", lane]])
        arg = r.randrange(40) if fn.startswith("simd") else r.randrange(6)
        return self.let(tx, ["call", fn, ["var", x], ["lit", arg]])

    def open_block(self, names=()):
        self.scopes.append(list(names))
        self.bodies.append([])

    def close_block(self):
        self.scopes.pop()
        return self.bodies.pop()

    def accumulator(self, t):
        """A new variable of type t, to be carried by a loop or branch."""
        src, ts = self.pick(lambda u: u != "b1")
        src = self.cast(src, ts, t)
        return self.let(t, ["bin", "+", ["var", src], ["lit", 0]])

    def simd_in_loop(self):
        """SIMD functions inside a loop with uniform bounds, summed into a
        carried value (the CPU backend splits loops at simd calls)."""
        pick = self.pick(is_int)
        if pick is None:
            return self.simd_step()
        x, tx = pick
        acc = self.accumulator(tx)
        ivar = self.fresh("i")
        self.open_block([(ivar, "i32")])
        ic = self.cast(ivar, "i32", tx)
        y = self.let(tx, ["bin", "+", ["var", x], ["var", ic]])
        fn = self.rng.choice(SIMD_INT + ("simd_shuffle_down", "simd_shuffle_xor"))
        args = [["var", y]] + ([["lit", self.rng.randrange(1, 8)]]
                               if "shuffle" in fn else [])
        s = self.let(tx, ["call", fn] + args)
        self.emit(["set", acc, ["bin", "+", ["var", acc], ["var", s]]])
        body = self.close_block()
        self.emit(["for", ivar, 0, self.rng.randint(1, 4), 1, body])
        return acc

    def simd_in_uniform_branch(self):
        """SIMD functions under a condition that is the same for every lane
        of a simdgroup (it differs between simdgroups)."""
        pick = self.pick(is_int)
        if pick is None:
            return self.simd_step()
        x, tx = pick
        acc = self.accumulator(tx)
        sg = self.let("u32", ["query", "simdgroup_index_in_threadgroup"])
        c = self.let("b1", ["bin", self.rng.choice(("==", "!=", "<")), ["var", sg],
                            ["lit", self.rng.randint(0, 2)]])
        self.open_block()
        fn = self.rng.choice(SIMD_INT)
        s = self.let(tx, ["call", fn, ["var", x]])
        self.emit(["set", acc, ["var", s]])
        body = self.close_block()
        self.emit(["if", c, body, None])
        return acc

    def threadgroup_loop(self, tname, ttype):
        """Exchanges with a neighbour inside a loop: barriers in a loop body."""
        acc = self.accumulator(ttype)
        lid = self.let("u32", ["query", "thread_index_in_threadgroup"])
        tsize = self.let("u32", ["query", "threads_per_threadgroup"])
        ivar = self.fresh("i")
        self.open_block([(ivar, "i32")])
        self.emit(["store", tname, ["var", lid], ["var", acc]])
        self.emit(["barrier"])
        plus = self.let("u32", ["bin", "+", ["var", lid], ["lit", self.rng.randint(1, 3)]])
        nb = self.let("u32", ["bin", "%", ["var", plus], ["var", tsize]])
        got = self.let(ttype, ["tgload", tname, ["var", nb]])
        self.emit(["barrier"])
        self.emit(["set", acc, ["bin", self.rng.choice(("+", "^", "-")),
                                ["var", got], ["var", acc]]])
        body = self.close_block()
        self.emit(["for", ivar, 0, self.rng.randint(1, 4), 1, body])
        return acc

    def atomics(self, outs):
        r = self.rng
        nbins = r.choice((1, 2, 7, 32))
        at = r.choice(("i32", "u32"))
        name = f"hist{len(outs)}"
        outs.append({"name": name, "dtype": at, "size": nbins})
        # One commutative family per buffer: mixing, say, xor and max on
        # one element would make the result depend on the threads' order.
        family = r.choice((("atomic_fetch_add", "atomic_fetch_sub"),
                           ("atomic_fetch_min",), ("atomic_fetch_max",),
                           ("atomic_fetch_and",), ("atomic_fetch_or",),
                           ("atomic_fetch_xor",)))
        for _ in range(r.randint(1, 3)):
            fn = r.choice(family)
            k, tk = self.pick(is_int) or (self.let("u32", ["query", "thread_position_in_grid"]), "u32")
            k = self.cast(k, tk, "u32")
            idx = self.let("u32", ["bin", "%", ["var", k], ["lit", nbins]])
            v, tv = self.pick(is_int) or self.pick()
            v = self.cast(v, tv, at)
            if r.random() < 0.3 and fn in ("atomic_fetch_add", "atomic_fetch_sub", "atomic_fetch_or"):
                c = self.pick(lambda t: t == "b1")
                c = c[0] if c else self.compare()
                self.emit(["if", c, [["atomic", fn, name, ["var", idx], ["var", v]]], None])
            else:
                self.emit(["atomic", fn, name, ["var", idx], ["var", v]])

    # -- whole program -----------------------------------------------------
    def program(self):
        r = self.rng
        cat = self.category
        threads = r.choice(THREADGROUP_SIZES)
        n = r.choice((1, 2, 31, 32, 33, 64, 100, 255, 256, 257, 500))
        if cat in ("simd", "threadgroup") and r.random() < 0.6:
            threads = r.choice((32, 33, 64, 100, 128, 256))
            n = max(n, threads + r.randint(0, threads))
        self.n = n
        ntypes = 2 if cat == "atomic" else r.randint(1, 3)
        in_types = [r.choice(ALL_TYPES) for _ in range(ntypes)]
        if cat == "math":
            in_types[0] = r.choice(FLOATS)
        fp8_inputs = FP8_CATEGORIES.get(cat, (0, 0))[0]
        in_types = [r.choice(FP8) if k > 0 and r.random() < fp8_inputs
                    else t for k, t in enumerate(in_types)]
        inputs = [{"name": f"in{k}", "dtype": t,
                   "data": random_data(r, t, n, cat == "arith" and r.random() < 0.3)}
                  for k, t in enumerate(in_types)]
        self.inputs = inputs
        outs = []
        gid = self.let("u32", ["query", "thread_position_in_grid"], "gid")
        tg_allocs = []
        if cat == "threadgroup":
            for k in range(r.randint(1, 2)):
                tt = r.choice(("i32", "u32", "i16", "f32", "u8", "i64"))
                tg_allocs.append((f"tg{k}", tt, threads))
                self.emit(["tg_alloc", f"tg{k}", tt, threads])
        for inp in inputs:
            self.let(inp["dtype"], ["load", inp["name"], ["var", gid]], "x")
        math_weight = {"math": 0.6, "arith": 0.05}.get(cat, 0.1)
        steps = r.randint(6, 24)
        for _ in range(steps):
            roll = r.random()
            if cat == "control" and roll < 0.3:
                self.if_statement(math_weight)
            elif cat == "control" and roll < 0.45:
                self.for_statement(math_weight)
            elif cat == "control" and roll < 0.55:
                self.while_statement(math_weight)
            elif cat == "simd" and roll < 0.35:
                self.simd_step()
            elif cat == "simd" and roll < 0.45:
                self.simd_in_loop()
            elif cat == "simd" and roll < 0.55:
                self.simd_in_uniform_branch()
            elif cat == "threadgroup" and roll < 0.3 and tg_allocs:
                tname, tt, size = r.choice(tg_allocs)
                roll = r.random()
                if roll < 0.25:
                    self.threadgroup_copy(tname, tt, size)
                elif is_int(tt) and roll < 0.5:
                    self.threadgroup_reduction(tname, tt, size)
                elif is_int(tt) and roll < 0.6:
                    self.threadgroup_loop(tname, tt)
                else:
                    self.threadgroup_exchange(tname, tt, size)
            else:
                self.arith_step(math_weight)
        if cat == "atomic":
            self.atomics(outs)
        # Store the last value and the values nothing else reads (so that
        # every computation reaches an output), at most MAX_OUTPUTS.
        values = [v for v in self.scopes[0] if v[0] not in self.fixed]
        used = _names_read(self.bodies[0])
        sinks = [v for v in values[:-1] if v[0] not in used]
        chosen = values[-1:] + r.sample(sinks, min(len(sinks), MAX_OUTPUTS - 1))
        for k, (var, t) in enumerate(chosen):
            ot = t if r.random() < 0.8 else r.choice(ALL_TYPES + FP8)
            if is_floatlike(t) and is_int(ot):
                ot = t
            if t == "b1" and is_floatlike(ot):
                ot = "b1"
            if is_fp8(ot) and not is_floatlike(t):   # ints: no 8-bit stores
                ot = t
            name = f"out{k}"
            outs.append({"name": name, "dtype": ot, "size": n + 3})
            self.emit(["store", name, ["var", gid], ["var", var]])
        return {"version": 1, "seed": self.seed, "category": cat,
                "grid": n, "threads": threads, "inputs": inputs,
                "outputs": outs, "body": self.bodies[0]}


def _names_read(body) -> set:
    """Names of the variables some statement reads."""
    names = set()

    def walk(x):
        if isinstance(x, list):
            if len(x) == 2 and x[0] == "var" and isinstance(x[1], str):
                names.add(x[1])
            for y in x:
                walk(y)
    walk(body)
    for s in _all_statements(body):
        if s[0] == "if":
            names.add(s[1])
    return names


def _all_statements(body):
    for s in body:
        yield s
        if s[0] == "if":
            yield from _all_statements(s[2])
            yield from _all_statements(s[3] or [])
        elif s[0] == "for":
            yield from _all_statements(s[5])
        elif s[0] == "while":
            yield from _all_statements(s[2])


def generate(seed: int, category: str | None = None) -> dict:
    """A random program; without a category, seeds cycle through them."""
    if category is None:
        category = CATEGORIES[seed % len(CATEGORIES)]
    return _Gen(seed, category).program()


# --------------------------------------------------------------------------
# Printing a program as the Python source of an @enigma.kernel
# --------------------------------------------------------------------------

_QUERIES = {
    "thread_position_in_grid": "enigma.thread_position_in_grid",
    "thread_index_in_threadgroup": "enigma.thread_index_in_threadgroup()",
    "threads_per_threadgroup": 'enigma.threads_per_threadgroup("x")',
    "simdgroup_index_in_threadgroup": "enigma.simdgroup_index_in_threadgroup()",
}


def expr_source(e) -> str:
    kind = e[0]
    if kind == "var":
        return e[1]
    if kind == "lit":
        return repr(e[1])
    if kind == "query":
        return _QUERIES[e[1]]
    if kind in ("load", "tgload"):
        return f"{e[1]}[{expr_source(e[2])}]"
    if kind == "bin":
        return f"{expr_source(e[2])} {e[1]} {expr_source(e[3])}"
    if kind == "un":
        return f"{e[1]}{expr_source(e[2])}"
    if kind == "call":
        return f"enigma.{e[1]}({', '.join(expr_source(a) for a in e[2:])})"
    if kind == "cast":
        return f'enigma.metal_cast({expr_source(e[2])}, "{e[1]}")'
    if kind == "satcast":
        return f"enigma.saturating_cast({expr_source(e[2])}, enigma.{e[1]})"
    if kind == "vec8":
        _, fmt, saturate, lane, args = e
        vec = (f"enigma.make_float{len(args)}("
               f"{', '.join(expr_source(a) for a in args)})")
        conv = (f"enigma.saturating_cast({vec}, enigma.{fmt})" if saturate
                else f'enigma.metal_cast({vec}, "{fmt}")')
        return f"{conv}.{'xyzw'[lane]}"
    raise ValueError(f"unknown expression {e!r}")


def _body_source(body, indent, lines):
    pad = "    " * indent
    for s in body:
        kind = s[0]
        if kind == "let":
            lines.append(f"{pad}{s[1]} = {expr_source(s[3])}  # {s[2]}")
        elif kind == "set":
            lines.append(f"{pad}{s[1]} = {expr_source(s[2])}")
        elif kind == "store":
            lines.append(f"{pad}{s[1]}[{expr_source(s[2])}] = {expr_source(s[3])}")
        elif kind == "if":
            if s[3] is None:
                lines.append(f"{pad}with enigma.if_({s[1]}):")
                _body_source(s[2], indent + 1, lines)
                if not s[2]:
                    lines.append(f"{pad}    pass")
            else:
                lines.append(f"{pad}with enigma.if_({s[1]}) as (then_b, else_b):")
                lines.append(f"{pad}    with then_b:")
                _body_source(s[2] or [["pass"]], indent + 2, lines)
                lines.append(f"{pad}    with else_b:")
                _body_source(s[3] or [["pass"]], indent + 2, lines)
        elif kind == "for":
            lines.append(f"{pad}for {s[1]} in enigma.range({s[2]}, {s[3]}, {s[4]}):")
            _body_source(s[5] or [["pass"]], indent + 1, lines)
        elif kind == "while":
            lines.append(f"{pad}with enigma.while_(lambda: {s[1]} > 0):")
            _body_source(s[2], indent + 1, lines)
        elif kind == "tg_alloc":
            lines.append(f'{pad}{s[1]} = enigma.threadgroup_alloc("{s[2]}", {s[3]})')
        elif kind == "copy":
            lines.append(f"{pad}enigma.copy({s[1]}, {s[2]}, {s[3]}, "
                         f"src_offset={s[4]}, dst_offset={s[5]}, "
                         f"coalesced_width={s[6]}, cooperative=True)")
        elif kind == "barrier":
            lines.append(f"{pad}enigma.barrier()")
        elif kind == "atomic":
            lines.append(f"{pad}enigma.{s[1]}({s[2]}, {expr_source(s[3])}, "
                         f"{expr_source(s[4])})")
        elif kind == "pass":
            lines.append(f"{pad}pass")
        else:
            raise ValueError(f"unknown statement {s!r}")


def kernel_name(program) -> str:
    return f"fuzz_{program['category']}_{program['seed']}"


def to_source(program) -> str:
    """The program as a module defining one ``@enigma.kernel``."""
    params = [f"{b['name']}: enigma.{b['dtype']}"
              for b in program["inputs"] + program["outputs"]]
    lines = ["import enigma", "", "", "@enigma.kernel",
             f"def {kernel_name(program)}({', '.join(params)}):"]
    _body_source(program["body"], 1, lines)
    return "\n".join(lines) + "\n"
