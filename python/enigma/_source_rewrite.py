"""The source rewrite behind ``enigma.range`` loops and carried Python
variables (see the ``_control`` module docstring): a kernel whose body
assigns variables inside control-flow constructs and reads them afterwards
is recompiled from its source so that those variables live in slots while
each construct is traced."""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types

from ._control import (RangeSpec, Slot, control_state, convert_to_slot,
                       for_range, if_, initial_value, slot_kind, while_)
from ._control import range as enigma_range
from ._ir import EnigmaError, IRValue, current_tracer, fail, to_value


# --------------------------------------------------------------------------
# Runtime helpers of the rewritten source (see the rewrite below)
# --------------------------------------------------------------------------

class _Unbound:
    def __repr__(self):
        return "<unbound>"


_UNBOUND = _Unbound()


def _is_leaf(value) -> bool:
    """A value a slot can hold: a traced value or a Python number."""
    return isinstance(value, (IRValue, bool, int, float))


def _leaf_count(value):
    """Leaves of a list / tuple / dict nest whose leaves are all traced
    values or numbers; None for anything else (it stays plain Python)."""
    if _is_leaf(value):
        return 1
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, dict):
        items = value.values()
    else:
        return None
    total = 0
    for item in items:
        n = _leaf_count(item)
        if n is None:
            return None
        total += n
    return total


def _kind_name(value) -> str:
    return "dict" if isinstance(value, dict) else type(value).__name__


class _Container:
    """A carried variable that holds a list, tuple or dict (nested freely)
    of traced values and numbers: one slot per leaf. Its shape (kinds,
    lengths, keys) is fixed when the loop or branch starts; lists and dicts
    are updated in place, so every alias of them sees the carried values."""

    def __init__(self, name, value):
        self.name = name
        self.slots = []
        self.shape = self._build(value, name)

    def _build(self, value, path):
        if _is_leaf(value):
            slot = Slot(initial_value(value, f"element '{path}'"),
                         f"element '{path}'")
            self.slots.append(slot)
            return slot
        if isinstance(value, dict):
            keys = list(value)
            return ("dict", keys, [self._build(value[k], f"{path}[{k!r}]")
                                   for k in keys])
        return (_kind_name(value), None,
                [self._build(v, f"{path}[{k}]") for k, v in enumerate(value)])

    def _mismatch(self, path, shape, value):
        kind, keys, children = shape
        if kind == "dict":
            was = f"a dict with keys {keys}"
        else:
            was = f"a {kind} of {len(children)} elements"
        if isinstance(value, dict):
            now = f"a dict with keys {list(value)}"
        elif isinstance(value, (list, tuple)):
            now = f"a {_kind_name(value)} of {len(value)} elements"
        else:
            now = f"a {type(value).__name__}"
        fail(f"'{path}' is carried through this loop or branch as {was} "
             f"(its value before it), but it is {now} here: a carried list, "
             "tuple or dict keeps its length and keys (append, pop, insert "
             "and del run once when the body is traced, not once per "
             "iteration); preallocate it before the loop or branch")

    def _leaves(self, shape, value, path, out):
        if isinstance(shape, Slot):
            out.append((shape, value))
            return
        kind, keys, children = shape
        if kind == "dict":
            if not isinstance(value, dict) or set(value) != set(keys):
                self._mismatch(path, shape, value)
            for k, child in zip(keys, children):
                self._leaves(child, value[k], f"{path}[{k!r}]", out)
            return
        if _kind_name(value) != kind or len(value) != len(children):
            self._mismatch(path, shape, value)
        for k, (child, v) in enumerate(zip(children, value)):
            self._leaves(child, v, f"{path}[{k}]", out)

    def publish(self, value):
        """The current container's leaves -> the slots (converted)."""
        pairs = []
        self._leaves(self.shape, value, self.name, pairs)
        for slot, v in pairs:
            slot.value = convert_to_slot(slot, v)

    def _rebuild(self, shape, current):
        if isinstance(shape, Slot):
            return shape.value
        kind, keys, children = shape
        if kind == "dict":
            target = current if isinstance(current, dict) and \
                set(current) == set(keys) else {}
            for k, child in zip(keys, children):
                target[k] = self._rebuild(child, target.get(k))
            return target
        same = _kind_name(current) == kind and len(current) == len(children)
        values = [self._rebuild(child, current[k] if same else None)
                  for k, child in enumerate(children)]
        if kind == "list":
            if same:
                current[:] = values  # in place: aliases see the values
                return current
            return values
        return tuple(values)

    def reload(self, current):
        """The container with the slots' values (the same list / dict
        object when it still has the carried shape)."""
        return self._rebuild(self.shape, current)


