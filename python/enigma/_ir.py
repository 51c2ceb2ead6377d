"""The leaf of the Python front end: the kernel being traced (Tracer), the
values a kernel body computes with (IRValue, and Fragment for matrices held
by a simdgroup), buffer parameters (BufferProxy), and the one located call
into the C++ core (``Tracer.call`` / ``located``). It imports nothing of
the package but ``_core`` and ``_dtypes``; every other module builds on
it (docs/design/python-layers.md)."""

from __future__ import annotations

import numbers
import operator
import os
import sys
import threading

from . import _core
from ._dtypes import DType, as_dtype, b1, f32, plain_index

EnigmaError = _core.EnigmaError

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_state = threading.local()


# --------------------------------------------------------------------------
# Where the user is, and the one located call into the core
# --------------------------------------------------------------------------

def in_package(filename: str) -> bool:
    """Whether ``filename`` is a source file of the enigma package."""
    return os.path.abspath(filename).startswith(PACKAGE_DIR)


def user_location():
    """(file, line) of the innermost frame outside the enigma package."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not in_package(filename):
            return filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


def _raise_located(error, file, line, context=""):
    """``error`` raised again naming the user's ``file:line`` (kept as it
    is when it already names that line)."""
    message = str(error)
    if message.startswith(f"{file}:{line}:"):
        raise error
    raise EnigmaError(f"{file}:{line}: {context}{message}") from None


def located(function, *args):
    """``function(*args)`` for a function of the core that takes no
    builder (the layout algebra): an EnigmaError it raises names the
    user's file:line."""
    try:
        return function(*args)
    except EnigmaError as e:
        file, line = user_location()
        _raise_located(e, file, line)


class Tracer:
    """The kernel being traced on this thread. ``location`` is the kernel's
    def line: its parameters and the errors about the kernel itself carry
    it."""

    def __init__(self, name: str, location=("<unknown>", 0)):
        self.builder = _core.KernelBuilder(name)
        self.name = name
        self.location = location
        self.builder.set_location(*location)
        # Buffer proxies by parameter index, for enigma.Tensor (_tensor.py).
        self.buffers = {}

    def call(self, function, *args, context: str = "", at=None):
        """The one call into the core while tracing: ``function`` (a
        function of ``_core`` that takes the builder first, or its name,
        or the name of a KernelBuilder method) runs on this kernel's
        builder with the user's file:line (or ``at``, a (file, line))
        attached to the ops it creates; an EnigmaError it raises is raised
        again naming that line (after ``context``, when given)."""
        if isinstance(function, str):
            name = function
            function = getattr(_core, name, None)
            if function is None:
                function = getattr(_core.KernelBuilder, name)
        file, line = user_location() if at is None else at
        self.builder.set_location(file, line)
        try:
            return function(self.builder, *args)
        except EnigmaError as e:
            _raise_located(e, file, line, context)


def active_tracer():
    """The Tracer of the kernel being traced on this thread, or None."""
    return getattr(_state, "tracer", None)


def set_active_tracer(tracer) -> None:
    """Starts (a Tracer) or ends (None) tracing on this thread."""
    _state.tracer = tracer


def current_tracer(what: str = "this") -> Tracer:
    tracer = getattr(_state, "tracer", None)
    if tracer is None:
        raise EnigmaError(
            f"{what} can only be used inside an @enigma.kernel body while it "
            "is traced by enigma.compile")
    return tracer


class MissingAttributeError(EnigmaError, AttributeError):
    """An attribute a buffer or a traced value lacks (numpy's ``A.size``,
    ``A.sum()``, ``x.astype``), said at the user's line with what a kernel
    writes instead. Also an AttributeError, so that ``hasattr`` and
    ``getattr`` with a default keep answering False and the default."""


def fail(message: str, error: type = EnigmaError):
    """Raises ``error`` (an EnigmaError) prefixed with the user's
    file:line."""
    file, line = user_location()
    raise error(f"{file}:{line}: {message}")


def _elementwise_function(name: str) -> bool:
    """Whether ``enigma.<name>`` is one of the element-wise functions (a row
    of the op families' table): read from the table, not the package,
    whose lazy names would import modules or trace a thread query."""
    return name in _ELEMENTWISE_NAMES


_ELEMENTWISE_NAMES = frozenset(row[1] for row in _core.function_table())


# What numpy's array and scalar attributes are in a kernel, for the errors
# of the attributes buffers and traced values lack.
_REDUCTIONS = {"sum", "max", "min", "mean", "prod", "argmax", "argmin",
               "any", "all", "cumsum", "cumprod", "std", "var", "dot",
               "nonzero", "count_nonzero", "norm"}
_SIZES = {"size", "nbytes", "length", "len", "count", "shape", "ndim"}
_VIEWS = {"reshape", "T", "transpose", "flatten", "ravel", "view",
          "squeeze", "unsqueeze", "swapaxes", "permute", "contiguous"}
_CONVERSIONS = {"astype", "item", "tolist", "numpy", "to", "cpu", "cuda",
                "type", "float", "int", "half", "double"}
_WRITES = {"fill", "fill_", "zero_", "copy_", "put", "itemset", "copy",
           "append", "clear"}


