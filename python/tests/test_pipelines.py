"""Pipelines with roles (enigma.pipeline_ring / pipeline_loop / stage_copy,
docs/reference/pipelines.md) on every backend under test, against float64
numpy references with fresh random inputs and poisoned outputs:

* the construct itself, with consumer code that is not a product (sums of
  the stages' boxes weighted by the iteration, carried per thread), at
  sizes that are not multiples of the box (zero-filled edges), with 2 to 4
  stages and several threadgroups;
* gemm_block's warp-specialised configurations (persistent, clustered,
  warpgroup and simdgroup products) at M = 1, odd N, K not a multiple of
  the tile;
* the mistakes the front end and the verifier reject, with their numbers.

On CUDA (the GPU script) the same kernels run with a producer warpgroup
issuing TMA copies; the CUDA text of every configuration is compiled here
for sm_90a by NVRTC (no spills, no serialised warpgroup products).
"""

import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from _ptxas_reports import assert_clean_under_other_nvrtc, spill_free
from conftest import compile_error, box_thread_sums, load_example

import enigma



@pytest.fixture(autouse=True)
def _isolated_on_cuda(request):
    """On CUDA the kernels here have not run on a GPU before: a pipeline
    that hangs would hang the whole suite. They run there through
    bench/check_gemm_ws.py, one process per configuration with a time
    limit (test_gpu_pipelines_in_their_own_processes below);
    ENIGMA_CUDA_PIPELINE_TESTS=1 runs them in this process too."""
    runtime = request.node.funcargs.get("runtime")
    if runtime is not None and runtime.name == "cuda" and \
            os.environ.get("ENIGMA_CUDA_PIPELINE_TESTS") != "1":
        pytest.skip("pipelines on CUDA run in bench/check_gemm_ws.py")


