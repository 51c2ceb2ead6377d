"""Buffers declared with a shape and indexed A[y, x] (docs/reference/core.md,
"Buffers with a shape"): row-major, one index per dimension, extents from
scalar parameters or numbers, reads, writes and atomics, and each index
checked against its extent in bounds-checked mode. References are numpy."""

import inspect

import numpy as np
import pytest

import enigma
from conftest import run_kernel


def run(runtime, compiled, inputs, outputs, grid, threads, **scalars):
    got = runtime.execute(
        compiled, inputs, grid=grid, threads=threads,
        scalars=scalars or None,
        output_shapes=[shape for shape, _ in outputs],
        output_dtypes=[d for _, d in outputs])
    return got if isinstance(got, list) else [got]


@enigma.kernel
def transpose_scaled(A: enigma.f32["H", "W"], H: enigma.Scalar(enigma.u32),
                     W: enigma.Scalar(enigma.u32), B: enigma.f32["W", "H"]):
    x = enigma.thread_position_in_grid_xyz("x")
    y = enigma.thread_position_in_grid_xyz("y")
    with enigma.if_((x < W) & (y < H)):
        B[x, y] = A[y, x] * 2.0


@pytest.mark.parametrize("h,w", [(1, 1), (5, 7), (33, 17)])
def test_two_dimensional_reads_and_writes(runtime, rng, h, w):
    a = rng.standard_normal((h, w)).astype(np.float32)
    compiled = enigma.compile(transpose_scaled)
    (out,) = run(runtime, compiled, [a], [((w, h), np.float32)],
                 (w + 3, h + 2, 1), (4, 4, 1), H=h, W=w)
    np.testing.assert_array_equal(out, (a * 2).T)
    # Row-major: y * W + x, as the kernel would write it by hand.
    assert "* W" in compiled.metal_source or "W *" in compiled.metal_source


@enigma.kernel
def box_sum(V: enigma.f32[3, "N", 4], N: enigma.Scalar(enigma.u32),
            S: enigma.f32["N"]):
    n = enigma.thread_position_in_grid
    total = 0.0
    for c in enigma.range_constexpr(3):
        for k in enigma.range(4):
            total = total + V[c, n, k] * (c + 1)
    S[n] = total


def test_three_dimensions_with_constant_extents(runtime, rng):
    n = 21
    v = rng.standard_normal((3, n, 4)).astype(np.float32)
    (out,) = run(runtime, enigma.compile(box_sum), [v], [((n,), np.float32)],
                 (n, 1, 1), (8, 1, 1), N=n)
    ref = (v.astype(np.float64) * np.array([1, 2, 3])[:, None, None]).sum(
        axis=(0, 2))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@enigma.kernel
def histogram_2d(X: enigma.u32["N"], N: enigma.Scalar(enigma.u32),
                 R: enigma.Scalar(enigma.u32),
                 Hist: enigma.u32["R", 16]):
    t = enigma.thread_position_in_grid
    with enigma.if_(t < N):
        v = X[t]
        Hist.atomic_fetch_add((t % R, v & 15), 1)
        enigma.atomic_fetch_add(Hist, (t % R, (v >> 4) & 15), 1)


def test_atomics_through_the_same_indexing(runtime, rng):
    n, rows = 500, 3
    x = rng.integers(0, 2**16, n).astype(np.uint32)
    (hist,) = run(runtime, enigma.compile(histogram_2d), [x],
                  [((rows, 16), np.uint32)], (512, 1, 1), (64, 1, 1),
                  N=n, R=rows)
    ref = np.zeros((rows, 16), np.uint32)
    for t, v in enumerate(x):
        ref[t % rows, v & 15] += 1
        ref[t % rows, (v >> 4) & 15] += 1
    np.testing.assert_array_equal(hist, ref)


@enigma.kernel
def clamped_blur(A: enigma.f32["H", "W"], H: enigma.Scalar(enigma.u32),
                 W: enigma.Scalar(enigma.u32), B: enigma.f32["H", "W"]):
    x = enigma.metal_cast(enigma.thread_position_in_grid_xyz("x"), "int")
    y = enigma.metal_cast(enigma.thread_position_in_grid_xyz("y"), "int")
    w = enigma.metal_cast(W, "int")
    with enigma.if_((x < w) & (y < enigma.metal_cast(H, "int"))):
        left = enigma.load_if(A, (y, x - 1), x > 0, default=0.0)
        right = enigma.load_if(A, (y, x + 1), x + 1 < w, default=0.0)
        B[y, x] = left + A[y, x] + right