def static_int(x, what: str, minimum: int = 1) -> int:
    """``x`` as a Python int of at least ``minimum`` (a compile-time
    size), else EnigmaError."""
    x = plain_index(x)
    if isinstance(x, bool) or not isinstance(x, int):
        fail(f"{what} must be a Python int, got {type(x).__name__}")
    if x < minimum:
        fail(f"{what} must be at least {minimum}, got {x}")
    return x


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------

def _constant(tracer: Tracer, value, dtype: DType) -> "IRValue":
    if dtype.is_float:
        return IRValue(tracer, tracer.call("constant_float", float(value),
                                           dtype.name))
    value = int(value)
    if dtype.itemsize == 8 and not dtype.is_signed and \
            (1 << 63) <= value < (1 << 64):
        value -= 1 << 64  # the same 64 bits: constant_int takes an int64
    if not -(1 << 63) <= value < (1 << 63):
        fail(f"the number {value} does not fit in {dtype.name}")
    return IRValue(tracer, tracer.call("constant_int", value, dtype.name))


class Unbound:
    """What a variable holds after the source rewrite found it without a
    value (Python would raise NameError reading it): assigned only inside
    a loop or in one arm of an if_, or first inside a construct that reads
    it before. Any use raises EnigmaError at the user's line saying why."""

    __slots__ = ("name", "why")

    def __init__(self, name: str, why: str):
        self.name, self.why = name, why

    def fail(self, *args, **kwargs):
        fail(f"variable '{self.name}' has no value here: {self.why}")

    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        self.fail()

    def __repr__(self) -> str:
        return f"<variable {self.name!r} without a value>"

    __bool__ = __call__ = __getitem__ = __setitem__ = __iter__ = fail
    __index__ = __int__ = __float__ = __len__ = __neg__ = __invert__ = fail
    __abs__ = __pos__ = __lt__ = __le__ = __gt__ = __ge__ = fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = fail
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = fail
    __mod__ = __rmod__ = __pow__ = __rpow__ = __and__ = __rand__ = fail
    __or__ = __ror__ = __xor__ = __rxor__ = __lshift__ = __rlshift__ = fail
    __rshift__ = __rrshift__ = __matmul__ = __rmatmul__ = fail

    def __eq__(self, other):
        return other is self

    __hash__ = object.__hash__


def is_number(x) -> bool:
    """A Python (or numpy) real number: what a traced value may be made
    from."""
    return isinstance(x, numbers.Number) and not isinstance(x, complex)


def kind_of(x) -> str:
    """How an error names a value of the wrong kind: its type, or for one
    of enigma's own functions (a thread query written without its call,
    as ``enigma.thread_position_in_grid`` may be) the call to write."""
    name = getattr(x, "__name__", None)
    package = sys.modules.get("enigma")
    if name and not isinstance(x, type) and callable(x) and \
            getattr(package, name, None) is x:
        return f"the function enigma.{name}: call it, enigma.{name}()"
    return type(x).__name__


def to_value(x, like: DType | None = None) -> "IRValue":
    """An IRValue for ``x``. IRValues pass through. Python numbers become
    constants: a bool is a b1; an int takes the type ``like`` (i32 when
    none); a float takes ``like`` when that is a float type, else f32."""
    if isinstance(x, IRValue):
        return x
    if isinstance(x, Unbound):
        x.fail()
    if isinstance(x, ElementsOnly):
        x._not_a_value()
    tracer = current_tracer("a traced value")
    if not is_number(x):
        fail(f"expected a traced value or a number, got {kind_of(x)}")
    if isinstance(x, bool):
        return _constant(tracer, int(x), b1)
    if isinstance(x, int) or (hasattr(x, "is_integer") and
                              not isinstance(x, float) and x.is_integer()):
        return _constant(tracer, int(x), like if like is not None
                         else as_dtype("i32"))
    x = float(x)
    return _constant(tracer, x, like if like is not None and like.is_float
                     else f32)


def operands(a, b):
    """Both operands as IRValues of their common type (docs/language.md):
    numbers adopt the type of the other operand, mixed types promote."""
    for x in (a, b):
        if isinstance(x, Unbound):
            x.fail()
    a_is_value, b_is_value = isinstance(a, IRValue), isinstance(b, IRValue)
    if not a_is_value and not b_is_value:
        fail("at least one operand must be a traced value")
    # A number next to an 8-bit float is an f32, as the arithmetic is.
    if not a_is_value:
        a = to_value(a, f32 if b.dtype.is_float8 else b.dtype)
    if not b_is_value:
        b = to_value(b, f32 if a.dtype.is_float8 else a.dtype)
    common = _core.KernelBuilder.promote(a.dtype.name, b.dtype.name)
    return a.cast(common), b.cast(common)


_LANE_NAMES = {"x": 0, "y": 1, "z": 2, "w": 3}


# x ** n unrolls into n - 1 multiplications up to this n.
_MAX_POWER = 16


