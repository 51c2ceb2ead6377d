"""``@enigma.jit``: host functions that do layout algebra on Tensors and
launch one kernel (docs/reference/tensor.md, docs/design/jit-and-tensors.md).

    @enigma.jit
    def add(A, B, C):
        tiler, tv = enigma.make_layout_tv(thr, val)
        gA = enigma.tensor_zipped_divide(A, tiler)
        ...
        add_kernel(gA, gB, gC, tv).launch(grid=[tiles * 128, 1, 1],
                                          block=[128, 1, 1])

    compiled = enigma.compile(add, A, B, C)   # A, B, C: enigma.Tensor
    compiled.grid, compiled.block             # as passed to launch()

``enigma.compile`` runs the host function once with the given Tensors; the
kernel call inside it records its arguments and ``.launch`` its grid (in
threads, Metal's dispatchThreads, as in the original DSL; or in
threadgroups with the ``threadgroups=`` keyword) and block (threads per
threadgroup). The launched kernel is then traced: every Tensor argument
(and every Tensor given to compile) with a buffer becomes a buffer
parameter, in ``buffer_index`` order; layouts, ints and other Python values
are compile-time constants.

This module runs the host function and records its launch; _compile
traces and compiles the launched kernel.
"""

from __future__ import annotations

import functools
import inspect
import threading

from ._dtypes import plain_index
from ._ir import EnigmaError, user_location

_state = threading.local()


class JitFunction:
    """What ``@enigma.jit`` returns: a host function to compile with
    ``enigma.compile(fn, *tensors)``."""

    def __init__(self, fn):
        if not callable(fn):
            raise EnigmaError(f"@enigma.jit decorates a function, got {fn!r}")
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        raise EnigmaError(
            f"@enigma.jit function '{self.fn.__name__}' is not called "
            "directly: compile it with enigma.compile(fn, *tensors) and run "
            "the result with a runtime's execute()")

    def __repr__(self) -> str:
        return f"<enigma jit function {self.fn.__name__}>"


def jit(fn) -> JitFunction:
    """Decorator: ``fn`` is host code that builds Tensors and layouts and
    launches exactly one ``@enigma.kernel`` with
    ``kernel(args...).launch(grid=[gx, gy, gz], block=[bx, by, bz])``
    (``grid`` in threads)."""
    return JitFunction(fn)


def _dims(value, what: str, where: str) -> tuple:
    """A launch shape as a 3-tuple of positive ints."""
    value = plain_index(tuple(value) if isinstance(value, list) else value)
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (list, tuple)) or not 1 <= len(value) <= 3:
        raise EnigmaError(f"{where}: launch {what} must be a list of 1 to 3 "
                          f"ints, got {value!r}")
    dims = []
    for d in value:
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise EnigmaError(f"{where}: launch {what} {value!r} must hold "
                              "positive ints (compile-time values)")
        dims.append(int(d))
    return tuple(dims) + (1,) * (3 - len(dims))


class KernelLaunch:
    """A kernel call recorded inside an ``@enigma.jit`` function; its
    :meth:`launch` picks the grid and block."""

    def __init__(self, kernel, arguments: list, session: "_Session",
                 where: str):
        self.kernel = kernel  # the KernelDefinition called
        self.arguments = arguments
        self._session = session
        self.where = where  # the call's file:line
        self.smem = None  # bytes of dynamic threadgroup memory (launch)

    def launch(self, grid=None, block=None, *, threadgroups=None,
               smem=None) -> None:
        """Launches ``grid`` threads in threadgroups of ``block`` threads
        (each a list or tuple of 1 to 3 ints). ``grid`` counts threads, as
        Metal's dispatchThreads and the original DSL do (``grid=(num_blocks
        * threads, 1, 1)``); the last threadgroup may be partial.
        ``threadgroups=`` instead of ``grid`` counts threadgroups (CuTe's
        convention): the grid is then ``threadgroups * block``. ``smem=``
        (CuTe's name) is the size in bytes of the kernel's dynamic
        threadgroup array (``enigma.dynamic_threadgroup_alloc``), the
        default ``threadgroup_memory=`` of ``execute``."""
        file, line = user_location()
        where = f"{file}:{line}"
        session = getattr(_state, "session", None)
        if session is not self._session:
            raise EnigmaError(
                f"{where}: launch() outside the @enigma.jit function that "
                f"called kernel '{self.kernel.__name__}'; a kernel is launched "
                "only while enigma.compile runs that function")
        if block is None:
            raise EnigmaError(f"{where}: launch() needs block=(threads per "
                              "threadgroup)")
        block = _dims(block, "block", where)
        if block[0] * block[1] * block[2] > 1024:
            raise EnigmaError(f"{where}: block {list(block)} has more than "
                              "1024 threads per threadgroup")
        if threadgroups is not None:
            if grid is not None:
                raise EnigmaError(f"{where}: launch() takes grid= (threads) "
                                  "or threadgroups=, not both")
            groups = _dims(threadgroups, "threadgroups", where)
            grid = tuple(g * b for g, b in zip(groups, block))
        elif grid is None:
            raise EnigmaError(f"{where}: launch() needs grid=(threads in all) "
                              "or threadgroups=")
        grid = _dims(grid, "grid", where)
        if session.launch is not None:
            raise EnigmaError(
                f"{where}: a second kernel launch in @enigma.jit function "
                f"'{session.name}' (the first was at {session.launch[3]}); a "
                "jit function launches exactly one kernel")
        smem = plain_index(smem)
        if smem is not None and (isinstance(smem, bool) or
                                 not isinstance(smem, int) or smem < 0):
            raise EnigmaError(f"{where}: launch(smem=...) takes a number of "
                              f"bytes (an int >= 0), got {smem!r}")
        self.smem = smem
        session.launch = (self, grid, block, where)