class _Runtime:
    """The helpers the rewritten kernel calls, as ``__enigma_ctl__``."""

    @staticmethod
    def range_loop(spec) -> for_range:
        if not isinstance(spec, RangeSpec):
            fail("expected enigma.range(...)")
        args = spec.args
        if len(args) == 1:
            args = (0, args[0])
        return for_range(*args, dtype=spec.dtype)

    @staticmethod
    def declare(scope: dict, names) -> list:
        """Tracks the variables `names` in slots (those not tracked yet and
        holding a traced value, a number, or a list / tuple / dict of them);
        returns the new ones."""
        st = control_state(current_tracer("enigma control flow"))
        new = []
        for name in names:
            if name in st.named:
                continue
            value = scope.get(name, _UNBOUND)
            if value is _UNBOUND:
                fail(f"variable '{name}' is assigned inside this loop or "
                     "branch and used after it (or, in a loop, read before "
                     "it is assigned), so it is carried: give it a value "
                     "before the loop or branch")
            if _is_leaf(value):
                slot = Slot(initial_value(value, f"variable '{name}'"),
                             f"variable '{name}'")
                st.named[name] = slot
                st.live.append(slot)
            elif _leaf_count(value):
                tracked = _Container(name, value)
                st.named[name] = tracked
                st.live.extend(tracked.slots)
            else:
                continue  # a Python object: stays plain Python
            new.append(name)
        return new

    @staticmethod
    def undeclare(names) -> None:
        st = control_state(current_tracer("enigma control flow"))
        for name in names:
            tracked = st.named.pop(name)
            for slot in (tracked.slots if isinstance(tracked, _Container)
                         else [tracked]):
                st.live.remove(slot)

    @staticmethod
    def publish(scope: dict, names) -> None:
        st = control_state(current_tracer("enigma control flow"))
        for name in names:
            tracked = st.named.get(name)
            if tracked is None or name not in scope:
                continue
            if isinstance(tracked, _Container):
                tracked.publish(scope[name])
            else:
                tracked.value = convert_to_slot(tracked, scope[name])

    @staticmethod
    def reload(scope: dict, names) -> tuple:
        st = control_state(current_tracer("enigma control flow"))
        out = []
        for name in names:
            tracked = st.named.get(name)
            if tracked is None:
                out.append(scope.get(name, _UNBOUND))
            elif isinstance(tracked, _Container):
                out.append(tracked.reload(scope.get(name)))
            else:
                out.append(tracked.value)
        return tuple(out)

    @staticmethod
    def types(scope: dict, names) -> dict:
        """The traced values of `names` on entering a construct that assigns
        them without carrying them (they are not read after it)."""
        return {n: scope[n] for n in names
                if isinstance(scope.get(n), IRValue)}

    @staticmethod
    def keep_type(before: dict, name: str, value):
        """An assignment to `name` inside a construct: the variable keeps the
        type it had before it, as a carried one does (integer and float
        widths convert as in C), whether or not it is read after the
        construct. A value of another kind (float for an integer) rebinds
        the name, as in Python: a carried variable could not take it."""
        old = before.get(name)
        if old is None:
            return value
        want = slot_kind(old.dtype)
        if isinstance(value, (bool, int, float)):
            number_kind = ("bool" if isinstance(value, bool) else
                           "integer" if isinstance(value, int) else "float")
            return to_value(value, old.dtype) if number_kind == want else value
        if not isinstance(value, IRValue) or value.lanes != old.lanes or \
                slot_kind(value.dtype) != want:
            return value
        return value.cast(old.dtype)

    @staticmethod
    def while_begin(loop) -> None:
        if isinstance(loop, while_):
            loop._begin()




