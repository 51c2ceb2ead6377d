"""Kernels: what ``@enigma.kernel`` returns (KernelDefinition), its
parameters (Param), tracing its body into the C++ KernelBuilder, and the
state behind ``kernel[n]`` and ``kernel.launch(...)`` (the launch itself is
C++; its first call compiles and loads the kernel through the helpers that
_launch gives the core). Errors raised while a body is traced are turned into
EnigmaErrors that name the user's file:line."""

from __future__ import annotations

import ast
import inspect
import os
import re
import sysconfig
import textwrap
import weakref

from . import _core
from ._dtypes import DType, Scalar, ShapedBuffer, as_dtype, plain_index
from ._grid import function_constants
from ._ir import (BufferProxy, EnigmaError, IRValue, MissingAttributeError,
                  Tracer, active_tracer, fail, in_package, set_active_tracer,
                  user_location)
from ._jit import kernel_call
from ._launch_spelling import (bracket_grid, launch_shape,
                               positional_launch_message)
from ._source_rewrite import prepare_kernel_function

# The enigma package's namespace, handed down by the package once every
# module is imported (this layer sits below it): a wrong-arity call of one
# of its functions in a kernel body becomes an EnigmaError naming the line.
_package_names = {}


# Names that other kernel languages (CUDA, Triton, numpy, Metal) have and
# enigma spells otherwise: enigma.<name> says what to write.
_POSITION = ("enigma.thread_position_in_grid (the x position; "
             "thread_position_in_grid_xyz(\"y\") for y)")
_FOREIGN_NAMES = {
    **dict.fromkeys(("thread_id", "thread_idx", "threadIdx", "tid",
                     "global_id", "get_global_id"), _POSITION),
    **dict.fromkeys(("program_id", "block_id", "block_idx", "blockIdx",
                     "group_id"),
                    "enigma.threadgroup_position_in_grid() (the thread's "
                    "threadgroup, Triton's program id, CUDA's blockIdx)"),
    **dict.fromkeys(("blockDim", "block_dim", "num_threads"),
                    "enigma.threads_per_threadgroup()"),
    **dict.fromkeys(("syncthreads", "__syncthreads", "sync",
                     "threadgroup_barrier"), "enigma.barrier()"),
    **dict.fromkeys(("shared", "shared_alloc", "local_alloc"),
                    "enigma.threadgroup_alloc(dtype, size)"),
    "atomic_add": "enigma.atomic_fetch_add(A, i, v) (or A.atomic_fetch_add(i, "
                  "v))",
    **dict.fromkeys(("max", "min"),
                    "enigma.fmax / enigma.fmin for floats, enigma.imax / "
                    "enigma.imin for integers; across a simdgroup "
                    "enigma.simd_max / enigma.simd_min"),
    "sum": "a loop with enigma.range, or enigma.simd_sum across a simdgroup",
    **dict.fromkeys(("zeros", "empty", "array", "arange", "ones"),
                    "Enigma has no arrays of its own: make them with numpy "
                    "(or PyTorch, CuPy, JAX) and pass them to the kernel; "
                    "inside a kernel, enigma.threadgroup_alloc"),
    **{k: f"the element type enigma.{v}" for k, v in (
        ("float32", "f32"), ("float", "f32"), ("float16", "f16"),
        ("half", "f16"), ("bfloat16", "bf16"), ("int32", "i32"),
        ("int", "i32"), ("uint32", "u32"), ("uint", "u32"),
        ("int64", "i64"), ("uint64", "u64"), ("int16", "i16"),
        ("uint16", "u16"), ("int8", "i8"), ("uint8", "u8"),
        ("bool", "b1"))},
    **dict.fromkeys(("float64", "double", "f64"),
                    "no 64-bit float type (Metal has none): use enigma.f32"),
}


def missing_package_name(name: str):
    """Raises the error of ``enigma.<name>`` for a name the package lacks:
    for the spellings of other kernel languages, an EnigmaError (also an
    AttributeError) at the user's line naming enigma's; else Python's."""
    hint = _FOREIGN_NAMES.get(name)
    if hint is None:
        raise AttributeError(f"module 'enigma' has no attribute {name!r}")
    fail(f"module 'enigma' has no attribute {name!r}: write {hint}",
         MissingAttributeError)


def set_package_namespace(namespace) -> None:
    """Called by the package's __init__ with its namespace."""
    global _package_names
    _package_names = namespace


# --------------------------------------------------------------------------
# Errors raised while a body is traced
# --------------------------------------------------------------------------

# A message that already names a place ("file.py:12: ...") on some line.
_LOCATED_MESSAGE = re.compile(r"^\S[^\n]*?:\d+: ", re.M)
# Python's message for calling a traced value: "'IRValue' object is not
# callable".
_NOT_CALLABLE = re.compile(r"^'(IRValue|Fragment|QueryValue|BufferProxy)' "
                           r"object is not callable$")
