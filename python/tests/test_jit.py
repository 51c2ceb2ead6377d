"""@enigma.jit (docs/reference/tensor.md): host functions that do layout
algebra on Tensors and launch one kernel; enigma.compile(jit_fn, *tensors)
and the CompiledKernel's grid / block; the errors of that path."""

import numpy as np
import pytest

import enigma


def vec(n):
    return enigma.make_layout(n)


@enigma.kernel
def scale_tiles(gX, gY, factor):
    """Tile block_idx of gX times `factor` into gY, one element a thread."""
    tid, _, _ = enigma.arch.thread_idx()
    bid, _, _ = enigma.arch.block_idx()
    gY[tid, bid] = gX[tid, bid] * factor


@enigma.jit
def scale(X, Y):
    tile = 64
    gX = enigma.tensor_zipped_divide(X, vec(tile))
    gY = enigma.tensor_zipped_divide(Y, vec(tile))
    # The grid counts threads: one tile of `tile` threads per threadgroup.
    scale_tiles(gX, gY, 2.5).launch(grid=[gX.size(1) * tile, 1, 1],
                                     block=[tile, 1, 1])


def tensors(n, dtype=enigma.f32):
    return (enigma.Tensor("X", 0, dtype, vec(n)),
            enigma.Tensor("Y", 1, dtype, vec(n)))


@pytest.mark.parametrize("n", [64, 640])
def test_compile_and_run(runtime, rng, n):
    compiled = enigma.compile(scale, *tensors(n))
    assert compiled.grid == (n, 1, 1)
    assert compiled.block == (64, 1, 1)
    assert compiled.kernel_name == "enigma_kernel_scale_tiles"
    assert [(p.name, p.kind, p.dtype) for p in compiled.params] == [
        ("X", "buffer", enigma.f32), ("Y", "buffer", enigma.f32)]
    assert enigma.dispatch_shape(compiled) == ((n, 1, 1), (64, 1, 1))
    x = rng.standard_normal(n).astype(np.float32)
    raw = runtime.execute(compiled, [x], output_size=4 * n,
                          grid=(n, 1, 1), threads=(64, 1, 1))
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32),
                                  x * np.float32(2.5))


def test_execute_defaults_to_the_recorded_launch(runtime, rng):
    n = 640
    compiled = enigma.compile(scale, *tensors(n))
    x = rng.standard_normal(n).astype(np.float32)
    raw = runtime.execute(compiled, [x], output_size=4 * n)
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32),
                                  x * np.float32(2.5))


def test_layouts_and_ints_are_compile_time_constants():
    compiled = enigma.compile(scale, *tensors(128), emit_only=True)
    # factor 2.5 and the tile's layout are folded into the source.
    assert "2.5f" in compiled.metal_source
    assert "[[buffer(2)]]" not in compiled.metal_source


def test_tensors_bind_in_buffer_index_order(runtime, rng):
    # Y (index 1) is passed first; parameters still follow buffer_index.
    @enigma.kernel
    def copy(dst, src):
        i, _, _ = enigma.arch.thread_idx()
        dst[i] = src[i]

    @enigma.jit
    def host(Y, X):
        copy(Y, X).launch(grid=[16, 1, 1], block=[16, 1, 1])

    X, Y = tensors(16)
    compiled = enigma.compile(host, Y, X)
    assert [p.name for p in compiled.params] == ["X", "Y"]
    x = rng.standard_normal(16).astype(np.float32)
    out = runtime.execute(compiled, [x], output_size=64, grid=(16, 1, 1),
                          threads=(16, 1, 1))
    np.testing.assert_array_equal(np.frombuffer(out, np.float32), x)


def test_two_dimensional_launch(runtime, rng):
    # threadgroups [2, 3] of block [4, 2] threads: a grid of 8 x 6 threads,
    # each writing its flat grid position into a (6, 8) row-major matrix.
    @enigma.kernel
    def positions(out):
        x = enigma.thread_position_in_grid_xyz("x")
        y = enigma.thread_position_in_grid_xyz("y")
        out[y, x] = y * 8 + x

    @enigma.jit
    def host(out):
        positions(out).launch(threadgroups=[2, 3], block=[4, 2])

    out_t = enigma.Tensor("out", 0, enigma.u32,
                          enigma.make_layout((6, 8), stride=(8, 1)))
    compiled = enigma.compile(host, out_t)
    assert compiled.grid == (8, 6, 1) and compiled.block == (4, 2, 1)
    grid, threads = enigma.dispatch_shape(compiled)
    raw = runtime.execute(compiled, [], output_size=48 * 4, grid=grid,
                          threads=threads)
    np.testing.assert_array_equal(np.frombuffer(raw, np.uint32),
                                  np.arange(48))


