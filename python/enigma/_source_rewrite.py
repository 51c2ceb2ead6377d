"""The source rewrite behind ``enigma.range`` loops, carried Python
variables, ``break`` / ``continue`` / ``return`` in run-time loops and
branches, and ``while`` statements on traced tests (see the ``_slots``
module docstring and docs/reference/control-flow.md).

A kernel is recompiled from its source when it is decorated; every
function it calls is recompiled the same way when it is first called while
a kernel is traced (helpers in other modules, nested functions, methods and
lambdas included), as Triton compiles the ``@triton.jit`` functions a kernel
calls. The steps, on one function's syntax tree:

1. calls whose function is not known to be Enigma's or Python's become
   ``__enigma_ctl__.callee(f)(args)``, which gives the rewritten ``f``;
2. ``_rewrite_exits``: ``for ... in enigma.range``, ``while``, ``break``,
   ``continue`` and ``return`` become constructs with flags;
3. ``_rewrite_carry``: the variables the constructs assign and later code
   reads are carried in slots.

The result is compiled with the original globals, closure cells and line
numbers, so tracebacks and EnigmaError messages point at the user's lines.
Functions of the enigma package, the standard library and installed
packages (site-packages) run as they are."""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import sysconfig
import textwrap
import types
import weakref

from ._control import do_while, for_range, if_, while_
from ._control import range as enigma_range
from ._ir import EnigmaError, active_tracer, in_package
from ._rewrite_carry import CTL, FRAME, Tracker, ctl, ctl_method, place
from ._rewrite_exits import ExitLowering
from ._rewrite_runtime import Runtime

_CONSTRUCTS = (("range", enigma_range), ("for_range", for_range),
               ("if_", if_), ("while_", while_), ("do_while", do_while))


# --------------------------------------------------------------------------
# What a name in the function's scope is
# --------------------------------------------------------------------------

def _resolve(fn, node, local=frozenset()):
    """The object a Name / Attribute chain names in fn's scope (its
    closure, globals or builtins), or None (also for a local variable)."""
    if isinstance(node, ast.Name):
        if node.id in local:
            return None
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
        base = _resolve(fn, node.value, local)
        if base is None:
            return None
        try:
            return getattr(base, node.attr, None)
        except Exception:  # noqa: BLE001 - a value made when read (enigma's
            # thread queries) exists only while a kernel is traced
            return None
    return None


def _construct_called(fn, expr):
    """Which construct a `with` / `for` expression makes, if ours."""
    if not isinstance(expr, ast.Call):
        return None
    method = ctl_method(expr)
    if method == "stopping" and expr.args:
        return _construct_called(fn, expr.args[0])
    if method is not None:
        return method
    target = _resolve(fn, expr.func)
    for name, obj in _CONSTRUCTS:
        if target is obj:
            return name
    return None


def _bound_names(fdef) -> set:
    """Every name the function binds (its parameters and assignments, in
    nested scopes too): a call through one of them is not resolved
    statically."""
    names = set()
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                               ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0]
                         for a in node.names)
    return names


_LIBRARY_DIRS = tuple({sysconfig.get_paths()[k] for k in
                       ("stdlib", "platstdlib", "purelib", "platlib")})


def _runs_as_is(fn) -> bool:
    """Functions that are never rewritten: Enigma's own, the standard
    library's and installed packages', generators and coroutines."""
    code = fn.__code__
    filename = code.co_filename
    if in_package(filename) or filename.startswith(_LIBRARY_DIRS):
        return True
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                        inspect.CO_ASYNC_GENERATOR):
        return True
    # A method using super() without arguments needs its class cell.
    return "__class__" in code.co_freevars


def _static_callee(obj) -> bool:
    """A callable that never needs the rewrite: Python's and numpy's
    builtins, classes, and anything of the enigma package."""
    if obj is None:
        return False
    if isinstance(obj, (types.BuiltinFunctionType, type,
                        types.ModuleType)):
        return True
    if isinstance(obj, types.FunctionType):
        return _runs_as_is(obj)
    return _of_enigma(obj)


def _of_enigma(obj) -> bool:
    """Whether ``obj`` was defined in the enigma package."""
    module = getattr(obj, "__module__", None) or ""
    return module == "enigma" or module.startswith("enigma.")


