"""Control flow of the Enigma language: counted loops, branches, while
loops, guarded memory access and per-thread register arrays. The values a
construct carries live in slots (``_slots``, whose docstring says how
carried values work)."""

from __future__ import annotations

import builtins

from ._dtypes import as_dtype
from ._ir import (IRValue, current_tracer, fail, is_number, kind_of,
                  plain_index, to_value)
from ._slots import (Slot, construct_location, control_state,
                     convert_to_slot, fill_lanes, initial_value, late_slots,
                     late_type, merge_type, open_slots, pend, raw_values,
                     rebind)

__all__ = ["for_range", "range", "range_constexpr", "if_", "while_",
           "load_if", "store_if", "register_tensor", "Carry",
           "RegisterTensor"]


# --------------------------------------------------------------------------
# Carry: the loop-carried values of for_range / while_
# --------------------------------------------------------------------------

class Carry:
    """The loop-carried values of ``for_range(..., init=[...])`` (and
    ``while_(..., init=[...])``), a list-like object.

    Inside the body ``carry[k]`` reads the value of this iteration and
    ``carry[k] = v`` sets the value the next iteration (and the code after
    the loop) sees. After the loop the same object reads the final values
    (``carry[k]``, ``list(carry)``, ``carry.values()``); assigning to it then
    is an error. A value keeps the type of its initial value: integer widths
    and float widths convert as in C, a change between integer, float and
    bool raises EnigmaError.
    """

    def __init__(self, slots):
        self._slots = slots
        self._closed = False

    def __len__(self):
        return len(self._slots)

    def _slot(self, k) -> Slot:
        k = plain_index(k)
        if isinstance(k, IRValue) or isinstance(k, bool) or \
                not isinstance(k, int):
            fail("carried values are indexed by Python integers")
        if not -len(self._slots) <= k < len(self._slots):
            fail(f"carry index {k} is out of range ({len(self._slots)} "
                 "carried values)")
        return self._slots[k]

    def __getitem__(self, k) -> IRValue:
        return self._slot(k).value

    def __setitem__(self, k, value):
        slot = self._slot(k)
        if self._closed:
            fail("the loop has ended: its carried values can be read but no "
                 "longer assigned")
        slot.value = convert_to_slot(slot, value)

    def __iter__(self):
        return iter([s.value for s in self._slots])

    def values(self) -> list:
        """The current values as a list."""
        return [s.value for s in self._slots]

    def __repr__(self):
        return "Carry(" + ", ".join(repr(s.value) for s in self._slots) + ")"


def _make_carry(init, what: str) -> Carry | None:
    if init is None:
        return None
    if isinstance(init, (IRValue, int, float)):
        init = [init]
    return Carry([Slot(initial_value(v, f"carry[{k}]"), f"carry[{k}]")
                  for k, v in enumerate(init)])


# --------------------------------------------------------------------------
# for_range / range / range_constexpr
# --------------------------------------------------------------------------

def _loop_dtype(dtype):
    dt = as_dtype(dtype)
    if dt.is_float or dt.name == "b1":
        fail(f"a loop counter must be an integer type, got {dt.name}")
    return dt


def _bound(x, dt, what: str) -> IRValue:
    if isinstance(x, IRValue):
        if x.dtype.is_float or x.dtype.name == "b1":
            fail(f"loop {what} must be an integer, got a {x.dtype.name} value")
        return x.cast(dt)
    x = plain_index(x)
    if isinstance(x, bool) or not isinstance(x, int):
        fail(f"loop {what} must be an integer or a traced integer, got "
             f"{type(x).__name__} {x!r}")
    return to_value(x, dt)


