"""Mistakes in a kernel, caught while it is traced or called, give an
EnigmaError that says what is wrong (and where), never a crash or a
kernel that silently does something else. The launch arguments' errors
are in test_dispatch_errors.py."""

import os
import re
import tempfile

import numpy as np
import pytest

import enigma


@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


# --------------------------------------------------------------------------
# Tracing errors (EnigmaError)
# --------------------------------------------------------------------------

def test_thread_query_outside_a_kernel():
    with pytest.raises(enigma.EnigmaError, match="inside an @enigma.kernel"):
        enigma.thread_position_in_grid  # noqa: B018


def test_unannotated_parameter():
    def k(A: enigma.f32, B):
        pass

    with pytest.raises(enigma.EnigmaError, match="'B'.*no type annotation"):
        enigma.kernel(k)


def test_parameter_annotated_with_a_non_enigma_type():
    def k(A: int):
        pass

    with pytest.raises(enigma.EnigmaError, match="'A'.*not an Enigma type"):
        enigma.kernel(k)


def test_dim_other_than_xyz():
    @enigma.kernel
    def k(A: enigma.u32):
        A[0] = enigma.threads_per_grid("q")

    with pytest.raises(enigma.EnigmaError, match="'x', 'y' or 'z'.*'q'"):
        enigma.compile(k, emit_only=True)


def test_if_on_a_traced_value():
    @enigma.kernel
    def k(A: enigma.f32):
        tid = enigma.thread_position_in_grid
        if tid < 4:
            A[tid] = 1.0

    with pytest.raises(enigma.EnigmaError, match="no Python truth value"):
        enigma.compile(k, emit_only=True)


@pytest.mark.parametrize("use", [
    lambda t, n: enigma.if_(t == 0),     # Python compared the function: False
    lambda t, n: enigma.if_(0 != t),
    lambda t, n: enigma.if_(t < n),
    lambda t, n: enigma.if_(n >= t),
    lambda t, n: range(t),
    lambda t, n: bool(t),
    lambda t, n: -t,
    lambda t, n: enigma.if_((t & 1) == 1),
], ids=["eq", "reflected-ne", "lt", "reflected-ge", "range", "bool", "neg",
        "and"])
def test_thread_query_function_used_as_its_value(use):
    """A newcomer wrote ``t = enigma.thread_position_in_threadgroup`` (as
    ``enigma.thread_position_in_grid`` is written) and then ``with
    enigma.if_(t == 0)``: Python compared the function with 0, the branch
    became a trace-time False and never ran, silently. Every query
    function used as a value is an error saying to call it."""
    @enigma.kernel
    def k(out: enigma.u32, n: enigma.Scalar(enigma.u32)):
        t = enigma.thread_position_in_threadgroup
        with use(t, n):
            out[0] = 1

    with pytest.raises(enigma.EnigmaError,
                       match=r"enigma\.thread_position_in_threadgroup: "
                             r"call it, enigma\."
                             r"thread_position_in_threadgroup\(\)"):
        enigma.compile(k, emit_only=True)


def test_thread_query_functions_stay_functions():
    """The query functions keep their names, documentation and signature,
    compare equal only to themselves, and hash as objects."""
    import inspect
    q = enigma.thread_position_in_threadgroup
    assert q.__name__ == "thread_position_in_threadgroup" and q.__doc__
    assert list(inspect.signature(q).parameters) == ["dim"]
    assert q == q and q != enigma.threadgroup_position_in_grid
    assert len({q, q, enigma.thread_index_in_threadgroup}) == 2
    assert q in [enigma.threads_per_grid, q]


@pytest.mark.parametrize("statement", ["enigma.barrier", "barrier",
                                       "enigma.simd_barrier"])