def test_load_if_with_indices_masks_each(runtime, rng):
    h, w = 6, 9
    a = rng.standard_normal((h, w)).astype(np.float32)
    compiled = enigma.compile(clamped_blur, bounds_check=True)
    (out,) = run(runtime, compiled, [a], [((h, w), np.float32)],
                 (w, h, 1), (4, 4, 1), H=h, W=w)
    pad = np.pad(a.astype(np.float64), ((0, 0), (1, 1)))
    np.testing.assert_allclose(out, pad[:, :-2] + pad[:, 1:-1] + pad[:, 2:],
                               rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------
# Bounds-checked mode checks every index against its extent
# --------------------------------------------------------------------------

@enigma.kernel
def off_by_one(A: enigma.f32["H", "W"], H: enigma.Scalar(enigma.u32),
               W: enigma.Scalar(enigma.u32), B: enigma.f32):
    x = enigma.thread_position_in_grid_xyz("x")
    y = enigma.thread_position_in_grid_xyz("y")
    B[y * W + x] = A[y, x + 1]  # the last column reads the next row


def test_an_index_past_its_extent_is_reported(runtime, rng):
    # Inside the buffer (row y + 1, column 0) but outside its row: only
    # the index check sees it.
    h, w = 4, 6
    a = rng.standard_normal((h + 1, w)).astype(np.float32)
    compiled = enigma.compile(off_by_one, bounds_check=True)
    line = inspect.getsourcelines(off_by_one.__wrapped__)[1] + 5
    with pytest.raises(enigma.BoundsCheckError,
                       match=rf"out-of-bounds index at \S*"
                             rf"test_shaped_buffers.py:{line}: index 1 of "
                             r"A\[H, W\] is 6, outside \[0, W = 6\), by "
                             r"thread \(5, \d, 0\)"):
        run(runtime, compiled, [a], [((h * w,), np.float32)], (w, h, 1),
            (w, 1, 1), H=h, W=w)
    # Without the mode no check is compiled (and none runs).
    plain = enigma.compile(off_by_one)
    assert "enigma_bounds" not in plain.metal_source
    (out,) = run(runtime, plain, [a], [((h * w,), np.float32)], (w, h, 1),
                 (w, 1, 1), H=h, W=w)
    np.testing.assert_array_equal(out.reshape(h, w),
                                  a.reshape(-1)[1:h * w + 1].reshape(h, w))


@enigma.kernel
def negative_row(A: enigma.f32[4, 4], B: enigma.f32):
    t = enigma.metal_cast(enigma.thread_position_in_grid, "int")
    B[t] = A[t - 1, 0]


def test_a_negative_index_is_reported_as_negative(runtime):
    compiled = enigma.compile(negative_row, bounds_check=True)
    with pytest.raises(enigma.BoundsCheckError,
                       match=r"index 0 of A\[4, 4\] is -1, outside \[0, 4\)"):
        run(runtime, compiled, [np.zeros(16, np.float32)],
            [((4,), np.float32)], (4, 1, 1), (4, 1, 1))


# --------------------------------------------------------------------------
# What is refused
# --------------------------------------------------------------------------

def _error(body, match, params=None):
    @enigma.kernel
    def k(A: enigma.f32["H", "W"], H: enigma.Scalar(enigma.u32),
          W: enigma.Scalar(enigma.u32)):
        body(A)

    with pytest.raises(enigma.EnigmaError, match=match) as info:
        enigma.compile(k)
    assert "test_shaped_buffers.py:" in str(info.value)


@enigma.kernel
def copy_rows(A: enigma.f32["H", "W"], H: enigma.Scalar(enigma.u32),
              W: enigma.Scalar(enigma.u32), B: enigma.f32[2, "H", "W"]):
    x = enigma.thread_position_in_grid_xyz("x")
    y = enigma.thread_position_in_grid_xyz("y")
    with enigma.if_((x < W) & (y < H)):
        B[1, y, x] = A[y, x]


def test_a_buffer_smaller_than_its_declared_shape_is_refused(runtime, rng):
    # The kernel writes by the declaration: a smaller array would be
    # written past its end (a crash, or the caller's other data changed),
    # so every launch form refuses it before anything runs.
    h, w = 37, 45
    a = rng.standard_normal((h, w)).astype(np.float32)
    compiled = enigma.compile(copy_rows)
    with pytest.raises(enigma.DispatchError,
                       match=r"B is declared f32\[2, H, W\].*"
                             r"3330 elements, but B \(f32\) has 3329"):
        runtime.execute(compiled, [a], output_size=(2 * h * w - 1) * 4,
                        grid=(w, h, 1), threads=(8, 8, 1),
                        scalars=[h, w])
    with pytest.raises(enigma.DispatchError,
                       match=r"A is declared f32\[H, W\].*1665 elements, "
                             r"but A \(f32\) has 4"):
        runtime.execute(compiled, [a[0, :4].copy()],
                        output_size=2 * h * w * 4, grid=(w, h, 1),
                        threads=(8, 8, 1), scalars=[h, w])
    if runtime.name != "cuda":   # the function-call form on host arrays
        b = np.zeros(2 * h * w - 1, np.float32)
        with pytest.raises(enigma.DispatchError, match="declared"):
            copy_rows.launch(grid=(w, h))(a, h, w, b, runtime=runtime)
        assert not b.any()
    # Exactly the declared size runs; empty extents need nothing.
    got = runtime.execute(compiled, [a], output_size=2 * h * w * 4,
                          grid=(w, h, 1), threads=(8, 8, 1), scalars=[h, w])
    out = np.frombuffer(got, np.float32).reshape(2, h, w)
    np.testing.assert_array_equal(out[1], a)
    runtime.execute(compiled, [np.zeros(1, np.float32)], output_size=4,
                    grid=(1, 1, 1), threads=(1, 1, 1), scalars=[0, 5])


def test_wrong_number_of_indices():
    _error(lambda A: A.__setitem__((0, 0, 0), 1.0),
           r"buffer A has the shape \[H, W\]: index it with 2 indices, "
           "got 3")


def test_row_then_column_subscripts_point_to_one_subscript():
    # numpy's A[y][x] habit: A[y] of a shaped buffer is element y (its flat
    # index), so the second subscript must not pass silently.
    _error(lambda A: A[1][2], r"A\[y, x\]")
    _error(lambda A: A[1].__setitem__(2, 1.0), r"A\[y, x\]")


def test_slices_are_refused():
    _error(lambda A: A[0, :], r"A\[...\]: slices are not supported")


def test_float_index():
    _error(lambda A: A[0, 1.5], r"index 1 of A\[H, W\] must be an integer")


def test_static_index_past_a_static_extent():
    @enigma.kernel
    def k(A: enigma.f32[2, 3]):
        A[1, 3] = 1.0

    with pytest.raises(enigma.EnigmaError,
                       match=r"index 1 of A\[2, 3\] is 3, outside \[0, 3\)"):
        enigma.compile(k)


def test_tuple_on_a_buffer_without_a_shape_names_the_annotation():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0, 1] = 1.0

    with pytest.raises(enigma.EnigmaError,
                       match=r"declare its shape to index it A\[y, x\] \(A: "
                             r'enigma.f32\["H", "W"\]'):
        enigma.compile(k)