class for_range:
    """``with enigma.for_range(lo, hi, step=1, dtype="int", init=None) as i:``

    A counted loop, ``for (i = lo; i < hi; i += step)``, traced once (an
    ``scf.for``). Bounds are Python ints or integer IRValues (converted to
    ``dtype``, the type of ``i``); a float bound or step raises EnigmaError,
    and a Python ``step`` must be positive. Like ``scf.for``, the loop
    compares as signed integers.

    With ``init=[v0, v1, ...]`` the statement is ``as (i, carry)``: ``carry``
    is a :class:`Carry` whose elements are loop-carried values; assign
    ``carry[k] = ...`` in the body and read ``carry[k]`` after the loop.
    """

    def __init__(self, lo, hi=None, step=1, dtype="int", init=None):
        if hi is None:
            lo, hi = 0, lo
        self._args = (lo, hi, step)
        self._dtype = dtype
        self._init = init
        self._phase = "new"
        # A function of no arguments giving a bool (traced or Python): the
        # loop also ends before an iteration where it holds (break and
        # return in the body). The loop is then an scf.while.
        self._stop = None

    def _bounds(self):
        dt = _loop_dtype(self._dtype)
        lo, hi, step = (_bound(x, dt, w) for x, w in
                        zip(self._args, ("lower bound", "upper bound",
                                         "step")))
        if not isinstance(self._args[2], IRValue) and self._args[2] <= 0:
            fail(f"loop step must be positive, got {self._args[2]}")
        return dt, lo, hi, step

    def _begin(self):
        """Opens the loop's condition (an scf.while) when it has a stop
        function; a plain counted loop opens in __enter__."""
        if self._stop is None or self._phase != "new":
            return
        tracer = current_tracer("enigma.for_range")
        dt, lo, self._hi, self._step = self._bounds()
        self._carry = _make_carry(self._init, "for_range")
        self._counter = Slot(lo, "the loop counter")
        own = [self._counter] + (self._carry._slots if self._carry else [])
        self._slots = open_slots(tracer, own)
        rebind(tracer, self._slots,
                tracer.call("begin_while", raw_values(self._slots)))
        control_state(tracer).live.extend(own)
        self._tracer, self._phase, self._where = tracer, "cond", construct_location()

    def __enter__(self):
        tracer = current_tracer("enigma.for_range")
        if self._stop is not None:
            self._begin()
            if self._phase != "cond":
                fail("a for_range object can be entered only once")
            i = self._counter.value
            # scf.for compares as signed integers; so does this loop.
            signed = as_dtype(i.dtype.name.replace("u", "i"))
            more = i.cast(signed) < self._hi.cast(signed)
            cond = _and_not(more, self._stop())
            rebind(tracer, self._slots, tracer.call(
                "while_condition", cond._value, raw_values(self._slots)))
            self._phase = "body"
            index = self._counter.value
            return index if self._carry is None else (index, self._carry)
        if self._phase != "new":
            fail("a for_range object can be entered only once")
        dt, lo, hi, step = self._bounds()
        self._carry = _make_carry(self._init, "for_range")
        own = self._carry._slots if self._carry else []
        self._slots = open_slots(tracer, own)
        values = tracer.call("begin_for", lo._value, hi._value, step._value,
                             raw_values(self._slots))
        rebind(tracer, self._slots, values[1:])
        control_state(tracer).live.extend(own)
        self._tracer, self._phase, self._where = tracer, "body", construct_location()
        index = IRValue(tracer, values[0])
        return index if self._carry is None else (index, self._carry)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None or self._phase != "body":
            return False  # let the user's exception propagate as it is
        tracer = self._tracer
        if self._stop is not None:
            self._counter.value = self._counter.value + self._step
        late = late_slots(tracer, self._slots)
        carried = [l for l in late if l.placeholder]
        types = [late_type(l.value) for l in carried]
        if self._stop is not None:
            results = tracer.call(
                "end_while_late", raw_values(self._slots), [None] * len(carried),
                [l.value._value for l in carried], types)
        else:
            results = tracer.call(
                "end_for_late", raw_values(self._slots),
                [l.value._value for l in carried], types)
        _close_loop(tracer, self._slots, results, late, carried, self._where)
        own = (self._carry._slots if self._carry is not None else []) + \
            ([self._counter] if self._stop is not None else [])
        _drop_live(tracer, own)
        if self._carry is not None:
            self._carry._closed = True
        self._phase = "done"
        return False


def _drop_live(tracer, slots) -> None:
    """Removes a construct's own slots from the live list."""
    if slots:
        ids = {id(s) for s in slots}
        live = control_state(tracer).live
        live[:] = [s for s in live if id(s) not in ids]


def _and_not(cond, stop):
    """``cond & ~stop`` where ``stop`` is a traced or Python bool."""
    if isinstance(stop, bool):
        return cond if not stop else to_value(False)
    if not isinstance(stop, IRValue) or stop.dtype.name != "b1":
        fail("a loop's stop condition must be a bool")
    return cond & ~stop


def _close_loop(tracer, slots, results, late, carried, where: str):
    """After a loop ends: its slots take the results; late slots carried
    (placeholders) take theirs, the others are pending again (a loop may
    run no iteration, so what it assigns first has no value after it)."""
    rebind(tracer, slots, results[:len(slots)])
    rebind(tracer, carried, results[len(slots):])
    for slot in late:
        if not slot.placeholder:
            pend(slot, f"it is first assigned inside the loop at {where}, "
                        "so it has no value after the loop (which may run no "
                        "iteration) nor at the start of an iteration; give "
                        "it a value before the loop")


