"""The dispatch contract of the original Enigma's runtime: inputs, scalars
and outputs together cover the kernel's parameters exactly once (outputs
bind to the buffer parameters after the inputs); ``output_size`` is ONE
output, several take ``output_sizes`` (and ``execute`` then returns a list);
``output_shapes`` + ``output_dtypes`` describe outputs returned as arrays."""

import numpy as np
import pytest

import enigma


@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


@enigma.kernel
def split(A: enigma.f32, X: enigma.f32, Y: enigma.i32):
    tid = enigma.thread_position_in_grid
    X[tid] = A[tid] * 2.0
    Y[tid] = enigma.metal_cast(A[tid] * 100.0, "int")


@enigma.kernel
def axpy(X: enigma.f32, a: enigma.Scalar(enigma.f32), Y: enigma.f32,
         n: enigma.Scalar(enigma.u32), Out: enigma.f32):
    tid = enigma.thread_position_in_grid
    with enigma.if_(tid < n):
        Out[tid] = X[tid] * a + Y[tid]


@pytest.fixture(scope="module")
def add():
    return enigma.compile(vector_add)


def _f32(rng, n):
    return rng.standard_normal(n).astype(np.float32)


def _message(info) -> str:
    return str(info.value)


# --------------------------------------------------------------------------
# What works
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 255, 1000])
def test_seed_page_vector_add(runtime, add, rng, n):
    a, b = _f32(rng, n), _f32(rng, n)
    raw = runtime.execute(add, inputs=[a, b], output_size=n * 4,
                          grid=(n, 1, 1), threads=(256, 1, 1))
    assert isinstance(raw, bytes) and len(raw) == n * 4
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), a + b)
    # The original's positional form.
    raw = runtime.execute(add, [a, b], n * 4, (n, 1, 1), (256, 1, 1))
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), a + b)


def test_output_sizes_returns_a_list_even_for_one_output(runtime, add, rng):
    n = 77
    a, b = _f32(rng, n), _f32(rng, n)
    outs = runtime.execute(add, [a, b], grid=(n, 1, 1), threads=(32, 1, 1),
                           output_sizes=[n * 4])
    assert isinstance(outs, list) and len(outs) == 1
    np.testing.assert_array_equal(np.frombuffer(outs[0], np.float32), a + b)


def test_several_outputs_take_output_sizes(runtime, rng):
    n = 130
    a = _f32(rng, n)
    compiled = enigma.compile(split)
    x, y = runtime.execute(compiled, [a], grid=(n, 1, 1), threads=(64, 1, 1),
                           output_sizes=[n * 4, n * 4])
    np.testing.assert_array_equal(np.frombuffer(x, np.float32), a * 2)
    np.testing.assert_array_equal(np.frombuffer(y, np.int32),
                                  (a * np.float32(100)).astype(np.int32))


def test_output_sizes_win_over_output_size(runtime, add, rng):
    """As in the original, output_sizes is used when both are given."""
    n = 16
    a, b = _f32(rng, n), _f32(rng, n)
    outs = runtime.execute(add, [a, b], 999, (n, 1, 1), (16, 1, 1),
                           output_sizes=[n * 4])
    assert isinstance(outs, list)
    np.testing.assert_array_equal(np.frombuffer(outs[0], np.float32), a + b)


def test_grid_and_threads_default_to_one_thread(runtime, add, rng):
    n = 8
    a, b = _f32(rng, n), _f32(rng, n)
    out = np.frombuffer(runtime.execute(add, [a, b], n * 4), np.float32)
    assert out[0] == a[0] + b[0]
    np.testing.assert_array_equal(out[1:], 0)


def test_scalars_between_buffers(runtime, rng):
    n = 300
    x, y = _f32(rng, n + 5), _f32(rng, n + 5)
    raw = runtime.execute(enigma.compile(axpy), [x, y], (n + 5) * 4,
                          (n + 5, 1, 1), (64, 1, 1), scalars=[1.5, n])
    out = np.frombuffer(raw, np.float32)
    ref = x[:n].astype(np.float64) * 1.5 + y[:n]
    np.testing.assert_allclose(out[:n], ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[n:], 0)


