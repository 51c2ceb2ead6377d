"""Consumer groups (``pipeline_loop(..., consumer_groups=G)``,
``MmaConfig(consumer_groups=2)``; docs/design/consumer-groups.md) on every
backend under test, against float64 numpy with fresh random inputs:

* the construct: per-thread sums of the stages' boxes where each group of
  warpgroups takes every other iteration, from a lower bound that is not
  0, with no iteration, one, or an odd number;
* gemm_block with two groups splitting each block's K steps (warpgroup
  and simdgroup products, persistent, clustered) at M = 1, odd N, K of
  one tile (the second group multiplies nothing) and K not a multiple of
  the tile;
* the mistakes the front end and the verifier reject;
* the CUDA text: the guard, the stages released G iterations late, and
  NVRTC's sm_90a build without spills or serialised products.
"""

import os
import re

import numpy as np
import pytest

from conftest import assert_no_spills_on_hopper, box_thread_sums, \
    compile_error, load_example

import enigma

BOX_ROWS, BOX_COLS, WARPGROUP = 16, 32, 128
START = 2.5


@pytest.fixture(autouse=True)
def _isolated_on_cuda(request):
    """As test_pipelines.py: on CUDA these run in the GPU script's child
    process (ENIGMA_CUDA_PIPELINE_TESTS=1), so that a hang fails alone."""
    runtime = request.node.funcargs.get("runtime")
    if runtime is not None and runtime.name == "cuda" and \
            os.environ.get("ENIGMA_CUDA_PIPELINE_TESTS") != "1":
        pytest.skip("pipelines on CUDA run in the GPU script's child process")


# Registers of the roles that fit beside 2, 3 and 4 consumer warpgroups.
_ROLES = {2: {}, 3: dict(consumer_registers=152),
          4: dict(producer_registers=24, consumer_registers=112)}


