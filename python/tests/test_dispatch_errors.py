"""Bad launch arguments give a clear error, never a crash, and the
PreparedKernel surface (docs/reference/runtimes.md). The mistakes in a
kernel's body, caught while it is traced, are in test_tracing_errors.py."""

import re
import warnings

import numpy as np
import pytest

import enigma


@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


@enigma.kernel
def scaled(A: enigma.f32, k: enigma.Scalar(enigma.f32), n: enigma.Scalar(enigma.u32),
           C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] * k + enigma.metal_cast(n, enigma.f32)


@pytest.fixture(scope="module")
def add():
    return enigma.compile(vector_add, emit_only=True)


@pytest.fixture(scope="module")
def scale():
    return enigma.compile(scaled, emit_only=True)


def inputs(rng, n):
    return (rng.standard_normal(n).astype(np.float32),
            rng.standard_normal(n).astype(np.float32))


# --------------------------------------------------------------------------
# Binding errors (DispatchError), every one naming what is wrong
# --------------------------------------------------------------------------

def test_number_for_a_buffer_parameter_names_the_scalar_annotation(runtime):
    """A newcomer's first 2-D kernel passed its sizes as numbers to
    parameters annotated enigma.u32, which are buffers: the error said a
    buffer takes an array but not how to pass a number."""
    @enigma.kernel
    def transpose(a: enigma.f32, out: enigma.f32, h: enigma.u32,
                  w: enigma.u32):
        x = enigma.thread_position_in_grid("x")
        y = enigma.thread_position_in_grid("y")
        with enigma.if_((x < w[0]) & (y < h[0])):
            out[x * h[0] + y] = a[y * w[0] + x]

    a = np.ones((3, 5), np.float32)
    out = np.zeros((5, 3), np.float32)
    for number, said in ((3, "an int;"), (3.0, "a float;"),
                         (np.uint32(3), "a numpy.uint32 ")):
        with pytest.raises(enigma.DispatchError,
                           match=r"argument h \(u32 buffer\) is .*a "
                                 r"buffer parameter takes an array .*; to "
                                 r"pass a number, annotate the parameter "
                                 r"enigma\.Scalar\(enigma\.u32\)") as caught:
            transpose.launch(grid=(5, 3), threads=(8, 8))(
                a, out, number, 5, runtime=runtime)
        assert f"is {said}" in str(caught.value), str(caught.value)
    # Not said for what is not a number.
    with pytest.raises(enigma.DispatchError) as caught:
        transpose.launch(grid=(5, 3), threads=(8, 8))(
            a, out, "3", 5, runtime=runtime)
    assert "enigma.Scalar" not in str(caught.value)


def test_too_many_inputs_names_the_parameters(runtime, add, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError) as info:
        runtime.execute(add, [a, b, a, b], output_size=32, grid=8, threads=8)
    msg = str(info.value)
    assert "3 parameters" in msg and "4 inputs + 0 scalars + 1 output" in msg
    assert "left over: input 3, output 0" in msg
    for name in ("A (f32)", "B (f32)", "C (f32)"):
        assert name in msg


def test_inputs_feeding_every_buffer_leave_no_output(runtime, add, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError,
                       match="C <- input 2; left over: output 0"):
        runtime.execute(add, [a, b, a], output_size=32, grid=8, threads=8)


def test_missing_output_size_names_the_output(runtime, add, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError,
                       match="C \\(f32\\).* 0 outputs = 2 .*C <- nothing"):
        runtime.execute(add, [a, b], grid=8, threads=8)


def test_too_many_output_sizes(runtime, add, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError,
                       match="C <- output 0; left over: output 1"):
        runtime.execute(add, [a, b], output_sizes=[32, 32], grid=8,
                        threads=8)


@pytest.mark.parametrize("scalars", [None, [1.0], [1.0, 2, 3]])
def test_wrong_scalar_count_names_the_scalars(runtime, scale, rng, scalars):
    a, _ = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError) as info:
        runtime.execute(scale, [a], output_size=32, grid=8, threads=8,
                        scalars=scalars)
    msg = str(info.value)
    assert "k (f32)" in msg and "n (u32)" in msg, msg


