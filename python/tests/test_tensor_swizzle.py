"""Tensors with a SwizzledLayout (docs/reference/tensor.md, "Swizzled
tensors"): element c lives at base_offset + swizzle(offset + layout(c)),
through indexing, slicing, local_partition / local_tile and load() /
store(), as CuTe's composed layouts do. The reference is a numpy model of
CuTe's Swizzle<B, M, S> written here from its definition."""

import numpy as np
import pytest

import enigma


def swizzle_model(x, bits, base, shift):
    """CuTe's Swizzle<bits, base, shift> for shift >= 0: the `bits` bits
    `shift` above bit `base` are XORed into the bits at `base`."""
    x = np.asarray(x, dtype=np.int64)
    return x ^ ((x >> shift) & (((1 << bits) - 1) << base))


def physical_order(rows, cols, bits, base, shift):
    """offsets[r, c] of a row-major rows x cols tile under the swizzle."""
    linear = np.arange(rows * cols).reshape(rows, cols)
    return swizzle_model(linear, bits, base, shift)


def run(runtime, kernel, inputs, outputs, grid, threads):
    got = runtime.execute(enigma.compile(kernel), inputs, grid=grid,
                          threads=threads,
                          output_shapes=[s for s, _ in outputs],
                          output_dtypes=[d for _, d in outputs])
    return got if isinstance(got, list) else [got]


def test_description_and_evaluation():
    tile = enigma.swizzle(enigma.make_layout((8, 32), stride=(32, 1)),
                          3, 2, 3)
    t = enigma.Tensor("S", -1, enigma.f32, tile)
    assert t.swizzled and t.shape == (8, 32) and t.stride == (32, 1)
    assert t.size() == 256
    assert "Sw<3,2,3>" in repr(t)
    # A static slice moves the offset under the swizzle, not base_offset.
    row = t[5, None]
    assert row.swizzled and row.base_offset == 0
    assert row.layout.offset == 5 * 32 and row.shape == 32
    ref = physical_order(8, 32, 3, 2, 3)
    assert [row.layout(c) for c in range(32)] == list(ref[5])


# --------------------------------------------------------------------------
# A threadgroup tile written through a swizzle and read back transposed
# --------------------------------------------------------------------------

ROWS, COLS = 8, 32
BITS, BASE, SHIFT = 3, 2, 3


@enigma.kernel
def swizzled_transpose(A: enigma.f32, Out: enigma.f32, Raw: enigma.f32):
    t = enigma.thread_index_in_threadgroup()
    layout = enigma.make_layout((ROWS, COLS), stride=(COLS, 1))
    tile = enigma.Tensor("tile", -1, enigma.f32,
                         enigma.swizzle(layout, BITS, BASE, SHIFT),
                         address_space="threadgroup")
    src = enigma.Tensor("A", 0, enigma.f32, layout)
    # Each of the 64 threads owns 4 consecutive elements of a row: the
    # offset under the swizzle is a traced multiple of 4 and the swizzle
    # keeps bits 0-1, so each thread moves one float4.
    r, c = t // 8, t % 8
    mine = enigma.tensor_zipped_divide(tile[r, None], 4)[None, c]
    mine_src = enigma.tensor_zipped_divide(src[r, None], 4)[None, c]
    mine.store(mine_src.load())
    enigma.barrier()
    # Read the tile transposed (column by column) into Out, and its raw
    # memory into Raw.
    for k in enigma.range_constexpr(4):
        i = t * 4 + k
        Out[i] = tile[i % ROWS, i // ROWS]
        Raw[i] = enigma.Tensor("tile", -1, enigma.f32,
                               shape=ROWS * COLS,
                               address_space="threadgroup")[i]


def test_threadgroup_tile_through_a_swizzle(runtime, rng):
    a = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    out, raw = run(runtime, swizzled_transpose, [a],
                   [((ROWS * COLS,), np.float32),
                    ((ROWS * COLS,), np.float32)], (64, 1, 1), (64, 1, 1))
    np.testing.assert_array_equal(out.reshape(COLS, ROWS), a.T)
    where = physical_order(ROWS, COLS, BITS, BASE, SHIFT)
    expected = np.empty(ROWS * COLS, np.float32)
    expected[where.reshape(-1)] = a.reshape(-1)
    np.testing.assert_array_equal(raw, expected)


def test_vector_accesses_under_a_swizzle():
    compiled = enigma.compile(swizzled_transpose, emit_only=True)
    msl = compiled.metal_source
    # One float4 load from A and one float4 store into the tile per thread.
    assert msl.count("*(threadgroup float4*)") == 1
    assert msl.count("*(device float4*)") == 1


# --------------------------------------------------------------------------
# A buffer seen through a swizzle, with traced slices
# --------------------------------------------------------------------------

@pytest.mark.parametrize("bits,base,shift", [(2, 0, 2), (3, 3, 3),
                                             (1, 4, 1)])
def test_device_buffer_through_a_swizzle(runtime, rng, bits, base, shift):
    rows, cols = 16, 64

    @enigma.kernel
    def scatter(A: enigma.f32, B: enigma.f32):
        r = enigma.thread_position_in_grid_xyz("x")
        view = enigma.Tensor("B", 1, enigma.f32, enigma.swizzle(
            enigma.make_layout((rows, cols), stride=(cols, 1)),
            bits, base, shift))
        row = view[r, None]                 # a traced offset under it
        src = enigma.Tensor("A", 0, enigma.f32, enigma.make_layout(
            (rows, cols), stride=(cols, 1)))[r, None]
        for c in enigma.range(cols):
            row[(c,)] = src[(c,)] + 0.5

    a = rng.standard_normal((rows, cols)).astype(np.float32)
    (b,) = run(runtime, scatter, [a], [((rows * cols,), np.float32)],
               (rows, 1, 1), (4, 1, 1))
    where = physical_order(rows, cols, bits, base, shift)
    expected = np.empty(rows * cols, np.float32)
    expected[where.reshape(-1)] = a.reshape(-1) + 0.5
    np.testing.assert_array_equal(b, expected)


def test_copy_refuses_a_swizzled_tensor():
    @enigma.kernel
    def k(A: enigma.f32):
        tile = enigma.Tensor("tile", -1, enigma.f32,
                             enigma.swizzle(enigma.make_layout(64), 2, 0, 2),
                             address_space="threadgroup")
        enigma.copy(tile, enigma.Tensor("A", 0, enigma.f32), 64)

    with pytest.raises(enigma.EnigmaError, match="swizzled layout"):
        enigma.compile(k)