# Python's message for a float where a built-in wants an int, range(0, n / 2)
# above all.
_FLOAT_COUNT = re.compile(r"^'(float|numpy\.float\d+)' object cannot be "
                          r"interpreted as an integer$")
# Python's own message for a call with the wrong arguments: "sqrt() takes ..."
_WRONG_CALL = re.compile(r"^(\w+)\(\) (takes|missing|got an unexpected|"
                         r"got multiple)")
# What a wrong call of these names most likely meant (the spelling of
# another language, or a forgotten argument order).
_WRONG_CALL_HINTS = {
    "select": "enigma.select(x, mode) picks modes of a tuple or a Layout; "
              "Metal's select(f, t, c), a value per thread, is "
              "enigma.where(false_value, true_value, condition)",
    "where": "enigma.where(false_value, true_value, condition) takes "
             "Metal's select order, the condition last (numpy's "
             "where(c, x, y) is where(y, x, c))",
}


def _innermost_user_frame(tb):
    """(file, line) of the deepest traceback entry in the user's code (not
    the enigma package, not Python's standard library), or None."""
    stdlib = sysconfig.get_paths()["stdlib"]
    found = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not in_package(filename) and \
                not os.path.abspath(filename).startswith(stdlib):
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
    elif _NOT_CALLABLE.match(message) or _FLOAT_COUNT.match(message):
        if _FLOAT_COUNT.match(message):
            message += (": Python's range() takes ints (as do its other "
                        "built-ins that count); / gives a float even of two "
                        "ints, so write n // 2, or enigma.range(...) for a "
                        "count the kernel computes")
        else:
            # A traced value called like a function, in the user's body.
            message = ("a traced value is not a function (" + message +
                       "): a value of the kernel (a load, a thread "
                       "position, a result) is used without parentheses")
        tb = error.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        if in_package(tb.tb_frame.f_code.co_filename):
            return None
    else:
        match = _WRONG_CALL.match(message)
        if match is None or not callable(_package_names.get(match.group(1))):
            return None
        # The call failed at the user's call site, not inside enigma.
        tb = error.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        if (in_package(tb.tb_frame.f_code.co_filename)
                and not getattr(error, "at_call_site", False)):
            return None
        hint = _WRONG_CALL_HINTS.get(match.group(1))
        if hint:
            message += f": {hint}"
    where = _innermost_user_frame(error.__traceback__)
    if where is None:
        return None
    return EnigmaError(f"{where[0]}:{where[1]}: {message}")


def _return_line(fn) -> int:
    """Line of the first ``return <value>`` in ``fn``'s source (the def line
    when the source cannot be read)."""
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
# Kernels
# --------------------------------------------------------------------------

class Param:
    """A kernel parameter: name, kind ("buffer" or "scalar"), dtype,
    vec_width (elements per buffer entry: 1, or N under vec_width=N),
    for a scalar multiple_of (the multiple its value is promised to be),
    and for a buffer of a compiled kernel ``written``: whether the kernel
    may store into it (False where unknown)."""

    __slots__ = ("name", "kind", "dtype", "vec_width", "multiple_of",
                 "shape", "written")

    def __init__(self, name: str, kind: str, dtype: DType, vec_width: int = 1,
                 multiple_of: int = 1, shape=None, written: bool = False):
        self.name, self.kind, self.dtype = name, kind, dtype
        self.vec_width = vec_width
        self.multiple_of = multiple_of
        self.shape = shape  # a buffer's declared shape (enigma.f32["H", "W"])
        self.written = written

    def __repr__(self) -> str:
        width = f", vec_width={self.vec_width}" if self.vec_width > 1 else ""
        if self.multiple_of > 1:
            width += f", multiple_of={self.multiple_of}"
        return f"Param({self.name!r}, {self.kind!r}, {self.dtype!r}{width})"

    def _key(self):
        return (self.name, self.kind, self.dtype, self.vec_width,
                self.multiple_of, self.shape)

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
        if isinstance(annotation, ShapedBuffer):
            params.append(Param(p.name, "buffer", annotation.dtype,
                                shape=annotation.shape))
            continue
        dtype = as_dtype(annotation, strict=False)
        if dtype is None:
            raise EnigmaError(
                f"{where}: parameter '{p.name}' of kernel '{fn.__name__}' is "
                f"annotated with {annotation!r}, which is not an Enigma type; "
                "use an element type such as enigma.f32 or enigma.Scalar(...)")
        params.append(Param(p.name, "buffer", dtype))
    check_buffer_shapes(params, where, fn.__name__)
    return params


