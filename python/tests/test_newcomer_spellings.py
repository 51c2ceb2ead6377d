"""What a newcomer to a GPU kernel DSL writes first, from README.md and
docs/reference/ alone, and gets wrong: numpy integers where a configuration
takes an int, numpy's array attributes on a buffer parameter (A.size,
A.sum()), Metal's select() for enigma.where, Python's range over floats,
a launch spelled with a float. Each ends in an EnigmaError (or the error
the reference names for that place) at the user's line that says what to
write instead; the spellings that are right compute the right answer on
every runtime under test, checked against numpy in float64."""

import numpy as np
import pytest

import enigma
import enigma.attention as ea
from enigma.quantized import QmmConfig, QmvConfig, QmvMmaConfig
from conftest import tagged_line
from _attention_reference import check_forward, make, reference_bhsd
from test_quantized import Arrays, product

U32 = enigma.Scalar(enigma.u32)
NUMPY_INTS = [np.int64, np.int32, np.uint16]


def located(info, tag):
    """The message of an error raised at this file's line tagged ``tag``."""
    message = str(info.value)
    assert f"{__file__}:{tagged_line(__file__, tag)}: " in message, message
    return message


# --------------------------------------------------------------------------
# numpy integers in host configurations
# --------------------------------------------------------------------------

@pytest.mark.parametrize("np_int", NUMPY_INTS)
def test_quantized_configurations_take_numpy_integers(np_int):
    for cls, fields in ((QmvConfig, dict(rows=8, simdgroups=2, k_split=2,
                                         chunks=2)),
                        (QmmConfig, dict(bm=64, bn=64, bk=64, wm=2, wn=2,
                                         stages=2, group_m=4, splits=3)),
                        (QmvMmaConfig, dict(row_groups=2, parts=2, chunks=4,
                                            span=512))):
        made = cls(**{k: np_int(v) for k, v in fields.items()})
        assert made == cls(**fields) and hash(made) == hash(cls(**fields))
        # Stored as Python ints: reprs, cache keys and kernel names stay
        # those of the int spelling.
        assert all(type(getattr(made, k)) is int for k in fields)
        assert repr(made) == repr(cls(**fields))


@pytest.mark.parametrize("bad", [8.0, np.float64(8), True, np.bool_(True),
                                 "8"])
def test_quantized_configurations_still_refuse_other_kinds(bad):
    with pytest.raises(enigma.EnigmaError, match="rows must be an int"):
        QmvConfig(rows=bad)
    with pytest.raises(enigma.EnigmaError, match="bm must be a positive int"):
        QmmConfig(bm=bad)


@pytest.fixture
def qa(arrays):
    return Arrays(arrays)


def test_numpy_integer_matvec_configuration_runs(qa, rng):
    """A configuration made from numpy integers computes the product."""
    config = QmvConfig(*(np.int64(v) for v in (4, 2, 2, 1)))
    product(qa, rng, 1, 37, 1088, 64, "bf16", config)


@pytest.mark.parametrize("np_int", NUMPY_INTS)
def test_attention_configurations_take_numpy_integers(np_int):
    for cls, fields in ((ea.ForwardConfig, dict(bc=32, rows=64, stages=3)),
                        (ea.DecodeConfig, dict(simdgroups=2, bc=16,
                                               stages=2)),
                        (ea.BackwardConfig, dict(simdgroups=2, bq=32,
                                                 stages=1, dq_simdgroups=2,
                                                 bk=32))):
        made = cls(**{k: np_int(v) for k, v in fields.items()})
        assert made == cls(**fields) and hash(made) == hash(cls(**fields))
        assert all(type(getattr(made, k)) is int for k in fields)


def test_numpy_integer_attention_configuration_runs(runtime, rng):
    q = make(rng, (1, 2, 37, 64), "bf16")
    k = make(rng, (1, 1, 45, 64), "bf16")
    v = make(rng, (1, 1, 45, 64), "bf16")
    config = ea.ForwardConfig(bc=np.int64(32), rows=np.int32(64))
    o, lse = ea.attention(q, k, v, causal=True, return_lse=True,
                          config=config, num_splits=np.int64(0),
                          runtime=runtime)
    check_forward(o, lse, *reference_bhsd(q, k, v, True), v)


