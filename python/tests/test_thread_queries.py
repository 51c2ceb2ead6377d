"""Thread and grid queries (docs/reference/core.md) against Metal's
definitions.

One kernel writes every query of each thread into an output buffer at
``linear_grid_index * QUERIES + q``; the reference values are computed in
numpy from Metal's definitions for dispatchThreads:

* position = group * threads + local (the nominal threadgroup size),
* the edge threadgroup is partial: threads_per_threadgroup is
  min(threads, grid - group * threads) along each dimension,
* thread_index_in_threadgroup linearises the local position with the
  threadgroup's actual size, x fastest,
* a simdgroup is 32 consecutive linear indices of a threadgroup.
"""


import numpy as np
import pytest

import enigma

# Order of the values each thread writes.
QUERY_NAMES = (
    [f"thread_position_in_grid_xyz.{d}" for d in "xyz"]
    + [f"thread_position_in_threadgroup.{d}" for d in "xyz"]
    + [f"threadgroup_position_in_grid.{d}" for d in "xyz"]
    + [f"threads_per_threadgroup.{d}" for d in "xyz"]
    + [f"threads_per_grid.{d}" for d in "xyz"]
    + [f"threadgroups_per_grid.{d}" for d in "xyz"]
    + [f"grid_size.{d}" for d in "xyz"]
    + ["thread_index_in_threadgroup", "thread_index_in_simdgroup",
       "simdgroup_index_in_threadgroup", "threads_per_simdgroup",
       "simdgroups_per_threadgroup"]
    + ["arch.thread_idx", "arch.block_idx", "arch.block_dim",
       "thread_position_in_grid"]
    + [f"thread_position_in_grid('{d}')" for d in "xyz"]
)
Q = len(QUERY_NAMES)
traced_dtypes = []


@enigma.kernel
def all_queries(gx: enigma.Scalar(enigma.u32), gy: enigma.Scalar(enigma.u32),
                out: enigma.u32):
    values = []
    for query in (enigma.thread_position_in_grid_xyz,
                  enigma.thread_position_in_threadgroup,
                  enigma.threadgroup_position_in_grid,
                  enigma.threads_per_threadgroup,
                  enigma.threads_per_grid,
                  enigma.threadgroups_per_grid,
                  enigma.grid_size):
        for d in "xyz":
            values.append(query(d))
    values.append(enigma.thread_index_in_threadgroup())
    values.append(enigma.thread_index_in_simdgroup())
    values.append(enigma.simdgroup_index_in_threadgroup())
    values.append(enigma.threads_per_simdgroup())
    values.append(enigma.simdgroups_per_threadgroup())
    for f in (enigma.arch.thread_idx, enigma.arch.block_idx,
              enigma.arch.block_dim):
        x, y, z = f()
        assert (y, z) == (0, 0)
        values.append(x)
    values.append(enigma.thread_position_in_grid)
    values.append(enigma.thread_position_in_grid("x"))
    values.append(enigma.thread_position_in_grid(dim="y"))
    values.append(enigma.thread_position_in_grid("z"))
    traced_dtypes[:] = [v.dtype for v in values]
    x = enigma.thread_position_in_grid_xyz("x")
    y = enigma.thread_position_in_grid_xyz("y")
    z = enigma.thread_position_in_grid_xyz("z")
    base = ((z * gy + y) * gx + x) * Q
    for q, v in enumerate(values):
        out[base + q] = v


@pytest.fixture(scope="module")
def compiled():
    return enigma.compile(all_queries, emit_only=True)