class RangeSpec:
    """What ``enigma.range(...)`` returns; a ``for`` statement over it is
    rewritten into a traced loop when the kernel is decorated."""

    def __init__(self, args, dtype):
        self.args, self.dtype = args, dtype

    def __iter__(self):
        fail("enigma.range can only be the iterable of a `for` statement "
             "in an @enigma.kernel function, or a function it calls, whose "
             "source Python can read (inspect.getsource); here it cannot be "
             "rewritten. Use `with enigma.for_range(lo, hi, step) as i:` "
             "instead")


def range(*args, dtype="int"):  # noqa: A001  (enigma.range by design)
    """``for i in enigma.range(stop)`` / ``enigma.range(start, stop[, step])``

    A traced counted loop written as a Python ``for`` (same bounds rules as
    :func:`for_range`). Variables assigned in the body and used after the
    loop, or read in the body before being assigned there, are carried from
    iteration to iteration automatically (so are lists, tuples and dicts of
    traced values assigned into, ``acc[j] = ...``); each needs a value
    before the loop where it is read. ``break``, ``continue``, ``return``
    and ``else:`` have their Python meaning. Works by rewriting the
    kernel's source (and the functions it calls) when it is decorated.
    """
    if not 1 <= len(args) <= 3:
        fail(f"enigma.range takes 1 to 3 arguments, got {len(args)}")
    return RangeSpec(args, dtype)


def range_constexpr(*args):
    """``for h in enigma.range_constexpr(n)``: a loop unrolled at trace time,
    i.e. Python's ``range`` over Python ints (traced values raise
    EnigmaError). The body is traced once per iteration."""
    args = tuple(plain_index(a) for a in args)
    for a in args:
        if isinstance(a, bool) or not isinstance(a, int):
            fail("range_constexpr takes Python integers (it unrolls at trace "
                 f"time), got {type(a).__name__}; use enigma.range for a "
                 "loop with traced bounds")
    return builtins.range(*args)


# --------------------------------------------------------------------------
# if_
# --------------------------------------------------------------------------

class _Branch:
    """``then_b`` / ``else_b`` of the two-armed ``if_``."""

    def __init__(self, owner, is_else: bool):
        self._owner, self._is_else = owner, is_else

    def __enter__(self):
        self._owner._enter_arm(self._is_else)
        return None

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self._owner._leave_arm(self._is_else)
        return False


class _Branches(tuple):
    """``(then_b, else_b)``: what ``with enigma.if_(c) as (then_b, else_b)``
    unpacks."""


