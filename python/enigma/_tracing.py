"""Tracing: running a kernel body once with IRValue proxies that record ops
into the C++ KernelBuilder."""

from __future__ import annotations

import inspect
import os
import re
import sys
import sysconfig
import threading

from . import _core
from ._dtypes import DType, Scalar, as_dtype, b1, f32

EnigmaError = _core.EnigmaError

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_state = threading.local()


# --------------------------------------------------------------------------
# The active trace
# --------------------------------------------------------------------------

def user_location():
    """(file, line) of the innermost frame outside the enigma package."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR):
            return filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


class Tracer:
    """The kernel being traced on this thread."""

    def __init__(self, name: str):
        self.builder = _core.KernelBuilder(name)
        self.name = name
        # Buffer proxies by parameter index, for enigma.Tensor (_tensor.py).
        self.buffers = {}

    def call(self, method: str, *args):
        """Calls a builder method with the user's source location attached,
        turning C++ errors into EnigmaError that name the user's line."""
        file, line = user_location()
        self.builder.set_location(file, line)
        try:
            return getattr(self.builder, method)(*args)
        except EnigmaError as e:
            raise EnigmaError(f"{file}:{line}: {e}") from None

    def call_fn(self, function: str, *args):
        """Like call, for the op families' module-level functions of
        ``_core`` that take the builder first."""
        file, line = user_location()
        self.builder.set_location(file, line)
        try:
            return getattr(_core, function)(self.builder, *args)
        except EnigmaError as e:
            raise EnigmaError(f"{file}:{line}: {e}") from None


def current_tracer(what: str = "this") -> Tracer:
    tracer = getattr(_state, "tracer", None)
    if tracer is None:
        raise EnigmaError(
            f"{what} can only be used inside an @enigma.kernel body while it "
            "is traced by enigma.compile")
    return tracer


def fail(message: str):
    """Raises EnigmaError prefixed with the user's file:line."""
    file, line = user_location()
    raise EnigmaError(f"{file}:{line}: {message}")


# A message that already names a place ("file.py:12: ...") on some line.
_LOCATED_MESSAGE = re.compile(r"^\S[^\n]*?:\d+: ", re.M)
# Python's own message for a call with the wrong arguments: "sqrt() takes ..."
_WRONG_CALL = re.compile(r"^(\w+)\(\) (takes|missing|got an unexpected|"
                         r"got multiple)")


def _innermost_user_frame(tb):
    """(file, line) of the deepest traceback entry in the user's code (not
    the enigma package, not Python's standard library), or None."""
    stdlib = sysconfig.get_paths()["stdlib"]
    found = None
    while tb is not None:
        filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if not filename.startswith((_PACKAGE_DIR, stdlib)):
            found = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _located_error(error: BaseException):
    """The error a kernel body raised, as an EnigmaError naming the user's
    file:line, or None to let it through unchanged. EnigmaErrors raised
    without a place (e.g. a bad dtype name) get the innermost user line; a
    wrong-arity call of an enigma function becomes an EnigmaError too."""
    message = str(error)
    if isinstance(error, EnigmaError):
        if _LOCATED_MESSAGE.search(message):
            return None
    else:
        match = _WRONG_CALL.match(message)
        import enigma
        if match is None or not callable(getattr(enigma, match.group(1),
                                                 None)):
            return None
        # The call failed at the user's call site, not inside enigma.
        tb = error.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        if os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(
                _PACKAGE_DIR):
            return None
    where = _innermost_user_frame(error.__traceback__)
    if where is None:
        return None
    return EnigmaError(f"{where[0]}:{where[1]}: {message}")


def _return_line(fn) -> int:
    """Line of the first ``return <value>`` in ``fn``'s source (the def line
    when the source cannot be read)."""
    import ast
    import textwrap
    first = fn.__code__.co_firstlineno
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return first
    for node in ast.walk(tree):
        if isinstance(node, ast.Return) and node.value is not None:
            return first + node.lineno - 1
    return first


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


def _is_number(x) -> bool:
    import numbers
    return isinstance(x, numbers.Number) and not isinstance(x, complex)


def to_value(x, like: DType | None = None) -> "IRValue":
    """An IRValue for ``x``. IRValues pass through. Python numbers become
    constants: a bool is a b1; an int takes the type ``like`` (i32 when
    none); a float takes ``like`` when that is a float type, else f32."""
    if isinstance(x, IRValue):
        return x
    tracer = current_tracer("a traced value")
    if not _is_number(x):
        fail(f"expected a traced value or a number, got {type(x).__name__}")
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
    """Both operands as IRValues of their common type (API.md section 6):
    numbers adopt the type of the other operand, mixed types promote."""
    a_is_value, b_is_value = isinstance(a, IRValue), isinstance(b, IRValue)
    if not a_is_value and not b_is_value:
        fail("at least one operand must be a traced value")
    if not a_is_value:
        a = to_value(a, b.dtype)
    if not b_is_value:
        b = to_value(b, a.dtype)
    common = _core.KernelBuilder.promote(a.dtype.name, b.dtype.name)
    return a.cast(common), b.cast(common)