# numpy ufuncs that are Python operators (np.float32(2) * x), and the
# enigma names of the others' counterparts, for the error.
_NUMPY_OPERATORS = {
    "add": operator.add, "subtract": operator.sub,
    "multiply": operator.mul, "true_divide": operator.truediv,
    "divide": operator.truediv, "floor_divide": operator.floordiv,
    "remainder": operator.mod, "power": operator.pow,
    "bitwise_and": operator.and_, "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor, "left_shift": operator.lshift,
    "right_shift": operator.rshift, "less": operator.lt,
    "less_equal": operator.le, "greater": operator.gt,
    "greater_equal": operator.ge, "equal": operator.eq,
    "not_equal": operator.ne, "negative": operator.neg,
    "absolute": operator.abs, "invert": operator.invert,
}
_NUMPY_NAMES = {"maximum": "fmax", "minimum": "fmin", "fabs": "abs"}


class IRValue:
    """A value inside a kernel being traced: a scalar, or a vector of 2 to 4
    lanes (``lanes``; read lanes with ``.x .y .z .w``). Supports Python's
    arithmetic, bitwise and comparison operators, lane by lane on vectors (a
    scalar next to a vector is broadcast); comparisons give bool IRValues."""

    __slots__ = ("_tracer", "_value")

    def __new__(cls, tracer=None, value=None):
        # A fragment (an M x N matrix held by a simdgroup) is an IRValue
        # with its own operators (below).
        if cls is IRValue and value is not None and \
                _core.mma_shape(value) is not None:
            cls = Fragment
        return object.__new__(cls)

    def __init__(self, tracer: Tracer, value):
        self._tracer = tracer
        self._value = value

    @property
    def dtype(self) -> DType:
        """The element type (of each lane, for vectors)."""
        return as_dtype(self._value.dtype)

    @property
    def lanes(self) -> int:
        """1 for a scalar, 2..4 for a vector."""
        return _core.value_lanes(self._value)

    def _lane(self, name: str) -> "IRValue":
        if self.lanes == 1:
            fail(f".{name} reads a lane of a vector, but this value is a "
                 f"{self.dtype.name} scalar")
        return self._lane_at(_LANE_NAMES[name], f".{name}")

    def __getitem__(self, lane) -> "IRValue":
        """``v[i]``: lane ``i`` of a vector (a Python int), as Metal reads
        ``v[i]``; the same as ``.x .y .z .w``."""
        self._subscriptable()
        return self._lane_at(lane, "v[{}]")

    def _lane_at(self, lane, spelled: str) -> "IRValue":
        """Lane ``lane`` (a constant int) of this vector; an error names
        the access as ``spelled`` with the lane in its ``{}`` (``v[{}]``,
        ``.w``, ``vec_extract lane {}``)."""
        lane = plain_index(lane)
        if isinstance(lane, bool) or not isinstance(lane, int):
            fail(f"a lane index must be a constant (a Python int, 0 to "
                 f"{self.lanes - 1}), got {kind_of(lane)}")
        if not 0 <= lane < self.lanes:
            fail(f"{spelled.format(lane)} is out of range for a "
                 f"{self.lanes}-lane vector")
        return IRValue(self._tracer,
                       self._tracer.call("vec_extract", self._value, lane))

    def __setitem__(self, lane, value):
        self._subscriptable()
        fail("traced values cannot be changed in place (v[i] = ...); build "
             "the new vector with make_vec(...) from its lanes")

    def _subscriptable(self) -> None:
        """Refuses a subscript of a scalar: most often numpy's ``A[y][x]``
        on a buffer, whose ``A[y]`` is one element."""
        if self.lanes == 1:
            fail(f"this {self.dtype.name} scalar value cannot be indexed. "
                 "If it is A[y], an element of a buffer: a buffer declared "
                 "with a shape (A: enigma.f32[\"H\", \"W\"]) is indexed "
                 "with one subscript, A[y, x], not A[y][x]")

    x = property(lambda self: self._lane("x"), doc="Lane 0 of a vector.")
    y = property(lambda self: self._lane("y"), doc="Lane 1 of a vector.")
    z = property(lambda self: self._lane("z"), doc="Lane 2 of a vector.")
    w = property(lambda self: self._lane("w"), doc="Lane 3 of a vector.")

    def cast(self, dtype) -> "IRValue":
        dtype = as_dtype(dtype)
        if dtype.name == self._value.dtype:
            return self
        return IRValue(self._tracer,
                       self._tracer.call("cast", self._value, dtype.name))

    def __repr__(self) -> str:
        if self.lanes > 1:
            return f"IRValue({self.dtype!r} x {self.lanes})"
        return f"IRValue({self.dtype!r})"

    def __bool__(self):
        fail("a traced value has no Python truth value: the kernel body is "
             "traced once, not run per thread. Use enigma.if_(cond), "
             "enigma.where(false_val, true_val, cond) or store_if; instead "
             "of Python's max/min/and/or/not use enigma.fmax/fmin (floats), "
             "imax/imin (integers) or & | ~")

    def __index__(self):
        fail("a traced value cannot be used as a Python integer (e.g. in "
             "range() or list indexing); use enigma.range / enigma.for_range")

    def __int__(self):
        fail("a traced value cannot become a Python int: it has a value per "
             "thread only when the kernel runs; convert it inside the kernel "
             "with enigma.metal_cast(x, \"int\")")

    def __float__(self):
        fail("a traced value cannot become a Python float: it has a value "
             "per thread only when the kernel runs; convert it inside the "
             "kernel with enigma.metal_cast(x, \"float\"). Python's math "
             "module (math.exp(x), math.sqrt(x)) asks for that float: use "
             "enigma.exp, enigma.sqrt and the rest of enigma's math "
             "(docs/reference/math.md)")

    def __array__(self, dtype=None, copy=None):
        fail("a traced value cannot become a numpy array or scalar "
             "(np.float32(x), np.asarray(x)): numpy runs in Python, once, "
             "while the kernel is traced; convert inside the kernel with "
             "enigma.metal_cast(x, \"float\")")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy calls this for ``np.float32(2) * x`` (an operator beside a
        numpy scalar: traced as that operator, the scalar a Python number)
        and for ``np.exp(x)`` (an error naming enigma's function)."""
        name = getattr(ufunc, "__name__", "ufunc")
        operation = _NUMPY_OPERATORS.get(name)
        if operation is not None and method == "__call__" and not kwargs \
                and all(isinstance(v, (IRValue, numbers.Number)) or
                        getattr(v, "shape", None) == () for v in inputs):
            # numpy scalars (and 0-d arrays, which comparisons pass) as
            # Python numbers.
            return operation(*(v if isinstance(v, IRValue) else
                               v.item() if hasattr(v, "item") else v
                               for v in inputs))
        name = _NUMPY_NAMES.get(name, name)
        hint = (f"use enigma.{name}" if _elementwise_function(name)
                else "use enigma's math functions")
        fail(f"numpy's {ufunc.__name__} cannot run on a traced value: numpy "
             f"runs in Python, once, while the kernel is traced; {hint} "
             "(docs/reference/math.md)")

    def __iter__(self):
        if self.lanes == 1:
            # x, y = enigma.thread_position_in_grid_xyz() above all.
            fail(f"a traced {self.dtype.name} scalar cannot be iterated or "
                 "unpacked (x, y = v); the thread queries give one "
                 "dimension each: x = enigma.thread_position_in_grid_xyz("
                 "\"x\"), y = enigma.thread_position_in_grid_xyz(\"y\")")
        fail("a traced value cannot be iterated; read vector lanes with "
             "v[0], .x .y .z .w or enigma.vec_extract")

    def __len__(self):
        fail(f"len() of a traced value: {_VALUE_SHAPE}")

    def __getattr__(self, name):
        # Only attributes a traced value lacks reach here: numpy's (x.astype,
        # x.sum()) are said with what a kernel writes instead.
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _CONVERSIONS:
            hint = ("convert inside the kernel with x.cast(enigma.f32) or "
                    "enigma.metal_cast(x, \"float\"); a traced value has no "
                    "Python value while the kernel is traced")
        elif name in _REDUCTIONS:
            hint = ("a traced value is one number per thread: reduce across "
                    "a simdgroup with enigma.simd_sum (simd_max, simd_min, "
                    "...), across a threadgroup through threadgroup_alloc "
                    "and barrier, or loop over a buffer's elements with "
                    "enigma.range; of two values, enigma.fmax / imax")
        elif name in _SIZES:
            hint = _VALUE_SHAPE
        elif _elementwise_function(name):
            hint = f"call enigma's function: enigma.{name}(x)"
        else:
            hint = ("a traced value has .dtype, .lanes, .cast(dtype), the "
                    "lanes .x .y .z .w of a vector and Python's operators; "
                    "functions of it are enigma's (enigma.sqrt(x), "
                    "enigma.metal_cast(x, \"int\"); docs/reference/math.md)")
        fail(f"{self!r} has no attribute '{name}': {hint}",
             MissingAttributeError)

    __hash__ = object.__hash__

    # arithmetic ------------------------------------------------------------
    def _bin(self, op, other, reflected=False):
        a, b = (other, self) if reflected else (self, other)
        a, b = operands(a, b)
        return IRValue(self._tracer,
                       self._tracer.call("binary", op, a._value, b._value))

    def _cmp(self, op, other):
        a, b = operands(self, other)
        return IRValue(self._tracer,
                       self._tracer.call("compare", op, a._value, b._value))

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __truediv__(self, o): return self._bin("div", o)
    def __rtruediv__(self, o): return self._bin("div", o, True)
    def __floordiv__(self, o): return self._bin("floordiv", o)
    def __rfloordiv__(self, o): return self._bin("floordiv", o, True)
    def __mod__(self, o): return self._bin("rem", o)
    def __rmod__(self, o): return self._bin("rem", o, True)
    def __and__(self, o): return self._bin("and", o)
    def __rand__(self, o): return self._bin("and", o, True)
    def __or__(self, o): return self._bin("or", o)
    def __ror__(self, o): return self._bin("or", o, True)
    def __xor__(self, o): return self._bin("xor", o)
    def __rxor__(self, o): return self._bin("xor", o, True)
    def __lshift__(self, o): return self._bin("shl", o)
    def __rlshift__(self, o): return self._bin("shl", o, True)
    def __rshift__(self, o): return self._bin("shr", o)
    def __rrshift__(self, o): return self._bin("shr", o, True)
    def __lt__(self, o): return self._cmp("lt", o)
    def __le__(self, o): return self._cmp("le", o)
    def __gt__(self, o): return self._cmp("gt", o)
    def __ge__(self, o): return self._cmp("ge", o)
    def __eq__(self, o): return self._cmp("eq", o)
    def __ne__(self, o): return self._cmp("ne", o)

    def __neg__(self):
        return IRValue(self._tracer, self._tracer.call("neg", self._value))

    def __pos__(self):
        return self

    def __abs__(self):
        # enigma.abs: Metal's abs (floats clear the sign bit).
        return IRValue(self._tracer, self._tracer.call(
            "math_call", "abs", [self._value]))

    def __pow__(self, exponent):
        """``x ** n`` for a Python int ``1 <= n <= 16``: ``n - 1``
        multiplications, left to right (``x * x * x``), exact where the
        products are, for every sign of ``x``. Other exponents: use
        enigma.pow (Metal's ``pow``, NaN for negative bases)."""
        exponent = plain_index(exponent)
        if isinstance(exponent, bool) or not isinstance(exponent, int) or \
                not 1 <= exponent <= _MAX_POWER:
            fail(f"x ** {exponent!r}: ** takes a Python int exponent from 1 "
                 f"to {_MAX_POWER} (repeated multiplication); use "
                 "enigma.pow(x, y) for other powers (Metal's pow gives NaN "
                 "for negative bases) or enigma.sqrt / enigma.exp2")
        out = self
        for _ in range(exponent - 1):
            out = out * self
        return out

    def __rpow__(self, base):
        fail(f"{base!r} ** x: a traced exponent needs enigma.pow(base, x) "
             "(or enigma.exp2(x) for 2 ** x)")

    def __invert__(self):
        return IRValue(self._tracer, self._tracer.call("invert", self._value))


# --------------------------------------------------------------------------
# Buffers
# --------------------------------------------------------------------------

_VALUE_SHAPE = ("a traced value is one scalar per thread, or a vector of "
                "x.lanes lanes (read them with x.x, x.y, x.z, x.w or x[i]); "
                "a buffer's length is passed as a scalar parameter")


class ElementsOnly:
    """An array inside a kernel (a buffer parameter, threadgroup memory):
    numpy's whole-array arithmetic (``A + 1.0``) and numpy's attributes
    (``A.sum()``) are errors that say to compute with elements. ``_what``
    names the array, ``_size_hint`` says where its length comes from,
    ``_has`` what it offers."""

    def __getattr__(self, name):
        # Only attributes the array lacks reach here.
        if name.startswith("_") or name == "name":
            raise AttributeError(name)
        if name in _REDUCTIONS:
            hint = ("a kernel computes one element per thread; reduce with a "
                    "loop over the elements (total = 0.0; for j in "
                    "enigma.range(n): total = total + A[j]), across a "
                    "simdgroup with enigma.simd_sum (simd_max, simd_min, "
                    "...) or into one element with the atomics "
                    "(A.atomic_fetch_add(0, v))")
        elif name in _SIZES:
            hint = self._size_hint()
        elif name in _VIEWS:
            hint = ("an array in a kernel has no views; index its elements "
                    "(A[i], or A[y, x] with a declared shape) or make one "
                    "with enigma.Tensor (docs/reference/tensor.md)")
        elif name in _CONVERSIONS:
            hint = ("convert its elements inside the kernel: "
                    "enigma.metal_cast(A[i], \"float\")")
        elif name in _WRITES:
            hint = "write its elements, A[i] = v (one per thread)"
        else:
            hint = self._has()
        fail(f"{self._what()} has no attribute '{name}': {hint}",
             MissingAttributeError)

    def _not_a_value(self, *_):
        fail(f"{self._what()} is not a value: arithmetic takes its "
             "elements, A[i] (a kernel computes one element per thread: "
             "C[i] = A[i] + 1.0), not the whole array as numpy does"
             f"{self._scalar_hint()}")

    def _scalar_hint(self) -> str:
        return ""

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = \
        __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = \
        __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = \
        __rmatmul__ = __neg__ = __pos__ = __abs__ = _not_a_value


class BufferProxy(ElementsOnly):
    """A buffer parameter inside a kernel body: ``A[i]`` loads, ``A[i] = v``
    stores (converting ``v`` to the element type, as Metal does). A buffer
    declared with a shape (``A: enigma.f32["H", "W"]``) is also indexed
    ``A[y, x]``: row-major, one index per dimension."""

    def __init__(self, tracer: Tracer, name: str, dtype: DType, buffer,
                 lanes: int = 1):
        self._tracer = tracer
        self.name = name
        self.dtype = dtype
        self.lanes = lanes  # > 1: a buffer of vectors (vec_width)
        self._buffer = buffer
        # The parameter index (set when bound), as the original DSL's
        # parameters carry it: Tensor(A.name, A.buffer_index, A.metal_dtype).
        self.buffer_index = None
        # The declared shape: extents (ints, or the traced scalar
        # parameters they name) and their spellings; None without one.
        self._shape = None
        self._extent_names = ()

    @property
    def shape(self) -> tuple:
        """The declared extents (ints, and the traced scalar parameters
        they name) of a buffer declared with a shape."""
        if self._shape is None:
            # Python then asks __getattr__, which says how to declare one.
            raise AttributeError("shape")
        return self._shape

    def _size_hint(self) -> str:
        return (f"buffer {self.name} has no declared shape and no length in "
                "the kernel (the arrays are bound at launch): pass the "
                "length as a scalar parameter (n: enigma.Scalar(enigma.u32)) "
                "or declare the buffer's shape "
                f"({self.name}: enigma.{self.dtype.name}[\"n\"], n a scalar "
                f"parameter; then {self.name}.shape is (n,))")

    def _scalar_hint(self) -> str:
        return (f". If {self.name} is meant to be one number, annotate it "
                f"{self.name}: enigma.Scalar(enigma.{self.dtype.name}); "
                f"enigma.{self.dtype.name} alone makes a buffer")

    def _has(self) -> str:
        return (f"inside a kernel a buffer parameter has {self.name}[i], "
                f"{self.name}[i] = v, {self.name}.name, {self.name}.dtype, "
                f"{self.name}.shape (declared with one) and the atomic "
                f"methods ({self.name}.atomic_fetch_add(i, v), ...)")

    def __iter__(self):
        # Without it Python iterates through __getitem__ (A[0], A[1], ...)
        # and never stops: a trace that hangs.
        fail(f"buffer {self.name} cannot be iterated: a buffer parameter "
             "has no length the kernel knows; loop over indices with "
             f"enigma.range(n) and read {self.name}[i], n a scalar "
             "parameter (n: enigma.Scalar(enigma.u32))")

    def __bool__(self):
        # True, as any object: Python's truth test would call __len__.
        return True

    def _what(self) -> str:
        return f"buffer {self.name}"

    def __len__(self):
        fail(f"buffer {self.name} has no length in the kernel (the arrays "
             "are bound at launch): pass the size as a scalar parameter (n: "
             "enigma.Scalar(enigma.u32)) or declare the buffer's shape "
             f"({self.name}: enigma.{self.dtype.name}[\"n\"], n a scalar "
             "parameter)")

    def set_shape(self, declared, arguments: dict) -> None:
        """Binds the declared shape (ints and names of scalar parameters)
        to the kernel's arguments (parameter name -> proxy or value)."""
        self._shape = tuple(arguments[e] if isinstance(e, str) else e
                            for e in declared)
        self._extent_names = tuple(str(e) for e in declared)
        self._require_declared_size()

    def _require_declared_size(self) -> None:
        """Every launch refuses a buffer smaller than its declared shape (a
        DispatchError with both sizes, before anything runs): the kernel
        indexes it by the declaration, and a smaller array would be read
        or written past its end. Recorded as the runtime's matrix extent
        (rows x last extent), so where the leading extents hold at most
        one scalar parameter (the runtime multiplies one by a constant)."""
        *lead, last = self.shape
        scalars = [e for e in lead if isinstance(e, IRValue)]
        scale = 1
        for e in lead:
            if not isinstance(e, IRValue):
                scale *= e
        if self.lanes > 1 or len(scalars) > 1 or scale == 0:
            return

        def raw(v):
            if isinstance(v, IRValue):
                return v._value
            return _constant(self._tracer, v, as_dtype(
                "u32" if v < 2**32 else "u64"))._value
        rows = scalars[0] if scalars else scale
        self._tracer.call(
            "require_matrix_extent", self._buffer, raw(rows), raw(last),
            raw(last), f"{self.name} is declared "
            f"{self.dtype.name}{self._shape_text()}",
            1, scale if scalars else 1, 1, 1, 1, 1)

    def _shape_text(self) -> str:
        return "[" + ", ".join(self._extent_names) + "]"

    def _shaped_index(self, index: tuple) -> IRValue:
        """The row-major element index of ``A[i0, i1, ...]``: each index an
        int or a traced integer, below its extent (checked at trace time for
        ints and static extents; in bounds-checked mode for the rest)."""
        rank = len(self.shape)
        if any(isinstance(i, slice) for i in index):
            fail(f"{self.name}[...]: slices are not supported; index "
                 f"{self.name} with {rank} integers (a buffer has no views: "
                 "use enigma.Tensor for one)")
        if len(index) != rank:
            fail(f"buffer {self.name} has the shape {self._shape_text()}: "
                 f"index it with {rank} "
                 f"{'index' if rank == 1 else 'indices'}, got {len(index)}")
        flat = 0
        for dim, (i, extent) in enumerate(zip(index, self.shape)):
            if isinstance(i, Unbound):
                i.fail()
            if isinstance(i, IRValue):
                if i.lanes != 1 or i.dtype.is_float or i.dtype.name == "b1":
                    fail(f"index {dim} of {self.name}{self._shape_text()} "
                         f"must be an integer, got a {i!r}")
            elif isinstance(i, bool) or not isinstance(i, int):
                fail(f"index {dim} of {self.name}{self._shape_text()} must "
                     f"be an integer, got {kind_of(i)}")
            elif i < 0 or (isinstance(extent, int) and i >= extent):
                fail(f"index {dim} of {self.name}{self._shape_text()} is {i},"
                     f" outside [0, {self._extent_names[dim]})")
            if isinstance(i, IRValue) or isinstance(extent, IRValue):
                self._check(i, extent, dim)
            flat = i if dim == 0 else (
                flat * extent + i if not (isinstance(flat, int) and flat == 0)
                else i)
        return flat if isinstance(flat, IRValue) else to_value(
            flat, as_dtype("u32") if flat < 2**32 else as_dtype("u64"))

    def _check(self, index, extent, dim: int) -> None:
        index = to_value(index, as_dtype("u32"))
        extent = to_value(extent, as_dtype("u32"))
        self._tracer.call("check_index", index._value, extent._value, dim,
                          self.name, self._shape_text(),
                          self._extent_names[dim])

    @property
    def metal_dtype(self) -> str:
        """The Metal spelling of the element type (``"float"``)."""
        return self.dtype.msl

    element_type = metal_dtype

    def _index(self, index) -> IRValue:
        if isinstance(index, Unbound):
            index.fail()
        index = plain_index(index)
        if self._shape is not None and (isinstance(index, tuple) or
                                       len(self.shape) == 1):
            return self._shaped_index(index if isinstance(index, tuple)
                                      else (index,))
        if isinstance(index, (tuple, slice)):
            fail(f"buffer {self.name} is one-dimensional; index it with one "
                 "integer value, or declare its shape to index it A[y, x] "
                 f"({self.name}: enigma.{self.dtype.name}[\"H\", \"W\"], "
                 "H and W scalar parameters or numbers)")
        if isinstance(index, IRValue):
            return index
        if isinstance(index, bool) or not isinstance(index, int):
            fail(f"index of buffer {self.name} must be an integer, got "
                 f"{kind_of(index)}")
        if index < 0:
            fail(f"index of buffer {self.name} is negative ({index})")
        return to_value(index, as_dtype("u32") if index < 2**32 else
                        as_dtype("u64"))

    def __getitem__(self, index) -> IRValue:
        idx = self._index(index)
        return IRValue(self._tracer,
                       self._tracer.call("load", self._buffer, idx._value))

    def __setitem__(self, index, value):
        idx = self._index(index)
        value = to_value(value, self.dtype)
        self._tracer.call("store", self._buffer, idx._value, value._value)

    def __repr__(self) -> str:
        lanes = str(self.lanes) if self.lanes > 1 else ""
        return f"<buffer {self.name}: device {self.dtype.msl}{lanes}*>"


# --------------------------------------------------------------------------
# Fragments: matrices held by a simdgroup (docs/reference/mma.md)
# --------------------------------------------------------------------------

def _shape_of(value):
    return _core.mma_shape(value._value if isinstance(value, IRValue)
                           else value)


def _fragment_call(function: str, *args) -> "Fragment":
    tracer = current_tracer(function)
    return IRValue(tracer, tracer.call(function, *args))


class Fragment(IRValue):
    """An ``rows x cols`` matrix held collectively by the 32 lanes of one
    simdgroup (cols is None for a row vector: one value per row, from
    :meth:`row_max` / :meth:`row_sum`). Its lane layout is the target's.

    Operators work element by element: ``+ - * / // %``, ``& | ^ << >>``
    for integers, comparisons (giving bool fragments), unary ``-`` and
    ``abs``. The other operand may be a fragment of the same shape and
    dtype, a traced scalar or a Python number (converted to the fragment's
    dtype); a row vector next to a fragment of as many rows is repeated
    along the columns (``acc * scale`` scales each row). ``enigma.exp``,
    ``exp2``, ``log``, ``log2``, ``sqrt``, ``rsqrt``, ``tanh``, ``abs``,
    ``fmax``, ``fmin``, ``fma`` and ``enigma.where`` accept fragments, and
    ``enigma.as_type`` reads their bits as another dtype of the same width.
    Every lane of the simdgroup must compute with a fragment: none may be
    computed under control flow that depends on the lane."""

    __slots__ = ()

    def _subscriptable(self) -> None:
        fail(f"this {self._dims()} {self.dtype.name} fragment cannot be "
             "indexed: its elements are spread over the simdgroup's lanes. "
             "Select elements with enigma.where and mma_iota, or write it "
             "out with mma_store (docs/reference/mma.md)")

    @property
    def shape(self):
        """(rows, cols) of a fragment, (rows,) of a row vector."""
        rows, cols = _shape_of(self)
        return (rows, cols) if cols else (rows,)

    @property
    def rows(self) -> int:
        return _shape_of(self)[0]

    @property
    def cols(self):
        """Columns; None for a row vector."""
        return _shape_of(self)[1] or None

    @property
    def is_row_vector(self) -> bool:
        return _shape_of(self)[1] == 0

    def _dims(self) -> str:
        """``16 x 8`` (``16`` for a row vector), as messages print it."""
        return " x ".join(str(d) for d in self.shape)

    def __repr__(self) -> str:
        kind = "row vector" if self.is_row_vector else "fragment"
        return f"<{kind} {self._dims()} {self.dtype.name}>"

    def _lane(self, name: str):
        fail(f".{name}: a fragment has no lanes to read; its layout belongs "
             "to the target (store it with enigma.mma_store)")

    def cast(self, dtype) -> "Fragment":
        """The fragment converted element by element to ``dtype``."""
        dtype = as_dtype(dtype)
        if dtype.name == self.dtype.name:
            return self
        return _fragment_call("mma_cast", self._value, dtype.name)

    # reductions and broadcasts ---------------------------------------------
    def _reduce(self, kind: str) -> "Fragment":
        if self.is_row_vector:
            fail(f"row_{kind}: this is already a row vector")
        return _fragment_call("mma_reduce_rows", self._value, kind)

    def row_max(self) -> "Fragment":
        """The maximum of each row (a row vector); NaN only for a row that
        is all NaN."""
        return self._reduce("max")

    def row_min(self) -> "Fragment":
        """The minimum of each row (a row vector)."""
        return self._reduce("min")

    def row_sum(self) -> "Fragment":
        """The sum of each row (a row vector), in the target's order."""
        return self._reduce("sum")

    def broadcast(self, cols: int) -> "Fragment":
        """A row vector repeated along ``cols`` columns: a fragment whose
        row r is element r."""
        if not self.is_row_vector:
            fail("broadcast: only a row vector is broadcast along the "
                 "columns")
        return _fragment_call("mma_broadcast_rows", self._value,
                           static_int(cols, "broadcast: cols"))

    # element-wise ------------------------------------------------------------
    def _other(self, other):
        """`other` as a core value next to this fragment: row vectors are
        broadcast to this fragment's columns, numbers take its dtype."""
        if isinstance(other, Fragment):
            if other.is_row_vector and not self.is_row_vector:
                return other.broadcast(self.cols)._value
            return other._value
        if isinstance(other, IRValue):
            return other._value
        if is_number(other):     # numpy scalars too, as for scalars
            return to_value(other, self.dtype)._value
        fail(f"a fragment cannot be combined with {type(other).__name__}")

    def _self_for(self, other):
        if self.is_row_vector and isinstance(other, Fragment) and \
                not other.is_row_vector:
            return self.broadcast(other.cols)._value
        return self._value

    def _bin(self, op, other, reflected=False):
        a, b = self._self_for(other), self._other(other)
        if reflected:
            a, b = b, a
        return _fragment_call("mma_binary", op, a, b)

    def _cmp(self, op, other):
        return _fragment_call("mma_compare", op, self._self_for(other),
                           self._other(other))

    def __neg__(self):
        return _fragment_call("mma_unary", "neg", self._value)

    def __abs__(self):
        return _fragment_call("mma_unary", "abs", self._value)

    def __invert__(self):
        if self.dtype.name == "b1":
            return self ^ True
        if self.dtype.is_float:
            fail("'~' is not defined for float fragments")
        return self ^ -1

    __hash__ = IRValue.__hash__


def _is_fragment(x) -> bool:
    return isinstance(x, Fragment)


def fragment_math(name: str, *args):
    """enigma.<name>(...) when an argument is a fragment (the math
    functions come here)."""
    unary = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "abs",
             "sin", "cos", "floor", "ceil")
    if name in unary and len(args) == 1:
        return _fragment_call("mma_unary", name, args[0]._value)
    if name in ("fmax", "fmin", "max", "min") and len(args) == 2:
        f = args[0] if _is_fragment(args[0]) else args[1]
        other = args[1] if f is args[0] else args[0]
        op = "max" if name in ("fmax", "max") else "min"
        return f._bin(op, other, reflected=f is not args[0])
    if name == "fma" and len(args) == 3:
        like = next(a for a in args if _is_fragment(a))
        return _fragment_call("mma_fma", *(
            a._value if isinstance(a, IRValue) else
            to_value(a, like.dtype)._value for a in args))
    fail(f"enigma.{name} does not take fragments; fragments support exp, "
         "exp2, log, log2, sqrt, rsqrt, tanh, abs, sin, cos, floor, ceil, "
         "fmax, fmin, fma and where")