# --------------------------------------------------------------------------
# The source rewrite (prepare_kernel_function)
# --------------------------------------------------------------------------
#
#   for i in enigma.range(a, b):          with __enigma_ctl__.range_loop(
#       BODY                        ->            enigma.range(a, b)) as i:
#                                              BODY
#
# and then every control-flow `with` (for_range, range loops, if_, while_,
# and the `then_b` / `else_b` arms of an if_) whose body assigns variables
# that are read later is wrapped so that those variables live in slots while
# the construct is traced:
#
#   __enigma_tN = __enigma_ctl__.declare(locals(), ('x',))   # new slots
#   __enigma_ctl__.publish(locals(), ('x',))     # locals -> slots
#   with CONSTRUCT as T:
#       (x,) = __enigma_ctl__.reload(locals(), ('x',))    # slots -> locals
#       BODY
#       __enigma_ctl__.publish(locals(), ('x',))
#   (x,) = __enigma_ctl__.reload(locals(), ('x',))
#   __enigma_ctl__.undeclare(__enigma_tN)
#
# A while_ is first begun (its condition region opened and the locals
# reloaded) so that the condition function reads the loop's values.

_CTL = "__enigma_ctl__"


def _resolve(fn, node):
    """The object a Name / Attribute chain names in fn's scope, or None."""
    if isinstance(node, ast.Name):
        code = fn.__code__
        if node.id in code.co_freevars and fn.__closure__:
            try:
                return fn.__closure__[code.co_freevars.index(node.id)] \
                    .cell_contents
            except ValueError:
                return None
        if node.id in fn.__globals__:
            return fn.__globals__[node.id]
        return getattr(builtins, node.id, None)
    if isinstance(node, ast.Attribute):
        base = _resolve(fn, node.value)
        return getattr(base, node.attr, None) if base is not None else None
    return None


def _called(fn, expr):
    """Which construct a `with` / `for` expression calls, if ours."""
    if isinstance(expr, ast.Call):
        target = _resolve(fn, expr.func)
        for name, obj in (("range", enigma_range), ("for_range", for_range),
                          ("if_", if_), ("while_", while_)):
            if target is obj:
                return name
        if isinstance(expr.func, ast.Attribute) and \
                isinstance(expr.func.value, ast.Name) and \
                expr.func.value.id == _CTL:
            return expr.func.attr
    return None