def test_numbers_among_the_inputs_say_where_scalars_go(runtime, scale,
                                                        rng):
    """A newcomer passed the scalar parameters' values in the inputs list
    (as the call form takes them, in declaration order): the error only
    counted the scalars given (none) and did not say where they go."""
    a, _ = inputs(rng, 8)
    for numbers in ([2.0, 3], [np.float32(2.0), np.uint32(3)]):
        with pytest.raises(enigma.DispatchError) as info:
            runtime.execute(scale, [a, *numbers], output_size=32, grid=8,
                            threads=8)
        msg = str(info.value)
        assert "inputs 1 and 2 are numbers" in msg, msg
        assert "scalars=[...]" in msg and "k (f32), n (u32)" in msg, msg
    # With the scalars given, the inputs are not second-guessed.
    out = runtime.execute(scale, [a], output_size=32, grid=8, threads=8,
                          scalars=[2.0, 3])
    assert np.array_equal(np.frombuffer(out, np.float32), a * 2 + 3)


def test_writes_into_copied_inputs_are_warned(runtime):
    """A newcomer passed every array as an input, the ones the kernel
    writes among them: execute copies its inputs, so those arrays stayed
    as they were and nothing said so."""
    @enigma.kernel
    def divmod3(a: enigma.i32, q: enigma.i32, r: enigma.i32):
        i = enigma.thread_position_in_grid
        q[i] = a[i] // 3
        r[i] = a[i] % 3

    k = enigma.compile(divmod3)
    a = np.array([0, 1, 5, 7, 9], np.int32)
    q, r = np.zeros(5, np.int32), np.zeros(5, np.int32)
    with pytest.warns(UserWarning, match=r"kernel enigma_kernel_divmod3 "
                      r"returns nothing and writes q \(input 1\) and r "
                      r"\(input 2\), which execute copies: .*not "
                      r"returned.*outputs"):
        runtime.execute(k, [a, q, r], grid=5, threads=5)
    assert not q.any() and not r.any()    # as documented: inputs copied
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Bound as outputs, nothing is said, and the results come back.
        got_q, got_r = runtime.execute(k, [a], output_shapes=[(5,), (5,)],
                                       output_dtypes=[np.int32, np.int32],
                                       grid=5, threads=5)
        # A written input beside an output is scratch space, as the
        # original Enigma's programs pass it: not warned either.
        scratch = runtime.execute(k, [a, q], output_size=20, grid=5,
                                  threads=5)
    assert got_q.tolist() == (a // 3).tolist()
    assert got_r.tolist() == (a % 3).tolist()
    assert np.frombuffer(scratch, np.int32).tolist() == (a % 3).tolist()


def test_scalars_by_unknown_name(runtime, scale, rng):
    a, _ = inputs(rng, 8)
    with pytest.raises(ValueError, match="'m'"):
        runtime.execute(scale, [a], output_size=32, grid=8, threads=8,
                        scalars={"k": 1.0, "m": 2})


@pytest.mark.parametrize("value", [-1, 2**32, 0.5, 1e10])
def test_scalar_out_of_range(runtime, scale, rng, value):
    a, _ = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError, match="n \\(u32\\)"):
        runtime.execute(scale, [a], output_size=32, grid=8, threads=8,
                        scalars=[1.0, value])


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32,
                                   np.uint32, np.int8, np.bool_])
def test_input_dtype_differs_from_parameter(runtime, add, dtype):
    a = np.zeros(8, np.float32)
    b = np.zeros(8, dtype)
    with pytest.raises((enigma.DispatchError, TypeError)) as info:
        runtime.execute(add, [a, b], output_size=32, grid=8, threads=8)
    msg = str(info.value)
    assert np.dtype(dtype).name in msg and "f32" in msg and "B" in msg, msg