class Launchable:
    """``kernel[n](...)`` and ``kernel.launch(grid=... | threadgroups=...,
    threads=..., constants=...)(...)``: launches on arrays in place. Both
    return the same kind of object (a C++ launcher, kept per spelling), to
    be called with the kernel's arguments."""

    def _launch_label(self) -> str:
        """How the kernel is named in messages about its launch."""
        return "kernel"

    def __getitem__(self, n):
        """``kernel[n](args...)``: a 1-D grid of ``n`` threads in
        threadgroups of 256 (the last one may be partial). Only one int:
        other launches are ``kernel.launch(...)``."""
        try:
            return self._launchers[_spelling_key(n)]
        except (AttributeError, KeyError, TypeError):
            return _bracket_launcher(self, n)

    def launch(self, *args, grid=None, threadgroups=None, threads=None,
               constants=None, **options):
        """The launcher of ``grid`` threads (an int or 1 to 3 ints, counted
        in threads as ``execute`` counts them) or of ``threadgroups``
        threadgroups (the grid is then ``threadgroups x threads``) in
        threadgroups of ``threads`` (default 256, 16 x 16 or 8 x 8 x 4 for
        1, 2 or 3 dimensions). ``constants={index: (type_name, value)}``
        gives the kernel's function constants, as ``execute`` takes them."""
        if not args and not options:
            try:
                return self._launchers[_spelling_key(
                    (grid, threadgroups, threads, constants))]
            except (AttributeError, KeyError, TypeError):
                pass
        return _explicit_launcher(self, args, grid, threadgroups, threads,
                                  constants, options)


def check_buffer_shapes(params, where: str, kernel_name: str) -> None:
    """Each extent a shaped buffer names is an integer scalar parameter."""
    scalars = {p.name: p for p in params if p.kind == "scalar"}
    for p in params:
        for extent in p.shape or ():
            scalar = scalars.get(extent) if isinstance(extent, str) else None
            if isinstance(extent, str) and (
                    scalar is None or scalar.dtype.is_float or
                    scalar.dtype.name == "b1"):
                raise EnigmaError(
                    f"{where}: buffer '{p.name}' of kernel '{kernel_name}' "
                    f"has the extent {extent!r}, which is not an integer "
                    "Scalar parameter of the kernel; name one (n: "
                    "enigma.Scalar(enigma.u32)) or give a number")


class KernelDefinition(Launchable):
    """What ``@enigma.kernel`` returns: the Python function and its parameter
    list. The body runs once, at compile time, to trace the kernel."""

    def __init__(self, fn):
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
        if active_tracer() is not None:
            raise EnigmaError(f"kernel '{self.__name__}' is traced inside "
                              "another kernel's body")
        # The kernel op carries the def line (errors about the kernel itself).
        code = self.__wrapped__.__code__
        tracer = Tracer(self.fn.__name__,
                        (code.co_filename, code.co_firstlineno))
        args = self.bind_arguments(tracer, vec_width)
        set_active_tracer(tracer)
        try:
            result = self.fn(*args)
        except (EnigmaError, TypeError) as e:
            located = _located_error(e)
            if located is None:
                raise
            raise located from None
        finally:
            set_active_tracer(None)
        if result is not None:
            raise EnigmaError(
                f"{code.co_filename}:{_return_line(self.__wrapped__)}: "
                f"kernel '{self.__name__}' returned a value; kernels write "
                "their results into buffers and return nothing")
        return tracer

    def bind_arguments(self, tracer: Tracer, vec_width: int) -> list:
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
                buf = tracer.call("add_vector_buffer", p.name, p.dtype.name,
                                  lanes, at=tracer.location)
                args.append(BufferProxy(tracer, p.name, p.dtype, buf, lanes))
            else:
                args.append(IRValue(tracer, tracer.call(
                    "add_scalar", p.name, p.dtype.name, p.multiple_of,
                    at=tracer.location)))
        for p, a in zip(self.params, args):
            if p.shape is not None:
                a.set_shape(p.shape, dict(zip(
                    (q.name for q in self.params), args)))
        tracer.buffers = {i: a for i, a in enumerate(args)
                          if isinstance(a, BufferProxy)}
        for i, proxy in tracer.buffers.items():
            proxy.buffer_index = i
        return args

    def _launch_label(self) -> str:
        return self.__name__

    def _make_calls(self):
        if any(p.kind == "jit" for p in self.params):
            raise EnigmaError(
                f"kernel '{self.__name__}' has unannotated parameters "
                "(Tensors and layouts of @enigma.jit), so it cannot be called "
                "on arrays; annotate buffers (A: enigma.f32) and scalars "
                "(n: enigma.Scalar(enigma.u32))")
        return KernelCalls(self.kernel_name, self.params, source=self)

    def __call__(self, *args, **kwargs):
        # Inside an @enigma.jit function this records a launch; elsewhere
        # it is an error.
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


