"""The part of the source rewrite that gives ``break``, ``continue`` and
``return`` their Python meaning in run-time loops and branches, and turns a
``while`` statement whose test is traced into a run-time loop
(docs/reference/control-flow.md, "Leaving loops early").

A body is traced once, so a ``break`` under ``enigma.if_`` cannot simply
leave the Python statement: it sets a flag, and the code that may run after
it is guarded by that flag (AutoGraph's lowering):

    for i in enigma.range(n):            __enigma_flag_break_1 = False
        with enigma.if_(A[i] < 0):       with ctl.range_loop(enigma.range(n),
            break                  ->          lambda: ctl.any_flag(B)) as i:
        total = total + A[i]                 with enigma.if_(A[i] < 0):
                                                 B = True
                                             if ctl.live(B):
                                                 with ctl.unless(B):
                                                     total = total + A[i]

A loop with a break (or a return inside) tests its flags before each
iteration (an ``scf.while``), ``continue`` sets a flag cleared at the top of
each iteration, and ``return`` sets the function's return flag (and the
value it returns), which every enclosing loop and the rest of the function
test. ``ctl.live`` skips code at trace time after a flag that is surely set
(a Python ``True``); ``ctl.unless`` opens an ``if_`` on flags that are
traced. Flags are carried variables (``_rewrite_carry``).

A ``while`` statement is traced twice over, as Python runs it: its first
test decides. A Python value makes it a loop unrolled at trace time (the
original statement); a traced bool makes it ``if (test) do { body; test
again } while (test)``, the body and the next test in one ``scf.while``.

Loops unrolled at trace time (Python ``for`` / ``while``) keep their own
``break`` and ``continue``, unless one sits under a run-time construct: then
they take flags too, and each unrolled iteration is guarded by them.
"""

from __future__ import annotations

import ast
import copy

from ._ir import EnigmaError
from ._rewrite_carry import ctl, place
from ._rewrite_runtime import FLAG_PREFIX, VALUE_PREFIX

RETURN_FLAG = FLAG_PREFIX + "return"
# `with` constructs of the user that run at run time.
_RUNTIME_WITH = ("if_", "for_range", "while_")
_RUNTIME_LOOP_WITH = ("for_range", "while_")


def _name(n, store=False):
    return ast.Name(n, ast.Store() if store else ast.Load())


def _assign(n, value, at):
    return place(ast.Assign(targets=[_name(n, True)], value=value), at)


def _flags_call(method, flags, at):
    return place(ctl(method, *[_name(f) for f in flags]), at)


def _stop_function(flags, at):
    """``lambda: __enigma_ctl__.any_flag(flags...)``."""
    return place(ast.Lambda(
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                           kw_defaults=[], defaults=[]),
        body=ctl("any_flag", *[_name(f) for f in flags])), at)


class _Loop:
    """The loop a break / continue leaves. `lowered`: they set flags;
    `crossing`: a `with for_range/while_` lies between (an error)."""

    def __init__(self, node, lowered=False, brk=None, cont=None,
                 crossing=None):
        self.node, self.lowered = node, lowered
        self.brk, self.cont, self.crossing = brk, cont, crossing


class _Context:
    __slots__ = ("dynamic", "loop")

    def __init__(self, dynamic=False, loop=None):
        self.dynamic = dynamic  # inside a run-time construct or a guard
        self.loop = loop

    def inside(self, loop=None, dynamic=True):
        return _Context(dynamic, loop if loop is not None else self.loop)


