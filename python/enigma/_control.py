"""Control flow of the Enigma language (API.md section 10): counted loops,
branches, while loops, guarded memory access and per-thread register arrays.

How carried values work
-----------------------
The body of a loop or branch is traced once, so a value assigned inside it
cannot simply be a Python variable: it becomes an MLIR block argument or an
op result. Enigma keeps every value that may change inside a construct in a
*slot*:

* ``carry[k]`` of ``for_range(..., init=[...])`` and ``while_(..., init=...)``;
* the Python variables that ``enigma.range`` loops (and ``with`` statements of
  these constructs) assign and use later: the kernel's source is rewritten
  when it is decorated (``prepare_kernel_function``) so that those variables
  are copied into slots before each construct and back out after it.

Every construct carries *all* live slots: a loop yields them as iter_args, a
branch as results of its ``scf.if``. So an assignment inside an ``if_`` arm
is a result of the branch (the other arm yields the old value), and an
assignment inside a nested loop is carried by that loop too. Slots that do
not change are removed again by the canonicalizer.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types

from . import _core
from ._dtypes import as_dtype
from ._tracing import (EnigmaError, IRValue, current_tracer, fail,
                       to_value, user_location)

__all__ = ["for_range", "range", "range_constexpr", "if_", "while_",
           "load_if", "store_if", "register_tensor", "Carry",
           "RegisterTensor"]


# --------------------------------------------------------------------------
# Slots
# --------------------------------------------------------------------------

class _Slot:
    """One carried value: its current IRValue and a name for messages."""

    __slots__ = ("value", "label")

    def __init__(self, value: IRValue, label: str):
        self.value = value
        self.label = label


class _State:
    """Per-trace control-flow state: the live slots (carried by every
    construct opened from now on) and the slots of tracked variables."""

    def __init__(self):
        self.live: list[_Slot] = []
        self.named: dict[str, _Slot] = {}


def _state(tracer) -> _State:
    st = getattr(tracer, "_enigma_control", None)
    if st is None:
        st = tracer._enigma_control = _State()
    return st


def _kind(dtype) -> str:
    if dtype.name == "b1":
        return "bool"
    return "float" if dtype.is_float else "integer"


def _initial(value, label: str) -> IRValue:
    """The IRValue a slot starts with: IRValues as they are, Python numbers
    as constants (bool -> b1, int -> i32, float -> f32)."""
    if isinstance(value, IRValue):
        return value
    if isinstance(value, (bool, int, float)):
        return to_value(value)
    fail(f"{label} must start as a traced value or a number, got "
         f"{type(value).__name__}")


def _convert(slot: _Slot, value) -> IRValue:
    """`value` as the slot's dtype. Integer widths and float widths convert
    as in C; a change between integer, float and bool is refused, since
    the slot's type is fixed by its initial value."""
    want = slot.value.dtype
    if not isinstance(value, IRValue):
        if not isinstance(value, (bool, int, float)):
            fail(f"{slot.label} holds {want.name} values but is assigned a "
                 f"{type(value).__name__}")
        value = to_value(value, want)
    if _kind(value.dtype) != _kind(want):
        fail(f"{slot.label} is carried as {want.name} (the type of its value "
             f"before the loop or branch) but is assigned a {value.dtype.name}"
             f" value; give it a {_kind(value.dtype)} initial value (e.g. "
             f"{'0.0' if value.dtype.is_float else '0'}) or convert with "
             "enigma.metal_cast")
    return value.cast(want)


def _open(tracer, own=()):
    """Slots a construct carries: every live slot, then its own."""
    return list(_state(tracer).live) + list(own)


def _rebind(tracer, slots, values):
    for slot, v in zip(slots, values):
        slot.value = IRValue(tracer, v)


def _raw(slots):
    return [s.value._value for s in slots]


