"""Slots: the values that loops and branches carry (``_control`` has the
constructs).

How carried values work
-----------------------
The body of a loop or branch is traced once, so a value assigned inside it
cannot simply be a Python variable: it becomes an MLIR block argument or an
op result. Enigma keeps every value that may change inside a construct in a
*slot*:

* ``carry[k]`` of ``for_range(..., init=[...])`` and ``while_(..., init=...)``;
* the Python variables that ``enigma.range`` loops (and ``with`` statements of
  these constructs) assign and use later, and each leaf of a list, tuple or
  dict such a variable holds: the kernel's source is rewritten
  when it is decorated (``_source_rewrite.prepare_kernel_function``) so
  that those variables are copied into slots before each construct and back
  out after it.

Every construct carries *all* live slots: a loop yields them as iter_args, a
branch as results of its ``scf.if``. So an assignment inside an ``if_`` arm
is a result of the branch (the other arm yields the old value), and an
assignment inside a nested loop is carried by that loop too. Slots that do
not change are removed again by the canonicalizer.

A slot may be *pending*: its variable has no value yet (Python would raise
NameError reading it). Constructs do not carry pending slots. One that gets
its first value inside a construct is *late* there: an ``if_`` whose arms
both give it one gains a result for it (the builder rebuilds the
``scf.if``), and a slot marked ``placeholder`` (the value a helper returns
early, read only behind its flag) is carried with a zero where it has no
value. Any other late slot is pending again after the construct, and
reading its variable raises EnigmaError saying why.
"""

from __future__ import annotations

from ._ir import (Fragment, IRValue, fail, is_number, to_value,
                  user_location)


# --------------------------------------------------------------------------
# Slots
# --------------------------------------------------------------------------

class Slot:
    """One carried value: its current IRValue (None while pending) and a
    name for messages. ``placeholder``: a late value may be carried with a
    zero where it has none. ``unbound``: why a pending slot has no value
    (for the message when its variable is read). ``number``: the Python
    number a late value was given as (it adopts the other arm's type)."""

    __slots__ = ("value", "label", "placeholder", "unbound", "number")

    def __init__(self, value, label: str, placeholder: bool = False,
                 unbound: str = ""):
        self.value = value
        self.label = label
        self.placeholder = placeholder
        self.unbound = unbound
        self.number = None


class ControlState:
    """Per-trace control-flow state: the live slots, carried by every
    construct opened from now on (pending ones once they have a value)."""

    def __init__(self):
        self.live: list[Slot] = []


def control_state(tracer) -> ControlState:
    st = getattr(tracer, "_enigma_control", None)
    if st is None:
        st = tracer._enigma_control = ControlState()
    return st


def slot_kind(dtype) -> str:
    if dtype.name == "b1":
        return "bool"
    return "float" if dtype.is_float else "integer"


def initial_value(value, label: str) -> IRValue:
    """The IRValue a slot starts with: IRValues as they are, Python numbers
    as constants (bool -> b1, int -> i32, float -> f32)."""
    if isinstance(value, IRValue):
        return value
    if isinstance(value, (bool, int, float)):
        return to_value(value)
    fail(f"{label} must start as a traced value or a number, got "
         f"{type(value).__name__}")


def convert_to_slot(slot: Slot, value) -> IRValue:
    """`value` as the slot's dtype. Integer widths and float widths convert
    as in C; a change between integer, float and bool is refused, since
    the slot's type is fixed by its initial value. A pending slot takes
    the value as its first one."""
    if slot.value is None:
        first = initial_value(value, slot.label)
        slot.number = value if is_number(value) and \
            not isinstance(value, IRValue) else None
        return first
    slot.number = None
    want = slot.value.dtype
    if not isinstance(value, IRValue):
        if not isinstance(value, (bool, int, float)):
            fail(f"{slot.label} holds {want.name} values but is assigned a "
                 f"{type(value).__name__}")
        value = to_value(value, want)
    if slot_kind(value.dtype) != slot_kind(want):
        fail(f"{slot.label} is carried as {want.name} (the type of its value "
             f"before the loop or branch) but is assigned a {value.dtype.name}"
             f" value; give it a {slot_kind(value.dtype)} initial value (e.g. "
             f"{'0.0' if value.dtype.is_float else '0'}) or convert with "
             "enigma.metal_cast")
    lanes = slot.value.lanes
    if value.lanes != lanes:
        if value.lanes != 1:
            fail(f"{slot.label} is carried as a {_shape(lanes, want)} but is "
                 f"assigned a {_shape(value.lanes, value.dtype)}")
        # A scalar assigned to a vector fills every lane, as in MSL.
        return fill_lanes(value._tracer, value.cast(want), lanes)
    return value.cast(want)