class _Session:
    """One run of a jit function's host code."""

    def __init__(self, name: str):
        self.name = name
        self.calls = []    # KernelLaunch objects created
        self.launch = None  # (KernelLaunch, grid, block, where)


def _direct_call_message(name, kwargs) -> str:
    """What ``kernel(...)`` outside a jit function should have been: with
    launch keywords among its arguments, the function-call form spelled
    with them."""
    given = [k for k in ("grid", "threadgroups", "threads") if k in kwargs]
    if given:
        keywords = ", ".join(f"{k}={kwargs[k]!r}" for k in given)
        args = "..., runtime=..." if "runtime" in kwargs else "..."
        form = f"{name}.launch({keywords})({args})"
    else:
        form = f"{name}.launch(grid=..., threads=...)(...)"
    return (f"kernel '{name}' is not called directly: launch it on your "
            f"arrays with {form} or {name}[n](...) (a 1-D grid of n "
            "threads, docs/reference/launch.md); or compile it with "
            "enigma.compile and run it with a runtime's execute(); or, "
            "from an @enigma.jit function, "
            f"{name}(...).launch(grid=..., block=...)")


def kernel_call(kernel, args, kwargs) -> KernelLaunch:
    """``kernel(args...)`` inside a jit function (KernelDefinition.__call__
    comes here)."""
    session = getattr(_state, "session", None)
    if session is None:
        raise EnigmaError(_direct_call_message(kernel.__name__, kwargs))
    file, line = user_location()
    where = f"{file}:{line}"
    if any(p.kind != "jit" for p in kernel.params):
        raise EnigmaError(
            f"{where}: kernel '{kernel.__name__}' has annotated parameters; "
            "a kernel launched from @enigma.jit takes Tensors, layouts and "
            "ints as unannotated parameters")
    try:
        bound = inspect.signature(kernel.__wrapped__).bind(*args, **kwargs)
    except TypeError as e:
        raise EnigmaError(f"{where}: kernel '{kernel.__name__}': {e}") from None
    bound.apply_defaults()
    call = KernelLaunch(kernel, list(bound.arguments.values()), session,
                        where)
    session.calls.append(call)
    return call


# Attributes that mark an array (numpy, CuPy, PyTorch, JAX, ...).
_ARRAY_PROTOCOLS = ("__array_interface__", "__cuda_array_interface__",
                    "__dlpack__")


def run_host(jit_fn: JitFunction, args, vec_width=0):
    """Runs the host code of ``enigma.compile(jit_fn, *args)`` and returns
    its one launch: ``(KernelLaunch, grid, block, where)``."""
    fn = jit_fn.fn
    where = f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
    try:
        inspect.signature(fn).bind(*args)
    except TypeError as e:
        names = ", ".join(inspect.signature(fn).parameters)
        raise EnigmaError(
            f"{where}: enigma.compile(@enigma.jit '{fn.__name__}', ...) got "
            f"{len(args)} argument(s) for parameters ({names}): {e}; pass "
            "the Tensors (and other values) the function takes") from None
    for k, arg in enumerate(args):
        if any(hasattr(arg, a) for a in _ARRAY_PROTOCOLS):
            raise EnigmaError(
                f"{where}: enigma.compile(@enigma.jit '{fn.__name__}', ...): "
                f"argument {k} is an array ({type(arg).__name__}); a jit "
                "function takes enigma.Tensor descriptions (name, buffer "
                "index, dtype, layout) and the arrays go to the runtime's "
                "execute()")
    if vec_width not in (0, 1):
        raise EnigmaError("vec_width does not apply to @enigma.jit kernels: "
                          "Tensor.load()/store() choose vector accesses "
                          "themselves")
    if getattr(_state, "session", None) is not None:
        raise EnigmaError(f"{where}: @enigma.jit function '{fn.__name__}' is "
                          "compiled inside another jit function")
    session = _Session(fn.__name__)
    _state.session = session
    try:
        result = fn(*args)
    finally:
        _state.session = None
    if result is not None:
        raise EnigmaError(f"{where}: @enigma.jit function '{fn.__name__}' "
                          "returned a value; it launches a kernel and "
                          "returns nothing")
    if session.launch is None:
        called = (f" (kernel '{session.calls[0].kernel.__name__}' was called "
                  f"at {session.calls[0].where} but never launched)"
                  if session.calls else "")
        raise EnigmaError(
            f"{where}: @enigma.jit function '{fn.__name__}' launched no "
            f"kernel{called}; call kernel(...).launch(grid=[...], "
            "block=[...]) exactly once")
    return session.launch


def dispatch_shape(compiled):
    """``(grid, threads)`` for a runtime's ``execute`` / ``dispatch`` from
    a jit-compiled kernel: the launch's ``grid`` (threads, Metal's
    dispatchThreads) and ``block``, i.e. ``(compiled.grid,
    compiled.block)``."""
    if getattr(compiled, "grid", None) is None or compiled.block is None:
        raise EnigmaError("dispatch_shape needs a kernel compiled from an "
                          "@enigma.jit function (it carries grid and block)")
    return tuple(compiled.grid), tuple(compiled.block)


__all__ = ["jit", "JitFunction", "KernelLaunch", "dispatch_shape"]
