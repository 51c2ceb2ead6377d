"""The layout algebra (docs/reference/layout.md) against the worked examples
of NVIDIA CuTe's documentation (cute/02_layout_algebra.md and the CuTe DSL
docs), whose published results are written here by hand, plus evaluation,
repr strings, swizzles, make_layout_tv, traced evaluation and errors."""

import numpy as np
import pytest

import enigma
from enigma import (
    IdentityLayout, Layout, Swizzle, blocked_product, coalesce, complement, composition,
    logical_divide, logical_product, make_layout,
    make_layout_tv, make_ordered_layout, raked_product, recast_layout,
    right_inverse, select, size, swizzle, tiled_divide, zipped_divide,
    flat_divide, flat_product, tiled_product, zipped_product)


def L(shape, stride):
    return Layout(shape, stride)


# --------------------------------------------------------------------------
# Layouts as functions, repr
# --------------------------------------------------------------------------

def test_default_is_compact_column_major():
    layout = Layout((4, 8))
    assert layout.stride == (1, 4)
    assert repr(layout) == "(4,8):(1,4)"
    assert [layout(i) for i in range(32)] == list(range(32))
    assert layout.size() == 32 and layout.size(1) == 8
    assert layout.rank() == 2 and layout.depth() == 1 and layout.cosize() == 32
    assert Layout(8).shape == 8 and Layout(8).rank() == 1
    assert Layout(8).depth() == 0


def test_hierarchical_layout_and_coordinates():
    layout = L(((2, 2), 8), ((1, 4), 2))
    assert str(layout) == "((2,2),8):((1,4),2)"
    assert layout.depth() == 2 and layout.size(0) == 4
    # Hand-derived: ((i0, i1), j) -> i0 + 4 i1 + 2 j.
    for j in range(8):
        for i1 in range(2):
            for i0 in range(2):
                expected = i0 + 4 * i1 + 2 * j
                assert layout(((i0, i1), j)) == expected
                assert layout((i0 + 2 * i1, j)) == expected
                assert layout(i0 + 2 * i1, j) == expected
                assert layout(i0 + 2 * i1 + 4 * j) == expected
    assert layout.cosize() == 1 + 4 + 14 + 1


def test_row_major_and_ordered():
    assert make_ordered_layout((4, 8), (1, 0)) == L((4, 8), (8, 1))
    assert make_ordered_layout((2, 3, 4), (1, 2, 0)) == L((2, 3, 4), (4, 8, 1))
    assert make_layout((4, 8), (8, 1)) == L((4, 8), (8, 1))
    assert make_layout((4, 8), stride=(8, 1)) == L((4, 8), (8, 1))
    assert make_layout(Layout(4, 2), L((2, 3), (1, 8))) == L((4, (2, 3)), (2, (1, 8)))


def test_tuple_helpers():
    assert enigma.product(((2, 2), 8)) == 32
    assert enigma.product(()) == 1
    assert enigma.repeat_like(0, (4, (2, 3))) == (0, (0, 0))
    assert select((5, 6, 7), [2, 0]) == (7, 5)
    assert select(L((4, 8, 2), (1, 4, 32)), [2, 0]) == L((2, 4), (32, 1))
    assert size((4, (2, 3))) == 24 and size((4, (2, 3)), 1) == 6
    assert size(Layout((4, 8)), 0) == 4


# --------------------------------------------------------------------------
# Coalesce, composition, complement (CuTe's layout-algebra documentation)
# --------------------------------------------------------------------------

def test_coalesce_examples():
    assert str(coalesce(L((2, (1, 6)), (1, (6, 2))))) == "12:1"
    assert str(coalesce(L((4, 2), (2, 1)))) == "(4,2):(2,1)"
    assert str(coalesce(L((1, 1), (3, 5)))) == "1:0"
    by_mode = L(((2, 2), (2, 2)), ((1, 2), (8, 16)))
    assert str(coalesce(by_mode, (1, 1))) == "(4,4):(1,8)"


def test_composition_examples():
    a = L((6, 2), (8, 2))
    b = L((4, 3), (3, 1))
    assert str(composition(a, b)) == "((2,2),3):((24,2),8)"
    assert str(composition(L(20, 2), L((5, 4), (4, 1)))) == "(5,4):(8,2)"
    assert str(composition(L((10, 2), (16, 4)), L((5, 4), (1, 5)))) == \
        "(5,(2,2)):(16,(80,4))"


def test_by_mode_composition_example():
    a = L((12, (4, 8)), (59, (13, 1)))
    tiler = (L(3, 4), L(8, 2))
    assert str(composition(a, tiler)) == "(3,(2,4)):(236,(26,1))"
    # A shape as a tiler means compact layouts per mode.
    assert composition(L((4, 8), (8, 1)), (2, 4)) == L((2, 4), (8, 1))


