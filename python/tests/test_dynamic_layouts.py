"""Layouts with run-time extents (docs/reference/layout.md, "Run-time
extents"): a scalar parameter as a mode's extent, as CuTe's dynamic shapes,
through make_layout, evaluation, Tensor slicing, the divides by a tuple of
ints, local_tile / local_partition and identity tensors for the partial last
tile; every other operation is an EnigmaError naming it. References are
numpy."""

import numpy as np
import pytest

import enigma


def run(runtime, kernel, inputs, outputs, grid, threads, **scalars):
    got = runtime.execute(enigma.compile(kernel), inputs, grid=grid,
                          threads=threads, scalars=scalars,
                          output_shapes=[s for s, _ in outputs],
                          output_dtypes=[d for _, d in outputs])
    return got if isinstance(got, list) else [got]


def traced(body):
    """Runs body(M, N) inside a kernel trace (M, N: u32 scalars)."""
    @enigma.kernel
    def k(A: enigma.f32, M: enigma.Scalar(enigma.u32),
          N: enigma.Scalar(enigma.u32)):
        body(M, N)

    enigma.compile(k, emit_only=True)


def test_building_and_reading_them():
    seen = {}

    def body(M, N):
        row_major = enigma.make_layout((M, N), stride=(N, 1))
        compact = enigma.Layout((M, (4, N)))
        ordered = enigma.make_ordered_layout((M, N), (1, 0))
        seen.update(row=row_major, compact=compact, ordered=ordered,
                    M=M, N=N, size=row_major.size(), cosize=row_major.cosize())

    traced(body)
    row, compact, ordered = seen["row"], seen["compact"], seen["ordered"]
    assert row.dynamic and str(row) == "(?,?):(?,1)"
    assert row.shape[0] is seen["M"] and row.stride[0] is seen["N"]
    assert row.rank() == 2 and row.depth() == 1
    assert isinstance(seen["size"], enigma.IRValue)
    assert str(compact) == "(?,(4,?)):(1,(?,?))"
    assert compact.stride[1][0] is seen["M"]
    assert str(ordered) == "(?,?):(?,1)"
    assert not enigma.make_layout((4, 8)).dynamic


@pytest.mark.parametrize("operation,call", [
    ("complement", lambda L: enigma.complement(L)),
    ("coalesce", lambda L: enigma.coalesce(L)),
    ("right_inverse", lambda L: enigma.right_inverse(L)),
    ("left_inverse", lambda L: enigma.left_inverse(L)),
    ("logical_product", lambda L: enigma.logical_product(L, 2)),
    ("blocked_product", lambda L: enigma.blocked_product(L, 2)),
    ("recast_layout", lambda L: enigma.recast_layout(8, 32, L)),
    ("make_layout_tv", lambda L: enigma.make_layout_tv(L, 2)),
    ("a tiler", lambda L: enigma.logical_divide(enigma.make_layout(64), L)),
])
def test_operations_that_need_static_extents(operation, call):
    def body(M, N):
        call(enigma.make_layout((M, N), stride=(N, 1)))

    with pytest.raises(enigma.EnigmaError,
                       match=rf"test_dynamic_layouts.py:\d+: {operation} "
                             r"needs a layout with static extents, and "
                             r"\(\?,\?\):\(\?,1\) has run-time extents; with "
                             r"those a layout takes: make_layout"):
        traced(body)


@pytest.mark.parametrize("call,match", [
    (lambda L: enigma.zipped_divide(L, enigma.make_layout(4, 2)),
     r"zipped_divide of .* takes one tile per mode: a tuple of positive "
     r"ints"),
    (lambda L: enigma.logical_divide(L, (4, 8)),
     r"logical_divide of .* takes one tile per mode"),
    (lambda L: enigma.zipped_divide(
        enigma.make_layout(((L.shape[0], 2), 4)), (4, 2)),
     r"each mode one extent; mode 0 is \(\?,2\)"),
    (lambda L: enigma.zipped_divide(enigma.make_layout((L.shape[0], 6)),
                                    (4, 4)),
     r"the tile 4 does not divide the extent 6 of mode 1"),
    (lambda L: enigma.Tensor("S", -1, enigma.f32, L,
                             address_space="threadgroup"),
     r"a threadgroup tensor needs a layout with static extents"),
    (lambda L: enigma.Tensor("A", 0, enigma.f32, L).load(),
     r"A.load\(\) unrolls one access per element, so it needs a static "
     r"size"),
])
def test_what_else_is_refused(call, match):
    def body(M, N):
        call(enigma.make_layout((M, N), stride=(N, 1)))

    with pytest.raises(enigma.EnigmaError, match=match):
        traced(body)