def test_attention_configurations_refuse_floats(runtime, rng):
    q = make(rng, (1, 1, 16, 64), "bf16")
    # The attention calls' errors about their arguments are ValueErrors.
    with pytest.raises(ValueError, match="bc must be a multiple"):
        ea.attention(q, q, q, config=ea.ForwardConfig(bc=32.0),
                     num_splits=0, runtime=runtime)
    with pytest.raises(ValueError, match="num_splits must be None "
                       "or an int"):
        ea.attention(q, q, q, num_splits=1.0, runtime=runtime)


def test_declarations_take_numpy_integers(runtime, rng):
    n = 37
    scalar = enigma.Scalar(enigma.u32, multiple_of=np.int64(1))
    assert type(scalar.multiple_of) is int

    @enigma.kernel
    def shifted(A: enigma.f32[np.int64(n)], B: enigma.f32, m: scalar):
        i = enigma.thread_position_in_grid
        with enigma.if_(i < m):
            B[i] = A[i] + 1.0

    assert all(type(e) is int for e in shifted.params[0].shape)
    compiled = enigma.compile(shifted, vec_width=np.int64(0))
    a = rng.standard_normal(n).astype(np.float32)
    raw = runtime.execute(compiled, [a], scalars=[n], output_size=4 * n,
                          grid=(n, 1, 1), threads=(32, 1, 1))
    np.testing.assert_allclose(np.frombuffer(raw, np.float32),
                               a.astype(np.float64) + 1.0, rtol=1e-7)


def test_stream_k_schedule_takes_numpy_integers():
    config = enigma.MmaConfig(64, 64, 32, 2, 2, 2, stream_k=4)
    assert enigma.stream_k_schedule(config, 65, 70, 100,
                                    groups=np.int64(2)) == \
        enigma.stream_k_schedule(config, 65, 70, 100, groups=2)


def test_jit_launch_takes_numpy_integers(runtime, rng):
    n = np.int64(48)

    @enigma.kernel
    def twice(X, Y):
        i, _, _ = enigma.arch.thread_idx()
        b, _, _ = enigma.arch.block_idx()
        Y[b * 16 + i] = X[b * 16 + i] * 2.0

    @enigma.jit
    def run(X, Y):
        twice(X, Y).launch(grid=[n, np.int32(1), 1], block=[np.int64(16)])

    tensors = [enigma.Tensor(name, i, enigma.f32, enigma.make_layout(int(n)))
               for i, name in enumerate("XY")]
    compiled = enigma.compile(run, *tensors)
    assert compiled.grid == (48, 1, 1) and compiled.block == (16, 1, 1)
    x = rng.standard_normal(int(n)).astype(np.float32)
    raw = runtime.execute(compiled, [x], output_size=4 * int(n),
                          grid=compiled.grid, threads=compiled.block)
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), x * 2)


def test_numpy_integer_fp8_scales_are_numbers(runtime, rng):
    """A numpy integer scale is the number it holds, as a Python int is
    (a numpy integer array is still refused: scales hold floats)."""
    if runtime.name not in ("cpu", "metal-host"):
        pytest.skip("numpy arrays run on the host runtimes")
    x = rng.standard_normal((5, 32)).astype(np.float32)
    w = rng.standard_normal((3, 32)).astype(np.float32)
    a, b = (enigma.fp8_encode(v, enigma.f8e4m3, saturate=True)
            for v in (x, w))
    af, bf = (enigma.fp8_decode(v, enigma.f8e4m3).astype(np.float64)
              for v in (a, b))
    c = enigma.gemm_fp8(a, b, np.int64(2), np.uint8(3), out_dtype="f32",
                        runtime=runtime)
    np.testing.assert_allclose(c, 6 * af @ bf.T, rtol=1e-6, atol=1e-5)
    with pytest.raises(enigma.DispatchError, match="float32 values"):
        enigma.gemm_fp8(a, b, np.array([2]), 1.0, runtime=runtime)