def test_input_with_an_unsupported_dtype(runtime, add):
    a = np.zeros(8, np.complex64)
    with pytest.raises(TypeError, match="complex64.*A is f32"):
        runtime.execute(add, [a, a], output_size=32, grid=8, threads=8)


@pytest.mark.parametrize("grid,threads", [
    ((0, 1, 1), (1, 1, 1)), ((8, 0, 1), (1, 1, 1)), ((8, 1, 0), (1, 1, 1)),
    ((8, 1, 1), (0, 1, 1)), ((8, 1, 1), (8, 1, 0)), (0, 8), (8, 0)])
def test_zero_in_grid_or_threads(runtime, add, rng, grid, threads):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError, match="zero dimension"):
        runtime.execute(add, [a, b], output_size=32, grid=grid,
                        threads=threads)


@pytest.mark.parametrize("threads", [(1025, 1, 1), (32, 33, 1), (16, 8, 9),
                                     2048])
def test_threads_over_1024(runtime, add, rng, threads):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError, match="maximum of 1024"):
        runtime.execute(add, [a, b], output_size=32, grid=8, threads=threads)


def test_threads_of_exactly_1024_are_accepted(runtime, add, rng):
    a, b = inputs(rng, 2000)
    out = np.frombuffer(runtime.execute(add, [a, b], output_size=8000,
                                        grid=2000, threads=(32, 32, 1)),
                        np.float32)
    # a 32x32 group along x covers 32 threads per row; rows y > 0 are past
    # the 1-D grid, so the kernel still sees each x once.
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.parametrize("grid", [(-1, 1, 1), (1, 2, 3, 4), (), "abc"])
def test_malformed_launch_shape(runtime, add, rng, grid):
    a, b = inputs(rng, 8)
    with pytest.raises((TypeError, ValueError)):
        runtime.execute(add, [a, b], output_size=32, grid=grid, threads=1)


def test_output_size_zero(runtime, add, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError, match="C \\(f32\\) has size 0"):
        runtime.execute(add, [a, b], output_size=0, grid=8, threads=8)


def test_output_size_not_a_multiple_of_the_element(runtime, add, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError, match="not a multiple of its 4"):
        runtime.execute(add, [a, b], output_size=30, grid=8, threads=8)


def test_inputs_must_be_a_list(runtime, add, rng):
    a, _ = inputs(rng, 8)
    with pytest.raises(TypeError, match="list"):
        runtime.execute(add, a, output_size=32, grid=8, threads=8)


def test_execute_needs_a_compiled_kernel(runtime, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(TypeError, match="CompiledKernel"):
        runtime.execute(vector_add, [a, b], output_size=32, grid=8, threads=8)


def test_dispatch_error_is_a_runtime_error():
    # docs/reference/runtimes.md: dispatch failures are RuntimeErrors.
    assert issubclass(enigma.DispatchError, RuntimeError)
    assert issubclass(enigma.DispatchError, ValueError)


# --------------------------------------------------------------------------
# Inputs are read correctly and never modified
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 255, 257, 2**20])
def test_non_contiguous_inputs_are_copied_not_misread(runtime, add, rng, n):
    big_a = rng.standard_normal(2 * n).astype(np.float32)
    big_b = rng.standard_normal((n, 3)).astype(np.float32)
    a = big_a[::2]  # strided view
    b = big_b[:, 1]  # a column
    if n > 1:
        assert not a.flags.c_contiguous and not b.flags.c_contiguous
    raw = runtime.execute(add, [a, b], output_size=(n + 4) * 4, grid=n,
                          threads=256)
    out = np.frombuffer(raw, np.float32)
    np.testing.assert_array_equal(out[:n], a + b)
    assert not out[n:].any()


def test_fortran_order_and_reversed_inputs(runtime, add, rng):
    m = rng.standard_normal((16, 16)).astype(np.float32)
    a = np.asfortranarray(m)
    b = m[::-1, ::-1]
    raw = runtime.execute(add, [a, b], output_size=256 * 4, grid=256,
                          threads=64)
    want = (a.reshape(-1) + b.reshape(-1))  # C order, as numpy reads them
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), want)