def _enigma_function(obj) -> bool:
    """One of the enigma package's functions, or a function wrapped (the
    thread queries): not a class, a dtype or another callable value."""
    return (isinstance(obj, types.FunctionType) or isinstance(
        getattr(obj, "__wrapped__", None), types.FunctionType)) and \
        _of_enigma(obj)


class _Calls(ast.NodeTransformer):
    """``f(args)`` -> ``__enigma_ctl__.callee(f)(args)`` where ``f`` may be
    a function to rewrite."""

    def __init__(self, fn, local):
        self.fn, self.local = fn, local
        self.changed = False

    def visit_Expr(self, node):
        """A statement that only names one of enigma's functions (``enigma.
        barrier``, the call left out) does nothing in Python: an error at
        its line, not a kernel that silently lost the call."""
        self.generic_visit(node)
        value = node.value
        if isinstance(value, (ast.Name, ast.Attribute)) and \
                _enigma_function(_resolve(self.fn, value, self.local)):
            text = ast.unparse(value)
            raise EnigmaError(
                f"{self.fn.__code__.co_filename}:{node.lineno}: {text} names "
                f"a function without calling it, which does nothing: write "
                f"{text}()")
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if ctl_method(node) is not None:
            return node
        if isinstance(func, (ast.Name, ast.Attribute)) and \
                _static_callee(_resolve(self.fn, func, self.local)):
            return node
        self.changed = True
        node.func = place(ctl("callee", func), func)
        return node


# --------------------------------------------------------------------------
# Rewriting one function
# --------------------------------------------------------------------------