def _grouped_box_sums(stages, groups, warpgroups):
    """Threadgroup g of ``warpgroups`` warpgroups; thread t of warpgroup w
    sums, weighted by i, the elements e = t % 128 + 128 j of box i - 1 of
    column block g of X for the iterations i in [1, boxes + 1) whose turn
    is its group's: (i - 1) % groups == w % groups."""
    threads = WARPGROUP * warpgroups

    @enigma.kernel
    def grouped_box_sums(X: enigma.f32, rows: enigma.Scalar(enigma.u32),
                         cols: enigma.Scalar(enigma.u32), Out: enigma.f32):
        ring = enigma.pipeline_ring(stages, [("float", BOX_ROWS * BOX_COLS)],
                                    threads=threads, **_ROLES[warpgroups])
        g = enigma.threadgroup_position_in_grid("x")
        t = enigma.thread_index_in_threadgroup()
        lane = t % WARPGROUP
        boxes = (rows + (BOX_ROWS - 1)) // BOX_ROWS

        def producer(i, slot):
            enigma.stage_copy(ring, slot, 0, X,
                              at=((i - 1) * BOX_ROWS, g * BOX_COLS),
                              shape=(rows, cols), ld=cols,
                              box=(BOX_ROWS, BOX_COLS))

        def consumer(i, slot, carry):
            stage = ring.stage(0, slot)
            total = carry[0]
            for j in enigma.range_constexpr(BOX_ROWS * BOX_COLS // WARPGROUP):
                total = total + stage[lane + WARPGROUP * j] * i.cast("float")
            carry[0] = total

        total, = enigma.pipeline_loop(ring, 1, boxes + 1, producer=producer,
                                      consumer=consumer, init=[START],
                                      consumer_groups=groups)
        Out[g * threads + t] = total
    return grouped_box_sums


@pytest.mark.parametrize("groups,warpgroups", [(2, 2), (2, 4), (3, 3),
                                               (4, 4)])
@pytest.mark.parametrize("rows,cols", [(1, 1), (16, 32), (37, 45),
                                       (100, 64)])
def test_groups_take_iterations_in_turn(runtime, rng, groups, warpgroups,
                                        rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    blocks = -(-cols // BOX_COLS)
    threads = WARPGROUP * warpgroups
    compiled = enigma.compile(_grouped_box_sums(3, groups, warpgroups))
    raw = runtime.execute(compiled, [x], output_size=blocks * threads * 4,
                          scalars=[rows, cols], grid=(blocks * threads, 1, 1),
                          threads=(threads, 1, 1))
    out = np.frombuffer(raw, np.float32).reshape(blocks, warpgroups,
                                                 WARPGROUP)
    sums = box_thread_sums(x.astype(np.float64), blocks, BOX_ROWS, BOX_COLS,
                           WARPGROUP)
    want = np.full((blocks, warpgroups, WARPGROUP), START)
    for box in range(sums.shape[1]):
        i = box + 1
        for w in range(warpgroups):
            if (i - 1) % groups == w % groups:
                want[:, w] += i * sums[:, box]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_groups_without_carried_values(runtime, rng):
    """A consumer that only stores: each group stores its own boxes."""
    rows = 37

    @enigma.kernel
    def copy_boxes(X: enigma.f32, rows: enigma.Scalar(enigma.u32),
                   Out: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", BOX_ROWS * BOX_COLS)],
                                    threads=2 * WARPGROUP)
        lane = enigma.thread_index_in_threadgroup() % WARPGROUP
        boxes = (rows + (BOX_ROWS - 1)) // BOX_ROWS

        def producer(i, slot):
            enigma.stage_copy(ring, slot, 0, X, at=(i * BOX_ROWS, 0),
                              shape=(rows, BOX_COLS), ld=BOX_COLS,
                              box=(BOX_ROWS, BOX_COLS))

        def consumer(i, slot, carry):
            stage = ring.stage(0, slot)
            for j in enigma.range_constexpr(BOX_ROWS * BOX_COLS // WARPGROUP):
                e = lane + WARPGROUP * j
                Out[i * (BOX_ROWS * BOX_COLS) + e] = stage[e] * 2.0

        enigma.pipeline_loop(ring, boxes, producer=producer,
                             consumer=consumer, consumer_groups=2)

    x = rng.standard_normal((rows, BOX_COLS)).astype(np.float32)
    padded = -(-rows // BOX_ROWS) * BOX_ROWS * BOX_COLS
    compiled = enigma.compile(copy_boxes)
    raw = runtime.execute(compiled, [x], output_size=padded * 4,
                          scalars=[rows], grid=(2 * WARPGROUP, 1, 1),
                          threads=(2 * WARPGROUP, 1, 1))
    want = np.zeros(padded)
    want[:rows * BOX_COLS] = 2.0 * x.astype(np.float64).ravel()
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), want)
    assert "enigma_ring_release" in compiled.cuda_source


def test_bounds_checked_groups(runtime, rng):
    """Bounds-checked mode: the same sums; every ring wait has its site,
    in both forms of the CUDA producer."""
    rows, cols = 37, 45
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    compiled = enigma.compile(_grouped_box_sums(3, 2, 2), bounds_check=True)
    raw = runtime.execute(compiled, [x], output_size=2 * 256 * 4,
                          scalars=[rows, cols], grid=(2 * 256, 1, 1),
                          threads=(256, 1, 1))
    out = np.frombuffer(raw, np.float32).reshape(2, 2, WARPGROUP)
    sums = box_thread_sums(x.astype(np.float64), 2, BOX_ROWS, BOX_COLS,
                           WARPGROUP)
    want = np.full((2, 2, WARPGROUP), START)
    for box in range(sums.shape[1]):
        want[:, box % 2] += (box + 1) * sums[:, box]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    sites = [s for s in compiled._artifact.bounds_check_sites
             if s[0] == "ring wait"]
    assert len(sites) == 2, sites
    src = compiled.cuda_source
    # The producer's TMA form and its fallback each wait with the check.
    assert src.count("enigma_ring_acquire(") == 2
    assert src.count("&enigma_ring_check") >= 3


# --------------------------------------------------------------------------
# gemm_block with two groups
# --------------------------------------------------------------------------

def _configs(runtime):
    ws = dict(warp_specialized=True, consumer_groups=2)
    if runtime.name == "metal-host":   # Metal's 32 KiB of threadgroup memory
        return [enigma.MmaConfig(64, 16, 16, 4, 1, 4, **ws),
                enigma.MmaConfig(16, 64, 16, 1, 4, 3, persistent=True,
                                 **ws)]
    return [enigma.MmaConfig(64, 64, 64, 4, 1, 4, **ws),      # warpgroups
            enigma.MmaConfig(16, 64, 64, 1, 4, 6, **ws),      # decode rows
            enigma.MmaConfig(128, 64, 64, 8, 1, 3, persistent=True, **ws),
            enigma.MmaConfig(64, 64, 64, 4, 1, 3, persistent=True, cluster=2,
                             **ws)]


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 77, 130), (65, 63, 64),
                                   (130, 129, 97), (16, 70, 1000)])
def test_gemm_with_two_groups(runtime, rng, m, n, k):
    ex = load_example("gemm_bf16")
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    for config in _configs(runtime):
        assert config.threads == 2 * 32 * config.wm * config.wn
        c = ex.run(runtime, a, b, config, processors=3)
        ex.check_output(c, a, b)


def test_gemm_with_two_groups_and_an_epilogue(runtime, rng):
    """The user's epilogue sees the block's whole sum, once per element."""
    m, n, k = 70, 80, 200
    config = _configs(runtime)[0]

    @enigma.kernel
    def scaled(A: enigma.bf16, B: enigma.bf16, M: enigma.Scalar(enigma.u32),
               N: enigma.Scalar(enigma.u32), K: enigma.Scalar(enigma.u32),
               C: enigma.f32):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                          epilogue=lambda acc, row, col: acc * 3.0 + 1.0)

    ex = load_example("gemm_bf16")
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    grid, threads = config.launch(m, n)
    raw = runtime.execute(enigma.compile(scaled), [a, b],
                          output_size=m * n * 4, grid=grid, threads=threads,
                          scalars=[m, n, k])
    got = np.frombuffer(raw, np.float32).reshape(m, n)
    fa = ex.from_bf16(a).astype(np.float64)
    fb = ex.from_bf16(b).astype(np.float64)
    want = 3.0 * (fa @ fb) + 1.0
    bound = 3 * 2 * k * 2.0**-24 * (np.abs(fa) @ np.abs(fb)) + 1e-5
    assert (np.abs(got - want) <= bound).all()