def test_autotune_launch_takes_a_numpy_integer_size():
    @enigma.kernel
    def fill(out: enigma.f32):
        out[enigma.thread_position_in_grid] = 1.0

    launch = enigma.Launch(enigma.compile(fill), (8, 1, 1), (8, 1, 1),
                           output_bytes=np.int64(32))
    assert launch.output_bytes == [32] and type(launch.output_bytes[0]) is int


# --------------------------------------------------------------------------
# numpy's array attributes on buffers and traced values
# --------------------------------------------------------------------------

def test_buffer_size_names_the_scalar_parameter():
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid
        with enigma.if_(i < A.size):  # size
            B[i] = A[i]

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(k)
    message = located(info, "size")
    assert "buffer A has no attribute 'size'" in message
    assert "enigma.Scalar(enigma.u32)" in message
    assert 'enigma.f32["n"]' in message


@pytest.mark.parametrize("method", ["sum", "max", "min", "mean", "prod",
                                    "argmax"])
def test_buffer_reductions_say_how_to_reduce(method):
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        B[0] = getattr(A, method)()  # reduce

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(k)
    message = located(info, "reduce")
    assert f"buffer A has no attribute '{method}'" in message
    assert "enigma.range" in message and "enigma.simd_" in message


def test_unshaped_buffer_shape_says_how_to_declare_one():
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid
        B[i] = A[i] * A.shape[0]  # shape

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(k)
    message = located(info, "shape")
    assert "buffer A has no declared shape" in message
    assert 'A: enigma.f32["n"]' in message


@pytest.mark.parametrize("attribute,hint", [
    ("ndim", "no declared shape"), ("astype", "metal_cast"),
    ("reshape", "enigma.Tensor"), ("T", "enigma.Tensor"),
    ("nbytes", "scalar parameter"), ("fill", "A[i] = v"),
    ("lenght", "A.name, A.dtype"),
])
def test_other_buffer_attributes(attribute, hint):
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        B[0] = getattr(A, attribute)  # attribute

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(k)
    message = located(info, "attribute")
    assert hint in message, message


def test_missing_attributes_stay_attribute_errors_for_hasattr(runtime):
    """hasattr and getattr with a default still answer (the error is also
    an AttributeError), and a shaped buffer keeps its shape."""
    seen = {}

    @enigma.kernel
    def k(A: enigma.f32[8], B: enigma.f32, C: enigma.f32):
        i = enigma.thread_position_in_grid
        seen["A"] = (hasattr(A, "size"), getattr(B, "shape", "none"),
                     hasattr(A[i], "astype"), len(A.shape))
        C[i] = A[i] + B[i]

    compiled = enigma.compile(k)
    assert seen["A"] == (False, "none", False, 1)
    a, b = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    raw = runtime.execute(compiled, [a, b], output_size=32,
                          grid=(8, 1, 1), threads=(8, 1, 1))
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), a + 1)


@pytest.mark.parametrize("spelling,hint", [
    ("astype", "enigma.metal_cast"), ("item", "enigma.metal_cast"),
    ("sum", "enigma.simd_sum"), ("sqrt", "enigma.sqrt"),
    ("shape", "x.lanes"), ("len", "x.lanes"),
])
def test_traced_value_attributes(spelling, hint):
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid
        v = A[i]
        B[i] = len(v) if spelling == "len" else getattr(v, spelling)  # value

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(k)
    message = located(info, "value")
    assert hint in message, message


def test_a_buffer_used_as_a_number_names_scalar():
    @enigma.kernel
    def k(A: enigma.f32, n: enigma.u32):
        i = enigma.thread_position_in_grid
        with enigma.if_(i < n):  # number
            A[i] = 0.0

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(k)
    message = located(info, "number")
    assert "buffer n is not a value" in message
    assert "n: enigma.Scalar(enigma.u32)" in message


