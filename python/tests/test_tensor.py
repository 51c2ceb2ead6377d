"""enigma.Tensor (docs/reference/tensor.md): views of buffer parameters
through layouts, slicing, element access, vectorised load()/store(), the identity
tensor. References are numpy (float64 where arithmetic happens) or offsets
derived by hand from the layouts; outputs start zero-filled, so each test
also checks that no element outside the view was written."""

import re

import numpy as np
import pytest

import enigma

from conftest import run_kernel


def row_major(rows, cols):
    return enigma.make_layout((rows, cols), stride=(cols, 1))


def sources(compiled):
    return {"msl": compiled.metal_source, "cuda": compiled.cuda_source,
            "cpp": compiled.cpp_source}


def vector_accesses(compiled, type_name):
    """How many vector loads and stores of `type_name` MSL and CUDA print,
    and how many vector loads the host C++ prints (its stores do not name
    the type)."""
    s = sources(compiled)
    return {
        "msl": s["msl"].count(f"*(device {type_name}*)"),
        "cuda": s["cuda"].count(f"*({type_name}*)"),
        "cpp_loads": s["cpp"].count(f"enigma_vector_load<{type_name}>"),
    }


# --------------------------------------------------------------------------
# Host-side description
# --------------------------------------------------------------------------

def test_description():
    t = enigma.Tensor("A", 0, enigma.f32, row_major(3, 5))
    assert t.name == "A" and t.buffer_index == 0
    assert t.dtype == enigma.f32 and t.metal_dtype == "float"
    assert t.shape == (3, 5) and t.stride == (5, 1)
    assert t.size() == 15 and t.size(0) == 3 and t.size(1) == 5
    assert t.base_offset == 0
    assert enigma.Tensor("B", 1, "half", row_major(2, 2)).dtype == enigma.f16


def test_static_slices_move_the_base_offset():
    # (3, 5):(5, 1), row 2 -> offset 10, columns kept with stride 1.
    t = enigma.Tensor("A", 0, enigma.f32, row_major(3, 5), base_offset=7)
    row = t[2, None]
    assert row.base_offset == 7 + 10
    assert row.shape == 5 and row.stride == 1
    col = t[(None, 3)]
    assert col.base_offset == 7 + 3 and col.shape == 3 and col.stride == 5
    assert t[None, None].shape == t.shape
    assert t[None].shape == 3 and t[None].base_offset == 7  # mode 1 dropped


def test_nested_slice_keeps_the_sub_modes():
    layout = enigma.make_layout(((2, 3), 4), stride=((1, 2), 6))
    t = enigma.Tensor("A", 0, enigma.f32, layout)
    s = t[(None, 1), None]
    assert s.base_offset == 2
    assert enigma.size(s.layout) == 8
    assert [s.layout(i) for i in range(8)] == [0, 1, 6, 7, 12, 13, 18, 19]


def test_zipped_divide_and_composition_follow_the_layouts():
    A = enigma.Tensor("A", 0, enigma.f32, row_major(8, 16))
    tiler = (4, 8)  # a shape: tiles mode by mode
    g = enigma.tensor_zipped_divide(A, tiler)
    assert g.size() == 128 and g.size(0) == 32 and g.size(1) == 4
    expected = enigma.zipped_divide(A.layout, tiler)
    assert g.shape == expected.shape and g.stride == expected.stride
    # (A o B)(i) = A(B(i)): B picks A's linear indices 0, 1, 8, 9.
    c = enigma.tensor_composition(A, enigma.make_layout((2, 2), stride=(1, 8)))
    assert [c.layout(i) for i in range(4)] == [0, 16, 1, 17]
    assert c.base_offset == 0 and c.buffer_index == 0


@pytest.mark.parametrize("bad,match", [
    (dict(name=""), "name"),
    (dict(buffer_index=-2), "buffer_index"),
    (dict(metal_dtype="quad"), "not an element type"),
    (dict(layout=(4, 4)), "enigma.Layout"),
    (dict(base_offset=-3), "base_offset"),
    # (A SwizzledLayout is accepted: test_tensor_swizzle.py.)
    (dict(layout=enigma.IdentityLayout((8, 8))), "enigma.Layout"),
])
def test_constructor_rejects(bad, match):
    args = dict(name="A", buffer_index=0, metal_dtype=enigma.f32,
                layout=row_major(2, 2), base_offset=0)
    args.update(bad)
    with pytest.raises(enigma.EnigmaError, match=match):
        enigma.Tensor(**args)