def test_the_divides_by_a_tuple_of_ints():
    seen = {}

    def body(M, N):
        L = enigma.make_layout((M, N), stride=(N, 1))
        seen["zipped"] = enigma.zipped_divide(L, (4, 8))
        seen["tiled"] = enigma.tiled_divide(L, (4, 8))
        seen["flat"] = enigma.flat_divide(L, (4, 8))
        # (logical_divide reads a tuple of ints as a layout, as the
        # original DSL does: mode by mode takes layouts n:1.)
        seen["logical"] = enigma.logical_divide(
            L, (enigma.make_layout(4), enigma.make_layout(8)))
        seen["composed"] = enigma.composition(L, (4, 8))
        seen["one_mode"] = enigma.zipped_divide(L, (4,))

    traced(body)
    assert str(seen["zipped"]) == "((4,8),(?,?)):((?,1),(?,8))"
    assert str(seen["tiled"]) == "((4,8),?,?):((?,1),?,8)"
    assert str(seen["flat"]) == "(4,8,?,?):(?,1,?,8)"
    assert str(seen["logical"]) == "((4,?),(8,?)):((?,?),(1,8))"
    assert str(seen["composed"]) == "(4,8):(?,1)"
    assert str(seen["one_mode"]) == "(4,(?,?)):(?,(?,1))"


# --------------------------------------------------------------------------
# End to end
# --------------------------------------------------------------------------

TILE = 8


@enigma.kernel
def scale_tiles(A: enigma.f32, M: enigma.Scalar(enigma.u32),
                N: enigma.Scalar(enigma.u32), B: enigma.f32):
    """B = 3 * A for an M x N row-major matrix, one 8 x 8 tile per
    threadgroup, the partial tiles at the edges predicated through an
    identity tensor."""
    bx = enigma.threadgroup_position_in_grid("x")
    by = enigma.threadgroup_position_in_grid("y")
    t = enigma.thread_index_in_threadgroup()
    mA = enigma.Tensor("A", 0, enigma.f32,
                       enigma.make_layout((M, N), stride=(N, 1)))
    mB = enigma.Tensor("B", 3, enigma.f32,
                       enigma.make_ordered_layout((M, N), (1, 0)))
    ident = enigma.make_identity_tensor((M, N))
    threads = enigma.make_layout((TILE, TILE), stride=(TILE, 1))
    tA = enigma.local_partition(enigma.local_tile(mA, (TILE, TILE),
                                                  (by, bx)), threads, t)
    tB = enigma.local_partition(enigma.local_tile(mB, (TILE, TILE),
                                                  (by, bx)), threads, t)
    tI = enigma.local_partition(enigma.local_tile(ident, (TILE, TILE),
                                                  (by, bx)), threads, t)
    row, col = tI[0]
    with enigma.if_((row < M) & (col < N)):
        tB[(0, 0)] = tA[(0, 0)] * 3.0


@pytest.mark.parametrize("m,n", [(1, 1), (13, 21), (16, 16), (70, 3)])
def test_tiles_of_a_matrix_with_runtime_extents(runtime, rng, m, n):
    a = rng.standard_normal((m, n)).astype(np.float32)
    groups = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE, 1)
    (b,) = run(runtime, scale_tiles, [a], [((m, n), np.float32)],
               (groups[0] * TILE, groups[1] * TILE, 1), (TILE, TILE, 1),
               M=m, N=n)
    np.testing.assert_array_equal(b, a * 3)


@enigma.kernel
def fragments(A: enigma.f32, M: enigma.Scalar(enigma.u32),
              N: enigma.Scalar(enigma.u32), B: enigma.f32):
    """Each thread moves a 2 x 2 fragment with load() / store(): a static
    shape with run-time strides."""
    t = enigma.thread_position_in_grid
    layout = enigma.make_layout((M, N), stride=(N, 1))
    tile = enigma.local_tile(enigma.Tensor("A", 0, enigma.f32, layout),
                             (2, 2), (t // (N // 2), t % (N // 2)))
    out = enigma.local_tile(enigma.Tensor("B", 3, enigma.f32, layout),
                            (2, 2), (t // (N // 2), t % (N // 2)))
    out.store(tile.load() + 1.0)


def test_load_and_store_of_a_static_tile_with_runtime_strides(runtime, rng):
    m, n = 6, 10
    a = rng.standard_normal((m, n)).astype(np.float32)
    (b,) = run(runtime, fragments, [a], [((m, n), np.float32)],
               (m * n // 4, 1, 1), (5, 1, 1), M=m, N=n)
    np.testing.assert_array_equal(b, a + 1.0)


@enigma.kernel
def evaluate(A: enigma.u32, M: enigma.Scalar(enigma.u32),
             N: enigma.Scalar(enigma.u32), B: enigma.u32):
    t = enigma.thread_position_in_grid
    nested = enigma.make_layout((M, (2, N)), stride=((2 * N), (1, 2)))
    # A 1-D index into a nested mode of run-time extents: colexicographic.
    B[t] = nested(t) * 1000 + nested((t % M, t // M))


def test_evaluation_at_traced_coordinates(runtime):
    m, n = 3, 5
    count = m * 2 * n
    (b,) = run(runtime, evaluate, [np.zeros(1, np.uint32)],
               [((count,), np.uint32)], (count, 1, 1), (count, 1, 1),
               M=m, N=n)
    # (M, (2, N)):(2N, (1, 2)): coordinate (i, j) with j = j0 + 2 j1.
    for t in range(count):
        i, j = t % m, t // m
        off = i * 2 * n + (j % 2) + 2 * (j // 2)
        assert b[t] == off * 1000 + off, t
