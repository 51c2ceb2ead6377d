"""The part of the source rewrite that carries Python variables through
run-time constructs (see the ``_slots`` module docstring): every
control-flow ``with`` (for_range, range loops, if_, while_, the arms of an
if_, and the loops and guards that break, continue and return lower to)
whose body assigns variables that are read later is wrapped so that those
variables live in slots while the construct is traced:

    __enigma_tN = __enigma_ctl__.declare(__enigma_frame, locals(), ('x',), 'loop')
    __enigma_ctl__.publish(__enigma_frame, locals(), ('x',))   # locals -> slots
    with CONSTRUCT as T:
        (x,) = __enigma_ctl__.reload(__enigma_frame, locals(), ('x',))
        BODY
        __enigma_ctl__.publish(__enigma_frame, locals(), ('x',))
    (x,) = __enigma_ctl__.reload(__enigma_frame, locals(), ('x',))
    __enigma_ctl__.undeclare(__enigma_frame, __enigma_tN)

A loop is first begun (its condition region opened and the locals
reloaded) so that its condition function reads the loop's values. The
statements come from ``_CTL`` calls built here; ``Tracker`` is used by
``_source_rewrite``."""

from __future__ import annotations

import ast

from ._rewrite_runtime import is_temporary

CTL = "__enigma_ctl__"
FRAME = "__enigma_frame"

# What a `with` on each call is, for the tracking below.
LOOPS = ("for_range", "while_", "range_loop", "do_while")
IFS = ("if_", "unless")


# --------------------------------------------------------------------------
# Name events and liveness
# --------------------------------------------------------------------------

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


def events(stmts):
    ev = _Events()
    for s in stmts:
        ev.visit(s)
    return ev.events


def read_before_write(stmts) -> set:
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
            for name, kind in events([s]):
                if kind == "load" and name not in written:
                    exposed.add(name)
                elif kind == "store":
                    written.add(name)
            continue
        header, bound = [], set()
        if isinstance(s, (ast.With, ast.AsyncWith)):
            header = [i.context_expr for i in s.items]
            bound = set().union(*(target_names(i.optional_vars)
                                  for i in s.items))
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            header, bound = [s.iter], target_names(s.target)
        elif isinstance(s, (ast.While, ast.If)):
            header = [s.test]
        for h in header:
            exposed |= {n for n, k in events([ast.Expr(h)])
                        if k == "load"} - written
        for b in blocks:
            exposed |= read_before_write(b) - written - bound
        if isinstance(s, (ast.With, ast.AsyncWith)):
            written |= bound  # `as` names are bound before the body runs
    return exposed


def stored(stmts) -> set:
    """Names assigned in `stmts`, or whose list / dict is assigned into."""
    return {n for n, k in events(stmts) if k in ("store", "mutate")}


def place(node, at):
    """Gives the generated nodes of `node` the line of `at`, start and end
    (a statement spanning a whole loop would make Python report the loop's
    last line for calls in it)."""
    for n in ast.walk(node):
        if "lineno" in n._attributes and not hasattr(n, "lineno"):
            n.lineno = n.end_lineno = at.lineno
            n.col_offset = n.end_col_offset = at.col_offset
    return node


def target_names(node) -> set:
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def ctl(method, *args):
    """``__enigma_ctl__.method(*args)``."""
    return ast.Call(func=ast.Attribute(value=ast.Name(CTL, ast.Load()),
                                       attr=method, ctx=ast.Load()),
                    args=list(args), keywords=[])