class ExitLowering:
    """Lowers the exits of one function body. `called(expr)` names the
    construct a `with` / `for` expression makes."""

    def __init__(self, called, filename: str, fn_name: str):
        self.called = called
        self.filename, self.fn_name = filename, fn_name
        self.count = 0
        self.changed = False
        self.returned = None  # the return flag's name, when returns lower
        self.arity = 0        # values returned (0: none, 2+: a tuple)

    def error(self, node, message):
        raise EnigmaError(f"{self.filename}:{node.lineno}: {message}")

    def _new(self, what: str) -> str:
        self.count += 1
        return f"{FLAG_PREFIX}{what}_{self.count}"

    # --- what a statement is ---------------------------------------------------
    def _with_kind(self, node):
        if not isinstance(node, ast.With) or len(node.items) != 1:
            return None
        what = self.called(node.items[0].context_expr)
        return what if what in _RUNTIME_WITH else None

    def _is_range_for(self, node) -> bool:
        return isinstance(node, ast.For) and self.called(node.iter) == "range"

    def _is_runtime(self, node) -> bool:
        """A statement whose body runs at run time (for returns in it)."""
        return self._with_kind(node) is not None or \
            self._is_range_for(node) or isinstance(node, ast.While)

    # --- scans ---------------------------------------------------------------
    def _children(self, node):
        """Statement lists directly inside `node`."""
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and \
                    isinstance(block[0], ast.stmt):
                yield block
        if isinstance(node, ast.Try):
            for h in node.handlers:
                yield h.body

    def _walk(self, stmts, runtime=False, loop_depth=0):
        """(statement, under a run-time construct, inside a nested loop)
        for every statement of `stmts`, nested definitions excluded."""
        for s in stmts:
            yield s, runtime, loop_depth
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef,
                              ast.ClassDef)):
                continue
            inner = runtime or self._is_runtime(s)
            depth = loop_depth + isinstance(s, (ast.For, ast.While))
            for block in self._children(s):
                yield from self._walk(block, inner, depth)

    def _loop_exits(self, loop):
        """(breaks, continues, returns) in `loop`'s body: those of
        break/continue that leave `loop` itself, each as (node, under a
        run-time construct)."""
        brk, cont, ret = [], [], []
        for s, runtime, depth in self._walk(loop.body):
            if isinstance(s, ast.Return):
                ret.append((s, runtime or depth > 0))
            elif depth == 0 and isinstance(s, ast.Break):
                brk.append((s, runtime))
            elif depth == 0 and isinstance(s, ast.Continue):
                cont.append((s, runtime))
        return brk, cont, ret

    def _unrolled_needs_flags(self, loop, dynamic) -> bool:
        """Whether a loop unrolled at trace time must take flags: a break
        or continue of it sits under a run-time construct, or a return
        inside it may be one that lowers."""
        brk, cont, ret = self._loop_exits(loop)
        if any(r for _, r in brk + cont):
            return True
        return any(dynamic or r for _, r in ret)

    def has_lowered_returns(self, body) -> bool:
        """Whether some return of the function lowers to the return flag
        (a return under a run-time construct or in an unrolled loop that
        takes flags)."""
        for s, runtime, _ in self._walk(body):
            if isinstance(s, ast.Return) and runtime:
                return True
            if isinstance(s, (ast.For, ast.While)) and \
                    not self._is_range_for(s) and \
                    self._unrolled_needs_flags(s, False) and \
                    self._loop_exits(s)[2]:
                return True
        return False

    # --- the function ----------------------------------------------------------
    def function(self, body):
        """The lowered body, with the return flag's prologue and the
        epilogue that returns the value (when some return lowers)."""
        returns = [s for s, _, _ in self._walk(body)
                   if isinstance(s, ast.Return)]
        if self.has_lowered_returns(body):
            self.returned = RETURN_FLAG
            valued = [r for r in returns if r.value is not None]
            # (A bare return then returns None, which is refused where it
            # runs inside a run-time construct: _rewrite_runtime.publish.)
            if valued:
                sizes = {len(r.value.elts) if isinstance(r.value, ast.Tuple)
                         else 1 for r in valued}
                self.arity = sizes.pop() if len(sizes) == 1 else 1
        out, _, always = self.block(body, _Context())
        if self.returned is None:
            return out
        self.changed = True
        first = body[0]
        prologue = [_assign(self.returned, ast.Constant(False), first)]
        names = self._value_names()
        values = ast.Tuple([_name(n) for n in names], ast.Load()) \
            if self.arity > 1 else _name(names[0]) if names else \
            ast.Constant(None)
        last = body[-1]
        end = "" if always else \
            f"{self.filename}:{getattr(last, 'end_lineno', last.lineno)}"
        epilogue = place(ast.Return(ctl(
            "result", _name(self.returned),
            ast.Lambda(args=ast.arguments(posonlyargs=[], args=[],
                                          kwonlyargs=[], kw_defaults=[],
                                          defaults=[]), body=values),
            ast.Constant(self.fn_name), ast.Constant(self.arity),
            ast.Constant(end))), last)
        return prologue + out + [epilogue]

    def _value_names(self):
        if self.arity == 0:
            return []
        if self.arity == 1:
            return [VALUE_PREFIX]
        return [f"{VALUE_PREFIX}_{k}" for k in range(self.arity)]

    # --- blocks ------------------------------------------------------------------
    def block(self, stmts, ctx):
        """(statements, flags they may set, whether they surely exit)."""
        out, exits = [], []
        for k, s in enumerate(stmts):
            new, flags, always = self.statement(s, ctx)
            out += new
            exits += [f for f in flags if f not in exits]
            if always:
                return out, exits, True  # the rest never runs
            if flags:
                rest, more, rest_always = self.block(stmts[k + 1:],
                                                     ctx.inside())
                exits += [f for f in more if f not in exits]
                if rest:  # (placed at `s`: where the flags may be set)
                    out.append(self.guard(flags, rest, s))
                return out, exits, rest_always and bool(rest)
        return out, exits, False

    def guard(self, flags, body, at):
        """``if ctl.live(flags): with ctl.unless(flags): body``."""
        self.changed = True
        inner = place(ast.With(items=[ast.withitem(
            context_expr=_flags_call("unless", flags, at))], body=body), at)
        return place(ast.If(test=_flags_call("live", flags, at),
                            body=[inner], orelse=[]), at)

    def statement(self, s, ctx):
        """(statements replacing `s`, flags `s` may set, surely exits)."""
        if isinstance(s, ast.Return):
            return self.lower_return(s, ctx)
        if isinstance(s, (ast.Break, ast.Continue)):
            return self.lower_jump(s, ctx)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef,
                          ast.ClassDef)):
            return [s], [], False
        if self._is_range_for(s):
            return self.range_for(s, ctx)
        if isinstance(s, ast.While):
            return self.while_statement(s, ctx)
        if isinstance(s, ast.For):
            return self.unrolled_loop(s, ctx)
        if isinstance(s, ast.With):
            return self.with_statement(s, ctx)
        if isinstance(s, ast.If):
            body, e1, a1 = self.block(s.body, ctx)
            orelse, e2, a2 = self.block(s.orelse, ctx)
            s.body, s.orelse = body or [ast.Pass()], orelse
            return [s], e1 + [f for f in e2 if f not in e1], \
                a1 and a2 and bool(s.orelse)
        if isinstance(s, ast.Try):
            exits = []
            for block_owner, field in ([(s, "body"), (s, "orelse"),
                                        (s, "finalbody")] +
                                       [(h, "body") for h in s.handlers]):
                block = getattr(block_owner, field)
                if block:
                    new, e, _ = self.block(block, ctx)
                    setattr(block_owner, field, new or [ast.Pass()])
                    exits += [f for f in e if f not in exits]
            return [s], exits, False
        return [s], [], False

    # --- exits -------------------------------------------------------------------
    def lower_return(self, s, ctx):
        if not ctx.dynamic or self.returned is None:
            return [s], [], True  # a Python return: the trace ends here
        self.changed = True
        out = []
        names = self._value_names()
        if s.value is None and names:
            s.value = ast.Constant(None)
        if s.value is not None:
            if self.arity > 1:
                if not isinstance(s.value, ast.Tuple) or \
                        len(s.value.elts) != self.arity:
                    self.error(s, f"function '{self.fn_name}' returns "
                               f"{self.arity} values from inside a run-time "
                               "if_ or loop; return as many at every return "
                               "(return a, b), and no bare return")
                out.append(place(ast.Assign(targets=[ast.Tuple(
                    [_name(n, True) for n in names], ast.Store())],
                    value=s.value), s))
            else:
                out.append(_assign(names[0], s.value, s))
        out.append(_assign(self.returned, ast.Constant(True), s))
        return out, [self.returned], True

    def lower_jump(self, s, ctx):
        loop = ctx.loop
        word = "break" if isinstance(s, ast.Break) else "continue"
        if loop is None:
            return [s], [], True
        if loop.crossing is not None:
            self.error(s, f"{word} inside `with enigma.{loop.crossing}` "
                       "cannot leave it: that with statement is not a Python "
                       "loop. Write the loop as `for i in enigma.range(...)` "
                       "or as a `while` statement to use break and continue")
        if not loop.lowered:
            return [s], [], True  # a Python break of an unrolled loop
        self.changed = True
        flag = loop.brk if word == "break" else loop.cont
        return [_assign(flag, ast.Constant(True), s)], [flag], True

    # --- loops -------------------------------------------------------------------
    def _loop_flags(self, s):
        brk, cont, ret = self._loop_exits(s)
        b = self._new("break") if brk else None
        c = self._new("continue") if cont else None
        r = self.returned if ret and self.returned is not None else None
        return b, c, r

    def _body(self, s, body, ctx, b, c):
        """The loop body lowered with its flags (continue cleared first)."""
        inner, _, _ = self.block(body, ctx.inside(
            _Loop(s, lowered=True, brk=b, cont=c)))
        if c is not None:
            inner = [_assign(c, ast.Constant(False), s)] + inner
        return inner or [ast.Pass()]

    def _orelse(self, s, orelse, ctx, b):
        """A loop's `else:` runs when it ended without a break."""
        if not orelse:
            return [], []
        if b is None:
            out, exits, _ = self.block(orelse, ctx)
            return out, exits
        out, exits, _ = self.block(orelse, ctx.inside())
        return ([self.guard([b], out, orelse[0])] if out else []), exits

    def range_for(self, s, ctx):
        """``for i in enigma.range(...)``: a run-time loop."""
        if not isinstance(s.target, ast.Name):
            self.error(s, "the variable of an enigma.range loop must be a "
                       "single name")
        self.changed = True
        b, c, r = self._loop_flags(s)
        stops = [f for f in (b, r) if f is not None]
        args = [s.iter] + ([_stop_function(stops, s)] if stops else [])
        body = self._body(s, s.body, ctx, b, c)
        loop = place(ast.With(items=[ast.withitem(
            context_expr=place(ctl("range_loop", *args), s),
            optional_vars=s.target)], body=body), s)
        pre = [_assign(b, ast.Constant(False), s)] if b else []
        orelse, exits = self._orelse(s, s.orelse, ctx, b)
        return pre + [loop] + orelse, ([r] if r else []) + exits, False

    def unrolled_loop(self, s, ctx):
        """A Python ``for`` (or the Python copy of a ``while``): unrolled at
        trace time; takes flags only when an exit of it may be taken at
        run time."""
        if not self._unrolled_needs_flags(s, ctx.dynamic):
            body, _, _ = self.block(s.body, ctx.inside(
                _Loop(s), dynamic=ctx.dynamic))
            s.body = body or [ast.Pass()]
            s.orelse, exits, _ = self.block(s.orelse, ctx)
            return [s], exits, False
        self.changed = True
        b, c, r = self._loop_flags(s)
        stops = [f for f in (b, r) if f is not None]
        body = self._body(s, s.body, ctx, b, c)
        if stops:
            # Unrolling stops once a flag is surely set; an iteration runs
            # only where none is set at run time.
            stop = place(ast.If(test=ast.UnaryOp(
                op=ast.Not(), operand=_flags_call("live", stops, s)),
                body=[ast.Break()], orelse=[]), s)
            body = [stop, place(ast.With(items=[ast.withitem(
                context_expr=_flags_call("unless", stops, s))],
                body=body), s)]
        s.body = body
        s.orelse, exits = self._orelse(s, s.orelse, ctx, b)
        pre = [_assign(b, ast.Constant(False), s)] if b else []
        return pre + [s], ([r] if r else []) + exits, False

    def while_statement(self, s, ctx):
        """A `while`: a run-time loop when its first test is traced, else
        unrolled (see the module docstring)."""
        self.changed = True
        test = self._new("test")
        box = f"__enigma_box_{self.count}"
        probe = _assign(test, copy.deepcopy(s.test), s)
        # Run-time copy.
        b, c, r = self._loop_flags(s)
        stops = [f for f in (b, r) if f is not None]
        body = self._body(s, copy.deepcopy(s.body), ctx, b, c)
        again = _assign(test, copy.deepcopy(s.test), s)
        body = [x for x in body if not isinstance(x, ast.Pass)] + (
            [self.guard(stops, [again], s)] if stops else [again])
        do_args = [place(ast.Lambda(args=ast.arguments(
            posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
            defaults=[]), body=_name(test)), s)]
        if stops:
            do_args.append(_stop_function(stops, s))
        loop = place(ast.With(items=[ast.withitem(
            context_expr=place(ctl("do_while", *do_args), s))],
            body=body), s)
        first = place(ast.With(items=[ast.withitem(
            context_expr=place(ctl("if_", _name(test)), s))],
            body=[loop]), s)
        orelse, exits = self._orelse(s, copy.deepcopy(s.orelse), ctx, b)
        traced = ([_assign(b, ast.Constant(False), s)] if b else []) + \
            [first] + orelse
        # Unrolled copy: the first test is the probe's value.
        python = copy.deepcopy(s)
        python.test = place(ctl("python_test", ast.IfExp(
            test=_name(box), body=place(ast.Call(
                func=ast.Attribute(value=_name(box), attr="pop",
                                   ctx=ast.Load()), args=[], keywords=[]),
                s), orelse=s.test)), s)
        unrolled, more, _ = self.unrolled_loop(python, ctx)
        exits += [f for f in more if f not in exits]
        boxed = place(ast.Assign(targets=[_name(box, True)], value=ast.List(
            [_name(test)], ast.Load())), s)
        dispatch = place(ast.If(test=place(ctl("traced", _name(test)), s),
                                body=traced, orelse=[boxed] + unrolled), s)
        return [probe, dispatch], ([r] if r else []) + exits, False

    # --- with --------------------------------------------------------------------
    def with_statement(self, s, ctx):
        kind = self._with_kind(s)
        if kind is None:  # a Python context manager: transparent
            body, exits, always = self.block(s.body, ctx)
            s.body = body or [ast.Pass()]
            return [s], exits, always
        if kind == "if_" and isinstance(s.items[0].optional_vars, ast.Tuple):
            return self.two_armed_if(s, ctx)
        if kind == "if_":
            body, exits, _ = self.block(s.body, ctx.inside())
            s.body = body or [ast.Pass()]
            return [s], exits, False
        # A run-time loop written as a with statement: break and continue
        # cannot leave it; a return ends it.
        body, exits, _ = self.block(s.body, ctx.inside(
            _Loop(s, crossing=kind)))
        s.body = body or [ast.Pass()]
        if exits:
            self.changed = True
            item = s.items[0]
            item.context_expr = place(ctl(
                "stopping", item.context_expr, _stop_function(exits, s)), s)
        return [s], exits, False

    def two_armed_if(self, s, ctx):
        """The arms (`with then_b:` / `with else_b:`) stay direct children
        of the if_; each is lowered on its own."""
        arms = {n.id for n in ast.walk(s.items[0].optional_vars)
                if isinstance(n, ast.Name)}
        exits, surely, body = [], [], []
        for arm in s.body:
            if isinstance(arm, ast.With) and len(arm.items) == 1 and \
                    isinstance(arm.items[0].context_expr, ast.Name) and \
                    arm.items[0].context_expr.id in arms:
                inner, e, always = self.block(arm.body, ctx.inside())
                arm.body = inner or [ast.Pass()]
                body.append(arm)
                surely.append(always)
            else:
                new, e, _ = self.statement(arm, ctx.inside())
                body += new
            exits += [f for f in e if f not in exits]
        s.body = body
        return [s], exits, len(surely) == 2 and all(surely)
