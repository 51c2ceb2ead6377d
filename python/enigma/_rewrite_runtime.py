"""What a rewritten kernel or helper calls at trace time, as
``__enigma_ctl__`` (the rewrite itself is in ``_source_rewrite``): the slots
of its carried variables (one set per call, a *frame*), the guards and loops
that break, continue and return lower to, and the value a function returns
from inside a run-time construct."""

from __future__ import annotations

from ._control import RangeSpec, do_while, for_range, if_, while_
from ._slots import (Slot, control_state, convert_to_slot, initial_value,
                     slot_kind)
from ._ir import (IRValue, Unbound, current_tracer, fail, to_value,
                  user_location)

# Generated names the rewrite carries like user variables (they hold the
# break, continue and return flags, a while loop's test and the values a
# function returns); every other "__enigma" name is a temporary.
FLAG_PREFIX = "__enigma_flag_"
VALUE_PREFIX = FLAG_PREFIX + "value"


def is_temporary(name: str) -> bool:
    """A generated name that is never carried."""
    return name.startswith("__enigma") and not name.startswith(FLAG_PREFIX)


def _label(name: str) -> str:
    if name.startswith(VALUE_PREFIX):
        return "the value this function returns"
    if name.startswith(FLAG_PREFIX):
        return "a break, continue or return flag"
    return f"variable '{name}'"


def _is_leaf(value) -> bool:
    """A value a slot can hold: a traced value or a Python number."""
    return isinstance(value, (IRValue, bool, int, float))


def _leaf_count(value):
    """Leaves of a list / tuple / dict nest whose leaves are all traced
    values or numbers; None for anything else (it stays plain Python)."""
    if _is_leaf(value):
        return 1
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, dict):
        items = value.values()
    else:
        return None
    total = 0
    for item in items:
        n = _leaf_count(item)
        if n is None:
            return None
        total += n
    return total


def _kind_name(value) -> str:
    return "dict" if isinstance(value, dict) else type(value).__name__


class _Container:
    """A carried variable that holds a list, tuple or dict (nested freely)
    of traced values and numbers: one slot per leaf. Its shape (kinds,
    lengths, keys) is fixed when the loop or branch starts; lists and dicts
    are updated in place, so every alias of them sees the carried values."""

    def __init__(self, name, value):
        self.name = name
        self.slots = []
        self.shape = self._build(value, name)

    def _build(self, value, path):
        if _is_leaf(value):
            slot = Slot(initial_value(value, f"element '{path}'"),
                        f"element '{path}'")
            self.slots.append(slot)
            return slot
        if isinstance(value, dict):
            keys = list(value)
            return ("dict", keys, [self._build(value[k], f"{path}[{k!r}]")
                                   for k in keys])
        return (_kind_name(value), None,
                [self._build(v, f"{path}[{k}]") for k, v in enumerate(value)])

    def _mismatch(self, path, shape, value):
        kind, keys, children = shape
        if kind == "dict":
            was = f"a dict with keys {keys}"
        else:
            was = f"a {kind} of {len(children)} elements"
        if isinstance(value, dict):
            now = f"a dict with keys {list(value)}"
        elif isinstance(value, (list, tuple)):
            now = f"a {_kind_name(value)} of {len(value)} elements"
        else:
            now = f"a {type(value).__name__}"
        fail(f"'{path}' is carried through this loop or branch as {was} "
             f"(its value before it), but it is {now} here: a carried list, "
             "tuple or dict keeps its length and keys (append, pop, insert "
             "and del run once when the body is traced, not once per "
             "iteration); preallocate it before the loop or branch")

    def _leaves(self, shape, value, path, out):
        if isinstance(shape, Slot):
            out.append((shape, value))
            return
        kind, keys, children = shape
        if kind == "dict":
            if not isinstance(value, dict) or set(value) != set(keys):
                self._mismatch(path, shape, value)
            for k, child in zip(keys, children):
                self._leaves(child, value[k], f"{path}[{k!r}]", out)
            return
        if _kind_name(value) != kind or len(value) != len(children):
            self._mismatch(path, shape, value)
        for k, (child, v) in enumerate(zip(children, value)):
            self._leaves(child, v, f"{path}[{k}]", out)

    def publish(self, value):
        """The current container's leaves -> the slots (converted)."""
        pairs = []
        self._leaves(self.shape, value, self.name, pairs)
        for slot, v in pairs:
            slot.value = convert_to_slot(slot, v)

    def _rebuild(self, shape, current):
        if isinstance(shape, Slot):
            return shape.value
        kind, keys, children = shape
        if kind == "dict":
            target = current if isinstance(current, dict) and \
                set(current) == set(keys) else {}
            for k, child in zip(keys, children):
                target[k] = self._rebuild(child, target.get(k))
            return target
        same = _kind_name(current) == kind and len(current) == len(children)
        values = [self._rebuild(child, current[k] if same else None)
                  for k, child in enumerate(children)]
        if kind == "list":
            if same:
                current[:] = values  # in place: aliases see the values
                return current
            return values
        return tuple(values)

    def reload(self, current):
        """The container with the slots' values (the same list / dict
        object when it still has the carried shape)."""
        return self._rebuild(self.shape, current)