def _call(tracer, name: str, *args):
    """Calls a free function of _core on the tracer's builder with the
    user's location; C++ errors get the user's file:line."""
    file, line = user_location()
    tracer.builder.set_location(file, line)
    try:
        return getattr(_core, name)(tracer.builder, *args)
    except EnigmaError as e:
        raise EnigmaError(f"{file}:{line}: {e}") from None


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

    def _slot(self, k) -> _Slot:
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
        slot.value = _convert(slot, value)

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
    return Carry([_Slot(_initial(v, f"carry[{k}]"), f"carry[{k}]")
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
    if isinstance(x, bool) or not isinstance(x, int):
        fail(f"loop {what} must be an integer or a traced integer, got "
             f"{type(x).__name__} {x!r}")
    return to_value(x, dt)


class for_range:
    """``with enigma.for_range(lo, hi, step=1, *, dtype="int", init=None) as i:``

    A counted loop, ``for (i = lo; i < hi; i += step)``, traced once (an
    ``scf.for``). Bounds are Python ints or integer IRValues (converted to
    ``dtype``, the type of ``i``); a float bound or step raises EnigmaError,
    and a Python ``step`` must be positive. Like ``scf.for``, the loop
    compares as signed integers.

    With ``init=[v0, v1, ...]`` the statement is ``as (i, carry)``: ``carry``
    is a :class:`Carry` whose elements are loop-carried values; assign
    ``carry[k] = ...`` in the body and read ``carry[k]`` after the loop.
    """

    def __init__(self, lo, hi=None, step=1, *, dtype="int", init=None):
        if hi is None:
            lo, hi = 0, lo
        self._args = (lo, hi, step)
        self._dtype = dtype
        self._init = init
        self._phase = "new"

    def __enter__(self):
        tracer = current_tracer("enigma.for_range")
        if self._phase != "new":
            fail("a for_range object can be entered only once")
        dt = _loop_dtype(self._dtype)
        lo, hi, step = (_bound(x, dt, w) for x, w in
                        zip(self._args, ("lower bound", "upper bound",
                                         "step")))
        if not isinstance(self._args[2], IRValue) and self._args[2] <= 0:
            fail(f"loop step must be positive, got {self._args[2]}")
        self._carry = _make_carry(self._init, "for_range")
        own = self._carry._slots if self._carry else []
        self._slots = _open(tracer, own)
        values = tracer.call("begin_for", lo._value, hi._value, step._value,
                             _raw(self._slots))
        _rebind(tracer, self._slots, values[1:])
        _state(tracer).live.extend(own)
        self._tracer, self._phase = tracer, "body"
        index = IRValue(tracer, values[0])
        return index if self._carry is None else (index, self._carry)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None or self._phase != "body":
            return False  # let the user's exception propagate as it is
        tracer = self._tracer
        results = tracer.call("end_for", _raw(self._slots))
        _rebind(tracer, self._slots, results)
        if self._carry is not None:
            live = _state(tracer).live
            del live[len(live) - len(self._carry):]
            self._carry._closed = True
        self._phase = "done"
        return False


class _RangeSpec:
    """What ``enigma.range(...)`` returns; a ``for`` statement over it is
    rewritten into a traced loop when the kernel is decorated."""

    def __init__(self, args, dtype):
        self.args, self.dtype = args, dtype

    def __iter__(self):
        fail("enigma.range can only be the iterable of a `for` statement "
             "directly in an @enigma.kernel function whose source Python can "
             "read (inspect.getsource); here it cannot be rewritten. Use "
             "`with enigma.for_range(lo, hi, step) as i:` instead")


def range(*args, dtype="int"):  # noqa: A001  (enigma.range by design)
    """``for i in enigma.range(stop)`` / ``enigma.range(start, stop[, step])``

    A traced counted loop written as a Python ``for`` (same bounds rules as
    :func:`for_range`). Variables assigned in the body and used after the
    loop, or read in the body before being assigned there, are carried from
    iteration to iteration automatically; each must have a value before the
    loop. ``break``, ``continue``, ``return`` and ``else:`` are not allowed in
    the body. Works by rewriting the kernel's source when it is decorated.
    """
    if not 1 <= len(args) <= 3:
        fail(f"enigma.range takes 1 to 3 arguments, got {len(args)}")
    return _RangeSpec(args, dtype)


def range_constexpr(*args):
    """``for h in enigma.range_constexpr(n)``: a loop unrolled at trace time,
    i.e. Python's ``range`` over Python ints (traced values raise
    EnigmaError). The body is traced once per iteration."""
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
        self._tracer = tracer
        self._slots = _open(tracer)
        self._entry = [s.value for s in self._slots]
        tracer.call("begin_if", cond._value,
                    [s.value.dtype.name for s in self._slots], True)
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
        tracer.call("begin_else", _raw(self._slots))
        for slot, v in zip(self._slots, self._entry):
            slot.value = v
        self._phase = "else"

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None or self._phase not in ("then", "else"):
            return False
        if self._phase == "then":
            self._switch_to_else()
        results = self._tracer.call("end_if", _raw(self._slots))
        _rebind(self._tracer, self._slots, results)
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

    def _begin(self):
        tracer = current_tracer("enigma.while_")
        if self._phase != "new":
            fail("a while_ object can be entered only once")
        self._carry = _make_carry(self._init, "while_")
        own = self._carry._slots if self._carry else []
        self._slots = _open(tracer, own)
        values = _call(tracer, "begin_while", _raw(self._slots))
        _rebind(tracer, self._slots, values)
        _state(tracer).live.extend(own)
        self._tracer, self._phase = tracer, "cond"

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
        values = _call(tracer, "while_condition", cond._value,
                       _raw(self._slots))
        _rebind(tracer, self._slots, values)
        self._phase = "body"
        return self._carry

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None or self._phase != "body":
            return False
        tracer = self._tracer
        results = _call(tracer, "end_while", _raw(self._slots))
        _rebind(tracer, self._slots, results)
        if self._carry is not None:
            live = _state(tracer).live
            del live[len(live) - len(self._carry):]
            self._carry._closed = True
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
    return IRValue(tracer, _call(tracer, "control_select", cond._value,
                                 a._value, b._value))


def load_if(buf, index, mask, default=0) -> IRValue:
    """``mask ? buf[index] : default`` without a branch (two ``select``\\ s).

    Never reads out of bounds when ``mask`` is false: the load then reads
    element 0 instead of ``index`` (so ``buf`` must hold at least one
    element) and its value is discarded. ``default`` is converted to the
    element type. Works on buffers and threadgroup tensors.
    """
    tracer = current_tracer("enigma.load_if")
    mask = _mask(mask, "load_if")
    if mask is True:
        return buf[index]
    if mask is False:
        return to_value(default, buf.dtype).cast(buf.dtype)
    if not isinstance(index, IRValue):
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            fail(f"load_if index must be a non-negative integer, got {index!r}")
        index = to_value(index, as_dtype("u32"))
    safe = _select(tracer, mask, index, to_value(0, index.dtype))
    loaded = buf[safe]
    fallback = to_value(default, loaded.dtype).cast(loaded.dtype)
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

    def __init__(self, tracer, regs, shape, dtype):
        self._tracer, self._regs = tracer, regs
        self.shape, self.dtype = shape, dtype

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
        for i, d in zip(index, self.shape):
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
        return IRValue(self._tracer, _call(self._tracer, "load_register",
                                           self._regs, flat))

    def __setitem__(self, index, value):
        flat = self._flat(index)
        value = to_value(value, self.dtype)
        _call(self._tracer, "store_register", self._regs, flat, value._value)

    def __repr__(self):
        return f"<register tensor {self.dtype.msl}{list(self.shape)}>"


def register_tensor(shape, dtype="float", fill=0) -> RegisterTensor:
    """A per-thread array of ``shape`` (an int or a tuple of ints), every
    element set to ``fill``: a ``memref.alloca`` in the thread address space,
    printed as a flattened local array (``float v3[16];`` for shape (4, 4)).
    """
    tracer = current_tracer("enigma.register_tensor")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(shape)
    if not shape or any(isinstance(d, bool) or not isinstance(d, int) or d <= 0
                        for d in shape):
        fail(f"register_tensor shape must be positive Python ints, got {shape}")
    dt = as_dtype(dtype)
    n = 1
    for d in shape:
        n *= d
    constant_fill = not isinstance(fill, IRValue)
    if constant_fill and (isinstance(fill, bool) or
                          not isinstance(fill, (int, float))):
        fail(f"register_tensor fill must be a number or a traced value, got "
             f"{type(fill).__name__}")
    regs = _call(tracer, "alloc_registers", dt.name, n,
                 float(fill) if constant_fill else 0.0)
    t = RegisterTensor(tracer, regs, shape, dt)
    if not constant_fill:
        for k in builtins.range(n):
            _call(tracer, "store_register", regs, k, fill.cast(dt)._value)
    return t


# --------------------------------------------------------------------------
# Runtime helpers of the rewritten source (see the rewrite below)
# --------------------------------------------------------------------------

class _Unbound:
    def __repr__(self):
        return "<unbound>"


_UNBOUND = _Unbound()


class _Runtime:
    """The helpers the rewritten kernel calls, as ``__enigma_ctl__``."""

    @staticmethod
    def range_loop(spec) -> for_range:
        if not isinstance(spec, _RangeSpec):
            fail("expected enigma.range(...)")
        args = spec.args
        if len(args) == 1:
            args = (0, args[0])
        return for_range(*args, dtype=spec.dtype)

    @staticmethod
    def declare(scope: dict, names) -> list:
        """Tracks the variables `names` in slots (those not tracked yet and
        holding a traced value or a number); returns the new ones."""
        st = _state(current_tracer("enigma control flow"))
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
            if not isinstance(value, (IRValue, bool, int, float)):
                continue  # a Python object: stays plain Python
            slot = _Slot(_initial(value, f"variable '{name}'"),
                         f"variable '{name}'")
            st.named[name] = slot
            st.live.append(slot)
            new.append(name)
        return new

    @staticmethod
    def undeclare(names) -> None:
        st = _state(current_tracer("enigma control flow"))
        for name in names:
            slot = st.named.pop(name)
            st.live.remove(slot)

    @staticmethod
    def publish(scope: dict, names) -> None:
        st = _state(current_tracer("enigma control flow"))
        for name in names:
            slot = st.named.get(name)
            if slot is not None and name in scope:
                slot.value = _convert(slot, scope[name])

    @staticmethod
    def reload(scope: dict, names) -> tuple:
        st = _state(current_tracer("enigma control flow"))
        out = []
        for name in names:
            slot = st.named.get(name)
            out.append(slot.value if slot is not None
                       else scope.get(name, _UNBOUND))
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
        want = _kind(old.dtype)
        if isinstance(value, (bool, int, float)):
            number_kind = ("bool" if isinstance(value, bool) else
                           "integer" if isinstance(value, int) else "float")
            return to_value(value, old.dtype) if number_kind == want else value
        if not isinstance(value, IRValue) or value.lanes != old.lanes or \
                _kind(value.dtype) != want:
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
        for name, obj in (("range", range), ("for_range", for_range),
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

    def visit_Assign(self, node):
        self.visit(node.value)
        for t in node.targets:
            self.visit(t)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self._name(node.target.id, "load")
        self.visit(node.value)
        self.visit(node.target)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

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
    return {n for n, k in _events(stmts) if k == "store"}


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
            for child in ast.iter_child_nodes(node):
                walk(child, nested if child not in getattr(node, "orelse", [])
                     else in_loop)
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
