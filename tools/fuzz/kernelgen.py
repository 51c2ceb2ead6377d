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

from fuzz_types import (ALL_TYPES, FLOATS, FP8, WIDTH, bf16_bits,
                        float_to_int_bounds, fp8_value, int_range, is_float,
                        is_floatlike, is_fp8, is_int, numpy_dtype)
from kernelgen_arith import ArithmeticSteps
from kernelgen_cooperation import CooperationSteps


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

class _Gen(ArithmeticSteps, CooperationSteps):
    """The generator's state and bookkeeping, the control flow and the
    whole program; the arithmetic steps are in kernelgen_arith.py, the
    threadgroup, SIMD and atomic ones in kernelgen_cooperation.py."""

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

    # -- arithmetic (its steps: kernelgen_arith.py) ------------------------
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

    def open_block(self, names=()):
        self.scopes.append(list(names))
        self.bodies.append([])

    def close_block(self):
        self.scopes.pop()
        return self.bodies.pop()

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
