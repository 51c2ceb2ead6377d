"""The arithmetic steps of kernelgen's generator: binary and unary
operators with guarded divisors, comparisons, selections, boolean
operations, conversions, integer and float functions, and the 8-bit
float steps. A mixin of kernelgen._Gen, whose bookkeeping (rng, let,
pick, cast, ...) they use."""

from __future__ import annotations

from fuzz_types import (ALL_TYPES, FP8, WIDTH, int_range, is_float,
                        is_fp8, is_int, is_signed, promote, unsigned_of)


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


class ArithmeticSteps:
    """Steps of one value computed from others (each returns its
    variable)."""

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
