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
def test_reference_example_runs_as_written(runtime, rng, rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    groups = max(1, -(-cols // 32))
    out = np.full(groups * 128, np.nan, np.float32)
    src = x.reshape(-1) if x.size else np.zeros(1, np.float32)
    box_sums.launch(threadgroups=groups, threads=128)(src, rows, cols, out,
                                                      runtime=runtime)
    np.testing.assert_allclose(out, box_sums_reference(x, groups),
                               rtol=1e-5, atol=1e-5)


def test_launch_of_another_size_names_the_ring(runtime):
    out = np.zeros(128, np.float32)
    with pytest.raises(enigma.DispatchError,
                       match="runs only in threadgroups of 128 threads "
                             r"\(the size it fixes: .*pipeline_ring"):
        box_sums.launch(threadgroups=1, threads=64)(
            np.ones(16 * 32, np.float32), 16, 32, out, runtime=runtime)