def reference(grid, threads):
    """(grid_z, grid_y, grid_x, Q) array of every query from Metal's rules."""
    G = np.array(grid, dtype=np.int64)
    T = np.array(threads, dtype=np.int64)
    z, y, x = np.meshgrid(np.arange(G[2]), np.arange(G[1]), np.arange(G[0]),
                          indexing="ij")
    pos = [x, y, z]
    group = [pos[d] // T[d] for d in range(3)]
    local = [pos[d] % T[d] for d in range(3)]
    size = [np.minimum(T[d], G[d] - group[d] * T[d]) for d in range(3)]
    groups = [np.full_like(x, -(-G[d] // T[d])) for d in range(3)]
    linear = (local[2] * size[1] + local[1]) * size[0] + local[0]
    per_group = size[0] * size[1] * size[2]
    cols = (pos + local + group + size
            + [np.full_like(x, G[d]) for d in range(3)] + groups + groups
            + [linear, linear % 32, linear // 32, np.full_like(x, 32),
               (per_group + 31) // 32]
            + [local[0], group[0], size[0], pos[0]] + pos)
    return np.stack(cols, axis=-1)


CASES = [
    # 1-D: one thread, non-multiples of the group size, a larger grid
    ((1, 1, 1), (1, 1, 1)),
    ((1, 1, 1), (64, 1, 1)),
    ((255, 1, 1), (64, 1, 1)),
    ((257, 1, 1), (256, 1, 1)),
    ((70000, 1, 1), (1024, 1, 1)),
    # 2-D, partial edge groups along x and y
    ((37, 19, 1), (8, 4, 1)),
    ((100, 3, 1), (32, 2, 1)),
    # 3-D, partial along every dimension; groups that are not multiples of 32
    ((9, 7, 5), (4, 3, 2)),
    ((70, 5, 3), (16, 4, 2)),
    ((33, 2, 17), (11, 1, 6)),
]


@pytest.mark.parametrize("grid,threads", CASES)
def test_queries_match_metal_definitions(runtime, compiled, grid, threads):
    count = grid[0] * grid[1] * grid[2]
    extra = 7  # elements past the grid's values must stay zero
    raw = runtime.execute(compiled, [], output_size=(count * Q + extra) * 4,
                          grid=grid, threads=threads,
                          scalars=[grid[0], grid[1]])
    out = np.frombuffer(raw, dtype=np.uint32)
    assert out.size == count * Q + extra
    assert not out[count * Q:].any()
    got = out[:count * Q].reshape(grid[2], grid[1], grid[0], Q)
    want = reference(grid, threads)
    for q, name in enumerate(QUERY_NAMES):
        mismatch = np.argwhere(got[..., q] != want[..., q])
        assert mismatch.size == 0, (
            f"{name} wrong at (z, y, x) = {tuple(mismatch[0])}: got "
            f"{got[tuple(mismatch[0]) + (q,)]}, want "
            f"{want[tuple(mismatch[0]) + (q,)]}")


def test_every_query_is_uint(compiled):
    assert len(traced_dtypes) == Q
    assert all(d == enigma.u32 for d in traced_dtypes), traced_dtypes


def _nvrtc_check(source):
    check = getattr(enigma._core.Runtime, "nvrtc_check", None)
    if check is None:
        pytest.skip("this build has no NVRTC source check")
    try:
        check(source, "sm_90", [])
    except RuntimeError as e:
        if "could not compile" not in str(e):
            pytest.skip(f"NVRTC is not usable here: {e}")
        raise


def test_cuda_source_of_every_query_compiles(compiled):
    _nvrtc_check(compiled.cuda_source)


def test_queries_in_msl_use_metal_attributes(compiled):
    msl = compiled.metal_source
    for attribute in ("thread_position_in_grid", "thread_position_in_threadgroup",
                      "threadgroup_position_in_grid", "threads_per_threadgroup",
                      "threads_per_grid", "threadgroups_per_grid",
                      "thread_index_in_threadgroup", "thread_index_in_simdgroup",
                      "simdgroup_index_in_threadgroup", "threads_per_simdgroup",
                      "simdgroups_per_threadgroup"):
        assert f"[[{attribute}]]" in msl, attribute


def test_position_attribute_drives_a_large_1d_grid(runtime, rng):
    @enigma.kernel
    def iota(out: enigma.u32):
        out[enigma.thread_position_in_grid] = enigma.thread_position_in_grid

    n = 2**20
    compiled = enigma.compile(iota, emit_only=True)
    raw = runtime.execute(compiled, [], output_size=(n + 5) * 4, grid=n,
                          threads=256)
    out = np.frombuffer(raw, dtype=np.uint32)
    np.testing.assert_array_equal(out[:n], np.arange(n, dtype=np.uint32))
    assert not out[n:].any()


@pytest.mark.parametrize("dim", ["w", "X", 0, 1, None, "xy", ""])
@pytest.mark.parametrize("query", [
    "thread_position_in_grid_xyz", "thread_position_in_threadgroup",
    "threadgroup_position_in_grid", "threads_per_threadgroup",
    "threads_per_grid", "threadgroups_per_grid", "grid_size"])
def test_bad_dim_is_an_enigma_error(query, dim):
    fn = getattr(enigma, query)

    @enigma.kernel
    def bad(out: enigma.u32):
        out[0] = fn(dim)

    with pytest.raises(enigma.EnigmaError, match="'x', 'y' or 'z'"):
        enigma.compile(bad, emit_only=True)


@pytest.mark.parametrize("call", [
    lambda: enigma.thread_position_in_grid,
    lambda: enigma.thread_position_in_grid_xyz("y"),
    lambda: enigma.thread_position_in_threadgroup("x"),
    lambda: enigma.threadgroup_position_in_grid("x"),
    lambda: enigma.threads_per_threadgroup("x"),
    lambda: enigma.threads_per_grid("x"),
    lambda: enigma.threadgroups_per_grid("x"),
    lambda: enigma.grid_size("z"),
    lambda: enigma.thread_index_in_threadgroup(),
    lambda: enigma.thread_index_in_simdgroup(),
    lambda: enigma.simdgroup_index_in_threadgroup(),
    lambda: enigma.threads_per_simdgroup(),
    lambda: enigma.simdgroups_per_threadgroup(),
    lambda: enigma.arch.thread_idx(),
    lambda: enigma.arch.block_idx(),
    lambda: enigma.arch.block_dim(),
])
def test_query_outside_a_kernel_is_an_enigma_error(call):
    with pytest.raises(enigma.EnigmaError, match="inside an @enigma.kernel"):
        call()