def test_thread_positions_unpacked_or_read_as_lanes():
    @enigma.kernel
    def unpacked(A: enigma.f32, w: U32):
        x, y = enigma.thread_position_in_grid_xyz()  # unpack
        A[y * w + x] = 0.0

    @enigma.kernel
    def lane(A: enigma.f32, w: U32):
        A[enigma.thread_position_in_grid.y] = 0.0  # lane

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(unpacked)
    assert 'y = enigma.thread_position_in_grid_xyz("y")' in \
        located(info, "unpack")
    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(lane)
    message = located(info, "lane")
    assert "already the x position" in message
    assert 'thread_position_in_grid_xyz("y")' in message


@pytest.mark.parametrize("name,hint", [
    ("threadIdx", "enigma.thread_position_in_grid"),
    ("program_id", "enigma.threadgroup_position_in_grid()"),
    ("syncthreads", "enigma.barrier()"), ("max", "enigma.fmax"),
    ("float32", "enigma.f32"), ("float64", "enigma.f32"),
    ("zeros", "numpy"),
])
def test_names_of_other_kernel_languages(name, hint):
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = getattr(enigma, name)  # foreign

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(k)
    assert hint in located(info, "foreign")
    assert not hasattr(enigma, name)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        enigma.no_such_name


# --------------------------------------------------------------------------
# select / where
# --------------------------------------------------------------------------