def test_complement_examples():
    assert str(complement(L(4, 1), 24)) == "6:4"
    assert str(complement(L(6, 4), 24)) == "4:1"
    assert str(complement(L((4, 6), (1, 4)), 24)) == "1:0"
    assert str(complement(L(4, 2), 24)) == "(2,3):(1,8)"
    assert str(complement(L((2, 4), (1, 6)), 24)) == "3:2"
    assert str(complement(L((2, 2), (1, 6)), 24)) == "(3,2):(2,12)"
    # Default cosize: the layout's own.
    assert str(complement(L(4, 2))) == "2:1"


def test_right_inverse():
    layout = L((4, 8), (8, 1))
    inverse = right_inverse(layout)
    assert str(inverse) == "(8,4):(4,1)"
    assert all(layout(inverse(i)) == i for i in range(inverse.size()))


# --------------------------------------------------------------------------
# Divide and product examples
# --------------------------------------------------------------------------

def test_logical_divide_1d_example():
    a = L((4, 2, 3), (2, 1, 8))
    assert str(logical_divide(a, L(4, 2))) == "((2,2),(2,3)):((4,1),(2,8))"


def test_2d_divide_examples():
    a = L((9, (4, 8)), (59, (13, 1)))
    tiler = (L(3, 3), L((2, 4), (1, 8)))
    assert str(logical_divide(a, tiler)) == \
        "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))"
    assert str(zipped_divide(a, tiler)) == \
        "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))"
    assert str(tiled_divide(a, tiler)) == \
        "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))"
    assert str(flat_divide(a, tiler)) == \
        "(3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))"
    # A 1-D tiler: one tile mode, one rest mode.
    assert str(flat_divide(Layout(12), Layout(4))) == "(4,3):(1,4)"


