"""What a first user of pipeline_ring / pipeline_loop writes from
docs/reference/pipelines.md alone: the page's example kernel as written,
at sizes that are not multiples of its boxes, checked against float64
numpy; a launch of the wrong size names what fixed the size."""

import numpy as np
import pytest

import enigma


@enigma.kernel
def box_sums(X: enigma.f32, rows: enigma.Scalar(enigma.u32),
             cols: enigma.Scalar(enigma.u32), Out: enigma.f32):
    ring = enigma.pipeline_ring(3, [("float", 16 * 32)], threads=128)
    g = enigma.threadgroup_position_in_grid("x")
    t = enigma.thread_index_in_threadgroup()

    def producer(i, slot):              # copies only
        enigma.stage_copy(ring, slot, 0, X, at=(i * 16, g * 32),
                          shape=(rows, cols), ld=cols, box=(16, 32))

    def consumer(i, slot, carry):       # any kernel code on the stage
        stage = ring.stage(0, slot)
        for j in enigma.range_constexpr(4):
            carry[0] = carry[0] + stage[t + 128 * j]

    total, = enigma.pipeline_loop(ring, (rows + 15) // 16,
                                  producer=producer, consumer=consumer,
                                  init=[0.0])
    Out[g * 128 + t] = total


def box_sums_reference(x, groups):
    """Thread t of threadgroup g adds box elements t + 128 j: rows
    t // 32 + 4 j of every box, column g * 32 + t % 32 (zeros outside)."""
    rows, cols = x.shape
    padded = np.zeros((max(16, -(-rows // 16) * 16), groups * 32))
    padded[:rows, :cols] = x
    t = np.arange(128)
    return np.concatenate([[padded[r // 32::4, g * 32 + r % 32].sum()
                            for r in t] for g in range(groups)])


@pytest.mark.parametrize("rows, cols", [(1, 1), (45, 70), (16, 32),
                                        (33, 1), (0, 32)])
def test_reference_example_runs_as_written(arrays, rng, rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    groups = max(1, -(-cols // 32))
    out = arrays.put(np.full(groups * 128, np.nan, np.float32))
    src = x.reshape(-1) if x.size else np.zeros(1, np.float32)
    box_sums.launch(threadgroups=groups, threads=128)(arrays.put(src), rows,
                                                      cols, out)
    np.testing.assert_allclose(arrays.get(out),
                               box_sums_reference(x, groups),
                               rtol=1e-5, atol=1e-5)


def test_launch_of_another_size_names_the_ring(arrays):
    out = arrays.put(np.zeros(128, np.float32))
    with pytest.raises(enigma.DispatchError,
                       match="runs only in threadgroups of 128 threads "
                             r"\(the size it fixes: .*pipeline_ring"):
        box_sums.launch(threadgroups=1, threads=64)(
            arrays.put(np.ones(16 * 32, np.float32)), 16, 32, out)


@enigma.kernel
def row_sums(X: enigma.f32, lower: enigma.Scalar(enigma.i32),
             upper: enigma.Scalar(enigma.i32), Out: enigma.f32,
             Count: enigma.i32):
    ring = enigma.pipeline_ring(2, [("float", 16 * 32)], threads=128)
    t = enigma.thread_index_in_threadgroup()

    def producer(i, slot):
        enigma.stage_copy(ring, slot, 0, X, at=(i * 16, 0), shape=(64, 32),
                          ld=32, box=(16, 32))

    def consumer(i, slot, carry):
        carry[0] = carry[0] + ring.stage(0, slot)[t]
        carry[1] = carry[1] + 1

    total, count = enigma.pipeline_loop(ring, lower, upper,
                                        producer=producer,
                                        consumer=consumer, init=[0.0, 0])
    Out[t] = total
    Count[t] = count


def run_row_sums(arrays, x, lower, upper):
    out = arrays.put(np.full(128, np.nan, np.float32))
    count = arrays.put(np.full(128, -1, np.int32))
    row_sums.launch(threadgroups=1, threads=128)(arrays.put(x), lower, upper,
                                                 out, count)
    return arrays.get(out), arrays.get(count)


@pytest.mark.parametrize("lower, upper", [(0, 4), (1, 3), (3, 1), (2, 6)])
def test_pipeline_bounds_from_scalars(arrays, lower, upper):
    """Iterations lower .. upper - 1, each reading its own 16 rows (rows
    past the matrix are zeros), whatever earlier launches left in the
    ring's stages."""
    x = np.arange(64 * 32, dtype=np.float32) + 1
    padded = np.zeros((96 + 16, 32))
    padded[:64] = x.reshape(64, 32)
    want = sum((padded[i * 16:i * 16 + 4].reshape(-1)
                for i in range(lower, upper)), np.zeros(128))
    run_row_sums(arrays, x, 0, 4)          # leaves data in both stages
    out, count = run_row_sums(arrays, x, lower, upper)
    assert (count == max(0, upper - lower)).all()
    np.testing.assert_array_equal(out, want)


def test_pipeline_negative_lower_bound(arrays):
    """A lower bound from a signed scalar below zero: the iterations run
    as the loop compares its bounds (signed), their copies too (the
    producer's guard was unsigned on the host runtimes, so the negative
    iterations read the stages' stale data). i = -2 and -1 copy rows (as
    uint) far outside the 64-row matrix: zeros; i = 0 and 1 copy rows 0
    and 16."""
    x = np.arange(64 * 32, dtype=np.float32) + 1
    want = x[:128].astype(np.float64) + x[512:640]
    run_row_sums(arrays, x, 0, 4)          # leaves data in both stages
    out, count = run_row_sums(arrays, x, -2, 2)
    assert (count == 4).all()
    np.testing.assert_array_equal(out, want)


def test_pipeline_roles_must_be_callable():
    with pytest.raises(enigma.EnigmaError, match="producer"):
        @enigma.kernel
        def no_producer(X: enigma.f32, Out: enigma.f32):
            ring = enigma.pipeline_ring(2, [("float", 16 * 32)], threads=128)
            total, = enigma.pipeline_loop(
                ring, 2, producer=None,
                consumer=lambda i, slot, carry: None, init=[0.0])
            Out[0] = total

        enigma.compile(no_producer)
