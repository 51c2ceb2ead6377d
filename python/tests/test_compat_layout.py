"""Layout-algebra names with the original Enigma DSL's meaning: size with a
mode path, select / repeat_like in the original's argument order, cosize and
left_inverse, make_identity_layout (a compact column-major Layout),
SwizzledLayout(layout, swizzle), swizzles with any shift, complement's
cosize_val keyword, logical_divide by a shape and blocked_product's flat
concatenation; plus the original's own layout tests, written here with
hand-derived values. Kernel-side checks run on the ``runtime`` fixture."""

import numpy as np
import pytest

import enigma
from enigma import Layout


# --------------------------------------------------------------------------
# size(x, mode=[i, j, ...]): a path into the shape
# --------------------------------------------------------------------------

def test_size_with_a_mode_path():
    layout = Layout(((4, 64), (4, 4)), ((64, 4), (16, 1)))
    assert enigma.size(layout, mode=[0]) == 256
    assert enigma.size(layout, mode=[1]) == 16
    assert enigma.size(layout, mode=[0, 1]) == 64
    assert enigma.size(layout, mode=[1, 0]) == 4
    assert layout.size(mode=[0, 0]) == 4
    assert layout.size([1]) == 16 and layout.size(1) == 16
    # Shapes and plain ints.
    assert enigma.size((4, (2, 3)), mode=[1, 1]) == 3
    assert enigma.size((4, (2, 3)), mode=[1]) == 6
    assert enigma.size((4, (2, 3)), mode=1) == 6
    assert enigma.size(7, mode=[0]) == 7