@pytest.mark.parametrize("annotation,match", [
    ('enigma.f32["H", "Q"]', r"extent 'Q', which is not an integer Scalar"),
    ('enigma.f32["H", "S"]', r"extent 'S', which is not an integer Scalar"),
    ('enigma.f32["H", 0]', r"positive int, got 0"),
    ('enigma.f32["H", "2x"]', r"'2x' is not the name of a parameter"),
])
def test_bad_shapes(annotation, match):
    namespace = {"enigma": enigma}
    with pytest.raises(enigma.EnigmaError, match=match):
        exec("@enigma.kernel\n"
             f"def k(A: {annotation}, H: enigma.Scalar(enigma.u32),\n"
             "      S: enigma.Scalar(enigma.f32)):\n"
             "    A[0, 0] = 1.0\n", namespace)


def test_the_annotation_and_shape_property():
    assert repr(enigma.f32["H", 4]) == "enigma.f32['H', 4]"
    assert enigma.Float32["H"] == enigma.f32["H"]

    seen = {}

    @enigma.kernel
    def k(A: enigma.u8["H", 4], H: enigma.Scalar(enigma.u32)):
        seen["shape"] = A.shape
        A[0, 0] = 1

    enigma.compile(k, emit_only=True)
    assert isinstance(seen["shape"][0], enigma.IRValue)
    assert seen["shape"][1] == 4


def test_the_annotation_as_a_string():
    # With `from __future__ import annotations` the annotation is read from
    # its text, in the module's namespace.
    namespace = {"enigma": enigma}
    exec("from __future__ import annotations\n"
         "@enigma.kernel\n"
         "def k(A: enigma.f32['H', 4], H: enigma.Scalar(enigma.u32)):\n"
         "    A[1, 3] = 2.0\n", namespace)
    source = enigma.compile(namespace["k"], emit_only=True).metal_source
    assert "A[7ul] = 2.0f;" in source or "A[7u] = 2.0f;" in source