def _shape(lanes: int, dtype) -> str:
    return f"{lanes}-lane {dtype.name} vector" if lanes > 1 else \
        f"{dtype.name} scalar"


def fill_lanes(tracer, value: IRValue, lanes: int) -> IRValue:
    """A scalar ``value`` in every lane of a ``lanes``-wide vector (as is
    for one lane, or a value that already has lanes)."""
    if lanes == 1 or value.lanes != 1:
        return value
    return IRValue(tracer, tracer.call("broadcast", value._value, lanes))


def open_slots(tracer, own=()):
    """Slots a construct carries: every live slot that has a value, then
    its own."""
    return [s for s in control_state(tracer).live if s.value is not None] \
        + list(own)


def late_slots(tracer, opened) -> list:
    """Live slots that have a value now but were not carried by the
    construct that opened `opened` (they got their first value inside)."""
    carried = {id(s) for s in opened}
    return [s for s in control_state(tracer).live
            if s.value is not None and id(s) not in carried]


def construct_location() -> str:
    file, line = user_location()
    return f"{file}:{line}"


def pend(slot, why: str) -> None:
    slot.value, slot.number, slot.unbound = None, None, why


def late_type(value) -> tuple:
    if isinstance(value, Fragment):
        fail("a matrix fragment first given a value inside a loop or "
             "if_ cannot leave it; give the variable a value before")
    return (value.dtype.name, value.lanes)


def _number_kind(n) -> str:
    return "bool" if isinstance(n, bool) else \
        "integer" if isinstance(n, int) else "float"


def merge_type(slot, then_value, then_number, else_value, else_number,
                where: str):
    """The (dtype, lanes) of the if_ result for a late slot given in both
    arms: numbers adopt the other arm's type (an int also a float's); two
    traced values must have one type."""
    def describe(v, n):
        return f"the number {n!r}" if n is not None else \
            (f"a {v.lanes}-lane {v.dtype.name} vector" if v.lanes > 1
             else f"a {v.dtype.name} value")

    def mismatch():
        fail(f"{slot.label} is first assigned inside the if_ at {where}, as "
             f"{describe(then_value, then_number)} in one arm and "
             f"{describe(else_value, else_number)} in the other; give both "
             "arms one type (enigma.metal_cast) or give it a value before "
             "the if_")

    if then_number is None and else_number is None:
        if (then_value.dtype.name, then_value.lanes) != \
                (else_value.dtype.name, else_value.lanes):
            mismatch()
        return late_type(then_value)
    if then_number is not None and else_number is not None:
        kinds = {_number_kind(then_number), _number_kind(else_number)}
        if kinds == {"bool"}:
            return ("b1", 1)
        if "bool" in kinds:
            mismatch()
        return ("i32", 1) if kinds == {"integer"} else ("f32", 1)
    number = then_number if then_number is not None else else_number
    traced = else_value if then_number is not None else then_value
    kind, want = _number_kind(number), slot_kind(traced.dtype)
    if not (kind == want or (kind == "integer" and want == "float")):
        mismatch()
    return late_type(traced)


def rebind(tracer, slots, values):
    for slot, v in zip(slots, values):
        slot.value = IRValue(tracer, v)


def raw_values(slots):
    return [s.value._value for s in slots]