def fragment_where(false_val, true_val, cond):
    """enigma.where(false_val, true_val, cond) when an argument is a
    fragment."""
    like = next(a for a in (true_val, false_val, cond) if _is_fragment(a))

    def raw(x, dtype=None):
        if isinstance(x, (Fragment, IRValue)):
            return like._other(x)  # row vectors broadcast to like's columns
        if dtype is None:
            for v in (true_val, false_val):
                if isinstance(v, IRValue) and not (v is cond):
                    dtype = v.dtype
                    break
        return to_value(x, dtype)._value

    c = raw(cond, as_dtype("bool"))
    return _fragment_call("mma_select", c, raw(true_val), raw(false_val))


for _name, _op in (("add", "add"), ("sub", "sub"), ("mul", "mul"),
                   ("truediv", "div"), ("floordiv", "floordiv"),
                   ("mod", "rem"), ("and", "and"), ("or", "or"),
                   ("xor", "xor"), ("lshift", "shl"), ("rshift", "shr")):
    def _forward(self, o, _op=_op):
        return self._bin(_op, o)

    def _reflected(self, o, _op=_op):
        return self._bin(_op, o, reflected=True)

    setattr(Fragment, f"__{_name}__", _forward)
    setattr(Fragment, f"__r{_name}__", _reflected)

for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    def _compare(self, o, _op=_name):
        return self._cmp(_op, o)

    setattr(Fragment, f"__{_name}__", _compare)
del _name, _op
