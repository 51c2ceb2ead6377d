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

The values, their conversions and the integer operations are in
interpret_values.py, the float operations in interpret_floats.py; this
module runs a program over them.
"""

from __future__ import annotations

import math

import numpy as np

from fuzz_types import (FLOATS, INTS, fp8_value, is_float, is_floatlike,
                        is_fp8, numpy_dtype, promote)
from interpret_floats import _discontinuous, float_call, float_op, predicate
from interpret_values import (_MAX_FINITE, INF, InterpretError, Val, _jumps,
                              _signed_view, as_unsigned, convert, int_binary,
                              int_call, round_float, to_fp8, ulp, wrap)


# Allowances for basic float operations where the backend may contract or
# approximate (exact_arith=False).
LENIENT_ULPS = {"+": 1, "-": 1, "*": 1, "/": 3, "//": 3}
MAX_WHILE_TRIPS = 1000  # kernelgen's while_ loops run at most 7 times


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
