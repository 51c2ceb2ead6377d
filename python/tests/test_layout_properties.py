"""Properties of the layout algebra on random small layouts (drawn from the
seeded ``rng`` fixture), each checked by evaluating layouts point by point:
composition is function composition, a layout with its complement is a
bijection, coalesce keeps the function, divides keep the element set,
blocked_product and recast_layout place elements where their definitions
say."""

from collections import Counter

import pytest

import enigma
from enigma import (
    Layout, blocked_product, coalesce, complement, composition, flat_divide,
    flat_product, logical_divide, logical_product, make_layout,
    recast_layout, tiled_divide, zipped_divide, zipped_product)

TRIALS = 150


def _nest(extents, strides, rng):
    """Groups flat leaves into a random hierarchy of top-level modes."""
    shape, stride, k = [], [], 0
    while k < len(extents):
        width = int(rng.integers(1, 3)) if len(extents) - k > 1 else 1
        if width == 1 and rng.random() < 0.7:
            shape.append(extents[k])
            stride.append(strides[k])
        else:
            shape.append(tuple(extents[k:k + width]))
            stride.append(tuple(strides[k:k + width]))
        k += width
    if len(shape) == 1 and rng.random() < 0.5:
        return shape[0], stride[0]
    return tuple(shape), tuple(stride)


def random_layout(rng, extents=(1, 2, 3, 4), strides=(0, 1, 2, 3, 4, 6, 8),
                  leaves=None):
    n = leaves or int(rng.integers(1, 5))
    shape = [int(rng.choice(extents)) for _ in range(n)]
    stride = [int(rng.choice(strides)) for _ in range(n)]
    return Layout(*_nest(shape, stride, rng))


def complementable_layout(rng, extents=(1, 2, 3, 4), gaps=(1, 2, 3)):
    """An injective layout whose sorted strides divide each other: its
    leaves take strides in a random order, each leaving a random gap."""
    n = int(rng.integers(1, 4))
    shape = [int(rng.choice(extents)) for _ in range(n)]
    stride = [0] * n
    current = 1
    for k in rng.permutation(n):
        stride[k] = current * int(rng.choice(gaps))
        current = stride[k] * shape[k]
    return Layout(*_nest(shape, stride, rng))


def offsets(layout):
    return [layout(i) for i in range(layout.size())]


def test_coalesce_keeps_the_function(rng):
    for _ in range(TRIALS):
        a = random_layout(rng)
        c = coalesce(a)
        assert c.size() == a.size() and c.depth() <= 1
        assert offsets(c) == offsets(a), (a, c)


def test_composition_is_function_composition(rng):
    checked = 0
    for _ in range(TRIALS):
        # Powers of two always meet CuTe's divisibility conditions; other
        # extents sometimes do not, and must then raise, never mis-compute.
        pow2 = rng.random() < 0.5
        ext = (1, 2, 4) if pow2 else (1, 2, 3, 4, 6)
        a = random_layout(rng, extents=ext, strides=(0, 1, 2, 4, 8, 12))
        b = complementable_layout(rng, extents=ext, gaps=(1, 2) if pow2 else (1, 2, 3))
        if b.cosize() > a.size():
            continue
        try:
            r = composition(a, b)
        except enigma.EnigmaError:
            assert not pow2, (a, b)
            continue
        assert r.size() == b.size()
        assert [r(i) for i in range(b.size())] == [a(b(i)) for i in range(b.size())]
        checked += 1
    assert checked > TRIALS // 4


