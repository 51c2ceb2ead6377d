"""Math, integer, bit, comparison, selection and reinterpretation functions
(docs/reference/math.md), with Metal's definitions on every backend.

Operands may be IRValues or Python numbers; a number takes the dtype of the
first traced operand (a float number with an integer operand becomes f32),
and mixed dtypes promote as the arithmetic operators do. Float functions
compute integer operands in f32; integer functions reject floats. Vector
IRValues work lane-wise where Metal's function does.
"""

from __future__ import annotations

from . import _core
from ._dtypes import as_dtype
from ._functions import define
from ._ir import (IRValue, current_tracer, fail, fragment_math,
                  fragment_where, to_value)
from ._ir import Fragment as _Fragment


def _build(what, fn, *args):
    """``fn(builder, *args)`` through the located call, as an IRValue."""
    tracer = current_tracer(what)
    return IRValue(tracer, tracer.call(fn, *args))


def _values(args, computes=True):
    """IRValues for ``args``; numbers adopt the first IRValue's dtype (f32
    for an 8-bit float when the function computes: it computes in f32)."""
    like = next((a.dtype for a in args if isinstance(a, IRValue)), None)
    if computes and like is not None and like.is_float8:
        like = as_dtype("f32")
    return [to_value(a, like) for a in args]


def _apply(name, *args):
    current_tracer(name)
    if any(isinstance(a, _Fragment) for a in args):
        return fragment_math(name, *args)
    values = _values(args)
    return _build(name, _core.math_call, name, [v._value for v in values])


# --- The table's functions ----------------------------------------------------
# Every row of the math family's table (float, integer, bit and comparison
# functions) is a Python function with the row's name, parameters and
# docstring; a comparison builds through ``_compare``, the rest through
# ``_apply``. extract_bits and insert_bits are written out below.

def _call(row, *args):
    if row.rule == "Compare":
        return _compare(row.name, *args)
    return _apply(row.name, *args)


_TABLE_NAMES = define(globals(), "math", _call)


# --- Bits ------------------------------------------------------------------

def _field(v):
    """A bit offset or count: Metal takes them as uint."""
    return to_value(v, as_dtype("u32"))._value


def extract_bits(v, offset, bits):
    """Bits [offset, offset + bits) of v moved to the bottom: zero-extended
    for unsigned v, sign-extended for signed v; bits == 0 gives 0 (MSL
    ``extract_bits``)."""
    current_tracer("extract_bits")
    (x,) = _values([v])
    return _build("extract_bits", _core.extract_bits, x._value,
                  _field(offset), _field(bits))


def insert_bits(base, insert, offset, bits):
    """base with bits [offset, offset + bits) replaced by the low bits of
    insert; bits == 0 gives base (MSL ``insert_bits``)."""
    current_tracer("insert_bits")
    b, i = _values([base, insert])
    return _build("insert_bits", _core.insert_bits, b._value, i._value,
                  _field(offset), _field(bits))


# --- Comparisons and selection ---------------------------------------------

def _compare(name, a, b):
    current_tracer(name)
    x, y = _values([a, b])
    return _build(name, _core.compare_by, name, x._value, y._value)


def where(false_val, true_val, cond):
    """``cond ? true_val : false_val`` (MSL ``select(false_val, true_val,
    cond)``; note the argument order). ``cond`` must be a bool; numpy's
    order, ``where(cond, x, y)``, is an error where it can be told."""
    current_tracer("where")
    if any(isinstance(a, _Fragment) for a in (false_val, true_val, cond)):
        return fragment_where(false_val, true_val, cond)
    _check_select_order(false_val, cond)
    f, t = _values([false_val, true_val], computes=False)
    c = to_value(cond)
    return _build("where", _core.where, f._value, t._value, c._value)


_ORDER = ("where(false_value, true_value, condition) takes Metal's select "
          "order, the condition last")
_SWAPPED = ("this looks like numpy's where(condition, x, y), which is written "
            "where(y, x, condition) here")


def _is_bool(x) -> bool:
    return isinstance(x, bool) or (isinstance(x, IRValue) and
                                   x.dtype.name == "b1")


def _check_select_order(false_val, cond):
    """Catches numpy's order where it can be told: a condition that is not
    a bool, or a Python constant condition next to a traced bool false
    value (where(mask, True, False)). Three traced bools cannot be told
    apart (docs/reference/math.md)."""
    if not _is_bool(cond):
        if isinstance(cond, IRValue):
            given = cond.dtype.name
        else:
            kind = type(cond).__name__
            given = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} ({cond!r})"
        hint = (f"; the first argument is a bool: {_SWAPPED}"
                if _is_bool(false_val) else "; compare first (x > 0)")
        fail(f"where: the condition must be a bool, got {given} ({_ORDER})"
             f"{hint}")
    if isinstance(cond, bool) and isinstance(false_val, IRValue) and \
            _is_bool(false_val):
        fail(f"{_ORDER}; the condition is the constant {cond} while the "
             f"first argument (the false value) is a traced bool: "
             f"{_SWAPPED}. (A condition known while tracing is a Python "
             "if: pick the value there.)")


def as_type(x, dtype):
    """The bits of x read as ``dtype`` (MSL ``as_type<T>``); the widths must
    be equal. For a value conversion use ``metal_cast``."""
    current_tracer("as_type")
    dtype = as_dtype(dtype)
    value = to_value(x)
    return _build("as_type", _core.as_type, value._value, dtype.name)


__all__ = _TABLE_NAMES + ["where", "as_type"]