def test_function_named_without_its_call(statement):
    """``enigma.barrier`` on a line of its own, the call left out, is a
    Python expression that does nothing: the kernel silently lost its
    barrier. A statement that only names one of enigma's functions is an
    error at its line."""
    source = (f"def k(A: enigma.f32):\n"
              f"    A[0] = 1.0\n"
              f"    {statement}\n"
              f"    A[1] = A[0]\n")
    scope = {"enigma": enigma, "barrier": enigma.barrier}
    path = os.path.join(tempfile.mkdtemp(), "bare.py")
    with open(path, "w") as f:
        f.write(source)
    exec(compile(source, path, "exec"), scope)
    with pytest.raises(enigma.EnigmaError,
                       match=rf"bare\.py:3: {re.escape(statement)} names "
                             rf"a function without calling it.*write "
                             rf"{re.escape(statement)}\(\)"):
        enigma.compile(enigma.kernel(scope["k"]), emit_only=True)


def test_names_of_values_on_their_own_line_stay_allowed():
    """A docstring, a constant, or a name that is not a function (a
    value read and dropped) is not that mistake."""
    @enigma.kernel
    def k(A: enigma.f32):
        """A docstring."""
        x = A[0]
        x  # noqa: B018
        enigma.f32  # noqa: B018
        A[1] = x

    enigma.compile(k, emit_only=True)


def test_iterating_or_sizing_a_buffer_parameter():
    """``for x in A`` over a buffer parameter traced loads A[0], A[1], ...
    without end (Python's fallback iteration through __getitem__): the
    process hung, its memory growing. ``len(A)`` was a bare TypeError.
    Both are errors at the user's line saying what to write instead."""
    @enigma.kernel
    def summed(A: enigma.f32, B: enigma.f32):
        s = 0.0
        for x in A:
            s = s + x
        B[0] = s

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_tracing_errors\.py:\d+: buffer A cannot "
                             r"be iterated.*enigma\.range"):
        enigma.compile(summed, emit_only=True)

    @enigma.kernel
    def sized(A: enigma.f32):
        i = enigma.thread_position_in_grid
        with enigma.if_(i < len(A)):
            A[i] = 1.0

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_tracing_errors\.py:\d+: buffer A has no "
                             r"length in the kernel.*enigma\.Scalar"):
        enigma.compile(sized, emit_only=True)


def test_error_names_the_users_line():
    @enigma.kernel
    def k(A: enigma.f32):
        tid = enigma.thread_position_in_grid
        while tid:  # the line reported
            pass

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(k, emit_only=True)
    assert "test_tracing_errors.py:" in str(info.value)


def test_kernel_called_directly():
    with pytest.raises(enigma.EnigmaError, match="not called directly"):
        vector_add(np.zeros(4, np.float32), np.zeros(4, np.float32),
                   np.zeros(4, np.float32))


def test_kernel_called_with_launch_keywords_names_the_launch_form():
    """A newcomer's ``k(a, b, grid=..., threads=..., runtime=rt)`` means a
    launch on those arrays: the error spells the function-call form with
    the caller's own launch keywords, then runs as spelled."""
    a, b = np.ones(4, np.float32), np.full(4, 2.0, np.float32)
    c = np.full(4, np.nan, np.float32)
    rt = enigma.CpuRuntime()
    with pytest.raises(enigma.EnigmaError) as info:
        vector_add(a, b, c, grid=(4,), threads=(4,), runtime=rt)
    text = str(info.value)
    assert "not called directly" in text
    assert "vector_add.launch(grid=(4,), threads=(4,))(..., runtime=...)" \
        in text, text
    assert "vector_add[n](...)" in text, text
    vector_add.launch(grid=(4,), threads=(4,))(a, b, c, runtime=rt)
    assert np.array_equal(c, np.full(4, 3.0, np.float32))


def test_kernel_returning_a_value():
    @enigma.kernel
    def k(A: enigma.f32):
        return A[0]

    with pytest.raises(enigma.EnigmaError, match="returned a value"):
        enigma.compile(k, emit_only=True)


def test_compile_of_a_plain_function():
    def k(A: enigma.f32):
        pass

    with pytest.raises(enigma.EnigmaError, match="@enigma.kernel"):
        enigma.compile(k)
