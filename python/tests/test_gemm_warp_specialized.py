"""gemm_block's warp-specialised configurations (docs/reference/pipelines.md,
built on the pipelines of test_pipelines.py) on every backend under test:
persistent, clustered (sharing rows of A or columns of B), split K,
16-row decode blocks, warpgroup and simdgroup products, at M = 1, odd N,
K not a multiple of the tile, against float64 references with fresh
random inputs; the built-in choice gemm_config_for, the launch shapes, the
registers of the roles, the mistakes refused, and the CUDA text of the
roles, rings and TMA copies (compiled for sm_90a by NVRTC with every other
pipelined kernel in test_pipelines.py).
"""

import numpy as np
import pytest

from conftest import load_example, skip_cuda_outside_child

import enigma


@pytest.fixture(autouse=True)
def _isolated_on_cuda(request):
    """As test_pipelines.py: on CUDA these run in bench/check_gemm_ws.py
    (test_pipelines.py's test_gpu_pipelines_in_their_own_processes), or
    here with ENIGMA_CUDA_PIPELINE_TESTS=1."""
    skip_cuda_outside_child(request,
                            "pipelines on CUDA run in bench/check_gemm_ws.py")


# --------------------------------------------------------------------------
# gemm_block's warp-specialised configurations
# --------------------------------------------------------------------------

def _target(rt):
    return {"cuda": "cuda", "metal": "metal"}.get(rt.name, "cpu")


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 77, 130), (65, 63, 64),
                                   (130, 129, 97), (200, 64, 200)])
def test_gemm_bf16_warp_specialized(runtime, rng, m, n, k):
    ex = load_example("gemm_bf16")
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
    ex = load_example("gemm_bf16")
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
    ex = load_example("gemm_f32")
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
    ex = load_example("gemm_bf16")
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
    ex = load_example("gemm_bf16")
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
    ex = load_example("gemm_bf16")
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
    ex = load_example("gemm_bf16")
    m, n, k = 3, 70, 90
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    ex.check_output(ex.run(runtime, a, b), a, b)


@pytest.mark.parametrize("cluster", [2, 4])
def test_gemm_clusters_share_rows_of_a(runtime, rng, cluster):
    """Clustered threadgroups take consecutive block columns of one block
    row (odd block counts leave a cluster's last block outside C)."""
    ex = load_example("gemm_bf16")
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
    ex = load_example("gemm_bf16")
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
    ex = load_example("gemm_bf16")
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


def test_clusters_need_whole_clusters_on_cuda_only():
    """The CPU and Metal ignore clusters; the CUDA runtime refuses grids
    that are not whole clusters (checked where a GPU is)."""
    config = enigma.MmaConfig(64, 64, 64, 4, 1, 2, warp_specialized=True,
                              cluster=2)
    assert config.blocks(64, 64) == 2   # one block column, padded


# --------------------------------------------------------------------------
# The CUDA text (NVRTC here; the GPU script runs it)
# --------------------------------------------------------------------------

def test_cuda_text_has_roles_rings_and_tma():
    src = load_example("gemm_bf16").compiled(
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
    src = load_example("gemm_bf16").compiled(
        enigma.MmaConfig(64, 64, 64, 4, 1, 12, warp_specialized=True,
                         persistent=True, cluster=2,
                         cluster_shares="b")).cuda_source
    assert "__cluster_dims__(2, 1, 1)" in src
    # B is shared by the cluster (multicast), A is not.
    assert "enigma_stage_copy<64, 64, 64, 4096, 3, 3, 3, false, 2>" in src
    assert "enigma_stage_copy<64, 64, 64, 4096, 3, 3, 3, true, 2>" in src
    assert src.index("false, 2>") < src.index("true, 2>")