class _Frame:
    """The tracked variables of one call of a rewritten function (a helper
    called twice, or called while the kernel tracks a variable of the same
    name, has its own)."""

    __slots__ = ("named", "name")

    def __init__(self, name: str = "?"):
        self.named = {}
        self.name = name


class _NoGuard:
    """``unless(...)`` of flags that are all Python False: nothing to
    guard, the body runs as it is."""

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        return False


_NO_GUARD = _NoGuard()


def any_flag(*flags):
    """The OR of break / continue / return flags: a Python bool while all
    are Python bools, else a traced bool."""
    traced = None
    for f in flags:
        if isinstance(f, IRValue):
            traced = f if traced is None else traced | f
        elif f:
            return True
    return False if traced is None else traced


class Runtime:
    """The helpers the rewritten source calls, as ``__enigma_ctl__``."""

    if_ = if_
    any_flag = staticmethod(any_flag)

    @staticmethod
    def frame(name: str = "?") -> _Frame:
        return _Frame(name)

    # --- carried variables -------------------------------------------------
    @staticmethod
    def declare(frame, scope: dict, names, what: str, construct=None) -> list:
        """Tracks the variables `names` in slots (those not tracked yet and
        holding a traced value, a number, or a list / tuple / dict of them,
        or no value: pending); returns the new ones. Nothing for a guard
        that guards nothing."""
        if construct is _NO_GUARD:
            return []
        st = control_state(current_tracer("enigma control flow"))
        file, line = user_location()
        new = []
        for name in names:
            if name in frame.named:
                continue
            value = scope.get(name, Unbound(name, ""))
            placeholder = name.startswith(VALUE_PREFIX)
            if isinstance(value, Unbound):
                slot = Slot(None, _label(name), placeholder, unbound=(
                    f"it has no value before the {what} at {file}:{line}, "
                    "which carries it (it is assigned inside and read after "
                    f"it{' or in a later iteration' if what == 'loop' else ''}"
                    f"); give it a value before the {what}"))
                frame.named[name] = slot
                st.live.append(slot)
            elif _is_leaf(value):
                slot = Slot(initial_value(value, _label(name)), _label(name),
                            placeholder)
                frame.named[name] = slot
                st.live.append(slot)
            elif _leaf_count(value):
                tracked = _Container(name, value)
                frame.named[name] = tracked
                st.live.extend(tracked.slots)
            else:
                continue  # a Python object: stays plain Python
            new.append(name)
        return new

    @staticmethod
    def undeclare(frame, names) -> None:
        st = control_state(current_tracer("enigma control flow"))
        for name in names:
            tracked = frame.named.pop(name, None)
            if tracked is None:
                continue  # no longer tracked (it took a Python object)
            slots = tracked.slots if isinstance(tracked, _Container) \
                else [tracked]
            ids = {id(s) for s in slots}
            st.live[:] = [s for s in st.live if id(s) not in ids]

    @staticmethod
    def publish(frame, scope: dict, names) -> None:
        for name in names:
            tracked = frame.named.get(name)
            if tracked is None or name not in scope:
                continue
            value = scope[name]
            if isinstance(value, Unbound):
                continue
            if isinstance(tracked, _Container):
                tracked.publish(value)
            elif tracked.placeholder and not _is_leaf(value):
                what = "None (a bare return) at one return and a value at " \
                    "another" if value is None else type(value).__name__
                fail(f"function '{frame.name}' returns {what} from inside a "
                     "run-time if_ or loop; only traced values and numbers "
                     "can be returned there, one at every return")
            elif tracked.value is None and not _is_leaf(value):
                # A Python object stays plain Python, as it would have
                # had it a value before the construct.
                Runtime.undeclare(frame, [name])
            else:
                tracked.value = convert_to_slot(tracked, value)

    @staticmethod
    def reload(frame, scope: dict, names) -> tuple:
        out = []
        for name in names:
            tracked = frame.named.get(name)
            if tracked is None:
                out.append(scope.get(name, Unbound(
                    name, "it is assigned only where it was not traced")))
            elif isinstance(tracked, _Container):
                out.append(tracked.reload(scope.get(name)))
            elif tracked.value is None:
                out.append(Unbound(name, tracked.unbound))
            else:
                out.append(tracked.value)
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
        want = slot_kind(old.dtype)
        if isinstance(value, (bool, int, float)):
            number_kind = ("bool" if isinstance(value, bool) else
                           "integer" if isinstance(value, int) else "float")
            return to_value(value, old.dtype) if number_kind == want else value
        if not isinstance(value, IRValue) or value.lanes != old.lanes or \
                slot_kind(value.dtype) != want:
            return value
        return value.cast(old.dtype)

    # --- loops -------------------------------------------------------------
    @staticmethod
    def begin(loop) -> None:
        """Opens a loop whose condition reads the kernel's variables (a
        while_, a loop with a stop function), before they are reloaded."""
        if isinstance(loop, (while_, do_while, for_range)):
            loop._begin()

    @staticmethod
    def range_loop(spec, stop=None) -> for_range:
        if not isinstance(spec, RangeSpec):
            fail("expected enigma.range(...)")
        args = spec.args
        if len(args) == 1:
            args = (0, args[0])
        loop = for_range(*args, dtype=spec.dtype)
        loop._stop = stop
        return loop

    @staticmethod
    def stopping(loop, stop):
        """`loop` (a for_range or while_ of the user's) ending also where
        `stop()` holds: a return inside it."""
        if isinstance(loop, (for_range, while_)):
            loop._stop = stop
        return loop

    do_while = do_while

    @staticmethod
    def traced(test) -> bool:
        """Whether the first test of a `while` statement is traced (the
        loop is then a run-time loop) or a Python value (unrolled)."""
        if isinstance(test, Unbound):
            test.fail()
        if not isinstance(test, IRValue):
            return False
        if test.dtype.name != "b1" or test.lanes != 1:
            fail(f"the test of a while loop must be one bool, got a "
                 f"{test!r}; compare it (while n > 0:)")
        return True

    @staticmethod
    def python_test(test):
        if isinstance(test, IRValue):
            fail("the test of this while loop was a Python value when the "
                 "loop started and is a traced value now; a while loop is "
                 "either unrolled when the kernel is traced (its test a "
                 "Python value every time) or a run-time loop (a traced "
                 "test from the start): give the variables it tests a "
                 "traced value before the loop")
        return test

    # --- guards --------------------------------------------------------------
    @staticmethod
    def live(*flags) -> bool:
        """False once a flag is a Python True (the code after a break,
        continue or return that surely ran is not traced)."""
        return not any(f is True for f in flags)

    @staticmethod
    def unless(*flags):
        """The guard of the code after a break, continue or return that
        may run: an if_ on none of the traced flags holding."""
        flag = any_flag(*flags)
        if flag is False:
            return _NO_GUARD
        if flag is True:
            return if_(to_value(False))
        return if_(~flag)

    # --- returns -------------------------------------------------------------
    @staticmethod
    def result(returned, values, name: str, arity: int, end: str):
        """What a function whose returns were lowered returns: `values()`
        (the returned value, or a tuple of `arity` values) once a return
        surely ran; None when none ran. `end` names the function's end when
        it may fall off it without a return."""
        if returned is False:
            return None
        try:
            got = values()
        except NameError:
            got = None
        if arity == 0:
            return None
        if returned is not True and end:
            fail(f"function '{name}' returns a value from inside a run-time "
                 f"if_ or loop but may also reach its end ({end}) without "
                 "returning one; end it with a return")
        got = tuple(got) if arity > 1 else (got,)
        for v in got:
            if isinstance(v, Unbound):
                v.fail()
        return got if arity > 1 else got[0]
