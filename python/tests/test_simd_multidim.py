"""SIMD-group functions in 2-D and 3-D threadgroups whose edge groups are
partial in more than one dimension (docs/execution-model.md): a simdgroup
is 32 consecutive values of `thread_index_in_threadgroup`, the linear index
over the group's *actual* size, so in an edge group narrower than the
nominal one a simdgroup spans more rows. References are computed from that
rule in Python."""

import numpy as np
import pytest

import enigma

WIDTH = 32
# (grid, threads): every edge group partial in x and y (and z)
SHAPES = [((10, 10, 1), (8, 8, 1)), ((50, 7, 1), (16, 4, 1)),
          ((33, 5, 1), (32, 2, 1)), ((5, 5, 5), (4, 4, 4)),
          ((3, 40, 1), (2, 32, 1))]


@enigma.kernel
def _simd_in_groups(A: enigma.u32, S: enigma.u32, P: enigma.u32,
                    L: enigma.u32, G: enigma.u32, X: enigma.u32):
    x = enigma.thread_position_in_grid_xyz("x")
    y = enigma.thread_position_in_grid_xyz("y")
    z = enigma.thread_position_in_grid_xyz("z")
    i = (z * enigma.threads_per_grid("y") + y) * enigma.threads_per_grid("x") + x
    a = A[i]
    S[i] = enigma.simd_sum(a)
    P[i] = enigma.simd_prefix_exclusive_sum(a)
    L[i] = enigma.thread_index_in_simdgroup()
    G[i] = enigma.simdgroup_index_in_threadgroup()
    X[i] = enigma.simd_shuffle_xor(a, 1)


def _reference(a, grid, threads):
    """Per grid position (row-major z, y, x): simd_sum, exclusive prefix
    sum, lane, simdgroup and shuffle_xor(1) by Metal's rule."""
    gx, gy, gz = grid
    tx, ty, tz = threads
    flat = a.reshape(gz, gy, gx)
    out = [np.zeros((gz, gy, gx), np.uint64) for _ in range(5)]
    for bz in range(0, gz, tz):
        for by in range(0, gy, ty):
            for bx in range(0, gx, tx):
                sx, sy, sz = min(tx, gx - bx), min(ty, gy - by), min(tz, gz - bz)
                # grid positions of the group in order of the linear index
                members = [(bz + lz, by + ly, bx + lx) for lz in range(sz)
                           for ly in range(sy) for lx in range(sx)]
                for s in range(0, len(members), WIDTH):
                    lanes = members[s:s + WIDTH]
                    vals = [int(flat[p]) for p in lanes]
                    for k, p in enumerate(lanes):
                        out[0][p] = sum(vals)
                        out[1][p] = sum(vals[:k])
                        out[2][p] = k
                        out[3][p] = s // WIDTH
                        src = k ^ 1
                        out[4][p] = vals[src] if src < len(lanes) else vals[k]
    return [o.reshape(-1).astype(np.uint32) for o in out]


@pytest.mark.parametrize("grid,threads", SHAPES)
def test_simdgroups_follow_the_linear_index_of_the_actual_group(
        runtime, rng, grid, threads):
    n = grid[0] * grid[1] * grid[2]
    a = rng.integers(0, 1000, n).astype(np.uint32)
    raw = runtime.execute(enigma.compile(_simd_in_groups), [a],
                          output_sizes=[(n + 3) * 4] * 5, grid=grid,
                          threads=threads)
    got = [np.frombuffer(r, np.uint32) for r in raw]
    names = ["simd_sum", "simd_prefix_exclusive_sum", "thread_index_in_simdgroup",
             "simdgroup_index_in_threadgroup", "simd_shuffle_xor"]
    for name, g, ref in zip(names, got, _reference(a, grid, threads)):
        bad = np.nonzero(g[:n] != ref)[0]
        assert bad.size == 0, (f"{name}: {bad.size} of {n} wrong, first at "
                               f"{bad[0]}: {g[bad[0]]} != {ref[bad[0]]}")
        assert not g[n:].any()