def test_gpu_pipelines_in_their_own_processes():
    """Where the suite runs on CUDA: every warp-specialised configuration
    checked against torch on edge shapes, first in bounds-checked mode,
    each in a process of its own with a time limit (a hang fails)."""
    if "cuda" not in os.environ.get("ENIGMA_TEST_BACKENDS", ""):
        pytest.skip("runs where ENIGMA_TEST_BACKENDS includes cuda")
    script = pathlib.Path(__file__).resolve().parents[2] / "bench" / \
        "check_gemm_ws.py"
    done = subprocess.run([sys.executable, str(script), "--check-only"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


_example = load_example


# --------------------------------------------------------------------------
# The construct
# --------------------------------------------------------------------------

BOX_ROWS, BOX_COLS, THREADS = 16, 32, 128
START = 1.5


def _box_producer(ring, X, rows, cols, g):
    """The producer of the box kernels: box i of column block g of X (rows
    x cols, zero outside) into the slot."""
    def producer(i, slot):
        enigma.stage_copy(ring, slot, 0, X, at=(i * BOX_ROWS, g * BOX_COLS),
                          shape=(rows, cols), ld=cols,
                          box=(BOX_ROWS, BOX_COLS))
    return producer


def _box_ring(stages, X, rows, cols):
    """What the box kernels share: a ring of one 16 x 32 float box per
    slot, this threadgroup's column block g, the thread t, the number of
    boxes and the producer of box i."""
    ring = enigma.pipeline_ring(stages, [("float", BOX_ROWS * BOX_COLS)],
                                threads=THREADS)
    g = enigma.threadgroup_position_in_grid("x")
    t = enigma.thread_index_in_threadgroup()
    boxes = (rows + (BOX_ROWS - 1)) // BOX_ROWS
    return ring, g, t, boxes, _box_producer(ring, X, rows, cols, g)


def _weighted_box_sums(stages):
    """Threadgroup g sums, per thread t, the elements e = t + 128 j of each
    16 x 32 box i of column block g of X (rows x cols, zero outside),
    weighted by i + 1: out[g * 128 + t] = sum_i (i + 1) sum_j box_i[e]."""
    @enigma.kernel
    def box_sums(X: enigma.f32, rows: enigma.Scalar(enigma.u32),
                 cols: enigma.Scalar(enigma.u32), Out: enigma.f32):
        ring, g, t, boxes, producer = _box_ring(stages, X, rows, cols)

        def consumer(i, slot, carry):
            stage = ring.stage(0, slot)
            total = carry[0]
            for j in enigma.range_constexpr(BOX_ROWS * BOX_COLS // THREADS):
                total = total + stage[t + THREADS * j] * \
                    (i + 1).cast("float")
            carry[0] = total

        # A start that is not 0: an output the kernel did not write (the
        # runtime zero-fills outputs) cannot pass.
        total, = enigma.pipeline_loop(ring, boxes, producer=producer,
                                      consumer=consumer, init=[START])
        Out[g * THREADS + t] = total
    return box_sums


def _box_sums_reference(x, groups):
    sums = box_thread_sums(x, groups, BOX_ROWS, BOX_COLS, THREADS)
    out = np.full((groups, THREADS), START)
    for i in range(sums.shape[1]):
        out += (i + 1) * sums[:, i]
    return out.reshape(-1)


@pytest.mark.parametrize("stages", [2, 3, 4, 9, 16])
@pytest.mark.parametrize("rows,cols", [(1, 1), (16, 32), (37, 45),
                                       (100, 64)])
def test_pipeline_loop_matches_its_sequential_meaning(runtime, rng, stages,
                                                      rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    groups = -(-cols // BOX_COLS)
    compiled = enigma.compile(_weighted_box_sums(stages))
    raw = runtime.execute(compiled, [x], output_size=groups * THREADS * 4,
                          scalars=[rows, cols], grid=(groups * THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    out = np.frombuffer(raw, np.float32)
    want = _box_sums_reference(x.astype(np.float64), groups)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_pipeline_loop_with_no_iterations(runtime):
    """An empty pipeline copies nothing and returns the initial values."""
    x = np.zeros((1, 32), np.float32)
    compiled = enigma.compile(_weighted_box_sums(2))
    raw = runtime.execute(compiled, [x], output_size=THREADS * 4,
                          scalars=[0, 32], grid=(THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    assert np.all(np.frombuffer(raw, np.float32) == START)


def _box_copies(stages):
    """A pipeline without carried values: each 16 x 32 box i of column
    block g of X goes through the ring to Out, box after box."""
    @enigma.kernel
    def box_copies(X: enigma.f32, rows: enigma.Scalar(enigma.u32),
                   cols: enigma.Scalar(enigma.u32), Out: enigma.f32):
        ring, g, t, boxes, producer = _box_ring(stages, X, rows, cols)

        def consumer(i, slot, carry):
            stage = ring.stage(0, slot)
            base = (g * boxes + i) * (BOX_ROWS * BOX_COLS)
            for j in enigma.range_constexpr(BOX_ROWS * BOX_COLS // THREADS):
                Out[base + t + THREADS * j] = stage[t + THREADS * j]

        assert enigma.pipeline_loop(ring, boxes, producer=producer,
                                    consumer=consumer) == []
    return box_copies


@pytest.mark.parametrize("rows,cols", [(1, 1), (37, 45)])
def test_pipeline_loop_without_carried_values(runtime, rng, rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    groups, boxes = -(-cols // BOX_COLS), -(-rows // BOX_ROWS)
    compiled = enigma.compile(_box_copies(3))
    size = groups * boxes * BOX_ROWS * BOX_COLS
    raw = runtime.execute(compiled, [x], output_size=size * 4,
                          scalars=[rows, cols], grid=(groups * THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    padded = np.zeros((boxes * BOX_ROWS, groups * BOX_COLS), np.float32)
    padded[:rows, :cols] = x
    want = padded.reshape(boxes, BOX_ROWS, groups, BOX_COLS).transpose(
        2, 0, 1, 3).reshape(-1)
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), want)


def test_carried_values_assigned_under_if_in_a_consumer(runtime, rng):
    """carry[k] assigned inside an if_ of a consumer is the branch's
    result: here only the odd boxes are added."""
    @enigma.kernel
    def odd_box_sums(X: enigma.f32, rows: enigma.Scalar(enigma.u32),
                     cols: enigma.Scalar(enigma.u32), Out: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", BOX_ROWS * BOX_COLS)],
                                    threads=THREADS)
        g = enigma.threadgroup_position_in_grid("x")
        t = enigma.thread_index_in_threadgroup()
        boxes = (rows + (BOX_ROWS - 1)) // BOX_ROWS

        producer = _box_producer(ring, X, rows, cols, g)

        def consumer(i, slot, carry):
            stage = ring.stage(0, slot)
            with enigma.if_(i % 2 == 1):
                total = carry[0]
                for j in enigma.range_constexpr(
                        BOX_ROWS * BOX_COLS // THREADS):
                    total = total + stage[t + THREADS * j]
                carry[0] = total

        total, = enigma.pipeline_loop(ring, boxes, producer=producer,
                                      consumer=consumer, init=[START])
        Out[g * THREADS + t] = total

    rows, cols = 70, 45
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    groups, boxes = -(-cols // BOX_COLS), -(-rows // BOX_ROWS)
    raw = runtime.execute(enigma.compile(odd_box_sums), [x],
                          output_size=groups * THREADS * 4,
                          scalars=[rows, cols], grid=(groups * THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    padded = np.zeros((boxes * BOX_ROWS, groups * BOX_COLS))
    padded[:rows, :cols] = x
    want = np.full(groups * THREADS, START)
    for g in range(groups):
        for i in range(1, boxes, 2):
            box = padded[i * BOX_ROWS:(i + 1) * BOX_ROWS,
                         g * BOX_COLS:(g + 1) * BOX_COLS].reshape(-1)
            for t in range(THREADS):
                want[g * THREADS + t] += box[t::THREADS].sum()
    np.testing.assert_allclose(np.frombuffer(raw, np.float32), want,
                               rtol=1e-5, atol=1e-4)


def test_a_pipeline_kernel_refuses_other_threadgroup_sizes():
    compiled = enigma.compile(_weighted_box_sums(2))
    rt = enigma.CpuRuntime()
    with pytest.raises(enigma.DispatchError, match="threadgroups of 128"):
        rt.execute(compiled, [np.zeros((4, 4), np.float32)],
                   output_size=4 * 256, scalars=[4, 4], grid=(256, 1, 1),
                   threads=(64, 1, 1))


# --------------------------------------------------------------------------
# gemm_block's warp-specialised configurations
# --------------------------------------------------------------------------

def _target(rt):
    return {"cuda": "cuda", "metal": "metal"}.get(rt.name, "cpu")


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 77, 130), (65, 63, 64),
                                   (130, 129, 97), (200, 64, 200)])
def test_gemm_bf16_warp_specialized(runtime, rng, m, n, k):
    ex = _example("gemm_bf16")
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    for config in enigma.gemm_configs(_target(runtime), "bf16",
                                      warp_specialized=True):
        # A few threadgroups for many blocks: the persistent schedule.
        c = ex.run(runtime, a, b, config, processors=3)
        ex.check_output(c, a, b)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (16, 70, 1000),
                                   (130, 65, 129)])
def test_gemm_bf16_deep_rings(runtime, rng, m, n, k):
    """Rings of more than 8 stages (small-M products keep more of B in
    flight); more stages than K tiles too."""
    ex = _example("gemm_bf16")
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    for stages in (9, 12 if runtime.name == "metal-host" else 16):
        # 64 x 16 tiles of 16: 12 stages fit Metal's 32 KiB.
        config = enigma.MmaConfig(64, 16, 16, 4, 1, stages,
                                  warp_specialized=True)
        c = ex.run(runtime, a, b, config)
        ex.check_output(c, a, b)


@pytest.mark.parametrize("m,n,k", [(1, 3, 5), (70, 33, 40), (64, 129, 130)])
@pytest.mark.parametrize("tf32", [False, True])
def test_gemm_f32_warp_specialized(runtime, rng, m, n, k, tf32):
    ex = _example("gemm_f32")
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    for config in enigma.gemm_configs(_target(runtime), "f32", tf32,
                                      warp_specialized=True):
        c = ex.run(runtime, a, b, config, allow_tf32=tf32, processors=2)
        ex.check_output(c, a, b, tf32)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 77, 300), (65, 63, 130),
                                   (70, 129, 257)])
@pytest.mark.parametrize("split", [2, 3, 5])
def test_gemm_split_k(runtime, rng, m, n, k, split):
    """K in `split` ranges of whole tiles (some empty when K has fewer
    tiles), float partials, then their fixed-order sum: by a second
    kernel, and in the kernel by the last threadgroup of each block (the
    same bits; its counter word does not fit beside Metal's 32 KiB of
    stages of the first configuration)."""
    ex = _example("gemm_bf16")
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    for config in (enigma.MmaConfig(64, 64, 64, 4, 1, 2, warp_specialized=True,
                                    split_k=split),
                   enigma.MmaConfig(64, 64, 32, 2, 2, 3, warp_specialized=True,
                                    split_k=split)):
        c = ex.run(runtime, a, b, config, sum_in_kernel=False)
        ex.check_output(c, a, b)
        if runtime.name == "metal-host" and config.bk == 64:
            continue
        assert np.array_equal(ex.run(runtime, a, b, config,
                                     sum_in_kernel=True), c), config


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (16, 200, 300), (7, 129, 64)])
def test_decode_blocks(runtime, rng, m, n, k):
    """16-row blocks of simdgroup products (the built-in choice at M <=
    16), whole and split, with M = 1, odd N and K; the built-in
    configurations themselves (16 and 12 stages) on the CPU and CUDA, two
    stages on Metal's 32 KiB."""
    ex = _example("gemm_bf16")
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    configs = [enigma.MmaConfig(16, 64, 64, 1, 4, 2, warp_specialized=True),
               enigma.MmaConfig(16, 128, 32, 1, 4, 2, warp_specialized=True,
                                split_k=3)]
    if runtime.name in ("cpu", "cuda"):
        configs += [enigma.gemm_config_for(m, n, k),
                    enigma.gemm_config_for(16, 4096, 14336)]
        assert {c.bm for c in configs} == {16}
    for config in configs:
        ex.check_output(ex.run(runtime, a, b, config), a, b)


def test_split_k_partials_and_their_sum(runtime, rng):
    """The partials are each range's product (float64 reference per
    range), poisoned first; the sum adds them in order 0, 1, ... so it
    equals numpy's float32 left-to-right sum bit for bit."""
    m, n, k, split = 37, 45, 200, 3
    config = enigma.MmaConfig(64, 64, 32, 2, 2, 2, warp_specialized=True,
                              split_k=split)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)

    @enigma.kernel
    def partials(A: enigma.f32, B: enigma.f32, M: enigma.Scalar(enigma.u32),
                 N: enigma.Scalar(enigma.u32), K: enigma.Scalar(enigma.u32),
                 W: enigma.f32):
        enigma.gemm_block(A, B, W, m=M, n=N, k=K, config=config)

    grid, threads = config.launch(m, n)
    assert grid[1] == split
    raw = runtime.execute(enigma.compile(partials), [a, b],
                          output_size=split * m * n * 4, scalars=[m, n, k],
                          grid=grid, threads=threads)
    w = np.frombuffer(raw, np.float32).reshape(split, m, n)
    per = config.k_tiles_per_split(k) * config.bk
    assert per == 96      # 7 tiles of 32: 3, 3 and 1
    for s in range(split):
        ks = slice(s * per, min(k, (s + 1) * per))
        want = a[:, ks].astype(np.float64) @ b[ks].astype(np.float64)
        bound = 2 * k * 2.0**-24 * (np.abs(a[:, ks]) @ np.abs(b[ks])) + 1e-30
        assert np.all(np.abs(w[s] - want) <= bound), s

    @enigma.kernel
    def reduce(W: enigma.f32, M: enigma.Scalar(enigma.u32),
               N: enigma.Scalar(enigma.u32), C: enigma.f32):
        enigma.gemm_split_k_reduce(W, C, m=M, n=N, splits=split)

    grid, threads = enigma.split_k_reduce_launch(m, n)
    out = runtime.execute(enigma.compile(reduce), [w.copy()],
                          output_size=m * n * 4, scalars=[m, n], grid=grid,
                          threads=threads)
    want = (w[0] + w[1]) + w[2]
    assert np.array_equal(np.frombuffer(out, np.float32).reshape(m, n), want)


def test_split_k_mistakes_are_refused():
    ex = _example("gemm_bf16")
    for config, words in (
            (enigma.MmaConfig(64, 64, 64, 4, 1, 2, split_k=2),
             "warp_specialized=True"),
            (enigma.MmaConfig(64, 64, 64, 4, 1, 2, warp_specialized=True,
                              persistent=True, split_k=2), "persistent"),
            (enigma.MmaConfig(64, 64, 64, 4, 1, 2, warp_specialized=True,
                              split_k=0), "split_k must be at least 1")):
        with pytest.raises(enigma.EnigmaError, match=words):
            enigma.compile(ex.make_kernel(config))

    @enigma.kernel
    def bf16_partials(A: enigma.bf16, B: enigma.bf16, C: enigma.bf16):
        enigma.gemm_block(A, B, C, m=8, n=8, k=8,
                          config=enigma.MmaConfig(64, 64, 64, 4, 1, 2,
                                                  warp_specialized=True,
                                                  split_k=2))

    with pytest.raises(enigma.EnigmaError, match="float partial products"):
        enigma.compile(bf16_partials)


def test_gemm_config_for_follows_its_rule():
    """docs/design/gemm-heuristic.md on H100 shapes (132 processors)."""
    cfg = enigma.gemm_config_for
    big = cfg(4096, 4096, 4096)
    assert (big.bm, big.bn, big.persistent, big.split_k) == (128, 256, True, 1)
    # At M <= 16 blocks run as 16 rows of simdgroup products (a 64-row
    # tile would be three quarters zeros). 64 whole blocks of 16 x 64 cost
    # the memory's time (224 decode steps of 0.15 us are less), which a
    # split would only add its partials and second kernel to.
    decode = cfg(16, 4096, 14336)
    assert (decode.bm, decode.bn, decode.split_k, decode.wm, decode.wn) == \
        (16, 64, 1, 1, 4)
    # At M = 17 the rows are 64: 224 steps of 0.21 us in one wave of 32
    # blocks of 64 x 128 are slower than K in 4 on 128 multiprocessors.
    assert (cfg(17, 4096, 14336).bm, cfg(17, 4096, 14336).split_k) == (64, 4)
    # 128 blocks of 64 columns stream B where 64 of 128 would be modelled
    # as fast: the narrower decode block comes first below 132 blocks.
    narrow = cfg(16, 8192, 8192)
    assert (narrow.bm, narrow.bn, narrow.split_k, narrow.stages) == \
        (16, 64, 1, 16)
    # 160 blocks of 64 fill the GPU: 16 x 128 whole.
    assert (cfg(16, 10240, 8192).bn, cfg(16, 10240, 8192).split_k) == (128, 1)
    wide = cfg(16, 28672, 4096)         # 224 blocks fill the GPU
    assert (wide.bm, wide.split_k, wide.persistent) == (64, 1, True)
    # 64 blocks of 64 x 128: 64 steps (13 us) below the memory's time on
    # 64 multiprocessors; no split, no reduction.
    small = cfg(128, 4096, 4096)
    assert (small.bm, small.bn, small.split_k) == (64, 128, 1)
    # 64 blocks of 128 x 128 stream 134 MB at the memory's rate; 128 x 64
    # is no faster (the earlier block stays).
    fill = cfg(128, 8192, 8192)
    assert (fill.bm, fill.bn, fill.split_k) == (128, 128, 1)
    # Long K: whole 64 x 128 blocks (224 steps, 47 us) beat K in 4.
    long_k = cfg(128, 4096, 14336)
    assert (long_k.bm, long_k.bn, long_k.split_k) == (64, 128, 1)
    # Stream-K is never the built-in choice (measured slower).
    assert all(cfg(mm, nn, kk).stream_k == 0 for mm in (1, 16, 128, 4096)
               for nn, kk in ((6144, 4096), (10240, 8192), (28672, 4096)))
    short = cfg(16, 4096, 128)          # 2 K tiles: no split
    assert short.split_k == 1
    # Fewer multiprocessors: 16 x 128 blocks in two K ranges.
    assert cfg(16, 4096, 14336, sm_count=64).split_k == 2
    assert cfg(64, 64, 64, "f32") == enigma.default_gemm_config("cuda", "f32")
    assert cfg(64, 64, 64, target="cpu") == \
        enigma.default_gemm_config("cpu", "bf16")
    with pytest.raises(enigma.EnigmaError, match="m must be a positive int"):
        cfg(0, 1, 1)
    # Every choice is a configuration gemm_block accepts.
    for m in (1, 16, 128, 4096):
        for n, k in ((6144, 4096), (4096, 14336), (57344, 8192)):
            c = cfg(m, n, k)
            assert c.warp_specialized and c.smem_bytes("bf16") <= 227 * 1024


def test_gemm_runs_the_built_in_choice_by_default(runtime, rng):
    ex = _example("gemm_bf16")
    m, n, k = 3, 70, 90
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    ex.check_output(ex.run(runtime, a, b), a, b)


@pytest.mark.parametrize("cluster", [2, 4])
def test_gemm_clusters_share_rows_of_a(runtime, rng, cluster):
    """Clustered threadgroups take consecutive block columns of one block
    row (odd block counts leave a cluster's last block outside C)."""
    ex = _example("gemm_bf16")
    m, n, k = 70, 3 * 64 + 5, 100
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    for persistent in (False, True):
        config = enigma.MmaConfig(64, 64, 64, 4, 1, 2, warp_specialized=True,
                                  persistent=persistent, cluster=cluster)
        c = ex.run(runtime, a, b, config, processors=2 * cluster)
        ex.check_output(c, a, b)


@pytest.mark.parametrize("cluster", [2, 4])
@pytest.mark.parametrize("b_transposed", [False, True])
def test_gemm_clusters_share_columns_of_b(runtime, rng, cluster,
                                          b_transposed):
    """With cluster_shares="b" clustered threadgroups take consecutive
    block rows of one block column (3 block rows: a cluster's last block
    lies below C), B stored k x n or n x k."""
    ex = _example("gemm_bf16")
    m, n, k = 2 * 64 + 7, 2 * 64 + 3, 150
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    for persistent in (False, True):
        config = enigma.MmaConfig(64, 64, 64, 4, 1, 2, warp_specialized=True,
                                  persistent=persistent, cluster=cluster,
                                  cluster_shares="b")
        grid, threads = config.launch(m, n, processors=2 * cluster)

        @enigma.kernel
        def gemm_b(A: enigma.bf16, B: enigma.bf16, C: enigma.f32,
                   M: enigma.Scalar(enigma.u32),
                   N: enigma.Scalar(enigma.u32),
                   K: enigma.Scalar(enigma.u32)):
            enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                              b_transposed=b_transposed)

        b_in = np.ascontiguousarray(b.T) if b_transposed else b
        raw = runtime.execute(enigma.compile(gemm_b), [a, b_in],
                              output_size=m * n * 4, scalars=[m, n, k],
                              grid=grid, threads=threads)
        out = np.frombuffer(raw, np.float32).reshape(m, n)
        want = ex.from_bf16(a).astype(np.float64) @ \
            ex.from_bf16(b).astype(np.float64)
        assert np.allclose(out, want, rtol=1e-3, atol=1e-3), config


def test_unswizzled_b_split_among_simdgroups_is_refused(runtime, rng):
    """16 x 192 blocks of four simdgroups (48 columns each, B k x n in one
    unswizzled tile) gave wrong products on an H200: refused with the
    ways around it; B stored n x k is another layout (K-major rows), which
    runs here as before."""
    ex = _example("gemm_bf16")
    config = enigma.MmaConfig(16, 192, 64, 1, 4, 2, warp_specialized=True)
    with pytest.raises(enigma.EnigmaError, match="multiple or a divisor"):
        ex.compiled(config)
    # One simdgroup column, rows of 320 bytes: refused too (unverified).
    with pytest.raises(enigma.EnigmaError, match="at most 256 bytes"):
        ex.compiled(enigma.MmaConfig(64, 160, 64, 4, 1, 2,
                                     warp_specialized=True))
    m, n, k = 5, 200, 70
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))

    @enigma.kernel
    def gemm_nk(A: enigma.bf16, B: enigma.bf16, C: enigma.f32,
                M: enigma.Scalar(enigma.u32), N: enigma.Scalar(enigma.u32),
                K: enigma.Scalar(enigma.u32)):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                          b_transposed=True)

    grid, threads = config.launch(m, n)
    if runtime.name == "metal-host":
        pytest.skip("2 stages of 16 x 192 tiles need 52 KiB (Metal: 32)")
    raw = runtime.execute(enigma.compile(gemm_nk),
                          [a, np.ascontiguousarray(b.T)],
                          output_size=m * n * 4, scalars=[m, n, k],
                          grid=grid, threads=threads)
    out = np.frombuffer(raw, np.float32).reshape(m, n)
    want = ex.from_bf16(a).astype(np.float64) @ \
        ex.from_bf16(b).astype(np.float64)
    assert np.allclose(out, want, rtol=1e-3, atol=1e-3)


def test_cluster_shares_b_launch_shape_and_mistakes():
    c = enigma.MmaConfig(64, 64, 64, 4, 1, 12, warp_specialized=True,
                         persistent=True, cluster=2, cluster_shares="b")
    # 3 block rows padded to 4 (two clusters per block column), 2 columns.
    assert c.tiles(130, 128) == 4 * 2
    assert c.tiles(128, 130) == 2 * 3
    assert "cluster_shares='b'" in repr(c)
    assert "cluster_shares" not in repr(enigma.MmaConfig(
        64, 64, 64, 4, 1, 12, warp_specialized=True, cluster=2))
    assert c != enigma.MmaConfig(64, 64, 64, 4, 1, 12, warp_specialized=True,
                                 persistent=True, cluster=2)
    with pytest.raises(enigma.EnigmaError, match="cluster_shares"):
        enigma.MmaConfig(64, 64, 64, 4, 1, 2, warp_specialized=True,
                         cluster=2, cluster_shares="c").tiles(64, 64)


def test_gemm_transposed_operands_warp_specialized(runtime, rng):
    m, n, k = 48, 80, 72
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    config = enigma.MmaConfig(64, 64, 32, 2, 2, 2, warp_specialized=True)

    @enigma.kernel
    def gemm_t(At: enigma.f32, Bt: enigma.f32, M: enigma.Scalar(enigma.u32),
               N: enigma.Scalar(enigma.u32), K: enigma.Scalar(enigma.u32),
               C: enigma.f32):
        enigma.gemm_block(At, Bt, C, m=M, n=N, k=K, config=config,
                          a_transposed=True, b_transposed=True)

    grid, threads = config.launch(m, n)
    raw = runtime.execute(enigma.compile(gemm_t),
                          [np.ascontiguousarray(a.T),
                           np.ascontiguousarray(b.T)],
                          output_size=m * n * 4, scalars=[m, n, k], grid=grid,
                          threads=threads)
    out = np.frombuffer(raw, np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = 2 * k * 2.0**-24 * (np.abs(a) @ np.abs(b)) + 1e-30
    assert np.all(np.abs(out.reshape(m, n) - want) <= bound)


def test_persistent_launch_shape():
    c = enigma.MmaConfig(128, 256, 64, 8, 1, 4, warp_specialized=True,
                         persistent=True, cluster=2)
    assert c.tiles(1000, 1000) == 8 * 4           # 4 columns: 2 clusters
    assert c.blocks(1000, 1000, processors=132) == 32
    assert c.blocks(4096, 4096, processors=132) == 132
    assert c.blocks(4096, 4096, processors=133) == 132   # whole clusters
    assert c.launch(4096, 4096, processors=132) == ((132 * 256, 1, 1),
                                                    (256, 1, 1))
    assert c.blocks(4096, 4096) == c.tiles(4096, 4096)
    assert c.producer_registers == 56 and c.consumer_registers == 224
    assert "warp_specialized=True" in repr(c) and "cluster=2" in repr(c)


# --------------------------------------------------------------------------
# Mistakes
# --------------------------------------------------------------------------

def test_a_producer_that_stores_is_refused():
    @enigma.kernel
    def bad(X: enigma.f32, Out: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=128)

        def producer(i, slot):
            Out[i] = 1.0

        def consumer(i, slot, carry):
            pass

        enigma.pipeline_loop(ring, 4, producer=producer, consumer=consumer)

    msg = compile_error(bad)
    assert "producer region" in msg and "test_pipelines.py" in msg, msg


def test_a_consumer_that_writes_the_ring_is_refused():
    @enigma.kernel
    def bad(X: enigma.f32, Out: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=128)

        def consumer(i, slot, carry):
            ring.stage(0, slot)[0] = 1.0

        enigma.pipeline_loop(ring, 4, producer=lambda i, slot: None,
                             consumer=consumer)

    msg = compile_error(bad)
    assert "writes a pipeline ring's buffer" in msg, msg


def test_role_registers_that_do_not_fit_are_refused():
    @enigma.kernel
    def bad(X: enigma.f32):
        enigma.pipeline_ring(2, [("float", 512)], threads=256,
                             consumer_registers=248)

    msg = compile_error(bad)
    assert "128 x 40 + 256 x 248 = 68608" in msg and "384 x 168 = 64512" \
        in msg, msg


def test_roles_that_fit_64k_but_not_the_launch_are_refused():
    # 512 consumers at 120 and the producer at 24 fit 64K registers, but a
    # block of 640 threads holds 640 x 96 = 61440 (65536 / 640 in units of
    # 8): setmaxnreg.inc hung on an H100 with these numbers.
    @enigma.kernel
    def bad(X: enigma.f32):
        enigma.pipeline_ring(2, [("float", 512)], threads=512,
                             producer_registers=24, consumer_registers=120)

    msg = compile_error(bad)
    assert "128 x 24 + 512 x 120 = 64512" in msg and \
        "640 x 96 = 61440" in msg and "test_pipelines.py" in msg, msg


def test_gemm_configs_give_roles_that_fit_the_launch():
    for dtype in ("bf16", "f32"):
        for tf32 in ((False, True) if dtype == "f32" else (False,)):
            for c in enigma.gemm_configs("cuda", dtype, tf32,
                                         warp_specialized=True):
                total = c.threads + 128
                each = min(255, 65536 // total // 8 * 8)
                held = -(-each // 8) * 8
                assert (128 * c.producer_registers +
                        c.threads * c.consumer_registers <= total * held), c
    wide = enigma.MmaConfig(256, 128, 64, 16, 1, 4, warp_specialized=True,
                            persistent=True)
    assert wide.producer_registers == 24 and wide.consumer_registers == 112


def test_a_threadgroup_that_is_not_warpgroups_is_refused():
    @enigma.kernel
    def bad(X: enigma.f32):
        enigma.pipeline_ring(2, [("float", 512)], threads=96)

    assert "multiple of 128" in compile_error(bad)


def test_a_pipeline_under_a_thread_dependent_branch_is_refused():
    @enigma.kernel
    def bad(X: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=128)
        with enigma.if_(enigma.thread_index_in_threadgroup() < 32):
            enigma.pipeline_loop(ring, 4, producer=lambda i, s: None,
                                 consumer=lambda i, s, c: None)

    assert "differs between threads" in compile_error(bad)


def test_front_end_mistakes():
    @enigma.kernel
    def bad_stages(X: enigma.f32):
        enigma.pipeline_ring(17, [("float", 512)], threads=128)

    with pytest.raises(enigma.EnigmaError, match="stages must be 2 to 16"):
        enigma.compile(bad_stages)

    # The classic mainloop counts its copies with cp.async (8 stages at
    # most); the pipelined one takes rings of up to 16.
    with pytest.raises(enigma.EnigmaError,
                       match=r"stages must be 2 to 8 \(warp_specialized: "
                             r"16\), got 9"):
        @enigma.kernel
        def deep_classic(A: enigma.bf16, B: enigma.bf16, C: enigma.bf16):
            enigma.gemm_block(A, B, C, m=64, n=64, k=64,
                              config=enigma.MmaConfig(64, 64, 64, 4, 1, 9))
        enigma.compile(deep_classic)

    @enigma.kernel
    def copy_outside(X: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=128)
        enigma.stage_copy(ring, 0, 0, X, at=(0, 0), shape=(4, 4), ld=4,
                          box=(16, 32))

    with pytest.raises(enigma.EnigmaError, match="producer region"):
        enigma.compile(copy_outside)

    with pytest.raises(enigma.EnigmaError, match="cluster must be 1, 2 or 4"):
        @enigma.kernel
        def bad_cluster(A: enigma.bf16, B: enigma.bf16, C: enigma.bf16):
            enigma.gemm_block(A, B, C, m=64, n=64, k=64,
                              config=enigma.MmaConfig(
                                  64, 64, 64, 4, 1, 2,
                                  warp_specialized=True, cluster=3))
        enigma.compile(bad_cluster)

    with pytest.raises(enigma.EnigmaError, match="warp_specialized=True"):
        @enigma.kernel
        def persistent_classic(A: enigma.bf16, B: enigma.bf16,
                               C: enigma.bf16):
            enigma.gemm_block(A, B, C, m=64, n=64, k=64,
                              config=enigma.MmaConfig(64, 64, 64, 4, 1, 2,
                                                      persistent=True))
        enigma.compile(persistent_classic)


def test_clusters_need_whole_clusters_on_cuda_only():
    """The CPU and Metal ignore clusters; the CUDA runtime refuses grids
    that are not whole clusters (checked where a GPU is)."""
    config = enigma.MmaConfig(64, 64, 64, 4, 1, 2, warp_specialized=True,
                              cluster=2)
    assert config.blocks(64, 64) == 2   # one block column, padded


# --------------------------------------------------------------------------
# The CUDA text (NVRTC here; the GPU script runs it)
# --------------------------------------------------------------------------

def _cuda_sources():
    bf16, f32 = _example("gemm_bf16"), _example("gemm_f32")
    sources = {}
    for c in enigma.gemm_configs("cuda", "bf16", warp_specialized=True):
        sources[f"bf16 {c}"] = bf16.compiled(c).cuda_source
    for tf32 in (False, True):
        for c in enigma.gemm_configs("cuda", "f32", tf32,
                                     warp_specialized=True):
            sources[f"f32 tf32={tf32} {c}"] = \
                f32.compiled(c, tf32).cuda_source
    # The built-in choices for the Llama-3 projection shapes (split K).
    for m in (16, 128):
        for n, k in ((6144, 4096), (4096, 4096), (28672, 4096),
                     (10240, 8192)):
            c = enigma.gemm_config_for(m, n, k)
            sources.setdefault(f"bf16 {c}", bf16.compiled(c).cuda_source)
    for shares in ("a", "b"):   # the small-batch clusters the bench tries
        c = enigma.MmaConfig(64, 64, 64, 4, 1, 12, warp_specialized=True,
                             persistent=True, cluster=2, cluster_shares=shares)
        sources[f"bf16 {c}"] = bf16.compiled(c).cuda_source
    sources["split-K sum"] = bf16.compiled_reduce(4).cuda_source
    sources["box sums"] = enigma.compile(_weighted_box_sums(3)).cuda_source
    sources["box copies"] = enigma.compile(_box_copies(3)).cuda_source
    return sources


def test_cuda_text_has_roles_rings_and_tma():
    src = _example("gemm_bf16").compiled(
        enigma.MmaConfig(128, 256, 64, 8, 1, 4, warp_specialized=True,
                         persistent=True, cluster=2)).cuda_source
    assert "__launch_bounds__(384, 1)" in src
    assert "__cluster_dims__(2, 1, 1)" in src
    assert "enigma_producer_registers<56>()" in src
    assert "enigma_consumer_registers<224, 168>()" in src
    assert "enigma_ring_acquire(" in src and "enigma_ring_wait(" in src
    assert "enigma_ring_release<2>(" in src and "enigma_ring_commit(" in src
    assert "__grid_constant__ EnigmaTensorMap enigma_tmap0" in src
    # A is shared by the cluster (multicast), B is not.
    assert "enigma_stage_copy<128, 64, 64, 8192, 3, 3, 3, true, 2>" in src
    assert "enigma_stage_copy<64, 256, 64, 4096, 3, 3, 3, false, 2>" in src
    assert "enigma_consumer_barrier" not in src or "__syncthreads" not in \
        src.split("enigma_consumer_registers")[1]


def test_cuda_text_of_a_cluster_sharing_b():
    src = _example("gemm_bf16").compiled(
        enigma.MmaConfig(64, 64, 64, 4, 1, 12, warp_specialized=True,
                         persistent=True, cluster=2,
                         cluster_shares="b")).cuda_source
    assert "__cluster_dims__(2, 1, 1)" in src
    # B is shared by the cluster (multicast), A is not.
    assert "enigma_stage_copy<64, 64, 64, 4096, 3, 3, 3, false, 2>" in src
    assert "enigma_stage_copy<64, 64, 64, 4096, 3, 3, 3, true, 2>" in src
    assert src.index("false, 2>") < src.index("true, 2>")


def test_every_pipelined_cuda_text_compiles_for_hopper(monkeypatch):
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    silent = []
    for what, source in _cuda_sources().items():
        try:
            _, log = enigma._core.Runtime.nvrtc_check(source, "sm_90a", [],
                                                      log=True)
        except enigma.BackendUnavailableError:
            pytest.skip("NVRTC is not installed here")
        if "Used " not in log:
            # Some NVRTC builds (13.0 on the GPU machines) compile but keep
            # ptxas's -v report out of the program log.
            silent.append(what)
            continue
        assert spill_free(log), what + "\n" + log
        # No ptxas remark or warning of serialised warpgroup products
        # (C7514, C7515), of setmaxnreg ignored (C7508, C7507) or else.
        assert not re.findall(r"\(C75\d\d\)", log), what + "\n" + log
        assert "ptxas warning" not in log, what + "\n" + log
    # The same under the other NVRTC a test process may load (PyTorch's or
    # the toolkit's; _ptxas_reports.py says why).
    assert_clean_under_other_nvrtc(_cuda_sources())
    if silent:
        pytest.skip(f"this NVRTC gave no ptxas report for {len(silent)} "
                    "kernels (they compiled): registers and spills unread")


def test_bounds_checked_pipelines(runtime, rng):
    """Bounds-checked mode: the same results; on CUDA every ring wait gets
    a site (barrier, role, file:line) and a bounded wait."""
    x = rng.standard_normal((37, 45)).astype(np.float32)
    compiled = enigma.compile(_weighted_box_sums(3), bounds_check=True)
    raw = runtime.execute(compiled, [x], output_size=2 * THREADS * 4,
                          scalars=[37, 45], grid=(2 * THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    np.testing.assert_allclose(np.frombuffer(raw, np.float32),
                               _box_sums_reference(x.astype(np.float64), 2),
                               rtol=1e-5, atol=1e-4)
    sites = [s for s in compiled._artifact.bounds_check_sites
             if s[0] == "ring wait"]
    assert compiled.bounds_checked and len(sites) == 2, sites
    assert "full barrier" in sites[0][1] and "consumer" in sites[0][1]
    assert "empty barrier" in sites[1][1] and "producer" in sites[1][1]
    assert "test_pipelines.py" in sites[0][2]
    src = compiled.cuda_source
    assert "enigma_ring_wait(" in src and "&enigma_ring_check" in src