def test_arch_queries_are_xyz_tuples():
    seen = {}

    @enigma.kernel
    def k(out):
        for name in ("thread_idx", "block_idx", "block_dim"):
            seen[name] = getattr(enigma.arch, name)()
        out[0] = seen["thread_idx"][0]

    @enigma.jit
    def host(out):
        k(out).launch(grid=[32, 1, 1], block=[32, 1, 1])

    enigma.compile(host, enigma.Tensor("out", 0, enigma.u32, vec(1)),
                   emit_only=True)
    for value in seen.values():
        assert len(value) == 3 and isinstance(value[0], enigma.IRValue)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

@enigma.kernel
def noop(X):
    X[0] = 1.0


def test_no_launch():
    @enigma.jit
    def host(X):
        noop(X)  # called, never launched

    with pytest.raises(enigma.EnigmaError, match="launched no kernel.*never "
                                                 "launched"):
        enigma.compile(host, tensors(4)[0])


def test_two_launches():
    @enigma.jit
    def host(X):
        noop(X).launch(grid=[1], block=[1])
        noop(X).launch(grid=[1], block=[1])

    with pytest.raises(enigma.EnigmaError, match="second kernel launch"):
        enigma.compile(host, tensors(4)[0])


def test_launch_outside_jit():
    with pytest.raises(enigma.EnigmaError, match="not called directly"):
        noop(tensors(4)[0])


def test_launch_after_the_jit_function_returned():
    kept = []

    @enigma.jit
    def host(X):
        kept.append(noop(X))
        kept[0].launch(grid=[1], block=[1])

    enigma.compile(host, tensors(4)[0], emit_only=True)
    with pytest.raises(enigma.EnigmaError, match="outside the @enigma.jit"):
        kept[0].launch(grid=[1], block=[1])


def test_missing_tensors():
    with pytest.raises(enigma.EnigmaError, match=r"parameters \(X, Y\)"):
        enigma.compile(scale, tensors(64)[0])


def test_arrays_instead_of_tensors():
    # An ndarray has .shape too: without the check the host code failed
    # inside the user's function (IndexError on shape[1]).
    with pytest.raises(enigma.EnigmaError,
                       match=r"argument 0 is an array \(ndarray\); a jit "
                             r"function takes enigma.Tensor"):
        enigma.compile(scale, np.zeros(64, np.float32), tensors(64)[1])


def test_jit_function_called_directly():
    with pytest.raises(enigma.EnigmaError, match="enigma.compile"):
        scale(*tensors(64))


def test_jit_kernel_compiled_directly():
    with pytest.raises(enigma.EnigmaError, match="@enigma.jit"):
        enigma.compile(noop)


@pytest.mark.parametrize("grid,block,match", [
    ([0, 1, 1], [1, 1, 1], "positive"),
    ([1, 1, 1, 1], [1, 1, 1], "1 to 3"),
    ([1, 1, 1], [64, 32, 1], "1024"),
    ([1.5], [1], "positive"),
])
def test_bad_launch_shapes(grid, block, match):
    @enigma.jit
    def host(X):
        noop(X).launch(grid=grid, block=block)

    with pytest.raises(enigma.EnigmaError, match=match):
        enigma.compile(host, tensors(4)[0])


def test_buffer_indices_with_a_gap():
    @enigma.kernel
    def k(a, b):
        a[0] = b[0]

    @enigma.jit
    def host(a, b):
        k(a, b).launch(grid=[1], block=[1])

    a = enigma.Tensor("a", 0, enigma.f32, vec(4))
    b = enigma.Tensor("b", 2, enigma.f32, vec(4))
    with pytest.raises(enigma.EnigmaError, match=r"\[0, 2\].*without gaps"):
        enigma.compile(host, a, b)


def test_conflicting_views_of_one_buffer():
    @enigma.kernel
    def k(a, b):
        a[0] = b[0]

    @enigma.jit
    def host(a, b):
        k(a, b).launch(grid=[1], block=[1])

    a = enigma.Tensor("a", 0, enigma.f32, vec(4))
    b = enigma.Tensor("b", 0, enigma.i32, vec(4))
    with pytest.raises(enigma.EnigmaError, match="share name and type"):
        enigma.compile(host, a, b)


def test_wrong_kernel_arguments():
    @enigma.jit
    def host(X):
        noop(X, X).launch(grid=[1], block=[1])

    with pytest.raises(enigma.EnigmaError, match="noop"):
        enigma.compile(host, tensors(4)[0])


def test_vec_width_is_rejected():
    with pytest.raises(enigma.EnigmaError, match="vec_width"):
        enigma.compile(scale, *tensors(64), vec_width=4)


def test_mixed_annotations_still_rejected():
    def k(A: enigma.f32, B):
        pass

    with pytest.raises(enigma.EnigmaError, match="'B'.*no type annotation"):
        enigma.kernel(k)
