"""The op families' functions as Python functions, made at import time.

Every element-wise math, integer, bit and comparison function, the geometry
and packing functions and the simdgroup / quad functions are rows of their
family's table, which the core generates from the family's .td file
(docs/design/op-families.md). Each family module defines its functions
from its rows with :func:`define`, giving the body that builds the call;
name, parameters, docstring and ``__all__`` come from the table.
"""

from __future__ import annotations

import inspect
from typing import Callable, NamedTuple

from . import _core


class Row(NamedTuple):
    """One function of a family's table."""
    family: str       # "math", "geometry", "pack", "simd"
    name: str         # enigma.<name>
    rule: str         # how the core types operands and result
    args: tuple       # parameter names; "*v" takes any number
    lanes: int        # geometry: lanes required (0: any); pack: lanes
    doc: str


TABLE = tuple(Row(family, name, rule, tuple(a for a in args.split(",") if a),
                  lanes, doc)
              for family, name, rule, args, lanes, doc
              in _core.function_table())


def rows(*families: str) -> list:
    """The rows of ``families``, in the order the .td files define them."""
    return [row for row in TABLE if row.family in families]


def _signature(row: Row) -> inspect.Signature:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature([
        inspect.Parameter(a[1:], inspect.Parameter.VAR_POSITIONAL)
        if a.startswith("*") else inspect.Parameter(a, kind)
        for a in row.args])


def _binding_error(row: Row, signature: inspect.Signature, args, kwargs,
                   error: TypeError) -> str:
    """Python's own wording for a call of a def with the row's parameters."""
    positional = [p for p in signature.parameters.values()
                  if p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD]
    variadic = len(positional) < len(signature.parameters)
    if not variadic and len(args) > len(positional):
        n = len(positional)
        return (f"{row.name}() takes {n} positional argument"
                f"{'' if n == 1 else 's'} but {len(args)} "
                f"{'was' if len(args) == 1 else 'were'} given")
    try:
        given = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return f"{row.name}() {error}"
    missing = [p.name for p in positional if p.name not in given]
    if missing:
        names = " and ".join(f"'{m}'" for m in missing)
        return (f"{row.name}() missing {len(missing)} required positional "
                f"argument{'' if len(missing) == 1 else 's'}: {names}")
    return f"{row.name}() {error}"


def _function(row: Row, body: Callable, module: str) -> Callable:
    signature = _signature(row)

    def function(*args, **kwargs):
        # Arguments bind as to a def with the row's parameters; a mistake is
        # the TypeError Python gives for such a def.
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            error = TypeError(_binding_error(row, signature, args, kwargs, e))
            # The mistake is at the caller's line, as for a def (the kernel
            # tracer then names that line).
            error.at_call_site = True
            raise error from None
        return body(row, *bound.args)

    function.__name__ = function.__qualname__ = row.name
    function.__module__ = module
    function.__doc__ = row.doc
    function.__signature__ = signature
    return function


def define(namespace: dict, families, body: Callable) -> list:
    """Defines in ``namespace`` (a module's ``globals()``) one function per
    row of ``families``; calling it returns ``body(row, *args)``. Returns
    the names defined, for ``__all__``."""
    if isinstance(families, str):
        families = (families,)
    names = []
    for row in rows(*families):
        namespace[row.name] = _function(row, body, namespace["__name__"])
        names.append(row.name)
    return names