_LANE_NAMES = {"x": 0, "y": 1, "z": 2, "w": 3}


# x ** n unrolls into n - 1 multiplications up to this n.
_MAX_POWER = 16


class IRValue:
    """A value inside a kernel being traced: a scalar, or a vector of 2 to 4
    lanes (``lanes``; read lanes with ``.x .y .z .w``). Supports Python's
    arithmetic, bitwise and comparison operators, lane by lane on vectors (a
    scalar next to a vector is broadcast); comparisons give bool IRValues."""

    __slots__ = ("_tracer", "_value")

    def __new__(cls, tracer=None, value=None):
        # A fragment (an M x N matrix held by a simdgroup) is an IRValue
        # with its own operators: python/enigma/_mma.py.
        if cls is IRValue and value is not None and \
                _core.mma_shape(value) is not None:
            from ._mma import Fragment
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
        lane = _LANE_NAMES[name]
        if self.lanes == 1:
            fail(f".{name} reads a lane of a vector, but this value is a "
                 f"{self.dtype.name} scalar")
        if lane >= self.lanes:
            fail(f".{name} is out of range for a {self.lanes}-lane vector")
        return IRValue(self._tracer,
                       self._tracer.call_fn("vec_extract", self._value, lane))

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
             "kernel with enigma.metal_cast(x, \"float\")")

    def __iter__(self):
        fail("a traced value cannot be iterated; read vector lanes with "
             ".x .y .z .w or enigma.vec_extract")

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
        from ._math import abs as metal_abs
        return metal_abs(self)

    def __pow__(self, exponent):
        """``x ** n`` for a Python int ``1 <= n <= 16``: ``n - 1``
        multiplications, left to right (``x * x * x``), exact where the
        products are, for every sign of ``x``. Other exponents: use
        enigma.pow (Metal's ``pow``, NaN for negative bases)."""
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

class BufferProxy:
    """A buffer parameter inside a kernel body: ``A[i]`` loads, ``A[i] = v``
    stores (converting ``v`` to the element type, as Metal does)."""

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

    @property
    def metal_dtype(self) -> str:
        """The Metal spelling of the element type (``"float"``)."""
        return self.dtype.msl

    element_type = metal_dtype

    def _index(self, index) -> IRValue:
        if isinstance(index, tuple):
            fail(f"buffer {self.name} is one-dimensional; index it with one "
                 "integer value")
        if isinstance(index, IRValue):
            return index
        if isinstance(index, bool) or not isinstance(index, int):
            fail(f"index of buffer {self.name} must be an integer, got "
                 f"{type(index).__name__}")
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
# Kernels
# --------------------------------------------------------------------------

class Param:
    """A kernel parameter: name, kind ("buffer" or "scalar"), dtype,
    vec_width (elements per buffer entry: 1, or N under vec_width=N) and,
    for a scalar, multiple_of (the multiple its value is promised to be)."""

    __slots__ = ("name", "kind", "dtype", "vec_width", "multiple_of")

    def __init__(self, name: str, kind: str, dtype: DType, vec_width: int = 1,
                 multiple_of: int = 1):
        self.name, self.kind, self.dtype = name, kind, dtype
        self.vec_width = vec_width
        self.multiple_of = multiple_of

    def __repr__(self) -> str:
        width = f", vec_width={self.vec_width}" if self.vec_width > 1 else ""
        if self.multiple_of > 1:
            width += f", multiple_of={self.multiple_of}"
        return f"Param({self.name!r}, {self.kind!r}, {self.dtype!r}{width})"

    def _key(self):
        return (self.name, self.kind, self.dtype, self.vec_width,
                self.multiple_of)

    def __eq__(self, other):
        return isinstance(other, Param) and self._key() == other._key()


def _resolve_annotation(fn, name, annotation):
    if isinstance(annotation, str):
        try:
            annotation = eval(annotation, fn.__globals__)  # noqa: S307
        except Exception as e:
            raise EnigmaError(
                f"cannot evaluate the annotation {annotation!r} of parameter "
                f"'{name}': {e}") from None
    return annotation


