"""The names a kernel body reads from outside itself: module globals and
closure variables, of the body and of the plain Python functions it calls.

The function-call form traces a kernel once and launches that trace
again; a trace depends on the values such names held (a tile size, a flag,
a helper function). It records what each name held (``names_read``), and a
launch that finds one holding another value traces the kernel again
(docs/design/launch-form.md, "Names the body reads"). Modules are not
recorded (rebinding one is not a change of a value the trace used), nor
are the contents of mutable objects (a list changed in place).
"""

from __future__ import annotations

import dis
import types

from ._ir import in_package

_GLOBAL_LOADS = {"LOAD_GLOBAL", "LOAD_NAME"}
_CELL_LOADS = {"LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF"}


class NameRead:
    """One name the body read: ``scope`` is the module's dict (``name`` the
    key) or a closure cell (``name`` None); ``value`` what it held."""

    __slots__ = ("scope", "name", "value", "label")

    def __init__(self, scope, name, value, label):
        self.scope, self.name, self.value, self.label = scope, name, value, label

    def current(self):
        """(whether the name still has a value, the value now)."""
        if self.name is None:
            try:
                return True, self.scope.cell_contents
            except ValueError:  # an empty cell
                return False, None
        if self.name in self.scope:
            return True, self.scope[self.name]
        return False, None

    def as_tuple(self):
        """What the C++ launch path checks: (scope, name, value)."""
        return self.scope, self.name, self.value


def same_value(a, b) -> bool:
    """Whether a trace made with ``a`` holds for ``b``: the same object, or
    equal values of one type (4 and 4.0 trace differently)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        equal = a == b
    except Exception:  # noqa: BLE001  (a value that cannot be compared)
        return False
    return equal is True or (type(equal) is bool and equal)


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _loads(code):
    """(name, whether through a closure cell) of every name ``code`` and
    the code nested in it load from outside their own frames."""
    seen = set()
    for c in _code_objects(code):
        for instruction in dis.get_instructions(c):
            if instruction.opname in _GLOBAL_LOADS:
                key = (instruction.argval, False)
            elif instruction.opname in _CELL_LOADS:
                key = (instruction.argval, True)
            else:
                continue
            if key not in seen:
                seen.add(key)
                yield key


def names_read(fn) -> list[NameRead]:
    """The module globals and closure variables ``fn`` reads, and those
    of the plain Python functions it reads (helpers it calls), except
    functions of the enigma package and modules."""
    reads: dict = {}
    visited = set()

    def visit(function):
        if id(function) in visited:
            return
        visited.add(id(function))
        code = function.__code__
        if in_package(code.co_filename):
            return
        cells = dict(zip(code.co_freevars, function.__closure__ or ()))
        module = function.__globals__
        where = module.get("__name__", "?")
        for name, through_cell in _loads(code):
            if through_cell:
                cell = cells.get(name)
                if cell is None:  # a variable of the function's own frame
                    continue
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
                key, read = (id(cell), None), NameRead(
                    cell, None, value,
                    f"the variable {name} of {function.__qualname__}'s "
                    "enclosing function")
            else:
                if name not in module:  # a builtin
                    continue
                value = module[name]
                key, read = (id(module), name), NameRead(
                    module, name, value, f"the global {name} of {where}")
            if isinstance(value, types.ModuleType):
                continue
            reads.setdefault(key, read)
            if isinstance(value, types.FunctionType):
                visit(value)

    visit(fn)
    return list(reads.values())