def test_metal_select_spelling_names_where():
    @enigma.kernel
    def relu(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid
        B[i] = enigma.select(0.0, A[i], A[i] > 0.0)  # select3

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(relu)
    message = located(info, "select3")
    assert "enigma.where(false_value, true_value, condition)" in message


def test_select_of_traced_values_names_where():
    @enigma.kernel
    def pick(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid
        B[i] = enigma.select(A[i], A[i] > 0.0)  # select2

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(pick)
    message = located(info, "select2")
    assert "enigma.where(false_value, true_value, condition)" in message


def test_where_with_two_arguments_names_the_order():
    @enigma.kernel
    def half(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid
        B[i] = enigma.where(A[i] > 0.0, A[i])  # where2

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(half)
    message = located(info, "where2")
    assert "where(false_value, true_value, condition)" in message


def test_where_relu_computes(arrays, rng):
    @enigma.kernel
    def relu(A: enigma.f32, B: enigma.f32, n: U32):
        i = enigma.thread_position_in_grid
        with enigma.if_(i < n):
            B[i] = enigma.where(0.0, A[i], A[i] > 0.0)

    n = 301
    a = rng.standard_normal(n).astype(np.float32)
    out = arrays.put(np.full(n, np.nan, np.float32))
    relu[n](arrays.put(a), out, n)
    np.testing.assert_array_equal(arrays.get(out),
                                  np.maximum(a.astype(np.float64), 0.0))


# --------------------------------------------------------------------------
# Python's range over floats
# --------------------------------------------------------------------------

def test_python_range_of_a_float():
    @enigma.kernel
    def k(A: enigma.f32):
        i = enigma.thread_position_in_grid
        for j in range(0, 8 / 2):  # range
            A[i * 4 + j] = 0.0

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(k)
    message = located(info, "range")
    assert "range() takes ints" in message and "//" in message


# --------------------------------------------------------------------------
# Launches spelled with floats and bools
# --------------------------------------------------------------------------

def test_a_float_grid_is_refused_after_the_int_one_ran(arrays, rng):
    """A launcher kept for kernel[1000] is not reused for kernel[1000.0]
    (equal keys in a dict): the float is refused, first or not."""
    @enigma.kernel
    def copy(A: enigma.f32, B: enigma.f32, n: U32):
        i = enigma.thread_position_in_grid
        with enigma.if_(i < n):
            B[i] = A[i]

    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    out = arrays.put(np.full(n, np.nan, np.float32))
    copy[n](arrays.put(a), out, n)
    np.testing.assert_array_equal(arrays.get(out), a)
    for key in (float(n), np.float64(n)):
        with pytest.raises(enigma.EnigmaError, match="the brackets take one "
                           "int"):
            copy[key]
    copy[1]
    with pytest.raises(enigma.EnigmaError, match="the brackets take one int"):
        copy[True]
    copy.launch(grid=n, threads=128)
    with pytest.raises(TypeError, match="grid must be an int"):
        copy.launch(grid=float(n), threads=128)
    with pytest.raises(TypeError, match="threads must be an int"):
        copy.launch(grid=n, threads=128.0)
    # numpy integers are ints: the same launch.
    out = arrays.put(np.full(n, np.nan, np.float32))
    copy[np.int64(n)](arrays.put(a), out, n)
    np.testing.assert_array_equal(arrays.get(out), a)


# --------------------------------------------------------------------------
# numpy integers inside kernels, where a compile-time int is taken
# --------------------------------------------------------------------------

def test_numpy_integers_in_kernel_helpers(arrays, rng):
    """x ** n, the tile copy's count and a pipeline's sizes take numpy
    integers (sizes computed on the host) as the ints they hold."""
    two, count = np.int64(2), np.int32(64)

    @enigma.kernel
    def squares(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_index_in_threadgroup()
        ring = enigma.pipeline(enigma.f32, count, np.int64(2))
        enigma.copy(A, ring.back(), count, cooperative=True)
        enigma.barrier()
        B[t] = ring.back()[t] ** two

    a = rng.standard_normal(64).astype(np.float32)
    out = arrays.put(np.full(64, np.nan, np.float32))
    squares.launch(threadgroups=1, threads=64)(arrays.put(a), out)
    np.testing.assert_allclose(arrays.get(out), a.astype(np.float64) ** 2,
                               rtol=1e-6)


def test_a_compiled_kernel_called_directly_says_how_to_launch(arrays, rng):
    @enigma.kernel
    def double(A: enigma.f32, B: enigma.f32):
        i = enigma.thread_position_in_grid
        B[i] = A[i] * 2.0

    compiled = enigma.compile(double)
    a = rng.standard_normal(32).astype(np.float32)
    out = arrays.put(np.full(32, np.nan, np.float32))
    with pytest.raises(enigma.EnigmaError) as info:
        compiled(arrays.put(a), out)  # call
    message = located(info, "call")
    assert "compiled[n](...)" in message and "execute" in message
    compiled[32](arrays.put(a), out)
    np.testing.assert_array_equal(arrays.get(out), a.astype(np.float64) * 2)


def test_gemm_configurations_take_numpy_integers():
    """MmaConfig and gemm_config_for take numpy integers (sizes computed
    with numpy) as the Python ints they hold: stored as ints, so the repr
    and the cache key are the int spelling's; bools and floats are still
    refused."""
    i = np.int64
    config = enigma.MmaConfig(i(64), i(64), i(32), i(2), i(2), i(2),
                              group_m=i(4), split_k=np.int32(1))
    assert config == enigma.MmaConfig(64, 64, 32, 2, 2, 2, group_m=4)
    assert repr(config) == repr(enigma.MmaConfig(64, 64, 32, 2, 2, 2,
                                                 group_m=4))
    assert all(type(getattr(config, f)) is int
               for f in ("bm", "bn", "bk", "wm", "wn", "stages", "group_m",
                         "split_k"))
    assert enigma.gemm_config_for(i(16), i(4096), np.int32(4096), "bf16",
                                  sm_count=i(132)) == \
        enigma.gemm_config_for(16, 4096, 4096, "bf16", sm_count=132)
    with pytest.raises(enigma.EnigmaError, match="m must be a positive int"):
        enigma.gemm_config_for(16.0, 4096, 4096, "bf16")
    with pytest.raises(enigma.EnigmaError, match="bm must be a Python int"):
        enigma.MmaConfig(64.0, 64, 32, 2, 2, 2).check_fields()
