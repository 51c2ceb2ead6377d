"""Grid and threadgroup sizes and function constant values: the checks
that ``execute``, ``prepare`` and the function-call form share (the C++
runtime bindings call ``dims3`` for anything that is not a plain int or
tuple of ints)."""

from __future__ import annotations

import numbers

import numpy as np


def is_int(value) -> bool:
    """An int or numpy integer; bools and floats (even 8.0) are not."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def dims3(value, what: str) -> tuple:
    """``value`` (an int or 1 to 3 ints) as a 3-tuple, padded with 1s; a
    TypeError or ValueError naming ``what`` otherwise."""
    if is_int(value):
        value = (value,)
    try:
        items = tuple(value)
    except TypeError:
        items = None
    if items is None or not all(is_int(v) for v in items):
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, "
                        f"got {value!r}")
    dims = tuple(int(v) for v in items)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{what} must have 1 to 3 dimensions, got {value!r}")
    for d in dims:
        if d < 0 or d >= 2**32:
            raise ValueError(f"{what} {value!r} has a dimension outside "
                             "0..2^32-1")
    return dims + (1,) * (3 - len(dims))


def function_constants(constants) -> dict:
    """``constants`` (``{index: (type_name, value)}``, or None) checked
    for its form, numpy scalars made Python numbers; a TypeError
    otherwise. The values are converted and range-checked by the core."""
    if constants is not None and not isinstance(constants, dict):
        raise TypeError("constants must be a dict {index: (type_name, "
                        f"value)}}, got {type(constants).__name__}")
    out = {}
    for index, spec in (constants or {}).items():
        if not is_int(index):
            raise TypeError("constants index must be an int (the index given "
                            f"to function_constant), got {index!r}")
        if not (isinstance(spec, tuple) and len(spec) == 2):
            raise TypeError(f"constants[{index}] must be (type_name, value), "
                            f"got {spec!r}")
        type_name, value = spec
        if isinstance(value, np.generic):
            value = value.item()
        out[int(index)] = (str(type_name), value)
    return out
