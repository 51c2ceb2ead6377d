"""Bad input gives a clear error, never a crash (issue 2), and the
PreparedKernel surface of API.md section 4."""

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


def test_error_names_the_users_line():
    @enigma.kernel
    def k(A: enigma.f32):
        tid = enigma.thread_position_in_grid
        while tid:  # the line reported
            pass

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(k, emit_only=True)
    assert "test_dispatch_errors.py:" in str(info.value)


def test_kernel_called_directly():
    with pytest.raises(enigma.EnigmaError, match="not called directly"):
        vector_add(np.zeros(4, np.float32), np.zeros(4, np.float32),
                   np.zeros(4, np.float32))


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


# --------------------------------------------------------------------------
# Binding errors (DispatchError), every one naming what is wrong
# --------------------------------------------------------------------------

def test_too_many_inputs_names_the_parameters(runtime, add, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError) as info:
        runtime.execute(add, [a, b, a, b], output_size=32, grid=8, threads=8)
    msg = str(info.value)
    assert "3 buffer parameters" in msg and "4 inputs" in msg
    for name in ("A (f32)", "B (f32)", "C (f32)"):
        assert name in msg


def test_inputs_feeding_every_buffer_leave_no_output(runtime, add, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError, match="no output buffer"):
        runtime.execute(add, [a, b, a], output_size=32, grid=8, threads=8)


def test_missing_output_size_names_the_output(runtime, add, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError,
                       match="missing output size for C \\(f32\\)"):
        runtime.execute(add, [a, b], grid=8, threads=8)


def test_too_many_output_sizes(runtime, add, rng):
    a, b = inputs(rng, 8)
    with pytest.raises(enigma.DispatchError, match="1 output .*C \\(f32\\)"):
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
    # API.md section 3: dispatch failures are RuntimeErrors.
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
    with pytest.raises(enigma.DispatchError, match="missing output size"):
        runtime.prepare(add, [a, b])
    prepared = runtime.prepare(add, [a, b], output_size=32)
    with pytest.raises(enigma.DispatchError, match="zero dimension"):
        prepared.dispatch((0, 1, 1), (8, 1, 1))
    with pytest.raises(enigma.DispatchError, match="maximum of 1024"):
        prepared.dispatch_timed((8, 1, 1), (2048, 1, 1))
    prepared.release()
    prepared.release()  # releasing twice is harmless