# --------------------------------------------------------------------------
# kernel[n] and kernel.launch(...): the function-call form
# (docs/reference/launch.md, docs/design/launch-form.md)
# --------------------------------------------------------------------------

# Launchers kept per kernel for hashable spellings; a program that launches
# with ever new grids (kernel[n] for every n) starts over here.
_MAX_LAUNCHERS = 256
# What enigma.compile takes; given to launch(), they are pointed there.
_COMPILE_OPTIONS = ("vec_width", "bounds_check", "cuda_tma", "emit_only",
                    "dump_ir", "dump_mlir", "work_dir", "keep_metal_source")


class KernelCalls:
    """A kernel's state for the function-call form: the C++ CallForm (one
    loaded kernel per runtime and function constant values), the compiled
    kernel (made on the first launch, by _launch, unless given) and, for a
    kernel traced here, the names its body read (_name_reads)."""

    def __init__(self, name: str, params, compiled=None, source=None):
        self.name = name
        self.compiled = compiled
        self.source = source  # the KernelDefinition traced on first use
        self.reads = []
        self.traced_for = {}  # values of the names read -> CompiledKernel
        self.constant_sets = [()]  # number -> ((index, type, value), ...)
        # The C++ side refers back weakly: no cycle through C++ objects.
        self.form = _core.CallForm(
            name, [(p.name, p.kind, p.dtype.name, p.multiple_of,
                    max(1, p.vec_width)) for p in params],
            weakref.ref(self))

    def constants_number(self, constants) -> int:
        """The number of ``constants`` (a dict, as execute takes it) among
        this kernel's sets of function constant values."""
        given = tuple(sorted((index, type_name, value) for index, (
            type_name, value) in function_constants(constants).items()))
        if not given:
            return 0
        try:
            return self.constant_sets.index(given)
        except ValueError:
            self.constant_sets.append(given)
            return len(self.constant_sets) - 1


def _calls(owner) -> KernelCalls:
    calls = owner.__dict__.get("_calls")
    if calls is None:
        calls = owner._calls = owner._make_calls()
        owner._launchers = {}
    return calls


def _spelling_key(value):
    """``value`` (a launch's spelling) as a key of the kept launchers that
    tells 1000 from 1000.0 and 1 from True, which a dict takes for the same
    key: a float or a bool must reach the checks, not the int's launcher.
    A numpy integer is the int's key."""
    if type(value) is int or value is None:
        return value
    if type(value) is tuple:
        return tuple(_spelling_key(v) for v in value)
    value = plain_index(value)
    return value if type(value) is int else (type(value), value)


def _keep(owner, key, made):
    """Keeps ``made`` as the launcher of spelling ``key``."""
    try:
        cache = owner._launchers
        if len(cache) >= _MAX_LAUNCHERS:
            cache.clear()
        cache[_spelling_key(key)] = made
    except TypeError:  # an unhashable spelling (a list): not kept
        pass
    return made


def _bracket_launcher(owner, n):
    """``owner[n]``: a launcher of n threads, or the EnigmaError that
    spells what other brackets may have meant."""
    calls = _calls(owner)
    grid, threads = bracket_grid(owner._launch_label(), n)
    return _keep(owner, n, calls.form.launcher(grid, threads,
                                               (grid, threads)))


def _explicit_launcher(owner, args, grid, threadgroups, threads, constants,
                       options):
    """``owner.launch(...)`` when its launcher is not kept yet."""
    name = owner._launch_label()
    if args:
        file, line = user_location()
        raise EnigmaError(
            f"{file}:{line}: {positional_launch_message(name, args)}")
    if options:
        file, line = user_location()
        given = sorted(options)
        if "block" in options:
            why = ("the threadgroup size is threads= here (block= is the "
                   "name @enigma.jit's launch uses)")
        elif "runtime" in options:
            why = ("the runtime goes to the call: "
                   f"{name}.launch(...)(a, b, runtime=rt)")
        elif any(o in _COMPILE_OPTIONS for o in options):
            why = ("compile options go to enigma.compile, whose result "
                   "launches the same way: enigma.compile(kernel, "
                   f"{given[0]}=...).launch(grid=...)(...)")
        else:
            why = ("it takes grid= or threadgroups=, threads= and "
                   "constants=")
        raise EnigmaError(f"{file}:{line}: {name}.launch() got "
                          f"{', '.join(k + '=' for k in given)}: {why}")
    calls = _calls(owner)
    grid3, threads3 = launch_shape(name, grid, threadgroups, threads)
    number = calls.constants_number(constants)
    made = calls.form.launcher(grid3, threads3, (grid3, threads3), number)
    return _keep(owner, (grid, threadgroups, threads, constants), made)