def test_size_of_a_missing_mode():
    with pytest.raises(enigma.EnigmaError, match="mode 2"):
        enigma.Tensor("A", 0, enigma.f32, row_major(2, 2)).size(2)


# --------------------------------------------------------------------------
# Element access in a kernel
# --------------------------------------------------------------------------

@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 5), (16, 33)])
def test_transpose_through_two_layouts(runtime, rng, rows, cols):
    # B (cols x rows, row-major) = A^T, A read through a column-major view.
    @enigma.kernel
    def transpose(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid_xyz("x")
        j = enigma.thread_position_in_grid_xyz("y")
        a = enigma.Tensor("A", 0, enigma.f32, row_major(rows, cols))
        b = enigma.Tensor("B", 1, enigma.f32, row_major(cols, rows))
        b[j, i] = a[(i, j)] * 2.0

    a = rng.standard_normal((rows, cols)).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(transpose), [a], np.float32,
                     rows * cols, grid=(rows, cols, 1), threads=(4, 4, 1))
    np.testing.assert_array_equal(out.reshape(cols, rows), (a * 2).T)


def test_linear_index_into_two_modes(runtime, rng):
    # A single integer is a raw element index; the linear (colexicographic)
    # index through the layout is the coordinate idx2crd gives: i -> (i %
    # 4, i // 4) -> offset 6 * (i % 4) + i // 4 in (4, 6):(6, 1).
    @enigma.kernel
    def gather(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid
        t = enigma.Tensor("A", 0, enigma.f32, row_major(4, 6))
        B[i] = t[enigma.tuple.idx2crd(i, t.shape)]

    a = rng.standard_normal(24).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(gather), [a], np.float32, 24,
                     grid=(24, 1, 1), threads=(8, 1, 1))
    i = np.arange(24)
    np.testing.assert_array_equal(out, a[6 * (i % 4) + i // 4])


def test_traced_slice_of_a_row(runtime, rng):
    # Row r of a (5, 7) matrix, selected by the threadgroup, copied reversed.
    @enigma.kernel
    def reverse_rows(A: enigma.f32, B: enigma.f32):
        r = enigma.threadgroup_position_in_grid("x")
        c = enigma.thread_position_in_threadgroup("x")
        src = enigma.Tensor("A", 0, enigma.f32, row_major(5, 7))[r, None]
        dst = enigma.Tensor("B", 1, enigma.f32, row_major(5, 7))[r, None]
        dst[6 - c] = src[c]

    a = rng.standard_normal((5, 7)).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(reverse_rows), [a], np.float32,
                     35, grid=(35, 1, 1), threads=(7, 1, 1))
    np.testing.assert_array_equal(out.reshape(5, 7), a[:, ::-1])


# --------------------------------------------------------------------------
# load() / store(): vectorised where provable
# --------------------------------------------------------------------------

def _copy_kernel(frag_layout, per_thread, dtype=enigma.f32, scale=None):
    """Thread t copies the fragment at base t * per_thread, viewed through
    frag_layout, from A to B (times `scale` when given)."""

    @enigma.kernel
    def copy(A: dtype, B: dtype):
        t = enigma.thread_position_in_grid
        base = t * per_thread
        src = enigma.Tensor("A", 0, dtype, frag_layout, base_offset=base)
        dst = enigma.Tensor("B", 1, dtype, frag_layout, base_offset=base)
        values = src.load()
        dst.store(values if scale is None else values * scale)

    return copy


@pytest.mark.parametrize("threads", [1, 5, 64])
def test_contiguous_fragment_uses_float4(runtime, rng, threads):
    k = _copy_kernel(enigma.make_layout(8), 8, scale=3.0)
    compiled = enigma.compile(k)
    # 8 floats: two float4 loads and two float4 stores on every target.
    assert vector_accesses(compiled, "float4") == {"msl": 4, "cuda": 4,
                                                   "cpp_loads": 2}
    a = rng.standard_normal(8 * threads).astype(np.float32)
    out = run_kernel(runtime, compiled, [a], np.float32, 8 * threads,
                     grid=(threads, 1, 1), threads=(32, 1, 1))
    np.testing.assert_array_equal(out, a * np.float32(3.0))


def test_base_multiple_of_two_only_gives_float2(runtime, rng):
    k = _copy_kernel(enigma.make_layout(4), 6)
    compiled = enigma.compile(k)
    assert vector_accesses(compiled, "float4")["cpp_loads"] == 0
    assert vector_accesses(compiled, "float2") == {"msl": 4, "cuda": 4,
                                                   "cpp_loads": 2}
    a = rng.standard_normal(6 * 9).astype(np.float32)
    out = run_kernel(runtime, compiled, [a], np.float32, 6 * 9,
                     grid=(9, 1, 1), threads=(4, 1, 1)).reshape(9, 6)
    np.testing.assert_array_equal(out[:, :4], a.reshape(9, 6)[:, :4])
    assert not out[:, 4:].any()  # never written


@pytest.mark.parametrize("layout_args,per_thread", [
    (((4,), (2,)), 8),   # strided: elements are not contiguous
    (((4,), (1,)), 5),   # contiguous but the base is only a multiple of 1
])
def test_unprovable_fragments_stay_scalar(runtime, rng, layout_args,
                                          per_thread):
    shape, stride = layout_args
    layout = enigma.make_layout(shape, stride=stride)
    compiled = enigma.compile(_copy_kernel(layout, per_thread))
    for t in ("float4", "float2"):
        assert vector_accesses(compiled, t) == {"msl": 0, "cuda": 0,
                                                "cpp_loads": 0}
    threads = 7
    n = per_thread * threads
    a = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, compiled, [a], np.float32, n,
                     grid=(threads, 1, 1), threads=(4, 1, 1))
    idx = np.array([per_thread * t + layout(i) for t in range(threads)
                    for i in range(4)])
    expected = np.zeros(n, np.float32)
    expected[idx] = a[idx]
    np.testing.assert_array_equal(out, expected)


