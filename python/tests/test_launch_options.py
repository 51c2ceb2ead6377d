"""The function-call form with compile options, function constants and the
MSL host runtime, and kernels whose body reads module globals or closure
variables that change after the first launch (docs/reference/launch.md,
"Compile options" and "Names the body reads")."""

import numpy as np
import pytest

import enigma
import enigma._compile as compile_module

U32 = enigma.Scalar(enigma.u32)


@enigma.kernel
def scaled_add(A: enigma.f32, B: enigma.f32, C: enigma.f32, n: U32):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        C[i] = A[i] * 2.0 + B[i]


@enigma.kernel
def gather(A: enigma.f32, I: enigma.u32, C: enigma.f32, n: U32):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        C[i] = A[I[i]]


@enigma.kernel
def affine(A: enigma.f32, C: enigma.f32, n: U32):
    scale = enigma.function_constant(enigma.i32, 0)
    shift = enigma.function_constant("float", 3)
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        C[i] = A[i] * enigma.metal_cast(scale, "float") + shift


def _poisoned(arrays, n):
    return arrays.put(np.full(n, np.nan, np.float32))


# --- Compile options: enigma.compile(kernel, ...) launches the same way ------

@pytest.mark.parametrize("groups", [1, 7, 250])
def test_vec_width_kernel_through_the_call_form(arrays, rng, groups):
    """enigma.compile(kernel, vec_width=4) gives a kernel whose float
    buffers hold float4s: launched on float32 arrays of 4 * groups
    elements with groups threads."""
    n = 4 * groups
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = _poisoned(arrays, n)
    wide = enigma.compile(scaled_add, vec_width=4)
    assert "float4" in wide.metal_source
    wide[groups](arrays.put(a), arrays.put(b), c, groups)
    want = a.astype(np.float64) * 2 + b.astype(np.float64)
    np.testing.assert_allclose(arrays.get(c), want, rtol=1e-6, atol=1e-6)
    c = _poisoned(arrays, n)
    wide.launch(threadgroups=1, threads=groups)(arrays.put(a), arrays.put(b),
                                                c, groups)
    np.testing.assert_allclose(arrays.get(c), want, rtol=1e-6, atol=1e-6)
    # An array that is not a whole number of float4s is refused.
    with pytest.raises(enigma.DispatchError, match="16-byte entries"):
        wide[groups](arrays.put(a[:-1]), arrays.put(b), c, groups)


def test_bounds_check_option_reports_the_access(arrays):
    """enigma.compile(kernel, bounds_check=True)[n](...) checks every
    access and raises the first bad one, naming the line, whatever
    ENIGMA_BOUNDS_CHECK says; the kernel traced for the plain call form
    is not changed by it."""
    checked = enigma.compile(gather, bounds_check=True)
    assert checked.bounds_checked
    a = arrays.put(np.arange(10, dtype=np.float32))
    index = arrays.put(np.array([0, 3, 12, 1], np.uint32))
    c = _poisoned(arrays, 4)
    with pytest.raises(enigma.BoundsCheckError,
                       match=r"out-of-bounds load at .*test_launch_options"
                             r"\.py:\d+: index 12 of A, which has 10 "
                             r"elements"):
        checked[4](a, index, c, 4)
    np.testing.assert_array_equal(arrays.get(c), [0, 3, 0, 1])
    ok = arrays.put(np.array([9, 8, 7, 6], np.uint32))
    checked.launch(grid=4, threads=2)(a, ok, c, 4)
    np.testing.assert_array_equal(arrays.get(c), [9, 8, 7, 6])


def test_compiled_kernels_keep_their_launchers():
    compiled = enigma.compile(scaled_add)
    assert compiled[64] is compiled[64]
    assert compiled.launch(grid=64, threads=32) is \
        compiled.launch(grid=64, threads=32)
    with pytest.raises(enigma.EnigmaError,
                       match=r"compiled\[64, 32\]: the brackets take one int"):
        compiled[64, 32]
    with pytest.raises(enigma.EnigmaError,
                       match=r"compiled\.launch\(grid=64, threads=32\)"):
        compiled[64, 32]


def test_kernels_from_metal_source_are_refused():
    source = """
#include <metal_stdlib>
using namespace metal;
kernel void fill(device float *a [[buffer(0)]],
                 uint i [[thread_position_in_grid]]) { a[i] = 1.0f; }
"""
    made = enigma.CompiledKernel("fill", None, None, source)
    with pytest.raises(enigma.EnigmaError, match="made from Metal source"):
        made[4](np.zeros(4, np.float32))


# --- Function constants -----------------------------------------------------