def ctl_method(expr):
    """The method name of a ``__enigma_ctl__.method(...)`` call, or None."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
            and isinstance(expr.func.value, ast.Name) and \
            expr.func.value.id == CTL:
        return expr.func.attr
    return None


def _scope():
    return ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[])


def _frame():
    return ast.Name(FRAME, ast.Load())


def _names(ns):
    return ast.Tuple([ast.Constant(n) for n in ns], ast.Load())


def _store_tuple(ns):
    return ast.Tuple([ast.Name(n, ast.Store()) for n in ns], ast.Store())


# --------------------------------------------------------------------------
# The tracking rewrite
# --------------------------------------------------------------------------

class Tracker:
    """Rewrites the `with` statements of one function (see the module
    docstring). `called(expr)` says which construct a `with` expression
    makes ("for_range", "while_", "if_", "range_loop", ... or None)."""

    def __init__(self, called):
        self.called = called
        self.count = 0
        self.changed = False

    def kind(self, node, arms):
        """'loop', 'if', 'arm' or None for a `with` statement."""
        if len(node.items) != 1:
            return None
        expr = node.items[0].context_expr
        what = self.called(expr)
        if what in LOOPS:
            return "loop"
        if what in IFS:
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
        names = sorted(set().union(*(target_names(t) for t in targets))
                       & set(tracked))
        if not names:
            return []
        self.changed = True
        publish = ast.Expr(ctl("publish", _frame(), _scope(), _names(names)))
        reload = ast.Assign(targets=[_store_tuple(names)],
                            value=ctl("reload", _frame(), _scope(),
                                      _names(names)))
        return [place(publish, s), place(reload, s)]

    def keep_types(self, s, typed, tracked):
        """After an assignment inside a construct to a variable it does not
        carry: `x = __enigma_ctl__.keep_type(<entry values>, "x", x)`."""
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        names = sorted(set().union(*(target_names(t) for t in targets))
                       & (set(typed) - set(tracked)))
        out = []
        for n in names:
            self.changed = True
            out.append(place(ast.Assign(
                targets=[ast.Name(n, ast.Store())],
                value=ctl("keep_type", ast.Name(typed[n], ast.Load()),
                          ast.Constant(n), ast.Name(n, ast.Load()))), s))
        return out

    def wrap(self, node, kind, after, outer, arms, typed=None):
        item = node.items[0]
        what = self.called(item.context_expr)
        bound = target_names(item.optional_vars)
        assigned = stored(node.body) - bound
        live = read_before_write(after)
        if kind == "loop":
            # The body, and the condition (a function reading the
            # variables), run again in the next iteration.
            live |= read_before_write(node.body)
            live |= {n for n, k in events([ast.Expr(item.context_expr)])
                     if k == "load"}
        inner_arms = set(arms)
        if kind == "if":
            # What one arm assigns and the other reads first is carried too;
            # the arms are the `with` blocks on this if_'s own arm names.
            for s in node.body:
                if (isinstance(s, ast.With) and len(s.items) == 1 and
                        isinstance(s.items[0].context_expr, ast.Name) and
                        s.items[0].context_expr.id in bound):
                    live |= read_before_write(s.body)
            if isinstance(item.optional_vars, ast.Tuple):
                inner_arms |= bound
        own = [] if kind == "arm" else \
            sorted(n for n in assigned & live
                   if not is_temporary(n) and n not in outer)
        names = sorted(set(own) | set(outer))
        body_cont = node.body + after if kind == "loop" else after
        # What the body assigns without carrying keeps its type in the body.
        self.count += 1
        number = self.count  # children count on from here
        entry = f"__enigma_k{number}"
        # (an if_'s arms use the if_'s record: the else arm is traced after
        # the then arm, whose assignments it must not see)
        loose = [] if kind == "arm" else sorted(
            n for n in assigned if not is_temporary(n)
            and n not in own and n not in outer)
        inner_typed = dict(typed or {})
        inner_typed.update({n: entry for n in loose})
        node.body = self.track(node.body, body_cont, set(outer) | set(own),
                               inner_arms, inner_typed)
        loc = node
        record = []
        if loose:
            record = [place(ast.Assign(
                targets=[ast.Name(entry, ast.Store())],
                value=ctl("types", _scope(), _names(loose))), loc)]
            self.changed = True
        construct = None
        if what in LOOPS or what == "unless":
            # Made first: a guard that guards nothing declares nothing, and
            # a loop is begun below.
            construct = f"__enigma_w{number}"
            record.append(place(ast.Assign(
                targets=[ast.Name(construct, ast.Store())],
                value=item.context_expr), loc))
            item.context_expr = ast.Name(construct, ast.Load())
            self.changed = True
        if not names:
            return record + [node]
        self.changed = True

        def stmt(expr):
            return place(ast.Expr(expr), loc)

        def reload():
            return place(ast.Assign(
                targets=[_store_tuple(names)],
                value=ctl("reload", _frame(), _scope(), _names(names))), loc)

        token = f"__enigma_t{number}"
        pre, post = [], [reload()]
        if names:
            # The enclosing constructs' names too: one that guards nothing
            # (a guard on flags that are all False) tracked none of them.
            words = {"loop": "loop", "if": "if_", "arm": "if_"}
            args = [_frame(), _scope(), _names(names),
                    ast.Constant(words[kind])]
            if construct is not None:
                args.append(ast.Name(construct, ast.Load()))
            pre.append(place(ast.Assign(
                targets=[ast.Name(token, ast.Store())],
                value=ctl("declare", *args)), loc))
            post.append(stmt(ctl("undeclare", _frame(),
                                 ast.Name(token, ast.Load()))))
        pre.append(stmt(ctl("publish", _frame(), _scope(), _names(names))))
        if kind == "loop":
            pre.append(stmt(ctl("begin", ast.Name(construct, ast.Load()))))
            pre.append(reload())
        last = node.body[-1] if node.body else node
        end = place(ast.Expr(ctl("publish", _frame(), _scope(),
                                 _names(names))), last)
        node.body = [reload()] + node.body + [end]
        return record + pre + [node] + post