# --------------------------------------------------------------------------
# Mistakes
# --------------------------------------------------------------------------

def test_groups_need_whole_warpgroups_in_each():
    @enigma.kernel
    def bad(X: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=384,
                                    consumer_registers=152)
        enigma.pipeline_loop(ring, 4, producer=lambda i, s: None,
                             consumer=lambda i, s, c: None,
                             consumer_groups=2)

    msg = compile_error(bad)
    assert "consumer_groups = 2 needs a threadgroup of 256 threads" in msg \
        and "got 384" in msg, msg


def test_groups_take_no_turns():
    @enigma.kernel
    def bad(X: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=256)

        def consumer(i, slot, carry):
            with enigma.consumer_turn():
                pass

        enigma.pipeline_loop(ring, 4, producer=lambda i, s: None,
                             consumer=consumer, consumer_groups=2)

    assert "takes no consumer turns" in compile_error(bad)


@pytest.mark.parametrize("groups", [0, 5, True, 2.0])
def test_pipeline_loop_refuses_other_group_counts(groups):
    @enigma.kernel
    def bad(X: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=256)
        enigma.pipeline_loop(ring, 4, producer=lambda i, s: None,
                             consumer=lambda i, s, c: None,
                             consumer_groups=groups)

    assert "consumer_groups must be an int from 1 to 4" in compile_error(bad)


def test_gemm_config_mistakes():
    ex = load_example("gemm_bf16")
    cases = [
        (enigma.MmaConfig(64, 64, 64, 4, 1, 4, consumer_groups=2),
         "warp_specialized=True"),
        (enigma.MmaConfig(64, 64, 64, 2, 1, 4, warp_specialized=True,
                          consumer_groups=2), "multiple of 4"),
        (enigma.MmaConfig(64, 64, 64, 4, 1, 4, warp_specialized=True,
                          consumer_groups=3), "must be 1 or 2"),
        (enigma.MmaConfig(64, 64, 64, 4, 1, 4, warp_specialized=True,
                          persistent=True, stream_k=8, consumer_groups=2),
         "not stream_k"),
        (enigma.MmaConfig(64, 64, 64, 4, 1, 4, warp_specialized=True,
                          split_k=2, consumer_groups=2),
         "use one or the other"),
    ]
    for config, words in cases:
        with pytest.raises(enigma.EnigmaError) as info:
            ex.compiled(config)
        assert words in str(info.value), (config, str(info.value))


def test_config_counts_both_groups():
    c = enigma.MmaConfig(64, 64, 64, 4, 1, 11, warp_specialized=True,
                         consumer_groups=2)
    assert c.threads == 256 and c.launch(128, 4096)[1] == (256, 1, 1)
    # The stages and the block's float partials.
    assert c.smem_bytes("bf16") == 11 * 128 * 64 * 2 + 64 * 64 * 4
    assert "consumer_groups=2" in repr(c)
    assert "consumer_groups" not in repr(enigma.MmaConfig())


# --------------------------------------------------------------------------
# The CUDA text
# --------------------------------------------------------------------------

def _grouped_gemm_source():
    return load_example("gemm_bf16").compiled(
        enigma.MmaConfig(64, 64, 64, 4, 1, 11, warp_specialized=True,
                         consumer_groups=2)).cuda_source


def test_cuda_text_guards_the_products_and_releases_late():
    src = _grouped_gemm_source()
    consumer = src.split("// the consumers")[1]
    assert "__launch_bounds__(384, 1)" in src
    # Each group multiplies under the guard of its warpgroup's turn ...
    assert re.search(r"enigma_linear >> 5\), 4ul\);\s+ulong \w+ = "
                     r"\(ulong\)enigma_urem<ulong>\(\w+, 2ul\)", consumer), \
        consumer
    # ... and stage i - 2 is released after iteration i, the last two
    # after the loop.
    assert consumer.count("enigma_ring_release<1>") == 3, consumer
    assert re.search(r"\(long\)\w+ >= \(long\)2ul", consumer), consumer
    # The block of partial sums is not an operand of the products: the
    # proxy fence stays at the stages' waits.
    assert src.startswith("#define ENIGMA_FENCE_AT_COPY_WAIT 1")


def test_grouped_cuda_text_compiles_for_hopper(monkeypatch):
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    ex = load_example("gemm_bf16")
    for config in (enigma.MmaConfig(64, 64, 64, 4, 1, 11,
                                    warp_specialized=True, consumer_groups=2),
                   enigma.MmaConfig(64, 64, 64, 4, 1, 11,
                                    warp_specialized=True, persistent=True,
                                    consumer_groups=2),
                   enigma.MmaConfig(16, 64, 64, 1, 4, 12,
                                    warp_specialized=True,
                                    consumer_groups=2)):
        assert_no_spills_on_hopper(ex.compiled(config).cuda_source,
                                   str(config))