def test_function_constants_through_launch(arrays, rng):
    n = 1001
    a = rng.standard_normal(n).astype(np.float32)
    da = arrays.put(a)
    results = []
    for scale, shift in [(3, 0.5), (-7, 1.25), (3, 0.5)]:
        c = _poisoned(arrays, n)
        affine.launch(grid=n, constants={0: ("int", scale),
                                         3: ("float", shift)})(da, c, n)
        want = a.astype(np.float64) * scale + shift
        np.testing.assert_allclose(arrays.get(c), want, rtol=1e-6,
                                   atol=1e-6)
        results.append(arrays.get(c).copy())
    assert not np.array_equal(results[0], results[1])
    # A launcher kept by the caller keeps its constants.
    keep = affine.launch(grid=n, threads=64,
                         constants={0: ("i32", 2), 3: ("f32", -1.0)})
    c = _poisoned(arrays, n)
    keep(da, c, n)
    np.testing.assert_allclose(arrays.get(c), a.astype(np.float64) * 2 - 1,
                               rtol=1e-6, atol=1e-6)


def test_function_constant_mistakes():
    a, c = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(enigma.DispatchError,
                       match=r"function constant 0 \(i32\) but no value was "
                             r"given.*kernel\.launch\(grid=\.\.\., "
                             r"constants="):
        affine[8](a, c, 8)
    with pytest.raises(enigma.DispatchError,
                       match=r"function constant 3 \(f32\) but it was given "
                             "as i32"):
        affine.launch(grid=8, constants={0: ("int", 1),
                                         3: ("int", 2)})(a, c, 8)
    with pytest.raises(TypeError, match=r"constants\[0\] must be"):
        affine.launch(grid=8, constants={0: 5})
    with pytest.raises(TypeError, match="constants must be a dict"):
        affine.launch(grid=8, constants=[(0, "int", 1)])
    assert not c.any()


# --- The MSL host runtime -----------------------------------------------------

def test_msl_host_runtime_through_runtime_and_use_runtime(rng, capsys):
    """runtime=MetalHostRuntime() (or use_runtime) runs the kernel's Metal
    source on the host with the caller's numpy arrays, in place."""
    try:
        host = enigma.MetalHostRuntime()
    except enigma.BackendUnavailableError:
        pytest.skip("no MSL host runtime here")

    @enigma.kernel
    def triple(A: enigma.f32, C: enigma.f32, n: U32):
        i = enigma.thread_position_in_grid
        with enigma.if_(i < n):
            C[i] = A[i] * 3.0

    n = 777
    a = rng.standard_normal(n).astype(np.float32)
    c = np.full(n, np.nan, np.float32)
    address = c.ctypes.data
    enigma.set_log_level("info")
    try:
        triple[n](a, c, n, runtime=host)
    finally:
        enigma.set_log_level("off")
    assert "enigma_kernel_triple: loaded for metal-host" in \
        capsys.readouterr().err
    assert c.ctypes.data == address
    np.testing.assert_allclose(c, a.astype(np.float64) * 3, rtol=1e-6)
    c[:] = np.nan
    with enigma.use_runtime(host):
        triple.launch(grid=n, threads=32)(a, c, n)
    np.testing.assert_allclose(c, a.astype(np.float64) * 3, rtol=1e-6)
    assert triple._calls.form.targets == [(-1, False)]  # loaded once
    # A fault in the MSL is reported, and the form keeps working.
    index = np.full(4, 1 << 30, np.uint32)
    out = np.zeros(4, np.float32)
    with pytest.raises(enigma.EnigmaRuntimeError):
        gather[4](a, index, out, 4, runtime=host)
    index[:] = [3, 2, 1, 0]
    gather[4](a, index, out, 4, runtime=host)
    np.testing.assert_array_equal(out, a[[3, 2, 1, 0]])


# --- Names the body reads: re-traced when their values change -----------------

SCALE = 2.0
OFFSET = 1
TILE = 4


def _shifted(x):
    """A helper the kernel calls; it reads the global OFFSET."""
    return x + OFFSET


def _doubled(x):
    return x * 2


HELPER = _doubled


@enigma.kernel
def scale_by_global(A: enigma.f32, C: enigma.f32, n: U32):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        C[i] = A[i] * SCALE


@enigma.kernel
def shift_by_helper(A: enigma.i32, C: enigma.i32, n: U32):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        C[i] = HELPER(_shifted(A[i]))


@enigma.kernel
def sum_tiles(A: enigma.f32, C: enigma.f32, n: U32):
    """C[g] = sum of the TILE elements of tile g: TILE unrolls the loop."""
    g = enigma.thread_position_in_grid
    with enigma.if_(g < n):
        total = A[g * TILE]
        for k in range(1, TILE):
            total = total + A[g * TILE + k]
        C[g] = total