def test_output_shapes_and_dtypes_return_arrays(runtime, rng):
    rows, cols = 5, 7
    n = rows * cols
    a = _f32(rng, n)
    compiled = enigma.compile(split)
    x, y = runtime.execute(compiled, [a], grid=(n, 1, 1), threads=(32, 1, 1),
                           output_shapes=[(rows, cols), (n,)],
                           output_dtypes=[np.float32, enigma.i32])
    assert x.shape == (rows, cols) and x.dtype == np.float32
    assert y.shape == (n,) and y.dtype == np.int32
    np.testing.assert_array_equal(x, (a * 2).reshape(rows, cols))
    np.testing.assert_array_equal(y, (a * np.float32(100)).astype(np.int32))

    b = _f32(rng, n)
    c = runtime.execute(enigma.compile(vector_add), [a, b], grid=(n, 1, 1),
                        threads=(32, 1, 1), output_shapes=[(rows, cols)],
                        output_dtypes=["float32"])
    assert isinstance(c, np.ndarray) and c.shape == (rows, cols)
    np.testing.assert_array_equal(c, (a + b).reshape(rows, cols))


def test_prepare_with_one_output(runtime, add, rng):
    n = 500
    a, b = _f32(rng, n), _f32(rng, n)
    p = runtime.prepare(add, [a, b], n * 4)
    try:
        p.dispatch((n, 1, 1), (128, 1, 1))
        np.testing.assert_array_equal(np.frombuffer(p.read_output(), np.float32),
                                      a + b)
    finally:
        p.release()


# --------------------------------------------------------------------------
# What the original refuses: a DispatchError naming parameters and counts
# --------------------------------------------------------------------------

def test_missing_input_is_an_error_not_a_second_output(runtime, add, rng):
    a = _f32(rng, 8)
    with pytest.raises(enigma.DispatchError) as info:
        runtime.execute(add, inputs=[a], output_size=32, grid=(8, 1, 1),
                        threads=(8, 1, 1))
    message = _message(info)
    assert "enigma_kernel_vector_add" in message
    assert "A (f32), B (f32), C (f32)" in message
    assert "1 input + 0 scalars + 1 output = 2" in message
    assert "C <- nothing" in message


def test_output_size_is_one_output(runtime, rng):
    a = _f32(rng, 8)
    with pytest.raises(enigma.DispatchError) as info:
        runtime.execute(enigma.compile(split), [a], 32, (8, 1, 1), (8, 1, 1))
    message = _message(info)
    assert "X (f32), Y (i32)" in message or "Y (i32) <- nothing" in message
    assert "output_sizes" in message


def test_too_many_outputs(runtime, add, rng):
    a, b = _f32(rng, 8), _f32(rng, 8)
    with pytest.raises(enigma.DispatchError,
                       match=r"2 inputs \+ 0 scalars \+ 2 outputs = 4"):
        runtime.execute(add, [a, b], grid=8, threads=8,
                        output_sizes=[32, 32])


def test_inputs_for_every_buffer_plus_an_output(runtime, add, rng):
    a = _f32(rng, 8)
    with pytest.raises(enigma.DispatchError,
                       match=r"3 inputs \+ 0 scalars \+ 1 output = 4"):
        runtime.execute(add, [a, a, a], 32, grid=8, threads=8)


def test_no_output_given_for_an_output_parameter(runtime, add, rng):
    a, b = _f32(rng, 8), _f32(rng, 8)
    with pytest.raises(enigma.DispatchError,
                       match=r"2 inputs \+ 0 scalars \+ 0 outputs = 2"):
        runtime.execute(add, [a, b], grid=8, threads=8)