def test_static_misaligned_base_stays_scalar():
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        src = enigma.Tensor("A", 0, enigma.f32, enigma.make_layout(4),
                            base_offset=1)
        enigma.Tensor("B", 1, enigma.f32, enigma.make_layout(4),
                      base_offset=4).store(src.load())

    counts = vector_accesses(enigma.compile(k), "float4")
    # The load (base 1) is scalar, the store (base 4) one float4.
    assert counts == {"msl": 1, "cuda": 1, "cpp_loads": 0}


def test_row_major_tile_rows_vectorise(runtime, rng):
    # Each thread owns a 2 x 4 block of a row-major (8, 16) matrix: two
    # float4 rows, 16 apart.
    @enigma.kernel
    def blocks(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        M = enigma.Tensor("A", 0, enigma.f32, row_major(8, 16))
        N = enigma.Tensor("B", 1, enigma.f32, row_major(8, 16))
        tiles = (2, 4)
        src = enigma.tensor_zipped_divide(M, tiles)[None, t]
        dst = enigma.tensor_zipped_divide(N, tiles)[None, t]
        dst.store(src.load() + 1.0)

    compiled = enigma.compile(blocks)
    assert vector_accesses(compiled, "float4")["cpp_loads"] == 2
    a = rng.standard_normal((8, 16)).astype(np.float32)
    out = run_kernel(runtime, compiled, [a], np.float32, 128,
                     grid=(16, 1, 1), threads=(16, 1, 1))
    np.testing.assert_array_equal(out.reshape(8, 16), a + np.float32(1))


@pytest.mark.parametrize("dtype,np_dtype,vec", [
    (enigma.f16, np.float16, "half4"),
    (enigma.i32, np.int32, "uint4"),
    (enigma.u8, np.uint8, "uchar4"),
    (enigma.i16, np.int16, "ushort4"),
])
def test_other_element_types(runtime, rng, dtype, np_dtype, vec):
    compiled = enigma.compile(_copy_kernel(enigma.make_layout(4), 4, dtype))
    assert vector_accesses(compiled, vec) == {"msl": 2, "cuda": 2,
                                              "cpp_loads": 1}
    n = 4 * 33
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        a = rng.integers(info.min, info.max, size=n, endpoint=True,
                         dtype=np_dtype)
    else:
        a = rng.standard_normal(n).astype(np_dtype)
    out = run_kernel(runtime, compiled, [a], np_dtype, n, grid=(33, 1, 1),
                     threads=(32, 1, 1))
    np.testing.assert_array_equal(out, a)


def test_eight_byte_elements_move_at_most_sixteen_bytes(runtime, rng):
    compiled = enigma.compile(_copy_kernel(enigma.make_layout(4), 4,
                                           enigma.i64))
    assert vector_accesses(compiled, "ulong4")["cpp_loads"] == 0
    assert vector_accesses(compiled, "ulong2") == {"msl": 4, "cuda": 4,
                                                   "cpp_loads": 2}
    a = rng.integers(-2**62, 2**62, size=40, dtype=np.int64)
    out = run_kernel(runtime, compiled, [a], np.int64, 40, grid=(10, 1, 1),
                     threads=(4, 1, 1))
    np.testing.assert_array_equal(out, a)


def test_store_converts_and_broadcasts(runtime):
    @enigma.kernel
    def fill(B: enigma.i32):
        t = enigma.thread_position_in_grid
        dst = enigma.Tensor("B", 0, enigma.i32, enigma.make_layout(4),
                            base_offset=t * 4)
        dst.store(t)  # one value for all four elements, converted to i32

    out = run_kernel(runtime, enigma.compile(fill), [], np.int32,
                     20, grid=(5, 1, 1), threads=(5, 1, 1))
    np.testing.assert_array_equal(out, np.repeat(np.arange(5), 4))


def test_fragment_values_cross_a_barrier(runtime, rng):
    # The loaded float4 lives across a barrier (the CPU flavour splits its
    # thread loop there): each thread writes its neighbour's fragment.
    @enigma.kernel
    def rotate(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_index_in_threadgroup()
        stage = enigma.threadgroup_alloc(enigma.f32, 4 * 64)
        frag = enigma.Tensor("A", 0, enigma.f32, enigma.make_layout(4),
                             base_offset=t * 4).load()
        for i in range(4):
            stage[t * 4 + i] = frag[i] * 2.0
        enigma.barrier()
        n = enigma.threads_per_threadgroup("x")
        src = ((t + 1) % n) * 4
        out = enigma.Tensor("B", 1, enigma.f32, enigma.make_layout(4),
                            base_offset=t * 4)
        out.store([stage[src + i] + frag[i] for i in range(4)])

    compiled = enigma.compile(rotate)
    assert vector_accesses(compiled, "float4")["cpp_loads"] >= 1
    a = rng.standard_normal(4 * 64).astype(np.float32)
    out = run_kernel(runtime, compiled, [a], np.float32, 256,
                     grid=(64, 1, 1), threads=(64, 1, 1))
    frags = a.reshape(64, 4).astype(np.float64)
    expected = (np.roll(frags, -1, axis=0) * 2 + frags).astype(np.float32)
    np.testing.assert_allclose(out.reshape(64, 4), expected, rtol=1e-6)


# --------------------------------------------------------------------------
# Identity tensors
# --------------------------------------------------------------------------

def test_identity_tensor_static_coordinates():
    c = enigma.make_identity_tensor((4, 4))
    assert c.shape == (4, 4)
    tiles = enigma.tensor_zipped_divide(c, (2, 2))
    assert tiles[None, 3].load() == [(2, 2), (3, 2), (2, 3), (3, 3)]


def test_identity_tensor_predicates_a_partial_tile(runtime, rng):
    # A 5 x 6 matrix in 4 x 4 tiles: threads outside the matrix skip.
    rows, cols = 5, 6

    @enigma.kernel
    def masked_copy(A: enigma.f32, B: enigma.f32):
        tile = enigma.threadgroup_position_in_grid("x")
        t = enigma.thread_position_in_threadgroup("x")
        tiler = (4, 4)
        coords = enigma.tensor_zipped_divide(
            enigma.make_identity_tensor((8, 8)), tiler)[None, tile]
        r, c = coords[t]
        src = enigma.Tensor("A", 0, enigma.f32, row_major(rows, cols))
        dst = enigma.Tensor("B", 1, enigma.f32, row_major(rows, cols))
        with enigma.if_((r < rows) & (c < cols)):
            dst[r, c] = src[r, c] + 10.0

    a = rng.standard_normal((rows, cols)).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(masked_copy), [a], np.float32,
                     rows * cols, grid=(4 * 16, 1, 1), threads=(16, 1, 1))
    np.testing.assert_array_equal(out.reshape(rows, cols),
                                  a + np.float32(10))


def test_identity_tensor_is_read_only():
    @enigma.kernel
    def k(A: enigma.f32):
        enigma.make_identity_tensor((4,))[0] = 1

    with pytest.raises(enigma.EnigmaError, match="read-only"):
        enigma.compile(k)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

def _trace_error(body, match):
    @enigma.kernel
    def k(A: enigma.f32, n: enigma.Scalar(enigma.u32)):
        body()

    with pytest.raises(enigma.EnigmaError, match=match) as info:
        enigma.compile(k)
    assert "test_tensor.py:" in str(info.value)


def test_tensor_on_a_missing_buffer():
    _trace_error(lambda: enigma.Tensor("X", 5, enigma.f32,
                                       enigma.make_layout(4))[0],
                 "buffer parameter 5")


def test_tensor_on_a_scalar_parameter():
    _trace_error(lambda: enigma.Tensor("n", 1, enigma.u32,
                                       enigma.make_layout(4))[0],
                 "buffer parameter 1")


def test_tensor_dtype_mismatch():
    _trace_error(lambda: enigma.Tensor("A", 0, enigma.i32,
                                       enigma.make_layout(4))[0],
                 "element type i32.*holds f32")


def test_assigning_a_slice():
    def body():
        enigma.Tensor("A", 0, enigma.f32, row_major(2, 2))[None, 0] = 1.0
    _trace_error(body, "every mode fixed")


def test_store_count_mismatch():
    def body():
        enigma.Tensor("A", 0, enigma.f32, enigma.make_layout(4)).store(
            [1.0, 2.0])
    _trace_error(body, "2 values for 4 elements")


def test_load_of_a_huge_tensor():
    _trace_error(lambda: enigma.Tensor("A", 0, enigma.f32,
                                       enigma.make_layout(4096)).load(),
                 "per-thread fragments")


def test_wrong_number_of_modes():
    _trace_error(lambda: enigma.Tensor("A", 0, enigma.f32,
                                       row_major(2, 2))[0, 0, 0],
                 "3 modes")


def test_float_coordinate():
    _trace_error(lambda: enigma.Tensor("A", 0, enigma.f32,
                                       enigma.make_layout(4))[1.5],
                 "coordinate")


def test_element_access_outside_a_kernel():
    with pytest.raises(enigma.EnigmaError, match="inside an @enigma.kernel"):
        enigma.Tensor("A", 0, enigma.f32, enigma.make_layout(4))[0]


# --------------------------------------------------------------------------
# The builder calls underneath (enigma._core)
# --------------------------------------------------------------------------

def _with_builder(check, annotation=enigma.f32):
    """Runs check(builder, buffer, tid) inside a traced kernel body."""
    from enigma._tracing import current_tracer

    @enigma.kernel
    def k(A: annotation):
        tracer = current_tracer()
        check(tracer.builder, tracer.buffers[0]._buffer,
              enigma.thread_position_in_grid)

    return enigma.compile(k, emit_only=True)


def test_known_power_of_two_divisor():
    seen = {}

    def check(builder, buf, tid):
        d = lambda v: enigma._core.known_power_of_two_divisor(builder,
                                                              v._value)
        seen.update(tid=d(tid), times4=d(tid * 4), plus2=d(tid * 4 + 2),
                    shifted=d((tid * 8) << 1), masked=d(tid & 0xFFF0),
                    sum=d(tid * 16 + tid * 64), cast=d((tid * 8).cast("i64")),
                    divided=d((tid * 8) // 2), zero=d(tid * 0))

    _with_builder(check)
    assert seen == dict(tid=1, times4=4, plus2=2, shifted=16, masked=16,
                        sum=16, cast=8, divided=1, zero=2**31)


def test_divisor_of_a_scalar_that_promises_a_multiple():
    seen = {}

    @enigma.kernel
    def k(A: enigma.f32, n: enigma.Scalar(enigma.u32, multiple_of=24),
          m: enigma.Scalar(enigma.i32)):
        from enigma._tracing import current_tracer
        builder = current_tracer().builder
        d = lambda v: enigma._core.known_power_of_two_divisor(builder,
                                                              v._value)
        t = enigma.thread_position_in_grid
        seen.update(n=d(n), row=d(t * n), plus=d(t * n + 4), m=d(m))

    enigma.compile(k, emit_only=True)
    # 24 = 8 * 3: only the power of two counts.
    assert seen == dict(n=8, row=8, plus=4, m=1)


def test_multiple_of_is_checked_at_dispatch(runtime, rng):
    @enigma.kernel
    def rows(A: enigma.f32, K: enigma.Scalar(enigma.u32, multiple_of=4),
             C: enigma.f32):
        r = enigma.threadgroup_position_in_grid("x")
        row = enigma.Tensor("A", 0, enigma.f32, enigma.make_layout(8),
                            base_offset=r * K)
        out = enigma.Tensor("C", 2, enigma.f32, enigma.make_layout(8),
                            base_offset=r * 8)
        out.store(row.load())

    compiled = enigma.compile(rows)
    assert vector_accesses(compiled, "float4")["cpp_loads"] == 2
    assert compiled.params[1].multiple_of == 4
    k = 4 * int(rng.integers(2, 10))
    a = rng.standard_normal(3 * k).astype(np.float32)
    out = run_kernel(runtime, compiled, [a], np.float32, 24, (3, 1, 1),
                     (1, 1, 1), scalars=[k])
    np.testing.assert_array_equal(out.reshape(3, 8), a.reshape(3, k)[:, :8])
    with pytest.raises(enigma.DispatchError,
                       match=r"K \(u32\) is declared a multiple of 4 "
                             r"\(multiple_of\), got 10"):
        run_kernel(runtime, compiled, [a], np.float32, 24, (3, 1, 1),
                   (1, 1, 1), scalars=[10])


@pytest.mark.parametrize("dtype,multiple,match", [
    (enigma.f32, 4, "integer scalars"), (enigma.u32, 0, "positive int"),
    (enigma.u32, 2.0, "positive int"), (enigma.b1, 2, "integer scalars")])
def test_multiple_of_errors(dtype, multiple, match):
    with pytest.raises(enigma.EnigmaError, match=match):
        enigma.Scalar(dtype, multiple_of=multiple)


@pytest.mark.parametrize("call,match", [
    (lambda b, buf, i: enigma._core.vector_load(b, buf, i._value, 3),
     "2 or 4"),
    (lambda b, buf, i: enigma._core.vector_store(b, buf, i._value,
                                                 (i * 1.0)._value),
     "2 or 4"),
])
def test_vector_access_errors(call, match):
    with pytest.raises(enigma.EnigmaError, match=match):
        _with_builder(call)


def test_no_vector_access_of_bool_memory():
    with pytest.raises(enigma.EnigmaError, match="bool"):
        _with_builder(lambda b, buf, i: enigma._core.vector_load(
            b, buf, i._value, 2), annotation=enigma.b1)


def test_no_vector_access_of_vector_buffers():
    @enigma.kernel
    def k(A: enigma.f32):
        from enigma._tracing import current_tracer
        tracer = current_tracer()
        enigma._core.vector_load(tracer.builder, tracer.buffers[0]._buffer,
                                 enigma.thread_position_in_grid._value, 4)

    with pytest.raises(enigma.EnigmaError, match="vec_width"):
        enigma.compile(k, vec_width=4, emit_only=True)


def test_vector_access_of_atomic_memory(runtime, rng):
    # In MSL memory that atomics use has an atomic type: its vector accesses
    # go one lane at a time through the atomic view; elsewhere they stay
    # wide. C[0] counts threads atomically while each thread adds twice its
    # 4 elements of A to its 4 elements of C (zero-filled) with a vector
    # load and store of C.
    @enigma.kernel
    def k(A: enigma.u32, C: enigma.u32):
        t = enigma.thread_position_in_grid
        enigma.atomic_fetch_add(C, 0, 1)
        src = enigma.Tensor("A", 0, enigma.u32, enigma.make_layout(4),
                            base_offset=t * 4)
        dst = enigma.Tensor("C", 1, enigma.u32, enigma.make_layout(4),
                            base_offset=t * 4 + 4)
        old, new = dst.load(), src.load()
        dst.store([old[i] + new[i] * 2 for i in range(4)])

    compiled = enigma.compile(k)
    msl = compiled.metal_source
    assert "*(device uint4*)(C" not in msl
    assert re.search(r"uint4 v\d+ = uint4\(uint\(enigma_view_1\[.+ \+ 0\]\), "
                     r"uint\(enigma_view_1\[.+ \+ 1\]\)", msl)
    assert re.search(r"enigma_view_1\[.+ \+ 3\] = \(v\d+\)\.w;", msl)
    assert vector_accesses(compiled, "uint4")["cpp_loads"] == 2
    n = int(rng.integers(1, 300))
    a = rng.integers(0, 1 << 30, 4 * n).astype(np.uint32)
    out = run_kernel(runtime, compiled, [a], np.uint32, 4 * n + 4,
                     (n, 1, 1), (64, 1, 1))
    want = np.concatenate([[n, 0, 0, 0], a.astype(np.uint64) * 2])
    np.testing.assert_array_equal(out, want)


# --------------------------------------------------------------------------
# local_tile / local_partition
# --------------------------------------------------------------------------

ROWS, COLS = 8, 16
ROW_MAJOR = enigma.make_layout((ROWS, COLS), stride=(COLS, 1))


@enigma.kernel
def partition_owner(C: enigma.f32):
    # 32 threads as 4 x 8 (row-major): each writes its index into the
    # elements local_partition gives it.
    t = enigma.thread_index_in_threadgroup()
    thr = enigma.make_layout((4, 8), stride=(8, 1))
    mine = enigma.local_partition(enigma.Tensor("C", 0, enigma.f32, ROW_MAJOR),
                                  thr, t)
    assert mine.size() == (ROWS // 4) * (COLS // 8)
    mine.store(enigma.metal_cast(t, "float"))


def test_local_partition_owners(runtime):
    out = run_kernel(runtime, enigma.compile(partition_owner), [], np.float32,
                     ROWS * COLS, (32, 1, 1), (32, 1, 1))
    r, c = np.indices((ROWS, COLS))
    np.testing.assert_array_equal(out.reshape(ROWS, COLS), (r % 4) * 8 + c % 8)


@enigma.kernel
def tile_scale(A: enigma.f32, C: enigma.f32):
    # Threadgroup b takes tile (b % 2, b // 2) of 4 x 8; thread t its
    # element (t % 4, t // 4).
    b = enigma.threadgroup_position_in_grid("x")
    t = enigma.thread_index_in_threadgroup()
    tiles = [enigma.local_tile(enigma.Tensor(n, i, enigma.f32, ROW_MAJOR),
                               (4, 8), (b % 2, b // 2))
             for i, n in enumerate("AC")]
    tiles[1][t % 4, t // 4] = tiles[0][t % 4, t // 4] * 2.0 + \
        enigma.metal_cast(b, "float")


def test_local_tile(runtime, rng):
    a = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(tile_scale), [a.ravel()],
                     np.float32, ROWS * COLS, (4 * 32, 1, 1), (32, 1, 1))
    r, c = np.indices((ROWS, COLS))
    block = (r // 4) + 2 * (c // 8)
    np.testing.assert_array_equal(out.reshape(ROWS, COLS),
                                  a * np.float32(2) + block.astype(np.float32))


def test_local_partition_of_a_hierarchical_thread_layout():
    # Threads ((2,2),4):((1,8),2) cover a (4,4) tile: thread 9 is at leaf
    # coordinates (1,1) in mode 0 (index 9 = 1*1 + 1*8), 0 in mode 1, i.e.
    # flat coordinate (3, 0); with a 1-D index the partition is pure ints.
    thr = enigma.Layout(((2, 2), 4), ((1, 8), 2))
    t = enigma.Tensor("A", 0, enigma.f32, enigma.make_layout((8, 8)))
    part = enigma.local_partition(t, thr, 9)
    # Column-major 8x8: element (row, col) at row + 8 * col; the thread owns
    # rows 3 and 7 of columns 0 and 4.
    assert [part.base_offset + part.layout((i, j)) for j in range(2)
            for i in range(2)] == [3, 7, 3 + 32, 7 + 32]


def test_local_partition_covers_every_element_once(rng):
    """Random thread layouts (row- or column-major, ints as indices) over
    random matrices they tile: the threads' partitions together hold every
    element of the tensor exactly once, and local_tile's tiles do too."""
    for _ in range(40):
        t0, t1 = (int(rng.choice((1, 2, 4))) for _ in range(2))
        m, n = t0 * int(rng.integers(1, 4)), t1 * int(rng.integers(1, 4))
        thr = enigma.make_layout((t0, t1), stride=(t1, 1)) \
            if rng.random() < 0.5 else enigma.make_layout((t0, t1))
        data = enigma.make_layout((m, n), stride=(n, 1))
        tensor = enigma.Tensor("A", 0, enigma.f32, data)
        owned = []
        for index in range(t0 * t1):
            part = enigma.local_partition(tensor, thr, index)
            owned += [part.base_offset + part.layout(i)
                      for i in range(part.size())]
        assert sorted(owned) == list(range(m * n)), (thr, m, n)
        tiles = []
        for c0 in range(m // t0):
            for c1 in range(n // t1):
                tile = enigma.local_tile(tensor, (t0, t1), (c0, c1))
                tiles += [tile.base_offset + tile.layout(i)
                          for i in range(tile.size())]
        assert sorted(tiles) == list(range(m * n)), (t0, t1, m, n)


# --------------------------------------------------------------------------
# A Tensor's name and buffer_index must name the same parameter
# --------------------------------------------------------------------------

def test_name_and_position_that_disagree_are_an_error():
    # "A" is parameter 0; buffer_index 1 is B: reading parameter 1 silently
    # whatever the name says was the trap.
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        B[t] = enigma.Tensor("A", 1, enigma.f32)[t]

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_tensor.py:\d+: .*'A'.*parameter 0.*"
                             r"buffer_index 1.*'B'"):
        enigma.compile(k)


def test_a_name_that_is_no_parameter_is_an_error():
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        B[t] = enigma.Tensor("X", 0, enigma.f32)[t]

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_tensor.py:\d+: .*'X'.*buffer_index 0.*"
                             r"'A'"):
        enigma.compile(k)


def test_a_tensor_made_outside_the_kernel_is_checked_where_used():
    wrong = enigma.Tensor("B", 0, enigma.f32, enigma.make_layout(4))

    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        B[0] = wrong[(1,)]

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_tensor.py:\d+: .*'B'.*parameter 1.*"
                             r"buffer_index 0.*'A'"):
        enigma.compile(k)


def test_matching_name_and_position_work(runtime, rng):
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        a = enigma.Tensor(A.name, A.buffer_index, A.metal_dtype)
        enigma.Tensor("B", 1, enigma.f32)[t] = a[t] + 1.0

    a = rng.standard_normal(37).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(k), [a], np.float32, 37,
                     (37, 1, 1), (8, 1, 1))
    np.testing.assert_array_equal(out, a + 1.0)