class _Events(ast.NodeVisitor):
    """Name loads and stores in execution order (approximately: the value
    of an assignment before its targets, a loop's iterable before its
    body). Nested functions count their free-variable reads as loads."""

    def __init__(self):
        self.events = []

    def _name(self, name, kind):
        self.events.append((name, kind))

    def visit_Name(self, node):
        self._name(node.id, "load" if isinstance(node.ctx, ast.Load)
                   else "store")

    def _mutations(self, target):
        """`acc[j] = v` (also nested, `g[i][j]`, and in tuple targets)
        changes the container `acc` holds: a "mutate" event, which counts
        as an assignment of `acc` but, unlike a store, keeps its other
        elements live."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._mutations(elt)
            return
        if isinstance(target, ast.Starred):
            self._mutations(target.value)
            return
        if not isinstance(target, ast.Subscript):
            return
        while isinstance(target, ast.Subscript):
            target = target.value
        if isinstance(target, ast.Name):
            self._name(target.id, "mutate")

    def visit_Assign(self, node):
        self.visit(node.value)
        for t in node.targets:
            self.visit(t)
            self._mutations(t)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self._name(node.target.id, "load")
        self.visit(node.value)
        self.visit(node.target)
        self._mutations(node.target)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)
        self._mutations(node.target)

    def visit_Delete(self, node):
        for t in node.targets:
            self.visit(t)
            self._mutations(t)

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self.visit(node.target)

    def visit_For(self, node):
        self.visit(node.iter)
        self.visit(node.target)
        for s in node.body + node.orelse:
            self.visit(s)

    def visit_With(self, node):
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.visit(item.optional_vars)
        for s in node.body:
            self.visit(s)

    def _scope(self, node, params, body):
        inner = _Events()
        for b in body:
            inner.visit(b)
        local = set(params) | {n for n, k in inner.events if k == "store"}
        self.events += [(n, k) for n, k in inner.events if n not in local]

    def visit_Lambda(self, node):
        for d in node.args.defaults:
            self.visit(d)
        self._scope(node, [a.arg for a in node.args.args], [node.body])

    def visit_FunctionDef(self, node):
        for d in node.decorator_list + node.args.defaults:
            self.visit(d)
        self._scope(node, [a.arg for a in node.args.args], node.body)
        self._name(node.name, "store")

    def _comprehension(self, node, parts):
        self.visit(node.generators[0].iter)
        targets = set()
        for g in node.generators:
            for n in ast.walk(g.target):
                if isinstance(n, ast.Name):
                    targets.add(n.id)
        rest = [g.iter for g in node.generators[1:]] + \
            [c for g in node.generators for c in g.ifs] + parts
        inner = _Events()
        for r in rest:
            inner.visit(r)
        self.events += [(n, k) for n, k in inner.events if n not in targets]

    def visit_ListComp(self, node):
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comprehension(node, [node.key, node.value])


def _events(stmts):
    ev = _Events()
    for s in stmts:
        ev.visit(s)
    return ev.events


def _read_first(stmts) -> set:
    """Names whose first event in `stmts` is a load."""
    first = {}
    for name, kind in _events(stmts):
        first.setdefault(name, kind)
    return {n for n, k in first.items() if k == "load"}


def _read_before_write(stmts) -> set:
    """Names that may be read in `stmts` before they are surely written. A
    write inside a nested block (an if_ arm, a loop body, a Python
    if/for/while/with/try) may not run, so it hides no later read."""
    written, exposed = set(), set()
    for s in stmts:
        blocks = [b for b in (getattr(s, f, None) for f in
                              ("body", "orelse", "finalbody"))
                  if isinstance(b, list) and b and isinstance(b[0], ast.stmt)]
        if isinstance(s, ast.Try):
            blocks += [h.body for h in s.handlers]
        if not blocks or isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef,
                                        ast.ClassDef)):
            for name, kind in _events([s]):
                if kind == "load" and name not in written:
                    exposed.add(name)
                elif kind == "store":
                    written.add(name)
            continue
        header, bound = [], set()
        if isinstance(s, (ast.With, ast.AsyncWith)):
            header = [i.context_expr for i in s.items]
            bound = set().union(*(_target_names(i.optional_vars) for i in s.items))
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            header, bound = [s.iter], _target_names(s.target)
        elif isinstance(s, (ast.While, ast.If)):
            header = [s.test]
        for h in header:
            exposed |= {n for n, k in _events([ast.Expr(h)]) if k == "load"} - written
        for b in blocks:
            exposed |= _read_before_write(b) - written - bound
        if isinstance(s, (ast.With, ast.AsyncWith)):
            written |= bound  # `as` names are bound before the body runs
    return exposed


def _stored(stmts) -> set:
    """Names assigned in `stmts`, or whose list / dict is assigned into."""
    return {n for n, k in _events(stmts) if k in ("store", "mutate")}


def _place(node, at):
    """Gives the generated nodes of `node` the line of `at`, start and end
    (a statement spanning a whole loop would make Python report the loop's
    last line for calls in it)."""
    for n in ast.walk(node):
        if "lineno" in n._attributes and not hasattr(n, "lineno"):
            n.lineno = n.end_lineno = at.lineno
            n.col_offset = n.end_col_offset = at.col_offset
    return node


def _target_names(node) -> set:
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class _Rewriter:
    """Rewrites one kernel function (see the comment above)."""

    def __init__(self, fn, filename):
        self.fn, self.filename = fn, filename
        self.count = 0
        self.changed = False

    def error(self, node, message):
        raise EnigmaError(f"{self.filename}:{node.lineno}: {message}")

    # --- for -> with ---------------------------------------------------------
    def convert_for(self, node):
        if node.orelse:
            self.error(node, "an enigma.range loop cannot have an else: block")
        if not isinstance(node.target, ast.Name):
            self.error(node, "the variable of an enigma.range loop must be a "
                       "single name")
        self.check_body(node.body)
        call = ast.Call(func=ast.Attribute(value=ast.Name(_CTL, ast.Load()),
                                           attr="range_loop", ctx=ast.Load()),
                        args=[node.iter], keywords=[])
        _place(call, node)
        new = ast.With(items=[ast.withitem(context_expr=call,
                                           optional_vars=node.target)],
                       body=node.body)
        self.changed = True
        return ast.copy_location(new, node)

    def check_body(self, stmts):
        """break / continue / return cannot leave a traced loop."""
        def walk(node, in_loop):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.Lambda, ast.ClassDef)):
                return
            if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)):
                self.error(node, "return/yield inside an enigma.range loop is "
                           "not supported (the body is traced once)")
            if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
                self.error(node, "break/continue inside an enigma.range loop "
                           "is not supported; use enigma.if_ or "
                           "enigma.while_")
            nested = in_loop or isinstance(node, (ast.For, ast.While))
            # A loop's `else:` is a list of statements (IfExp's orelse is
            # an expression).
            orelse = getattr(node, "orelse", [])
            orelse = orelse if isinstance(orelse, list) else []
            for child in ast.iter_child_nodes(node):
                walk(child, nested if child not in orelse else in_loop)
        for s in stmts:
            walk(s, False)

    def convert_fors(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef,
                              ast.ClassDef)):
                out.append(s)
                continue
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, self.convert_fors(getattr(s, field)))
            if isinstance(s, ast.Try):
                for h in s.handlers:
                    h.body = self.convert_fors(h.body)
            if isinstance(s, ast.For) and _called(self.fn, s.iter) == "range":
                s = self.convert_for(s)
            out.append(s)
        return out

    # --- tracking ------------------------------------------------------------
    def kind(self, node, arms):
        """'loop', 'if', 'arm' or None for a `with` statement."""
        if len(node.items) != 1:
            return None
        expr = node.items[0].context_expr
        what = _called(self.fn, expr)
        if what in ("for_range", "while_", "range_loop"):
            return "loop"
        if what == "if_":
            return "if"
        if isinstance(expr, ast.Name) and expr.id in arms:
            return "arm"
        return None

    def track(self, stmts, cont, outer, arms, typed=None):
        """Rewrites the `with` statements of `stmts`. `cont`: the statements
        that may run after `stmts` (continuation), `outer`: the names that
        enclosing constructs track, `arms`: names bound to if_ arms,
        `typed`: names assigned inside enclosing constructs without being
        carried -> the variable holding their values on entry."""
        typed = typed or {}
        out = []
        for k, s in enumerate(stmts):
            after = stmts[k + 1:] + cont
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef,
                              ast.ClassDef)):
                out.append(s)
                continue
            if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                out.append(s)
                out += self.convert_carried(s, outer)
                out += self.keep_types(s, typed, outer)
                continue
            if isinstance(s, ast.With):
                kind = self.kind(s, arms)
                if kind is not None:
                    out += self.wrap(s, kind, after, outer, arms, typed)
                    continue
            loop_body = s.body if isinstance(s, (ast.For, ast.While)) else []
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0],
                                                                ast.stmt):
                    setattr(s, field,
                            self.track(sub, loop_body + after, outer, arms,
                                       typed))
            if isinstance(s, ast.Try):
                for h in s.handlers:
                    h.body = self.track(h.body, after, outer, arms, typed)
            out.append(s)
        return out

    def convert_carried(self, s, tracked):
        """After an assignment to carried variables inside a construct:
        converts them to their carried type at once (as C converts at the
        assignment), so later reads in the same block see that value."""
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        names = sorted(set().union(*(_target_names(t) for t in targets))
                       & set(tracked))
        if not names:
            return []
        self.changed = True
        publish = ast.Expr(ast.Call(
            func=ast.Attribute(value=ast.Name(_CTL, ast.Load()),
                               attr="publish", ctx=ast.Load()),
            args=[ast.Call(func=ast.Name("locals", ast.Load()), args=[],
                           keywords=[]),
                  ast.Tuple([ast.Constant(n) for n in names], ast.Load())],
            keywords=[]))
        reload = ast.Assign(
            targets=[ast.Tuple([ast.Name(n, ast.Store()) for n in names],
                               ast.Store())],
            value=ast.Call(
                func=ast.Attribute(value=ast.Name(_CTL, ast.Load()),
                                   attr="reload", ctx=ast.Load()),
                args=[ast.Call(func=ast.Name("locals", ast.Load()), args=[],
                               keywords=[]),
                      ast.Tuple([ast.Constant(n) for n in names],
                                ast.Load())],
                keywords=[]))
        return [_place(publish, s), _place(reload, s)]

    def keep_types(self, s, typed, tracked):
        """After an assignment inside a construct to a variable it does not
        carry: `x = __enigma_ctl__.keep_type(<entry values>, "x", x)`."""
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        names = sorted(set().union(*(_target_names(t) for t in targets))
                       & (set(typed) - set(tracked)))
        out = []
        for n in names:
            self.changed = True
            out.append(_place(ast.Assign(
                targets=[ast.Name(n, ast.Store())],
                value=ast.Call(
                    func=ast.Attribute(value=ast.Name(_CTL, ast.Load()),
                                       attr="keep_type", ctx=ast.Load()),
                    args=[ast.Name(typed[n], ast.Load()), ast.Constant(n),
                          ast.Name(n, ast.Load())],
                    keywords=[])), s))
        return out

    def wrap(self, node, kind, after, outer, arms, typed=None):
        item = node.items[0]
        bound = _target_names(item.optional_vars)
        assigned = _stored(node.body) - bound
        live = _read_before_write(after)
        if kind == "loop":
            live |= _read_before_write(node.body)
        inner_arms = set(arms)
        if kind == "if":
            # What one arm assigns and the other reads first is carried too;
            # the arms are the `with` blocks on this if_'s own arm names.
            for s in node.body:
                if (isinstance(s, ast.With) and len(s.items) == 1 and
                        isinstance(s.items[0].context_expr, ast.Name) and
                        s.items[0].context_expr.id in bound):
                    live |= _read_before_write(s.body)
            if isinstance(item.optional_vars, ast.Tuple):
                inner_arms |= bound
        own = [] if kind == "arm" else \
            sorted(n for n in assigned & live
                   if not n.startswith("__enigma") and n not in outer)
        names = sorted(set(own) | set(outer))
        body_cont = node.body + after if kind == "loop" else after
        # What the body assigns without carrying keeps its type in the body.
        self.count += 1
        number = self.count  # children count on from here
        entry = f"__enigma_k{number}"
        # (an if_'s arms use the if_'s record: the else arm is traced after
        # the then arm, whose assignments it must not see)
        loose = [] if kind == "arm" else sorted(
            n for n in assigned if not n.startswith("__enigma")
            and n not in own and n not in outer)
        inner_typed = dict(typed or {})
        inner_typed.update({n: entry for n in loose})
        node.body = self.track(node.body, body_cont, set(outer) | set(own),
                               inner_arms, inner_typed)
        loc = node
        record = []
        if loose:
            record = [_place(ast.Assign(
                targets=[ast.Name(entry, ast.Store())],
                value=ast.Call(
                    func=ast.Attribute(value=ast.Name(_CTL, ast.Load()),
                                       attr="types", ctx=ast.Load()),
                    args=[ast.Call(func=ast.Name("locals", ast.Load()),
                                   args=[], keywords=[]),
                          ast.Tuple([ast.Constant(n) for n in loose],
                                    ast.Load())],
                    keywords=[])), loc)]
            self.changed = True
        if not names:
            return record + [node]
        self.changed = True

        def ctl(method, *args):
            return ast.Call(func=ast.Attribute(
                value=ast.Name(_CTL, ast.Load()), attr=method,
                ctx=ast.Load()), args=list(args), keywords=[])

        def scope():
            return ast.Call(func=ast.Name("locals", ast.Load()), args=[],
                            keywords=[])

        def tup(ns):
            return ast.Tuple([ast.Constant(n) for n in ns], ast.Load())

        def stmt(expr):
            return _place(ast.Expr(expr), loc)

        def reload():
            return _place(ast.Assign(
                targets=[ast.Tuple([ast.Name(n, ast.Store()) for n in names],
                                   ast.Store())],
                value=ctl("reload", scope(), tup(names))), loc)

        token = f"__enigma_t{number}"
        pre, post = [], [reload()]
        if own:
            pre.append(_place(ast.Assign(
                targets=[ast.Name(token, ast.Store())],
                value=ctl("declare", scope(), tup(own))), loc))
            post.append(stmt(ctl("undeclare", ast.Name(token, ast.Load()))))
        pre.append(stmt(ctl("publish", scope(), tup(names))))
        if _called(self.fn, item.context_expr) == "while_":
            loop = f"__enigma_w{number}"
            pre.append(_place(ast.Assign(
                targets=[ast.Name(loop, ast.Store())],
                value=item.context_expr), loc))
            pre.append(stmt(ctl("while_begin", ast.Name(loop, ast.Load()))))
            pre.append(reload())
            item.context_expr = ast.Name(loop, ast.Load())
        last = node.body[-1] if node.body else node
        end = _place(ast.Expr(ctl("publish", scope(), tup(names))),
                                last)
        node.body = [reload()] + node.body + [end]
        return record + pre + [node] + post


def prepare_kernel_function(fn):
    """Returns the function to trace for ``fn``.

    When the kernel uses ``enigma.range`` or assigns variables inside
    control-flow ``with`` statements that are read afterwards, its source is
    rewritten (see the comment above) and compiled again with the original
    globals, closure cells and line numbers, so tracebacks and EnigmaError
    messages point at the user's lines. Otherwise, or when the source cannot
    be read (a REPL), ``fn`` itself is traced.
    """
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return fn
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or \
            tree.body[0].name != fn.__name__:
        return fn
    code = fn.__code__
    filename = code.co_filename
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    fdef = tree.body[0]
    fdef.decorator_list = []
    # Annotations and defaults come from fn itself; evaluating them again
    # in the factory could fail (from __future__ import annotations).
    a = fdef.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + \
            [x for x in (a.vararg, a.kwarg) if x is not None]:
        arg.annotation = None
    fdef.returns = None
    a.defaults, a.kw_defaults = [], [None] * len(a.kwonlyargs)
    rw = _Rewriter(fn, filename)
    fdef.body = rw.convert_fors(fdef.body)
    fdef.body = rw.track(fdef.body, [], set(), set())
    if not rw.changed:
        return fn
    # def __enigma_factory__(__enigma_ctl__, <free variables>):
    #     def <kernel>(...): ...
    #     return <kernel>
    factory = ast.FunctionDef(
        name="__enigma_factory__",
        args=ast.arguments(posonlyargs=[], args=[
            ast.arg(n) for n in (_CTL,) + code.co_freevars],
            kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))],
        decorator_list=[], returns=None, type_params=[])
    ast.copy_location(factory, fdef)
    module = ast.fix_missing_locations(ast.Module([factory], []))
    namespace = {}
    exec(compile(module, filename, "exec"), fn.__globals__, namespace)
    inner = namespace["__enigma_factory__"](
        _Runtime, *([None] * len(code.co_freevars)))
    # Rebind to the original closure cells so later changes stay visible.
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[n] if n in cells else types.CellType(_Runtime)
                    for n in inner.__code__.co_freevars)
    new = types.FunctionType(inner.__code__, fn.__globals__, fn.__name__,
                             fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = fn.__annotations__
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    new.__module__ = fn.__module__
    new.__wrapped__ = fn
    return new