def test_callers_inputs_are_never_modified(runtime, rng):
    @enigma.kernel
    def clobber(A: enigma.f32, B: enigma.f32):
        tid = enigma.thread_position_in_grid
        B[tid] = A[tid]
        A[tid] = 0.0  # writes the device copy only

    compiled = enigma.compile(clobber, emit_only=True)
    a = rng.standard_normal(257).astype(np.float32)
    keep = a.copy()
    out = np.frombuffer(runtime.execute(compiled, [a], output_size=257 * 4,
                                        grid=257, threads=64), np.float32)
    np.testing.assert_array_equal(a, keep)
    np.testing.assert_array_equal(out, keep)


def test_bytes_and_lists_as_inputs(runtime, add):
    a = np.arange(8, dtype=np.float32)
    out = np.frombuffer(runtime.execute(add, [a.tobytes(), list(range(8))],
                                        output_size=32, grid=8, threads=8),
                        np.float32)
    np.testing.assert_array_equal(out, 2 * a)


def test_outputs_start_zero_filled(runtime, rng):
    @enigma.kernel
    def evens(A: enigma.f32, C: enigma.f32):
        tid = enigma.thread_position_in_grid
        C[tid * 2] = A[tid]

    compiled = enigma.compile(evens, emit_only=True)
    a = rng.standard_normal(100).astype(np.float32) + 10
    out = np.frombuffer(runtime.execute(compiled, [a], output_size=201 * 4,
                                        grid=100, threads=32), np.float32)
    np.testing.assert_array_equal(out[0:200:2], a)
    assert not out[1::2].any()


# --------------------------------------------------------------------------
# PreparedKernel
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 257, 2**20])
def test_prepared_kernel_lifecycle(runtime, add, rng, n):
    a, b = inputs(rng, n)
    prepared = runtime.prepare(add, [a, b], output_size=(n + 3) * 4)
    assert isinstance(prepared, enigma.PreparedKernel)
    before = np.frombuffer(prepared.read_output(), np.float32)
    assert before.size == n + 3 and not before.any()
    prepared.dispatch((n, 1, 1), (256, 1, 1))
    out = np.frombuffer(prepared.read_output(), np.float32)
    np.testing.assert_array_equal(out[:n], a + b)
    assert not out[n:].any()
    us = prepared.dispatch_timed((n, 1, 1), (256, 1, 1))
    assert isinstance(us, float) and us > 0
    again = np.frombuffer(prepared.read_output(), np.float32)
    np.testing.assert_array_equal(again, out)
    outs = prepared.read_outputs()
    assert len(outs) == 1 and outs[0] == prepared.read_output()
    prepared.release()
    for use in (lambda: prepared.dispatch(n, 256),
                lambda: prepared.dispatch_timed(n, 256),
                prepared.read_output):
        with pytest.raises(RuntimeError, match="released"):
            use()


def test_prepared_kernel_with_a_partial_grid(runtime, add, rng):
    a, b = inputs(rng, 1000)
    prepared = runtime.prepare(add, [a, b], output_size=1000 * 4)
    prepared.dispatch(600, 256)  # only the first 600 elements
    out = np.frombuffer(prepared.read_output(), np.float32)
    np.testing.assert_array_equal(out[:600], (a + b)[:600])
    assert not out[600:].any()
    prepared.release()


def test_prepared_kernel_with_scalars(runtime, scale, rng):
    a, _ = inputs(rng, 257)
    prepared = runtime.prepare(scale, [a], output_size=257 * 4,
                               scalars=[2.0, 3])
    prepared.dispatch(257, 64)
    out = np.frombuffer(prepared.read_output(), np.float32)
    np.testing.assert_array_equal(out, a * np.float32(2) + np.float32(3))
    prepared.release()