def test_by_mode_composition(rng):
    for _ in range(TRIALS // 3):
        a = Layout(tuple(int(rng.choice((2, 4, 8))) for _ in range(2)),
                   tuple(int(rng.choice((1, 2, 4, 16))) for _ in range(2)))
        b0 = Layout(a.size(0) // 2, 2) if rng.random() < 0.5 else Layout(a.size(0))
        b1 = Layout(max(1, a.size(1) // 2))
        r = composition(a, (b0, b1))
        for i in range(b0.size()):
            for j in range(b1.size()):
                assert r((i, j)) == a((b0(i), b1(j)))


def test_complement_completes_a_bijection(rng):
    for _ in range(TRIALS):
        a = complementable_layout(rng)
        cosize = a.cosize() * int(rng.integers(1, 4))
        c = complement(a, cosize)
        both = make_layout(a, c)
        reached = [both((i, j)) for j in range(c.size()) for i in range(a.size())]
        assert sorted(reached) == list(range(both.cosize())), (a, c)
        assert both.cosize() >= cosize
        # The complement never re-reaches an offset of the layout.
        assert not set(offsets(a)) & set(offsets(c)) - {0}


def test_divides_keep_the_element_set(rng):
    checked = 0
    for _ in range(TRIALS):
        a = random_layout(rng, extents=(1, 2, 4), strides=(0, 1, 2, 4, 8, 5))
        tile = complementable_layout(rng, extents=(1, 2, 4), gaps=(1, 2))
        # Only tiles that, with their complement, cover [0, size(a)) exactly
        # make a divide that is a rearrangement of a.
        if tile.size() * complement(tile, a.size()).size() != a.size():
            continue
        d = logical_divide(a, tile)
        checked += 1
        assert Counter(offsets(d)) == Counter(offsets(a)), (a, tile, d)
        assert d.size(0) == tile.size()
    assert checked > TRIALS // 5


def _matrix_and_tiler(rng):
    """A random 2-D layout (strides may skip or overlap) and a by-mode
    tiler of ints that divides its shape."""
    shape = tuple(int(rng.choice((2, 4, 8))) for _ in range(2))
    stride = tuple(int(rng.choice((1, 3, 8, 32))) for _ in range(2))
    tiler = tuple(int(rng.choice([t for t in (1, 2, 4) if s % t == 0]))
                  for s in shape)
    return Layout(shape, stride), shape, tiler


def test_zipped_divide_by_mode_keeps_the_element_set(rng):
    for _ in range(TRIALS):
        a, shape, tiler = _matrix_and_tiler(rng)
        z = zipped_divide(a, tiler)
        assert Counter(offsets(z)) == Counter(offsets(a))
        assert z.size(0) == tiler[0] * tiler[1]
        # Tile-major view: element (t, r) is matrix element
        # (r0 * tile0 + t0, r1 * tile1 + t1).
        tiles = (shape[0] // tiler[0], shape[1] // tiler[1])
        for r in range(tiles[0] * tiles[1]):
            for t in range(tiler[0] * tiler[1]):
                t0, t1 = t % tiler[0], t // tiler[0]
                r0, r1 = r % tiles[0], r // tiles[0]
                assert z((t, r)) == a((r0 * tiler[0] + t0, r1 * tiler[1] + t1))


def test_regroupings_keep_the_function(rng):
    """tiled/flat divides and zipped/flat products only regroup modes:
    the same offsets in the same colexicographic order as the zipped
    divide and the logical product."""
    for _ in range(TRIALS):
        a, shape, tiler = _matrix_and_tiler(rng)
        zipped = offsets(zipped_divide(a, tiler))
        assert offsets(tiled_divide(a, tiler)) == zipped
        assert offsets(flat_divide(a, tiler)) == zipped
        # Products need a complement: a compact block.
        block = Layout(shape)
        b = Layout(int(rng.choice((1, 2, 3))), int(rng.choice((1, 2))))
        whole = offsets(logical_product(block, b))
        assert offsets(zipped_product(block, b)) == whole
        assert offsets(flat_product(block, b)) == whole


def test_blocked_product_places_tiles(rng):
    for _ in range(TRIALS // 2):
        rank = int(rng.integers(1, 3))
        a = Layout(tuple(int(rng.integers(1, 4)) for _ in range(rank)))
        b = Layout(tuple(int(rng.integers(1, 4)) for _ in range(rank)),
                   tuple(int(rng.choice((0, 1, 2, 5))) for _ in range(rank)))
        p = blocked_product(a, b, by_mode=True)
        assert p.size() == a.size() * b.size() and p.rank() == rank
        # Mode i is (a_i, b_i): tile element a plus size(a) times b's offset.
        for ca in range(a.size()):
            for cb in range(b.size()):
                acoord = _coord(ca, a.shape)
                bcoord = _coord(cb, b.shape)
                coord = tuple((x, y) for x, y in zip(acoord, bcoord))
                assert p(coord) == a(acoord) + a.size() * b(bcoord)


def _coord(index, shape):
    coord = []
    for s in shape:
        coord.append(index % s)
        index //= s
    return tuple(coord)


@pytest.mark.parametrize("new_bits, old_bits", [(8, 32), (16, 32), (8, 16)])
def test_recast_splits_elements_into_parts(rng, new_bits, old_bits):
    ratio = old_bits // new_bits
    for _ in range(TRIALS // 3):
        n = int(rng.integers(1, 4))
        shape = tuple(int(rng.integers(1, 5)) for _ in range(n))
        stride = (1,) + tuple(int(rng.choice((0, 2, 3, 8))) for _ in range(n - 1))
        a = Layout(shape, stride)
        r = recast_layout(new_bits, old_bits, a)
        assert r.size() == a.size() * ratio
        for i in range(a.size()):
            c = _coord(i, shape)
            for part in range(ratio):
                rc = (c[0] * ratio + part,) + c[1:]
                assert r(rc) == a(c) * ratio + part
        assert recast_layout(old_bits, new_bits, r) == a