@pytest.mark.parametrize("body", [
    lambda A: A + 1.0, lambda A: 2.0 * A, lambda A: A - A, lambda A: -A,
    lambda A: A / 2, lambda A: A ** 2,
])
def test_whole_buffer_arithmetic_says_to_index(body):
    # numpy's C = A + 1 habit: a buffer parameter is not an array value.
    _error(body, r"buffer A is not a value: arithmetic takes its elements, "
                 r"A\[i\]")


def test_a_subscript_of_a_scalar_parameter_is_named_plainly():
    @enigma.kernel
    def k(A: enigma.f32, n: enigma.Scalar(enigma.u32)):
        A[0] = n[0]

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_shaped_buffers.py:\d+: this u32 scalar "
                             r"value cannot be indexed"):
        enigma.compile(k)


def test_numpy_integers_index_like_python_ints(runtime, rng):
    # Offsets computed with numpy on the host, used as static indices.
    offsets = np.array([0, 2, 5], np.int64)

    @enigma.kernel
    def gather(A: enigma.f32, M: enigma.f32[2, 3], B: enigma.f32):
        t = enigma.threadgroup_alloc(enigma.f32, 4)
        t[np.uint8(3)] = M[np.int64(1), np.int32(2)]
        for j in range(3):
            B[j] = A[offsets[j]]
        B[np.int16(3)] = t[np.int64(3)]

    a = rng.uniform(-1, 1, 6).astype(np.float32)
    m = rng.uniform(-1, 1, 6).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(gather), [a, m], np.float32, 4,
                     (1, 1, 1), (1, 1, 1))
    np.testing.assert_array_equal(out, [a[0], a[2], a[5], m[5]])


def test_numpy_integers_as_loop_bounds_and_sizes(runtime, rng):
    # Sizes computed with numpy on the host: loop bounds, unrolled loops,
    # threadgroup array sizes and copy extents take them as Python ints.
    n, tile = np.int64(5), np.int32(4)

    @enigma.kernel
    def sized(A: enigma.f32, B: enigma.f32):
        t = enigma.threadgroup_alloc(enigma.f32, tile * 2)
        for j in enigma.range_constexpr(tile):
            t[j] = A[j]
        total = 0.0
        with enigma.for_range(np.int32(0), n, init=[0.0]) as (j, acc):
            acc[0] = acc[0] + A[j]
        total = acc[0]
        for j in enigma.range(np.int16(1), tile):
            B[j] = t[j] * 2.0
        B[0] = total

    a = rng.uniform(-1, 1, 8).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(sized), [a], np.float32, 4,
                     (1, 1, 1), (1, 1, 1))
    want = [a[:5].astype(np.float64).sum(), *(2 * a[1:4])]
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_numpy_integers_as_lanes_and_register_indices(runtime, rng):
    @enigma.kernel
    def lanes(A: enigma.f32, B: enigma.f32):
        v = enigma.make_float3(A[0], A[1], A[2])
        r = enigma.register_tensor((2, 2), enigma.f32)
        r[np.int64(1), np.int8(0)] = v[np.int64(2)]
        B[0] = r[1, 0] + enigma.vec_extract(v, np.uint16(1))
        B[1] = enigma.load_if(A, np.int64(2), True, 0.0)

    a = rng.uniform(-1, 1, 3).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(lanes), [a], np.float32, 2,
                     (1, 1, 1), (1, 1, 1))
    np.testing.assert_allclose(out, [a[2] + np.float64(a[1]), a[2]],
                               rtol=1e-6, atol=1e-6)


def test_register_tensor_with_its_arguments_swapped_says_so():
    @enigma.kernel
    def k(A: enigma.f32):
        r = enigma.register_tensor(enigma.f32, (2, 2))
        A[0] = r[0, 0]

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_shaped_buffers.py:\d+: register_tensor "
                             r"shape must be an int or a tuple of ints, got "
                             r".*element type comes second"):
        enigma.compile(k)


def test_register_tensor_takes_numpy_numbers(runtime):
    @enigma.kernel
    def k(A: enigma.f32):
        r = enigma.register_tensor(np.int64(3), enigma.f32,
                                   fill=np.float32(1.5))
        A[0] = r[0] + r[np.int32(2)]

    out = run_kernel(runtime, enigma.compile(k), [], np.float32, 1,
                     (1, 1, 1), (1, 1, 1))
    np.testing.assert_array_equal(out, [3.0])