def test_prepared_kernel_validates_launch_and_binding(runtime, add, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError, match="C <- nothing"):
        runtime.prepare(add, [a, b])
    prepared = runtime.prepare(add, [a, b], output_size=32)
    with pytest.raises(enigma.DispatchError, match="zero dimension"):
        prepared.dispatch((0, 1, 1), (8, 1, 1))
    with pytest.raises(enigma.DispatchError, match="maximum of 1024"):
        prepared.dispatch_timed((8, 1, 1), (2048, 1, 1))
    prepared.release()
    prepared.release()  # releasing twice is harmless


# --------------------------------------------------------------------------
# Every argument checked before the launch. Each case is
# also a row of the table in docs/reliability.md (tools/reliability_table.py).
# --------------------------------------------------------------------------

@enigma.kernel
def with_constants(A: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    scale = enigma.function_constant("float", 0)
    shift = enigma.function_constant("uchar", 1)
    C[tid] = A[tid] * scale + enigma.metal_cast(shift, enigma.f32)


@enigma.kernel
def typed_scalars(A: enigma.f32, h: enigma.Scalar(enigma.f16),
                  flag: enigma.Scalar(enigma.b1), i: enigma.Scalar(enigma.i32),
                  C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = enigma.where(A[tid], enigma.metal_cast(h, enigma.f32) +
                          enigma.metal_cast(i, enigma.f32), flag)


_COMPILED = {}


def compiled(name: str):
    """The module's kernels, compiled once (also for the table tool)."""
    if name not in _COMPILED:
        kernels = {"add": (vector_add, 0), "add4": (vector_add, 4),
                   "constants": (with_constants, 0),
                   "scalars": (typed_scalars, 0)}
        fn, width = kernels[name]
        _COMPILED[name] = enigma.compile(fn, emit_only=True, vec_width=width)
    return _COMPILED[name]


class DispatchMistake:
    """A wrong launch argument: what it is, the call, the exception and a
    regular expression its message must match."""

    def __init__(self, description, call, error, pattern):
        self.description, self.call = description, call
        self.error, self.pattern = error, pattern

    def __repr__(self) -> str:
        return self.description


_ONES = np.ones(8, np.float32)
_GOOD_CONSTANTS = {0: ("float", 2.0), 1: ("uchar", 3)}


def _add(rt, **kw):
    args = dict(output_size=32, grid=8, threads=8)
    args.update(kw)
    inputs = args.pop("inputs", [_ONES, _ONES])
    return rt.execute(compiled(args.pop("kernel", "add")), inputs, **args)


def _constants(rt, constants):
    return rt.execute(compiled("constants"), [_ONES], output_size=32, grid=8,
                      threads=8, constants=constants)


def _scalars(rt, scalars):
    return rt.execute(compiled("scalars"), [_ONES], output_size=32, grid=8,
                      threads=8, scalars=scalars)


DISPATCH_MISTAKES = [
    DispatchMistake("a float64 array for an f32 buffer",
                    lambda rt: _add(rt, inputs=[_ONES.astype(np.float64), _ONES]),
                    (enigma.DispatchError, TypeError),
                    r"input 0 \(A\) has (numpy )?dtype float64 but parameter A is f32"),
    DispatchMistake("an int32 array for an f32 buffer",
                    lambda rt: _add(rt, inputs=[_ONES, _ONES.astype(np.int32)]),
                    (enigma.DispatchError, TypeError),
                    r"input 1 \(B\) has (numpy )?dtype int32 but parameter B is f32"),
    DispatchMistake("raw bytes that are not whole f32 elements",
                    lambda rt: _add(rt, inputs=[b"\0" * 6, _ONES]),
                    enigma.DispatchError, r"input 0 \(A\)"),
    DispatchMistake("None as an input",
                    lambda rt: _add(rt, inputs=[None, _ONES]),
                    (TypeError, enigma.DispatchError), r"input 0 \(A\)"),
    DispatchMistake("a vec_width=4 buffer fed 6 floats",
                    lambda rt: _add(rt, kernel="add4",
                                    inputs=[np.ones(6, np.float32), _ONES],
                                    grid=2, threads=2),
                    enigma.DispatchError,
                    r"input 0 \(A\) holds 24 bytes, not a whole number of "
                    r"16-byte entries"),
    DispatchMistake("a grid with a float dimension",
                    lambda rt: _add(rt, grid=(8.5, 1, 1)), TypeError,
                    r"grid must be .*ints.*8\.5"),
    DispatchMistake("threads with a float dimension",
                    lambda rt: _add(rt, threads=(4.0,)), TypeError,
                    r"threads must be .*ints.*4\.0"),
    DispatchMistake("a grid given as strings",
                    lambda rt: _add(rt, grid=("8",)), TypeError,
                    r"grid must be .*ints"),
    DispatchMistake("True as a grid", lambda rt: _add(rt, grid=True),
                    TypeError, r"grid must be .*ints.*True"),
    DispatchMistake("a zero in the grid", lambda rt: _add(rt, grid=(8, 0, 1)),
                    enigma.DispatchError, r"grid \(8, 0, 1\) has a zero dimension"),
    DispatchMistake("a threadgroup of 2048 threads",
                    lambda rt: _add(rt, threads=(64, 32, 1)),
                    enigma.DispatchError,
                    r"threads \(64, 32, 1\) is 2048 threads .* maximum of 1024"),
    DispatchMistake("a grid dimension of 2^32",
                    lambda rt: _add(rt, grid=(2**32, 1, 1)), ValueError,
                    r"grid .* outside 0\.\.2\^32-1"),
    DispatchMistake("an output size that is a float",
                    lambda rt: _add(rt, output_size=32.5), TypeError,
                    r"output_size must be an int.*32\.5"),
    DispatchMistake("a negative output size",
                    lambda rt: _add(rt, output_size=-32), ValueError,
                    r"output_size .*-32"),
    DispatchMistake("an output size of 0", lambda rt: _add(rt, output_size=0),
                    enigma.DispatchError, r"output C \(f32\) has size 0"),
    DispatchMistake("an output size not a multiple of the element",
                    lambda rt: _add(rt, output_size=30), enigma.DispatchError,
                    r"C \(f32\) has size 30 bytes, not a multiple of its 4"),
    DispatchMistake("no function constants for a kernel that uses two",
                    lambda rt: _constants(rt, None), enigma.DispatchError,
                    r"uses function constant 0 \(f32\) but no value was given"),
    DispatchMistake("a function constant missing",
                    lambda rt: _constants(rt, {0: ("float", 1.0)}),
                    enigma.DispatchError,
                    r"uses function constant 1 \(u8\) but no value was given"),
    DispatchMistake("a function constant of the wrong type",
                    lambda rt: _constants(rt, {0: ("float", 1.0),
                                               1: ("uint", 3)}),
                    enigma.DispatchError,
                    r"declares function constant 1 \(u8\) but it was given as u32"),
    DispatchMistake("a function constant of an unknown type",
                    lambda rt: _constants(rt, {0: ("complex", 1.0),
                                               1: ("uchar", 3)}),
                    enigma.DispatchError,
                    r"function constant 0 \(f32\): unknown dtype 'complex'"),
    DispatchMistake("a function constant value out of range",
                    lambda rt: _constants(rt, {0: ("float", 1.0),
                                               1: ("uchar", 300)}),
                    enigma.DispatchError,
                    r"function constant 1 \(u8\) cannot take 300: out of range"),
    DispatchMistake("a float for an integer function constant",
                    lambda rt: _constants(rt, {0: ("float", 1.0),
                                               1: ("uchar", 1.5)}),
                    enigma.DispatchError,
                    r"function constant 1 \(u8\) cannot take 1\.5"),
    DispatchMistake("a function constant that is not (type, value)",
                    lambda rt: _constants(rt, {0: 1.0, 1: ("uchar", 1)}),
                    TypeError, r"constants\[0\] must be \(type_name, value\)"),
    DispatchMistake("a function constant index that is not an int",
                    lambda rt: _constants(rt, {"a": ("float", 1.0),
                                               1: ("uchar", 1)}),
                    TypeError, r"constants index must be an int.*'a'"),
    DispatchMistake("an f16 scalar out of half's range",
                    lambda rt: _scalars(rt, [1e6, True, 1]),
                    enigma.DispatchError,
                    r"scalar parameter h \(f16\) cannot take 1000000\.0: "
                    r"out of range for f16"),
    DispatchMistake("2 for a bool scalar",
                    lambda rt: _scalars(rt, [1.0, 2, 1]), enigma.DispatchError,
                    r"scalar parameter flag \(b1\) cannot take 2"),
    DispatchMistake("a float for an i32 scalar",
                    lambda rt: _scalars(rt, [1.0, True, 2.0]),
                    enigma.DispatchError,
                    r"scalar parameter i \(i32\) cannot take 2\.0: a float "
                    r"is not an integer"),
    DispatchMistake("2^31 for an i32 scalar",
                    lambda rt: _scalars(rt, [1.0, True, 2**31]),
                    enigma.DispatchError,
                    r"scalar parameter i \(i32\) cannot take 2147483648: out "
                    r"of range for i32"),
    DispatchMistake("a string for a scalar",
                    lambda rt: _scalars(rt, [1.0, True, "2"]),
                    enigma.DispatchError,
                    r"scalar parameter i \(i32\) needs a number, got str"),
]


@pytest.mark.parametrize("case", DISPATCH_MISTAKES, ids=repr)
def test_wrong_launch_argument_is_named(runtime, case):
    with pytest.raises(case.error) as info:
        case.call(runtime)
    assert re.search(case.pattern, str(info.value)), str(info.value)


@pytest.mark.parametrize("grid,threads", [
    (np.int64(8), np.uint32(8)), ((np.int32(8), 1), [8]), ((8, 1, 1), (8,))])
def test_numpy_and_list_shapes_are_accepted(runtime, rng, grid, threads):
    a, b = inputs(rng, 8)
    out = np.frombuffer(runtime.execute(compiled("add"), [a, b], output_size=32,
                                        grid=grid, threads=threads), np.float32)
    np.testing.assert_array_equal(out, a + b)


def test_prepared_dispatch_rejects_a_float_grid(runtime, rng):
    a, b = inputs(rng, 8)
    prepared = runtime.prepare(compiled("add"), [a, b], output_size=32)
    try:
        with pytest.raises(TypeError, match="grid must be"):
            prepared.dispatch((8.0, 1, 1), (8, 1, 1))
        with pytest.raises(TypeError, match="threads must be"):
            prepared.dispatch_timed(8, 2.5)
    finally:
        prepared.release()


def test_function_constants_reach_the_kernel(runtime, rng):
    # The valid counterpart of the constant mistakes above.
    a = rng.standard_normal(8).astype(np.float32)
    raw = runtime.execute(compiled("constants"), [a], output_size=32, grid=8,
                          threads=8, constants=_GOOD_CONSTANTS)
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32),
                                  a * np.float32(2) + np.float32(3))


def test_typed_scalars_reach_the_kernel(runtime, rng):
    a = rng.standard_normal(8).astype(np.float32)
    for flag in (True, False):
        raw = runtime.execute(compiled("scalars"), [a], output_size=32, grid=8,
                              threads=8, scalars=[0.5, flag, -7])
        want = np.full(8, -6.5, np.float32) if flag else a
        np.testing.assert_array_equal(np.frombuffer(raw, np.float32), want)


def test_float64_inputs_are_rejected_not_converted(runtime):
    # Decision (docs/runtimes.md, docs/reliability.md): a numpy array whose
    # dtype differs from the parameter's is an error naming the parameter,
    # never a silent conversion; Python lists are converted (they have no
    # dtype of their own).
    with pytest.raises((enigma.DispatchError, TypeError),
                       match="float64 but parameter A is f32"):
        _add(runtime, inputs=[np.arange(8.0), _ONES])
    out = np.frombuffer(_add(runtime, inputs=[[0.5] * 8, _ONES]), np.float32)
    np.testing.assert_array_equal(out, np.full(8, 1.5, np.float32))