def test_missing_scalar_names_the_scalar(runtime, rng):
    x, y = _f32(rng, 8), _f32(rng, 8)
    compiled = enigma.compile(axpy)
    with pytest.raises(enigma.DispatchError, match=r"a \(f32\), n \(u32\)"):
        runtime.execute(compiled, [x, y], 32, 8, 8, scalars=[1.0])
    with pytest.raises(enigma.DispatchError, match=r"a \(f32\), n \(u32\)"):
        runtime.execute(compiled, [x, y], 32, 8, 8)


def test_missing_input_with_scalars_shows_the_binding(runtime, rng):
    x = _f32(rng, 8)
    with pytest.raises(enigma.DispatchError) as info:
        runtime.execute(enigma.compile(axpy), [x], 32, 8, 8,
                        scalars=[1.0, 8])
    message = _message(info)
    assert "1 input + 2 scalars + 1 output = 4" in message
    assert "X <- input 0" in message and "Y <- output 0" in message
    assert "Out <- nothing" in message


def test_prepare_output_size_is_one_output(runtime, add, rng):
    a = _f32(rng, 8)
    with pytest.raises(enigma.DispatchError,
                       match=r"1 input \+ 0 scalars \+ 1 output = 2"):
        runtime.prepare(add, [a], 32)
    with pytest.raises(enigma.DispatchError, match="output_sizes"):
        runtime.prepare(enigma.compile(split), [a], 32)


def test_output_shapes_need_matching_dtypes(runtime, add, rng):
    a, b = _f32(rng, 8), _f32(rng, 8)
    with pytest.raises(enigma.DispatchError, match="output_dtypes"):
        runtime.execute(add, [a, b], grid=8, threads=8, output_shapes=[(8,)])
    with pytest.raises(enigma.DispatchError, match="output_dtypes"):
        runtime.execute(add, [a, b], grid=8, threads=8, output_shapes=[(8,)],
                        output_dtypes=[np.float32, np.float32])


@enigma.kernel
def to_bf16(A: enigma.f32, C: enigma.bf16):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid]


@enigma.kernel
def scale_bf16(A: enigma.bf16, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = enigma.metal_cast(A[tid], "float") * 2.0


def test_mlx_arrays_in_and_out(runtime, rng):
    """The original's mlx interop: mlx arrays as inputs (bfloat16 too) and
    output_shapes with mlx dtypes returning mlx arrays."""
    mx = pytest.importorskip("mlx.core")
    n = 96
    a, b = _f32(rng, n), _f32(rng, n)
    c = runtime.execute(enigma.compile(vector_add), [mx.array(a), b],
                        grid=(n, 1, 1), threads=(32, 1, 1),
                        output_shapes=[(8, 12)], output_dtypes=[mx.float32])
    assert isinstance(c, mx.array) and c.shape == (8, 12)
    assert c.dtype == mx.float32
    np.testing.assert_array_equal(np.asarray(c), (a + b).reshape(8, 12))

    bits = (a.view(np.uint32) >> 16).astype(np.uint16)  # bf16 by truncation
    a16 = mx.array(bits).view(mx.bfloat16)
    out = runtime.execute(enigma.compile(scale_bf16), [a16], n * 4,
                          (n, 1, 1), (32, 1, 1))
    ref = (bits.astype(np.uint32) << 16).view(np.float32) * 2
    np.testing.assert_array_equal(np.frombuffer(out, np.float32), ref)

    halves = runtime.execute(enigma.compile(scale_bf16), [a16], grid=n,
                             threads=32, output_shapes=[(n,)],
                             output_dtypes=[mx.float32])
    np.testing.assert_array_equal(np.asarray(halves), ref)

    c16 = runtime.execute(enigma.compile(to_bf16), [a], grid=n, threads=32,
                          output_shapes=[(2, n // 2)],
                          output_dtypes=[mx.bfloat16])
    assert c16.dtype == mx.bfloat16 and c16.shape == (2, n // 2)
    u = a.view(np.uint32).astype(np.uint64)
    nearest_even = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    np.testing.assert_array_equal(np.asarray(c16.view(mx.uint16)).reshape(-1),
                                  nearest_even)