def test_size_of_a_tensor_with_a_mode_path():
    A = enigma.Tensor("A", 0, "float", Layout((256, 512), (512, 1)))
    g = enigma.tensor_zipped_divide(A, (16, 256))
    assert enigma.size(g) == 256 * 512
    assert enigma.size(g, mode=[1]) == (256 // 16) * (512 // 256)
    assert enigma.size(g, mode=[0]) == 16 * 256
    assert enigma.size(g, mode=[0, 1]) == 256
    assert g.size(mode=[1, 0]) == 16


def test_size_path_errors():
    with pytest.raises(enigma.EnigmaError, match="mode"):
        enigma.size(Layout((4, 8)), mode=[2])
    with pytest.raises(enigma.EnigmaError, match="mode"):
        enigma.size((4, 8), mode=[0, 1])  # mode 0 is the int 4


# --------------------------------------------------------------------------
# select / repeat_like / product at the top level
# --------------------------------------------------------------------------

def test_select_takes_an_int_or_a_list():
    assert enigma.select((10, 20, 30), 1) == 20
    assert enigma.select((10, 20, 30), mode=1) == 20
    assert enigma.select((10, 20, 30), mode=[2, 0]) == (30, 10)
    assert enigma.select((10, (20, 21)), mode=1) == (20, 21)
    # Layouts keep working (an extension of the original).
    assert enigma.select(Layout((4, 8, 2)), [2, 0]) == Layout((2, 4), (32, 1))
    assert enigma.select(Layout((4, 8)), 1) == Layout(8, 4)


def test_repeat_like_takes_the_value_first():
    assert enigma.repeat_like(0, (4, (2, 3))) == (0, (0, 0))
    assert enigma.repeat_like(1, 8) == 1
    assert enigma.repeat_like(None, (1, 2)) == (None, None)
    assert enigma.repeat_like(val=5, ref=((1, 1), 1)) == ((5, 5), 5)


# --------------------------------------------------------------------------
# cosize, left_inverse, make_identity_layout
# --------------------------------------------------------------------------

def test_cosize_free_function():
    assert enigma.cosize(Layout((4, 8), (8, 1))) == 32
    # Hand-derived: 1 + (2-1)*1 + (3-1)*10 = 22.
    assert enigma.cosize(Layout((2, 3), (1, 10))) == 22
    assert enigma.cosize(Layout(5, 0)) == 1


@pytest.mark.parametrize("layout", [
    Layout((4, 8), (8, 1)), Layout((2, 3), (1, 10)), Layout(8, 2),
    Layout(((2, 2), 3), ((1, 12), 2)), Layout((3, 5)),
])
def test_left_inverse_undoes_an_injective_layout(layout):
    inverse = enigma.left_inverse(layout)
    for i in range(layout.size()):
        assert inverse(layout(i)) == i


def test_left_inverse_of_a_non_injective_layout_is_an_error():
    with pytest.raises(enigma.EnigmaError):
        enigma.left_inverse(Layout((4, 2), (1, 0)))


def test_make_identity_layout_is_compact_column_major():
    ident = enigma.make_identity_layout((4, 8))
    assert isinstance(ident, Layout)
    assert ident == Layout((4, 8), (1, 4))
    assert ident((1, 2)) == 9
    nested = enigma.make_identity_layout(((2, 2), 8))
    assert nested == Layout(((2, 2), 8), ((1, 2), 4))
    # CuTe's coordinate identity stays available by its own name.
    assert enigma.IdentityLayout((4, 8))((1, 2)) == (1, 2)


# --------------------------------------------------------------------------
# Swizzles
# --------------------------------------------------------------------------

def test_swizzled_layout_in_the_original_argument_order():
    tile = Layout((16, 32), (32, 1))
    sw = enigma.Swizzle(bits=3, base=2, shift=5)
    sl = enigma.SwizzledLayout(tile, sw)
    assert sl.layout is tile and sl.swizzle == sw
    assert sl.shape == (16, 32) and sl.stride == (32, 1)
    for r in range(16):
        for c in range(32):
            x = 32 * r + c
            assert sl((r, c)) == x ^ ((x >> 5) & (7 << 2))
    assert sl == enigma.swizzle(tile, bits=3, base=2, shift=5)
    assert sl.size() == 512 and sl.rank() == 2 and sl.depth() == 1


def test_swizzle_with_a_shift_below_its_bits():
    # The original accepts any non-negative shift: x ^ ((x >> S) & mask).
    sw = enigma.Swizzle(3, 0, 2)
    for x in range(256):
        assert sw(x) == x ^ ((x >> 2) & 7)
    with pytest.raises(enigma.EnigmaError):
        enigma.Swizzle(-1, 0, 3)


# --------------------------------------------------------------------------
# complement / logical_divide / blocked_product
# --------------------------------------------------------------------------

def test_complement_cosize_val_keyword():
    assert enigma.complement(Layout(4, 1), cosize_val=24) == Layout(6, 4)
    assert enigma.complement(Layout(4, 2)) == Layout(2, 1)
    assert enigma.complement(Layout(4, 1)).shape == 1


def test_logical_divide_by_a_shape():
    # A shape tiler is the compact layout of that shape (the original's
    # Layout(tiler)): (2, 2):(1, 2) takes the first 4 offsets, the rest
    # comes from its complement 16:4.
    d = enigma.logical_divide(Layout(64), (2, 2))
    assert d.shape == ((2, 2), 16)
    for t in range(4):
        for r in range(16):
            assert d((t, r)) == t + 4 * r
    # An int tiler and a Layout tiler mean the same thing.
    assert enigma.logical_divide(Layout(64), 4) == \
        enigma.logical_divide(Layout(64), Layout(4))
    # A tuple holding Layouts divides mode by mode (CuTe's by-mode tiler).
    by_mode = enigma.logical_divide(Layout((8, 8)), (Layout(2), Layout(4)))
    assert by_mode.shape == ((2, 4), (4, 2))


def test_blocked_product_concatenates_the_modes():
    a = Layout((2, 5), (5, 1))
    b = Layout((3, 4), (1, 3))
    p = enigma.blocked_product(a, b)
    # a's modes, then b's scaled by cosize(a) = 10.
    assert p == Layout((2, 5, 3, 4), (5, 1, 10, 30))
    for i in range(p.size()):
        ia, ib = i % 10, i // 10
        assert p(i) == a(ia) + 10 * b(ib)
    # The CuTe grouping (mode i is (a_i, b_i)) by keyword.
    cute = enigma.blocked_product(a, b, by_mode=True)
    assert str(cute) == "((2,3),(5,4)):((5,10),(1,30))"


# --------------------------------------------------------------------------
# The original's own layout tests (its tests/portable/test_layout_algebra.py
# cases), with hand-derived expectations
# --------------------------------------------------------------------------

def test_original_layout_basics():
    L = Layout((4, 8), (1, 4))
    assert L((0, 0)) == 0 and L((2, 1)) == 6
    assert L.size() == 32 and L.cosize() == 32
    assert enigma.make_ordered_layout((4, 64), order=(1, 0)).stride == (64, 1)
    assert enigma.coalesce(Layout((2, 6), (1, 2))).shape == 12
    assert enigma.coalesce(Layout((4, 1, 8), (1, 999, 4))).shape == 32
    assert enigma.complement(Layout(4, 2)).stride == 1
    R = enigma.recast_layout(16, 8, Layout((16, 16), (16, 1)))
    assert enigma.tuple.flatten(R.shape) == (16, 8)
    assert enigma.tuple.flatten(R.stride) == (8, 1)


def test_original_zipped_divide_keeps_every_offset_once():
    L = Layout((64, 512), (512, 1))
    R = enigma.zipped_divide(L, (16, 8))
    assert R.size() == 64 * 512
    offsets = {R(i) for i in range(R.size())}
    assert offsets == set(range(64 * 512))


@pytest.mark.parametrize("val,tiler,values", [
    (Layout((16, 8), (8, 1)), (64, 512), 128),
    (enigma.make_ordered_layout((4, 4), order=(1, 0)), (16, 256), 16),
])
def test_original_tv_layouts(val, tiler, values):
    thr = enigma.make_ordered_layout((4, 64), order=(1, 0))
    got_tiler, tv = enigma.make_layout_tv(thr, val)
    assert got_tiler == tiler
    assert tv.size(mode=0) == 256 and tv.size(mode=1) == values
    offsets = [tv((t, v)) for t in range(256) for v in range(values)]
    assert sorted(offsets) == list(range(256 * values))


def test_original_tv_layout_is_coalesced_across_threads():
    thr = enigma.make_ordered_layout((4, 64), order=(1, 0))
    _, tv = enigma.make_layout_tv(thr, Layout((16, 8), (8, 1)))
    off0, off1 = tv((0, 0)), tv((1, 0))
    assert off0 % 64 == off1 % 64
    assert off1 // 64 - off0 // 64 == 8


def test_size_path_inside_a_kernel(runtime, rng):
    # enigma.size with a path is a Python int usable in kernel arithmetic.
    layout = Layout(((4, 8), 3))

    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        B[t] = A[t] * float(enigma.size(layout, mode=[0, 1]))

    a = rng.standard_normal(40).astype(np.float32)
    raw = runtime.execute(enigma.compile(k), [a], output_size=160,
                          grid=(40, 1, 1), threads=(16, 1, 1))
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32),
                                  a * np.float32(8))