def _source_tree(fn):
    """(tree, the FunctionDef or Lambda node of fn) from its source with
    fn's line numbers, or None when Python cannot read it."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    code = fn.__code__
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    if fn.__name__ == "<lambda>":
        params = list(code.co_varnames[:code.co_argcount])
        found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
                 and n.lineno == code.co_firstlineno and
                 [a.arg for a in n.args.args] == params]
        return (tree, found[0]) if len(found) == 1 else None
    if not tree.body or not isinstance(tree.body[0], (ast.FunctionDef,
                                                      ast.AsyncFunctionDef)) \
            or tree.body[0].name != fn.__name__:
        return None
    return tree, tree.body[0]


def _transform(fn):
    """fn's FunctionDef (or Lambda) node rewritten (steps 1-3 of the module
    docstring), or None when nothing changes; raises _Unreadable when its
    source cannot be read."""
    found = _source_tree(fn)
    if found is None:
        raise _Unreadable()
    tree, node = found
    filename = fn.__code__.co_filename
    calls = _Calls(fn, _bound_names(node))
    if isinstance(node, ast.Lambda):
        node.body = calls.visit(node.body)
        return node if calls.changed else None
    node.decorator_list = []
    # Annotations and defaults come from fn itself; evaluating them
    # again in the factory could fail (from __future__ import
    # annotations).
    a = node.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + \
            [x for x in (a.vararg, a.kwarg) if x is not None]:
        arg.annotation = None
    node.returns = None
    a.defaults, a.kw_defaults = [], [None] * len(a.kwonlyargs)
    node.body = [calls.visit(s) for s in node.body]
    called = functools.partial(_construct_called, fn)
    exits = ExitLowering(called, filename, fn.__name__)
    body = exits.function(node.body)
    tracker = Tracker(called)
    body = tracker.track(body, [], set(), set())
    if not (calls.changed or exits.changed or tracker.changed):
        return None
    start = place(ast.Assign(targets=[ast.Name(FRAME, ast.Store())],
                             value=ctl("frame", ast.Constant(fn.__name__))),
                  node.body[0])
    node.body = [start] + body
    return node


def rewritten_source(fn) -> str:
    """The source the rewrite makes of ``fn`` (for debugging the rewrite),
    or "" when it leaves fn as it is."""
    node = _transform(fn)
    return "" if node is None else ast.unparse(node)


def _rewritten_code(fn):
    """The code object of fn rewritten, or None when nothing changes."""
    inner = _transform(fn)
    if inner is None:
        return None
    code = fn.__code__
    filename = code.co_filename
    name = None if isinstance(inner, ast.Lambda) else inner.name
    # def __enigma_factory__(__enigma_ctl__, <free variables>):
    #     def <fn>(...): ...       (or: return <lambda>)
    #     return <fn>
    body = [inner, ast.Return(ast.Name(name, ast.Load()))] if name else \
        [ast.Return(inner)]
    # A function nested in a rewritten one may already read the runtime
    # as a free variable (its calls were rewritten with the outer one's):
    # the factory's own parameter gives it.
    free = tuple(n for n in code.co_freevars if n != CTL)
    factory = ast.FunctionDef(
        name="__enigma_factory__",
        args=ast.arguments(posonlyargs=[], args=[
            ast.arg(n) for n in (CTL,) + free],
            kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body, decorator_list=[], returns=None, type_params=[])
    ast.copy_location(factory, inner)
    module = ast.fix_missing_locations(ast.Module([factory], []))
    namespace = {}
    exec(compile(module, filename, "exec"), fn.__globals__, namespace)
    made = namespace["__enigma_factory__"](Runtime, *([None] * len(free)))
    return made.__code__


class _Unreadable(Exception):
    pass


# The control-flow runtime in a cell, for the rewritten functions' closures.
_RUNTIME_CELL = types.CellType(Runtime)
# fn.__code__ -> its rewritten code, None (unchanged) or _Unreadable.
_rewritten = weakref.WeakKeyDictionary()


def _rewritten_for(fn):
    code = fn.__code__
    if code not in _rewritten:
        try:
            _rewritten[code] = _rewritten_code(fn)
        except _Unreadable:
            _rewritten[code] = _Unreadable
    return _rewritten[code]


def _with_code(fn, code):
    """A function like fn (globals, closure cells, defaults, names) running
    `code`."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells.get(n, _RUNTIME_CELL) for n in code.co_freevars)
    new = types.FunctionType(code, fn.__globals__, fn.__name__,
                             fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = fn.__annotations__
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    new.__module__ = fn.__module__
    new.__dict__.update(fn.__dict__)
    new.__wrapped__ = fn
    return new


def prepare_kernel_function(fn):
    """Returns the function to trace for the kernel ``fn``: ``fn`` rewritten
    (see the module docstring), or ``fn`` itself when nothing changes or its
    source cannot be read (a REPL)."""
    code = _rewritten_for(fn)
    if code is None or code is _Unreadable:
        return fn
    return _with_code(fn, code)


# --------------------------------------------------------------------------
# Helpers called from a kernel
# --------------------------------------------------------------------------

# Words of the errors that a helper Python cannot read the source of gets
# because it was not rewritten.
_REWRITE_RULES = ("enigma.range can only be", "where it does not exist")


def _unreadable_helper(fn):
    """``fn`` as it is, with a note on errors that come from not rewriting
    it."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except EnigmaError as e:
            message = str(e)
            if not any(w in message for w in _REWRITE_RULES):
                raise
            raise EnigmaError(
                f"{message}\n('{fn.__qualname__}' is called from a kernel "
                "but Python cannot read its source (inspect.getsource: it "
                "was defined in a REPL or with exec), so it runs as plain "
                "Python: enigma.range loops, variables carried through "
                "if_ / for_range / while_, break, continue and return in "
                "run-time constructs need the source; define it in a file)"
            ) from None
    return call


def _helper(fn):
    if _runs_as_is(fn):
        return fn
    code = _rewritten_for(fn)
    if code is None:
        return fn
    if code is _Unreadable:
        return _unreadable_helper(fn)
    return _with_code(fn, code)


def callee(f):
    """What a rewritten function calls for ``f(...)``: ``f`` rewritten like
    the kernel when it is a Python function (or method) and a kernel is
    being traced; else ``f`` itself."""
    if active_tracer() is None:
        return f
    if type(f) is types.FunctionType:
        return _helper(f)
    if type(f) is types.MethodType and \
            type(f.__func__) is types.FunctionType:
        func = _helper(f.__func__)
        return f if func is f.__func__ else types.MethodType(func,
                                                            f.__self__)
    return f


Runtime.callee = staticmethod(callee)