class if_:
    """``with enigma.if_(cond):`` runs the body only where ``cond`` (a bool
    IRValue) holds: an ``scf.if``, printed ``if (cond) { ... }``.

    Two arms: ``with enigma.if_(cond) as (then_b, else_b):`` then
    ``with then_b: ...`` and ``with else_b: ...`` inside it (each at most
    once, then before else; put no other code directly in the outer body).

    Assignments to carried values (``carry[k]``, or variables carried by
    ``enigma.range`` / assigned in the arm and used after the ``with``)
    become results of the branch: they take effect only when the arm runs.
    """

    def __init__(self, cond):
        self._cond = cond
        self._phase = "new"

    def __enter__(self):
        tracer = current_tracer("enigma.if_")
        if self._phase != "new":
            fail("an if_ object can be entered only once")
        cond = self._cond
        if isinstance(cond, bool):
            cond = to_value(cond)
        if not isinstance(cond, IRValue):
            fail("the condition of enigma.if_ must be a bool traced value "
                 f"(a comparison), got {type(cond).__name__}")
        self._tracer, self._where = tracer, construct_location()
        self._slots = open_slots(tracer)
        self._entry = [s.value for s in self._slots]
        tracer.call("begin_if_carrying", cond._value, raw_values(self._slots))
        self._phase, self._then_done = "then", False
        return _Branches((_Branch(self, False), _Branch(self, True)))

    def _enter_arm(self, is_else: bool):
        if is_else:
            if self._phase != "then":
                fail("else_b can be entered once, inside its if_")
            self._switch_to_else()
        elif self._phase != "then" or self._then_done:
            fail("then_b can be entered once, before else_b, inside its if_")

    def _leave_arm(self, is_else: bool):
        if not is_else:
            self._then_done = True

    def _switch_to_else(self):
        tracer = self._tracer
        # Slots the then arm gave a first value: the else arm starts
        # without them, as it would in Python.
        self._then_late = {id(s): (s, s.value, s.number)
                           for s in late_slots(tracer, self._slots)}
        for slot, _, _ in self._then_late.values():
            pend(slot, f"it has no value before the if_ at "
                        f"{self._where}; give it one before the if_")
        tracer.call("begin_else", raw_values(self._slots))
        for slot, v in zip(self._slots, self._entry):
            slot.value = v
        self._phase = "else"

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None or self._phase not in ("then", "else"):
            return False
        if self._phase == "then":
            self._switch_to_else()
        tracer = self._tracer
        else_late = {id(s): (s, s.value, s.number)
                     for s in late_slots(tracer, self._slots)}
        results, merged = [], []
        then_values, else_values, types = [], [], []
        for key in list(self._then_late) + [k for k in else_late
                                            if k not in self._then_late]:
            slot, tv, tn = self._then_late.get(key, (None, None, None))
            slot, ev, en = else_late.get(key, (slot, None, None))
            if tv is not None and ev is not None:
                types.append(merge_type(slot, tv, tn, ev, en, self._where))
            elif slot.placeholder:
                types.append(late_type(tv if tv is not None else ev))
            else:
                arm = "then" if tv is not None else "else"
                pend(slot, f"it is assigned only in the {arm} arm of the "
                            f"if_ at {self._where}, so it has no value after "
                            "the if_; give it a value before the if_ or "
                            "assign it in both arms")
                continue
            merged.append(slot)
            then_values.append(None if tv is None else tv._value)
            else_values.append(None if ev is None else ev._value)
        results = tracer.call("end_if_late", raw_values(self._slots), then_values,
                              else_values, types)
        rebind(tracer, self._slots, results[:len(self._slots)])
        rebind(tracer, merged, results[len(self._slots):])
        for slot in merged:
            slot.number = None
        self._phase = "done"
        return False


# --------------------------------------------------------------------------
# while_
# --------------------------------------------------------------------------

class while_:
    """``with enigma.while_(lambda: cond):`` repeats the body while ``cond``
    holds (an ``scf.while``, printed ``while (true) { ...; if (!c) break;
    ... }``). The function is traced once, in the loop's condition, so it
    sees the values of carried variables at the start of each iteration.

    ``init=[...]`` gives the loop its own carried values: the statement is
    then ``as carry`` and ``cond`` takes the :class:`Carry` as argument, e.g.
    ``with enigma.while_(lambda c: c[0] < n, init=[0]) as c: c[0] = c[0] + 1``.
    """

    def __init__(self, cond, *, init=None):
        if not callable(cond):
            fail("enigma.while_ takes a function that returns the condition "
                 "(e.g. lambda: i < n), so that it is traced inside the loop")
        self._cond, self._init = cond, init
        self._phase = "new"
        self._stop = None  # as for_range's: a return in the body ends it

    def _begin(self):
        tracer = current_tracer("enigma.while_")
        if self._phase != "new":
            fail("a while_ object can be entered only once")
        self._carry = _make_carry(self._init, "while_")
        own = self._carry._slots if self._carry else []
        self._slots = open_slots(tracer, own)
        values = tracer.call("begin_while", raw_values(self._slots))
        rebind(tracer, self._slots, values)
        control_state(tracer).live.extend(own)
        self._tracer, self._phase, self._where = tracer, "cond", construct_location()

    def __enter__(self):
        if self._phase == "new":
            self._begin()
        elif self._phase != "cond":
            fail("a while_ object can be entered only once")
        tracer = self._tracer
        cond = self._cond(self._carry) if self._carry is not None \
            else self._cond()
        if isinstance(cond, bool):
            cond = to_value(cond)
        if not isinstance(cond, IRValue):
            fail("the function given to enigma.while_ must return a bool "
                 f"traced value, got {type(cond).__name__}")
        if self._stop is not None:
            cond = _and_not(cond, self._stop())
        # What the condition gave a first value stays in the condition.
        for slot in late_slots(tracer, self._slots):
            pend(slot, f"it is first assigned in the condition of the "
                        f"while loop at {self._where}; give it a value "
                        "before the loop")
        values = tracer.call("while_condition", cond._value,
                             raw_values(self._slots))
        rebind(tracer, self._slots, values)
        self._phase = "body"
        return self._carry

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None or self._phase != "body":
            return False
        tracer = self._tracer
        late = late_slots(tracer, self._slots)
        carried = [l for l in late if l.placeholder]
        results = tracer.call(
            "end_while_late", raw_values(self._slots), [None] * len(carried),
            [l.value._value for l in carried],
            [late_type(l.value) for l in carried])
        _close_loop(tracer, self._slots, results, late, carried, self._where)
        _drop_live(tracer, self._carry._slots if self._carry else [])
        if self._carry is not None:
            self._carry._closed = True
        self._phase = "done"
        return False