def test_nested_by_mode_tiler():
    # Mode 0 of ((4, 6), 8) is itself divided by mode: (2, 3) tiles it.
    a = Layout(((4, 6), 8))
    z = zipped_divide(a, ((2, 3), 4))
    assert z.shape == (((2, 3), 4), ((2, 2), 2))
    for r in range(8):
        for t in range(24):
            t0, t1, t2 = t % 2, (t // 2) % 3, t // 6
            r0, r1, r2 = r % 2, (r // 2) % 2, r // 4
            assert z(t, r) == a(((2 * r0 + t0, 3 * r1 + t1), 4 * r2 + t2))


def test_zipped_divide_of_a_matrix_into_tiles():
    # An 8x12 column-major matrix into 4x3 tiles: mode 0 walks a tile, mode 1
    # the 2x4 tiles; element (t, r) is at the hand-computed offset.
    a = Layout((8, 12))
    z = zipped_divide(a, (4, 3))
    assert z.shape == ((4, 3), (2, 4))
    for r in range(8):
        for t in range(12):
            ti, tj, ri, rj = t % 4, t // 4, r % 2, r // 2
            assert z(t, r) == (ri * 4 + ti) + 8 * (rj * 3 + tj)


def test_product_examples():
    assert str(logical_product(L((2, 2), (4, 1)), L(6, 1))) == \
        "((2,2),(2,3)):((4,1),(2,8))"
    # Hand-derived: complement((2,2):(4,1), 28) is (2,4):(2,8), whose
    # elements 0, 2, 4, 6 are at 0, 8, 16, 24.
    assert str(logical_product(L((2, 2), (4, 1)), L(4, 2))) == \
        "((2,2),4):((4,1),8)"
    block, grid = L((2, 5), (5, 1)), L((3, 4), (1, 3))
    assert str(blocked_product(block, grid, by_mode=True)) == \
        "((2,3),(5,4)):((5,10),(1,30))"
    assert str(raked_product(block, grid)) == "((3,2),(4,5)):((10,5),(30,1))"


def test_zipped_tiled_flat_products():
    # A layout tiler multiplies the whole layout: logical_product regrouped.
    a = L((2, 2), (1, 2))
    assert str(zipped_product(a, L(3, 1))) == "((2,2),3):((1,2),4)"
    assert str(flat_product(a, L(3, 1))) == "(2,2,3):(1,2,4)"
    # By mode (hand-derived): 2:5 times 3:1 is (2,3):(5,1), 5:1 times 4:1
    # is (5,4):(1,5); the products gather the blocks, then the copies.
    block = L((2, 5), (5, 1))
    by_mode = (L(3, 1), L(4, 1))
    assert str(zipped_product(block, by_mode)) == "((2,5),(3,4)):((5,1),(1,5))"
    assert str(tiled_product(block, by_mode)) == "((2,5),3,4):((5,1),1,5)"
    assert str(flat_product(block, by_mode)) == "(2,5,3,4):(5,1,1,5)"
    # Modes past the tiler's join the rest; too many tiler modes are refused.
    assert str(zipped_product(Layout((2, 5, 7)), (L(3, 1),))) == \
        "((2),(3,5,7)):((1),(2,2,10))"
    with pytest.raises(enigma.EnigmaError, match="by-mode tiler has 3 modes"):
        zipped_product(Layout((2, 5)), (2, 2, 2))


def test_recast_layout():
    assert str(recast_layout(8, 32, Layout((4, 8)))) == "(16,8):(1,16)"
    assert str(recast_layout(32, 8, L((16, 8), (1, 16)))) == "(4,8):(1,4)"
    assert str(recast_layout(16, 32, L((4, 8), (8, 1)))) == "(4,16):(16,1)"
    assert recast_layout(16, 16, Layout((4, 8))) == Layout((4, 8))


# --------------------------------------------------------------------------
# make_layout_tv
# --------------------------------------------------------------------------

def test_make_layout_tv_example():
    thr = L((4, 32), (32, 1))
    val = L((4, 4), (4, 1))
    tiler, tv = make_layout_tv(thr, val)
    assert tiler == (16, 128)
    assert repr(tv) == "((32,4),(4,4)):((64,4),(16,1))"  # as CuTe DSL prints it
    assert tv.size() == 128 * 16
    # Thread index 32 m + n holds the 4x4 block at rows 4m.., columns 4n..;
    # value index 4 i + j is element (i, j) of it (column-major tile).
    for t in range(128):
        m, n = divmod(t, 32)
        for v in range(16):
            i, j = divmod(v, 4)
            assert tv((t, v)) == (4 * m + i) + 16 * (4 * n + j)


def test_make_layout_tv_column_major_threads():
    tiler, tv = make_layout_tv(Layout((2, 4)), Layout((1, 2)))
    assert tiler == (2, 8)
    # Thread (m, n) = (t % 2, t // 2) owns columns 2n, 2n+1 of row m.
    for t in range(8):
        for v in range(2):
            assert tv(t, v) == t % 2 + 2 * (2 * (t // 2) + v)


# --------------------------------------------------------------------------
# Identity layouts and swizzles
# --------------------------------------------------------------------------

def test_identity_layout():
    ident = IdentityLayout((4, 8))
    assert repr(ident) == "(4,8):(1@0,1@1)"
    assert ident(5) == (1, 1) and ident((3, 7)) == (3, 7)
    tiles = zipped_divide(ident, (2, 4))
    # Tile (a, b) of the 2x2 tiles, element (i, j) inside: coordinate.
    for r in range(4):
        for t in range(8):
            assert tiles(t, r) == (2 * (r % 2) + t % 2, 4 * (r // 2) + t // 2)
    assert repr(IdentityLayout(((2, 2), 8))) == "((2,2),8):((1@0,2@0),1@1)"
    # Composed with (8,4):(4,1), index i + 8 j reaches offset 4 i + j of the
    # compact (4,8) layout, i.e. coordinate (j, i) (hand-derived).
    rows = composition(ident, L((8, 4), (4, 1)))
    assert [rows(i) for i in (0, 1, 8, 9, 31)] == \
        [(0, 0), (0, 1), (1, 0), (1, 1), (3, 7)]
    assert rows.size() == 32


def test_swizzle_bits():
    sw = Swizzle(3, 4, 3)
    assert repr(sw) == "Sw<3,4,3>"
    assert sw.yyy_mask == 0b1110000000 and sw.zzz_mask == 0b0001110000
    for x in range(2048):
        assert sw(x) == x ^ (((x >> 7) & 7) << 4)
        assert sw(sw(x)) == x
    assert Swizzle(2, 0, -3)(0b11) == 0b11011
    assert Swizzle(0, 4, 3)(12345) == 12345


def test_swizzled_layout():
    sl = swizzle(L((8, 64), (64, 1)), 3, 4, 3)
    assert repr(sl) == "Sw<3,4,3> o 0 o (8,64):(64,1)"
    sw = Swizzle(3, 4, 3)
    offsets = sorted(sl(r, c) for r in range(8) for c in range(64))
    assert offsets == list(range(512))  # a permutation of the tile
    for r in range(8):
        for c in range(64):
            assert sl(r, c) == sw(64 * r + c)
    tile = composition(sl, (4, 8))
    assert repr(tile) == "Sw<3,4,3> o 0 o (4,8):(64,1)"
    assert tile(3, 5) == sw(3 * 64 + 5)
    assert sl.cosize() == 512 and sl.size() == 512 and sl.rank() == 2
    shifted = enigma.SwizzledLayout(sw, 64, L((8, 8), (8, 1)))
    assert shifted(1, 2) == sw(64 + 10)
    assert composition(sw, Layout(16))(15) == sw(15)


# --------------------------------------------------------------------------
# Evaluation inside a traced kernel
# --------------------------------------------------------------------------

TRACED_LAYOUT = L(((2, 4), (3, 1)), ((12, 1), (4, 0)))
TRACED_SWIZZLE = Swizzle(2, 1, 3)


@enigma.kernel
def evaluate_layouts(out: enigma.u32):
    tid = enigma.thread_position_in_grid
    n = TRACED_LAYOUT.size()
    out[tid] = TRACED_LAYOUT(tid % n)
    out[tid + 64] = TRACED_LAYOUT((tid % 8, tid % 3))
    out[tid + 128] = TRACED_SWIZZLE(tid)
    ident = IdentityLayout((4, 16))
    row, col = ident(tid)
    out[tid + 192] = row * 100 + col


def test_traced_evaluation_matches_python(runtime):
    compiled = enigma.compile(evaluate_layouts)
    raw = runtime.execute(compiled, [], output_size=256 * 4,
                          grid=(64, 1, 1), threads=(32, 1, 1))
    got = np.frombuffer(raw, np.uint32)
    n = TRACED_LAYOUT.size()
    tids = range(64)
    assert got[:64].tolist() == [TRACED_LAYOUT(t % n) for t in tids]
    assert got[64:128].tolist() == [TRACED_LAYOUT((t % 8, t % 3)) for t in tids]
    assert got[128:192].tolist() == [TRACED_SWIZZLE(t) for t in tids]
    assert got[192:].tolist() == [(t % 4) * 100 + t // 4 for t in tids]


def test_traced_code_stays_small():
    # Stride-1 modes need no multiply and extent-1 / stride-0 modes nothing:
    # x + 8*y for Layout((8, 1, 4), (1, 5, 8)) at (x, y, z) with z unused.
    @enigma.kernel
    def small(out: enigma.u32):
        tid = enigma.thread_position_in_grid
        out[tid] = Layout((8, 1, 4), (1, 5, 8))((tid, 0, tid))
    mlir = enigma.compile(small, emit_only=True).mlir_source
    assert mlir.count("arith.muli") + mlir.count("arith.shli") == 1
    assert "arith.remui" not in mlir and "arith.divui" not in mlir


def test_integer_results_stay_ints():
    assert isinstance(Layout((4, 8))((1, 2)), int)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

@pytest.mark.parametrize("make, message", [
    (lambda: Layout((4, 8), (1,)), "congruent"),
    (lambda: Layout((4, 0)), "extent"),
    (lambda: Layout((4, 8), (1, -4)), "negative"),
    (lambda: Layout((4, 2.5)), "tuple of ints"),
    (lambda: Layout((4, 8))(32), "out of range"),
    (lambda: Layout((4, 8))((4, 0)), "out of range"),
    (lambda: Layout((4, 8))((1, 2, 3)), "rank"),
    (lambda: Layout((4, 8))(1.5), "int"),
    (lambda: Layout((4, 8)).size(2), "out of range"),
    (lambda: composition(L((6, 2), (1, 10)), L(8, 1)), "divide"),
    (lambda: logical_divide(Layout(6), Layout(4)), "does not divide"),
    (lambda: zipped_divide(Layout((4, 8)), (2, 2, 2)), "by-mode tiler"),
    (lambda: complement(L((2, 2), (1, 3)), 12), "not divisible"),
    (lambda: complement(L((4, 2), (1, 2)), 12), "not injective"),
    (lambda: recast_layout(0, 16, Layout(4)), "positive"),
    (lambda: Swizzle(3, 0, -2), "shift"),
    (lambda: make_ordered_layout((4, 8), (0, 1, 2)), "order"),
    (lambda: composition(Layout(4), "x"), "tiler"),
    (lambda: Layout(1 << 70), "too large"),
    (lambda: Swizzle(1 << 40, 0, 0), "Swizzle bits"),
    (lambda: complement(Layout(4), 1.5), "cosize"),
    (lambda: enigma.IdentityLayout((4, 8))((4, 0)), "out of range"),
])
def test_errors_name_the_caller(make, message):
    with pytest.raises(enigma.EnigmaError, match=message) as info:
        make()
    assert "test_layout_algebra.py:" in str(info.value)
