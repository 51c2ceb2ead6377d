"""SIMD-group (32 lanes) and quad-group (4 lanes) functions.

Metal's names and semantics on every backend (docs/reference/simd.md):
the lanes of a simdgroup are 32 consecutive ``thread_index_in_threadgroup``
values (lane = index % 32), the lanes of a quad 4 consecutive ones. Lanes
that do not exist (the tail of a partial threadgroup) take no part.

Every lane of a simdgroup must reach the call: one under an ``if_`` or loop
whose condition depends on the lane is an :class:`enigma.EnigmaError`.
Compute unconditionally and select with :func:`enigma.where` instead.
"""

from __future__ import annotations

from . import _core
from ._dtypes import as_dtype
from ._tracing import EnigmaError, IRValue, current_tracer, to_value, user_location

_U32 = as_dtype("uint")


def _call(name, x, lane=None) -> IRValue:
    tracer = current_tracer(name)
    file, line = user_location()
    try:
        value = to_value(x)
        args = [value._value]
        if lane is not None:
            args.append(to_value(lane, _U32)._value)
        tracer.builder.set_location(file, line)
        return IRValue(tracer, _core.simd_call(tracer.builder, name, *args))
    except EnigmaError as e:
        message = str(e)
        if message.startswith(f"{file}:{line}:"):
            raise
        raise EnigmaError(f"{file}:{line}: {message}") from None


def _reduction(group: str, op: str, what: str):
    name = f"{group}_{op}"
    width = 32 if group == "simd" else 4
    unit = "simdgroup" if group == "simd" else "quad"

    def fn(x) -> IRValue:
        return _call(name, x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"``{name}(x)``: {what} over the active lanes of the {unit} "
        f"({width} lanes). Same dtype as ``x``; int, uint or float"
        f"{'' if op not in ('and', 'or', 'xor') else ' (integers only)'}.")
    return fn


def _shuffle(group: str, op: str, arg: str, what: str):
    name = f"{group}_{op}"

    def fn(x, operand) -> IRValue:
        return _call(name, x, operand)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{name}(x, {arg})``: {what}"
    return fn


_REDUCTIONS = {
    "sum": "the sum",
    "product": "the product",
    "min": "the minimum (signed or unsigned by dtype)",
    "max": "the maximum (signed or unsigned by dtype)",
    "and": "bitwise and",
    "or": "bitwise or",
    "xor": "bitwise xor",
    "prefix_exclusive_sum": "each lane gets the sum of the lanes below it "
                            "(0 for the first lane)",
    "prefix_inclusive_sum": "each lane gets the sum of the lanes up to and "
                            "including it",
    "prefix_exclusive_product": "each lane gets the product of the lanes "
                                "below it (1 for the first lane)",
    "prefix_inclusive_product": "each lane gets the product of the lanes up "
                                "to and including it",
}

_SHUFFLES = {
    "shuffle": ("lane", "the value of lane ``lane % width``; a lane that "
                        "does not exist gives the caller's own value."),
    "broadcast": ("lane", "the value of lane ``lane % width`` (an alias of "
                          "shuffle meant for a uniform lane)."),
    "shuffle_up": ("delta", "the value of lane ``me - delta``; lanes below "
                            "``delta`` keep their own value."),
    "shuffle_down": ("delta", "the value of lane ``me + delta``; lanes whose "
                              "source is past the last existing lane keep "
                              "their own value."),
    "shuffle_xor": ("mask", "the value of lane ``me ^ (mask % width)``; a "
                            "lane that does not exist gives the caller's own "
                            "value."),
}

__all__ = []
for _group in ("simd", "quad"):
    for _op, _what in _REDUCTIONS.items():
        globals()[f"{_group}_{_op}"] = _reduction(_group, _op, _what)
        __all__.append(f"{_group}_{_op}")
    for _op, (_arg, _what) in _SHUFFLES.items():
        globals()[f"{_group}_{_op}"] = _shuffle(_group, _op, _arg, _what)
        __all__.append(f"{_group}_{_op}")
del _group, _op, _what, _arg