class do_while:
    """The loop of a Python ``while`` statement whose test is traced, as the
    source rewrite emits it inside ``if_(first test)``: the body runs, then
    ``cond()`` (the test evaluated again at the end of the body) decides
    whether it runs again, unless ``stop()`` (break, return) holds. The body
    and the test are the condition region of an ``scf.while`` (printed
    ``while (true) { body; if (!c) break; }``). Not public API."""

    def __init__(self, cond, stop=None):
        self._cond, self._stop = cond, stop
        self._phase = "new"

    def _begin(self):
        tracer = current_tracer("a while loop")
        if self._phase != "new":
            fail("a do_while object can be entered only once")
        self._slots = open_slots(tracer)
        rebind(tracer, self._slots,
                tracer.call("begin_do_while", raw_values(self._slots)))
        self._tracer, self._phase, self._where = tracer, "body", construct_location()

    def __enter__(self):
        if self._phase == "new":
            self._begin()
        elif self._phase != "body":
            fail("a do_while object can be entered only once")
        return None

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None or self._phase != "body":
            return False
        tracer = self._tracer
        cond = self._cond()
        if isinstance(cond, bool):
            cond = to_value(cond)
        if not isinstance(cond, IRValue) or cond.dtype.name != "b1" or \
                cond.lanes != 1:
            fail("the test of a while loop must stay one bool traced value "
                 f"in every iteration, got {cond!r}")
        if self._stop is not None:
            cond = _and_not(cond, self._stop())
        late = late_slots(tracer, self._slots)
        carried = [l for l in late if l.placeholder]
        after = tracer.call("while_condition", cond._value,
                            raw_values(self._slots))
        results = tracer.call(
            "end_while_late", after, [l.value._value for l in carried],
            [None] * len(carried), [late_type(l.value) for l in carried])
        _close_loop(tracer, self._slots, results, late, carried, self._where)
        self._phase = "done"
        return False


# --------------------------------------------------------------------------
# Guarded memory
# --------------------------------------------------------------------------

def _mask(mask, what: str):
    if isinstance(mask, bool):
        return mask
    if not isinstance(mask, IRValue) or mask.dtype.name != "b1":
        fail(f"the mask of {what} must be a bool traced value (a "
             f"comparison), got {getattr(mask, 'dtype', type(mask).__name__)}")
    return mask


def _select(tracer, cond, a, b) -> IRValue:
    return IRValue(tracer, tracer.call("control_select", cond._value,
                                       a._value, b._value))


def load_if(buf, index, mask, default=0) -> IRValue:
    """``mask ? buf[index] : default`` without a branch (two ``select``\\ s).

    Never reads out of bounds when ``mask`` is false: the load then reads
    element 0 instead of ``index`` (so ``buf`` must hold at least one
    element) and its value is discarded. ``default`` is converted to the
    element type (and fills every lane of a ``vec_width`` buffer's vector).
    Works on buffers and threadgroup tensors.
    """
    tracer = current_tracer("enigma.load_if")
    mask = _mask(mask, "load_if")
    if mask is True:
        return buf[index]
    if mask is False:
        return fill_lanes(tracer, to_value(default, buf.dtype).cast(buf.dtype),
                     getattr(buf, "lanes", 1))
    if isinstance(index, tuple):
        # A buffer with a shape: each index is 0 where the mask is false
        # (element 0 is read, and its index checks pass).
        safe = tuple(_select(tracer, mask, i, to_value(0, i.dtype))
                     if isinstance(i, IRValue) else i for i in index)
        loaded = buf[safe]
        fallback = fill_lanes(tracer,
                         to_value(default, loaded.dtype).cast(loaded.dtype),
                         loaded.lanes)
        return _select(tracer, mask, loaded, fallback)
    index = plain_index(index)
    if not isinstance(index, IRValue):
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            fail(f"load_if index must be a non-negative integer, got {index!r}")
        index = to_value(index, as_dtype("u32"))
    safe = _select(tracer, mask, index, to_value(0, index.dtype))
    loaded = buf[safe]
    fallback = fill_lanes(tracer, to_value(default, loaded.dtype).cast(loaded.dtype),
                     loaded.lanes)
    return _select(tracer, mask, loaded, fallback)