@pytest.fixture
def counted_compiles(monkeypatch):
    """The kernels enigma.compile traces during the test, by name."""
    traced = []
    real = compile_module.compile

    def counting(fn, *args, **kwargs):
        traced.append(getattr(fn, "__name__", fn))
        return real(fn, *args, **kwargs)
    monkeypatch.setattr(compile_module, "compile", counting)
    return traced


def test_a_changed_module_global_is_traced_again(arrays, rng,
                                                 counted_compiles):
    global SCALE
    n = 300
    a = rng.standard_normal(n).astype(np.float32)
    da = arrays.put(a)

    def run():
        c = _poisoned(arrays, n)
        scale_by_global[n](da, c, n)
        return arrays.get(c)
    try:
        for value in (2.0, 3.0, -0.5, 3.0, 2.0):
            SCALE = value
            np.testing.assert_array_equal(run(), a * np.float32(value))
        # Equal value, another object: no new trace.
        SCALE = float("2.0")
        np.testing.assert_array_equal(run(), a * np.float32(2))
    finally:
        SCALE = 2.0
    # Each value traced once: 3.0 and 2.0 again come from memory (the
    # first trace may have happened in another test).
    assert counted_compiles.count("scale_by_global") <= 3, counted_compiles


def test_globals_of_called_helpers_and_rebound_helpers(arrays,
                                                       counted_compiles):
    global OFFSET, HELPER
    n = 257
    a = np.arange(n, dtype=np.int32) - 100
    da = arrays.put(a)

    def run():
        c = arrays.put(np.full(n, -12345, np.int32))
        shift_by_helper.launch(grid=n, threads=64)(da, c, n)
        return arrays.get(c)
    try:
        OFFSET, HELPER = 1, _doubled
        np.testing.assert_array_equal(run(), (a + 1) * 2)
        OFFSET = 5  # read by _shifted, not by the body itself
        np.testing.assert_array_equal(run(), (a + 5) * 2)
        HELPER = lambda x: x - 3  # noqa: E731  (the helper rebound)
        np.testing.assert_array_equal(run(), a + 5 - 3)
    finally:
        OFFSET, HELPER = 1, _doubled


def test_a_global_that_changes_type_or_unrolls_a_loop(arrays, rng):
    global TILE
    groups = 37
    a = rng.standard_normal(8 * groups).astype(np.float32)
    da = arrays.put(a)
    try:
        for tile in (4, 8, 2):
            TILE = tile
            c = _poisoned(arrays, groups)
            sum_tiles[groups](da, c, groups)
            want = a[:tile * groups].astype(np.float64).reshape(
                groups, tile).sum(axis=1)
            np.testing.assert_allclose(arrays.get(c), want, rtol=1e-5,
                                       atol=1e-5)
        TILE = 2.0  # a float: traced again, and the trace says what is wrong
        with pytest.raises(enigma.EnigmaError,
                           match=r"test_launch_options\.py:\d+: a buffer "
                                 r"index must be an integer, got f32"):
            sum_tiles[groups](da, _poisoned(arrays, groups), groups)
    finally:
        TILE = 4


def test_a_changed_closure_variable_is_traced_again():
    factor = 2

    @enigma.kernel
    def times(A: enigma.i32, C: enigma.i32):
        i = enigma.thread_position_in_grid
        C[i] = A[i] * factor

    a = np.arange(40, dtype=np.int32)
    c = np.zeros(40, np.int32)
    times[40](a, c)
    np.testing.assert_array_equal(c, a * 2)
    factor = 7
    times[40](a, c)
    np.testing.assert_array_equal(c, a * 7)
    assert factor == 7


def test_the_change_is_logged(capsys):
    global SCALE
    a, c = np.ones(8, np.float32), np.zeros(8, np.float32)
    scale_by_global[8](a, c, 8)
    enigma.set_log_level("info")
    try:
        SCALE = 5.0
        scale_by_global[8](a, c, 8)
    finally:
        SCALE = 2.0
        enigma.set_log_level("off")
    err = capsys.readouterr().err
    assert "enigma_kernel_scale_by_global: the global SCALE of " \
           "test_launch_options is 5.0 now (it was 2.0 when the kernel " \
           "was traced): traced again" in err, err
    assert (c == 5).all()


def test_kernels_that_read_no_globals_check_nothing():
    """Modules (enigma) are not recorded: a body that reads nothing else
    has no names to check on its launches."""
    scaled_add[4](*(np.ones(4, np.float32) for _ in range(3)), 4)
    assert scaled_add._calls.reads == []