def _kernel_params(fn) -> list[Param]:
    where = f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
    params = []
    signature = inspect.signature(fn).parameters.values()
    # A kernel with only unannotated parameters is launched from @enigma.jit
    # with Tensors, layouts and ints (python/enigma/_jit.py).
    if signature and all(p.annotation is inspect.Parameter.empty and
                         p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                         for p in signature):
        return [Param(p.name, "jit", None) for p in signature]
    for p in signature:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise EnigmaError(f"{where}: kernel '{fn.__name__}' cannot take "
                              f"*args or **kwargs ('{p.name}')")
        if p.annotation is inspect.Parameter.empty:
            raise EnigmaError(
                f"{where}: parameter '{p.name}' of kernel '{fn.__name__}' has "
                "no type annotation; annotate buffers with an element type "
                "(A: enigma.f32) and scalars with enigma.Scalar(enigma.u32)")
        annotation = _resolve_annotation(fn, p.name, p.annotation)
        if isinstance(annotation, Scalar):
            params.append(Param(p.name, "scalar", annotation.dtype,
                                multiple_of=annotation.multiple_of))
            continue
        dtype = as_dtype(annotation, strict=False)
        if dtype is None:
            raise EnigmaError(
                f"{where}: parameter '{p.name}' of kernel '{fn.__name__}' is "
                f"annotated with {annotation!r}, which is not an Enigma type; "
                "use an element type such as enigma.f32 or enigma.Scalar(...)")
        params.append(Param(p.name, "buffer", dtype))
    return params


class KernelDefinition:
    """What ``@enigma.kernel`` returns: the Python function and its parameter
    list. The body runs once, at compile time, to trace the kernel."""

    def __init__(self, fn):
        from ._source_rewrite import prepare_kernel_function
        self.fn = prepare_kernel_function(fn)
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.params = _kernel_params(fn)

    @property
    def kernel_name(self) -> str:
        return "enigma_kernel_" + self.fn.__name__

    def trace(self, vec_width: int = 0) -> Tracer:
        """Runs the body once with proxies. With ``vec_width`` N > 1, float
        buffers (f32, f16, bf16) hold N-lane vectors."""
        if getattr(_state, "tracer", None) is not None:
            raise EnigmaError(f"kernel '{self.__name__}' is traced inside "
                              "another kernel's body")
        tracer = Tracer(self.fn.__name__)
        # The kernel op carries the def line (errors about the kernel itself).
        code = self.__wrapped__.__code__
        tracer.builder.set_location(code.co_filename, code.co_firstlineno)
        args = self._bind_arguments(tracer, vec_width)
        _state.tracer = tracer
        try:
            result = self.fn(*args)
        except (EnigmaError, TypeError) as e:
            located = _located_error(e)
            if located is None:
                raise
            raise located from None
        finally:
            _state.tracer = None
        if result is not None:
            raise EnigmaError(
                f"{code.co_filename}:{_return_line(self.__wrapped__)}: "
                f"kernel '{self.__name__}' returned a value; kernels write "
                "their results into buffers and return nothing")
        return tracer

    def _bind_arguments(self, tracer: Tracer, vec_width: int) -> list:
        """The body's arguments: proxies of new parameters. Also records
        the buffers by parameter index for enigma.Tensor."""
        if any(p.kind == "jit" for p in self.params):
            raise EnigmaError(
                f"kernel '{self.__name__}' has unannotated parameters, so it "
                "takes Tensors and layouts: launch it from an @enigma.jit "
                "function and compile that, or annotate buffers (A: "
                "enigma.f32) and scalars (n: enigma.Scalar(enigma.u32))")
        args = []
        for p in self.params:
            if p.kind == "buffer":
                lanes = vec_width if vec_width > 1 and p.dtype.is_float else 1
                buf = _core.add_vector_buffer(tracer.builder, p.name,
                                              p.dtype.name, lanes)
                args.append(BufferProxy(tracer, p.name, p.dtype, buf, lanes))
            else:
                args.append(IRValue(tracer, tracer.builder.add_scalar(
                    p.name, p.dtype.name, p.multiple_of)))
        tracer.buffers = {i: a for i, a in enumerate(args)
                          if isinstance(a, BufferProxy)}
        for i, proxy in tracer.buffers.items():
            proxy.buffer_index = i
        return args

    def __getitem__(self, launch):
        """``kernel[grid, threads](a, b, c, n)``: launches on arrays in
        place (python/enigma/_launch.py, docs/reference/launch.md)."""
        try:
            return self._launchers[launch]
        except (AttributeError, KeyError, TypeError):
            from ._launch import launcher
            return launcher(self, launch)

    def __call__(self, *args, **kwargs):
        # Inside an @enigma.jit function this records a launch; elsewhere
        # it is an error.
        from ._jit import kernel_call
        return kernel_call(self, args, kwargs)

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.dtype.name}" if p.kind == "buffer"
                        else p.name if p.kind == "jit"
                        else f"{p.name}: Scalar({p.dtype.name})"
                        for p in self.params)
        return f"<enigma kernel {self.__name__}({sig})>"


def kernel(fn) -> KernelDefinition:
    """Decorator: marks ``fn`` as a kernel. Parameters annotated with an
    element type are ``device T*`` buffers bound at ``[[buffer(i)]]`` in
    declaration order; ``enigma.Scalar(dtype)`` marks a by-value scalar."""
    return KernelDefinition(fn)


def __getattr__(name):
    # Programs written for the original Enigma import Tensor from this
    # module inside kernels (`from enigma._tracing import Tensor`); it lives
    # in _tensor, which builds on this module, so it is looked up lazily.
    if name == "Tensor":
        from ._tensor import Tensor
        return Tensor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