def store_if(buf, index, value, mask) -> None:
    """``if (mask) buf[index] = value;`` (an ``scf.if`` around the store, so a
    false mask never touches memory)."""
    tracer = current_tracer("enigma.store_if")
    mask = _mask(mask, "store_if")
    if mask is True:
        buf[index] = value
        return
    if mask is False:
        return
    tracer.call("begin_if", mask._value, [], False)
    buf[index] = value
    tracer.call("end_if", [])


# --------------------------------------------------------------------------
# register_tensor
# --------------------------------------------------------------------------

class RegisterTensor:
    """A per-thread array from :func:`register_tensor`, indexed by tuples of
    Python ints (``t[i, j]``; ``t[k]`` for one dimension; negative indices
    count from the end). Reads give IRValues, writes convert to the element
    type. Traced indices raise EnigmaError: unroll with range_constexpr."""

    def __new__(cls, shape, dtype="float", fill=0):
        # The original's constructor: RegisterTensor(shape, dtype, fill) is
        # register_tensor(shape, dtype, fill).
        return register_tensor(shape, dtype, fill)

    def __init__(self, *args, **kwargs):
        pass  # made by _make

    @classmethod
    def _make(cls, tracer, regs, shape, dtype):
        self = object.__new__(cls)
        self._tracer, self._regs = tracer, regs
        self.shape, self.dtype = shape, dtype
        return self

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def _flat(self, index) -> int:
        if not isinstance(index, tuple):
            index = (index,)
        if len(index) != len(self.shape):
            fail(f"register tensor of shape {self.shape} needs "
                 f"{len(self.shape)} indices, got {len(index)}")
        flat = 0
        for i, d in zip(plain_index(index), self.shape):
            if isinstance(i, IRValue):
                fail("register tensors are indexed by constants (Python "
                     "ints), so that they stay in registers; unroll the loop "
                     "with enigma.range_constexpr")
            if isinstance(i, bool) or not isinstance(i, int):
                fail(f"register tensor index must be an int, got {i!r}")
            if i < 0:
                i += d
            if not 0 <= i < d:
                fail(f"index {index} is out of range for a register tensor "
                     f"of shape {self.shape}")
            flat = flat * d + i
        return flat

    def __getitem__(self, index) -> IRValue:
        flat = self._flat(index)
        return IRValue(self._tracer, self._tracer.call(
            "load_register", self._regs, flat))

    def __setitem__(self, index, value):
        flat = self._flat(index)
        value = to_value(value, self.dtype)
        self._tracer.call("store_register", self._regs, flat, value._value)

    def __repr__(self):
        return f"<register tensor {self.dtype.msl}{list(self.shape)}>"


def register_tensor(shape, dtype="float", fill=0) -> RegisterTensor:
    """A per-thread array of ``shape`` (an int or a tuple of ints), every
    element set to ``fill``: a ``memref.alloca`` in the thread address space,
    printed as a flattened local array (``float v3[16];`` for shape (4, 4)).
    """
    tracer = current_tracer("enigma.register_tensor")
    if isinstance(shape, list):
        shape = tuple(shape)
    shape = plain_index(shape)
    if isinstance(shape, int):
        shape = (shape,)
    if not isinstance(shape, tuple):
        fail(f"register_tensor shape must be an int or a tuple of ints, got "
             f"{kind_of(shape)} (the element type comes second: "
             "register_tensor((4, 4), enigma.f32))")
    if not shape or any(isinstance(d, bool) or not isinstance(d, int) or d <= 0
                        for d in shape):
        fail(f"register_tensor shape must be positive Python ints, got {shape}")
    dt = as_dtype(dtype)
    n = 1
    for d in shape:
        n *= d
    constant_fill = not isinstance(fill, IRValue)
    if constant_fill and (isinstance(fill, bool) or not is_number(fill)):
        fail(f"register_tensor fill must be a number or a traced value, got "
             f"{type(fill).__name__}")
    regs = tracer.call("alloc_registers", dt.name, n,
                       float(fill) if constant_fill else 0.0)
    t = RegisterTensor._make(tracer, regs, shape, dt)
    if not constant_fill:
        for k in builtins.range(n):
            tracer.call("store_register", regs, k, fill.cast(dt)._value)
    return t
