"""Stream-K gemm_block (MmaConfig(stream_k=G), docs/design/stream-k.md) on
every backend under test, against float64 numpy with fresh random inputs
and a NaN-poisoned workspace:

* the schedule (enigma.stream_k_schedule): every K step of every block
  exactly once, the data-parallel and stream-K parts, blocks split among
  several threadgroups;
* results at M = 1, odd N, K not a multiple of the K tile, with blocks
  split among 2 and 3 threadgroups, a user epilogue applied once per
  block, bf16 and float operands;
* the result bit for bit the same from run to run, and the flags left
  zero for the next launch;
* the mistakes refused before launch (a workspace or flags too small, a
  grid larger than the GPU runs at once, missing buffers);
* the built-in choice (enigma.gemm_config_for) listing stream-K among
  its ways without choosing it;
* the CUDA text of the stream-K configurations it lists, for sm_90a
  (NVRTC, no spills).

On CUDA (the GPU script) the kernels run in a process of their own with a
time limit (a wait that never ends fails instead of hanging the suite).
"""

import numpy as np
import pytest

from conftest import (assert_no_spills_on_hopper, check_float_product,
                      gemm_operands, load_example, run_on_cuda_in_child,
                      skip_cuda_outside_child)

import enigma



@pytest.fixture(autouse=True)
def _isolated_on_cuda(request):
    skip_cuda_outside_child(request, "stream-K on CUDA runs in its own "
                            "process (test_stream_k_on_cuda_in_its_own_"
                            "process)")


def test_stream_k_on_cuda_in_its_own_process():
    """Where the suite runs on CUDA: this file's tests on the GPU in a
    child process limited to 10 minutes."""
    run_on_cuda_in_child(__file__)


_example = load_example


def _ws(*shape, **options):
    return enigma.MmaConfig(*shape, warp_specialized=True, persistent=True,
                            **options)


# 16-bit operands: one warpgroup on 64 x 64 blocks of K 64; float: 2 x 2
# simdgroups on 64 x 64 blocks of K 32.
BF16 = (64, 64, 64, 4, 1, 2)
F32 = (64, 64, 32, 2, 2, 2)


# --------------------------------------------------------------------------
# The schedule
# --------------------------------------------------------------------------

@pytest.mark.parametrize("m,n,k,groups", [
    (1, 77, 300, 5), (1, 1, 1, 3), (130, 200, 97, 7), (64, 64, 640, 3),
    (300, 300, 64, 4), (320, 64, 128, 4), (1000, 1000, 1000, 132)])
def test_schedule_covers_every_k_step_once(m, n, k, groups):
    c = _ws(*F32, stream_k=groups)
    kt = -(-k // c.bk)
    tiles = c.tiles(m, n)
    seen = np.zeros((tiles, kt), np.int64)
    schedule = enigma.stream_k_schedule(c, m, n, k)
    assert len(schedule) == groups
    for units in schedule:
        for t, kb, ke in units:
            assert 0 <= kb < ke <= kt
            seen[t, kb:ke] += 1
        # At most one partial (first) and one finished block, after which
        # come whole blocks only.
        partials = [u for u in units if u[2] < kt]
        finished = [i for i, u in enumerate(units) if u[1] > 0 and u[2] == kt]
        assert partials in ([], units[:1])
        assert len(finished) <= 1
        for t, kb, ke in units[finished[0] + 1:] if finished else []:
            assert (kb, ke) == (0, kt)
    assert (seen == 1).all()


def test_schedule_parts():
    """Whole waves: all data-parallel; under a wave: all stream-K; else
    the last partial wave and one full wave in stream-K."""
    def split_blocks(c, m, n, k):
        kt = -(-k // c.bk)
        return {t for units in enigma.stream_k_schedule(c, m, n, k)
                for t, kb, ke in units if ke - kb < kt}
    c = _ws(*F32, stream_k=4)
    assert split_blocks(c, 128, 128, 640) == set()          # 4 blocks
    assert split_blocks(c, 64, 192, 640) == {0, 1, 2}       # 3 blocks
    # 10 blocks, 4 threadgroups: 2 in the last wave + 4 = 6 in stream-K
    # (2.5 blocks' steps each: 0-1 whole, 2 split...), 4 whole after.
    schedule = enigma.stream_k_schedule(c, 64, 640, 640)
    assert [u for u in schedule[0] if u[0] >= 6] == [(6, 0, 20)]
    assert {t for units in schedule for t, *_ in units} == set(range(10))
    assert max(t for t in split_blocks(c, 64, 640, 640)) < 6


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------

def _kernel(config, dtype, epilogue=None):
    """C (float) = A @ B [+ epilogue] with the flags as a second output."""
    t = enigma.bf16 if dtype == "bf16" else enigma.f32

    @enigma.kernel
    def stream_k_gemm(A: t, B: t, W: enigma.f32,
                      M: enigma.Scalar(enigma.u32),
                      N: enigma.Scalar(enigma.u32),
                      K: enigma.Scalar(enigma.u32), C: enigma.f32,
                      F: enigma.u32):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                          workspace=W, flags=F, epilogue=epilogue)
    return enigma.compile(stream_k_gemm)


def _run(runtime, compiled, config, a, b, m, n, k, groups=None):
    """(C, flags after the launch of ``groups`` threadgroups, default
    config.launch's); the workspace is poisoned with NaN."""
    floats, flags = enigma.stream_k_workspace(config)
    w = np.full(floats, np.nan, np.float32)
    grid, threads = config.launch(m, n)
    assert grid[0] == config.stream_k * config.threads
    if groups is not None:
        grid = (groups * config.threads, 1, 1)
    c, f = runtime.execute(compiled, [a, b, w], grid=grid, threads=threads,
                           scalars=[m, n, k],
                           output_sizes=[m * n * 4, flags * 4])
    return (np.frombuffer(c, np.float32).reshape(m, n),
            np.frombuffer(f, np.uint32))


def _most_split(config, m, n, k):
    """The most threadgroups sharing one block."""
    kt = -(-k // config.bk)
    parts = {}
    for units in enigma.stream_k_schedule(config, m, n, k):
        for t, kb, ke in units:
            if ke - kb < kt:
                parts[t] = parts.get(t, 0) + 1
    return max(parts.values(), default=1)


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
@pytest.mark.parametrize("m,n,k,groups,split", [
    (1, 77, 300, 5, 3),       # 2 blocks, 5 threadgroups: 3 on block 0
    (1, 1, 1, 3, 1),          # one K step: one threadgroup, two idle
    (65, 129, 257, 7, 2),     # 6 blocks: K split unevenly
    (130, 200, 97, 5, 2),     # 12 blocks: data-parallel and stream-K
    (64, 64, 700, 3, 3)])     # 1 block among 3
def test_stream_k_matches_float64(runtime, rng, dtype, m, n, k, groups,
                                  split):
    config = _ws(*(BF16 if dtype == "bf16" else F32), stream_k=groups)
    assert _most_split(config, m, n, k) == split
    a, b, fa, fb = gemm_operands(rng, m, n, k, dtype)
    c, flags = _run(runtime, _kernel(config, dtype), config, a, b, m, n, k)
    check_float_product(c, fa, fb)
    assert (flags == 0).all()   # lowered again for the next launch


def test_stream_k_epilogue_once_per_block(runtime, rng):
    """The epilogue sees the whole sum (finished blocks included) once:
    acc * 2 + column."""
    m, n, k, groups = 70, 100, 300, 5
    config = _ws(*F32, stream_k=groups)
    assert _most_split(config, m, n, k) >= 2

    def epilogue(acc, row, col):
        cols = enigma.mma_iota(1, acc.rows, acc.cols) + col
        return acc * 2.0 + cols.cast("float")

    a, b, fa, fb = gemm_operands(rng, m, n, k, "f32")
    c, _ = _run(runtime, _kernel(config, "f32", epilogue), config, a, b, m,
                n, k)
    check_float_product(c / 2, fa, fb, extra=np.arange(n) / 2.0)


def test_stream_k_is_the_same_bit_for_bit(runtime, rng):
    """Blocks split among 3 threadgroups, summed in a fixed order: three
    runs (the threadgroups finishing in whatever order) agree exactly."""
    m, n, k, groups = 64, 130, 1000, 7
    config = _ws(*F32, stream_k=groups)
    assert _most_split(config, m, n, k) == 3
    a, b, fa, fb = gemm_operands(rng, m, n, k, "f32")
    compiled = _kernel(config, "f32")
    first, _ = _run(runtime, compiled, config, a, b, m, n, k)
    check_float_product(first, fa, fb)
    for _ in range(2):
        again, _ = _run(runtime, compiled, config, a, b, m, n, k)
        assert np.array_equal(again.view(np.uint32), first.view(np.uint32))


@pytest.mark.parametrize("groups", [1, 2, 8])
def test_other_grids_divide_the_work_among_their_threadgroups(runtime, rng,
                                                               groups):
    """A launch of fewer threadgroups than stream_k divides the K steps
    among those; threadgroups beyond stream_k (the workspace's slots)
    stay idle."""
    m, n, k = 70, 130, 333
    config = _ws(*F32, stream_k=5)
    a, b, fa, fb = gemm_operands(rng, m, n, k, "f32")
    c, flags = _run(runtime, _kernel(config, "f32"), config, a, b, m, n, k,
                    groups)
    check_float_product(c, fa, fb)
    assert (flags == 0).all()
    assert len(enigma.stream_k_schedule(config, m, n, k, groups)) == \
        min(groups, 5)


def test_gemm_example_runs_stream_k(runtime, rng):
    ex = _example("gemm_bf16")
    m, n, k = 33, 150, 333
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    ex.check_output(ex.run(runtime, a, b, _ws(*BF16, stream_k=4)), a, b)


# --------------------------------------------------------------------------
# Mistakes
# --------------------------------------------------------------------------

def test_small_workspace_or_flags_are_refused_before_launch():
    rt = enigma.CpuRuntime()
    m, n, k = 10, 10, 10
    config = _ws(*F32, stream_k=4)
    compiled = _kernel(config, "f32")
    floats, flags = enigma.stream_k_workspace(config)
    assert (floats, flags) == (4 * 64 * 64, 4)
    a = np.ones((m, k), np.float32)
    b = np.ones((k, n), np.float32)
    grid, threads = config.launch(m, n)
    with pytest.raises(enigma.DispatchError, match="stream-K partials"):
        rt.execute(compiled, [a, b, np.zeros(floats - 1, np.float32)],
                   grid=grid, threads=threads, scalars=[m, n, k],
                   output_sizes=[m * n * 4, flags * 4])
    with pytest.raises(enigma.DispatchError, match="stream-K flags"):
        rt.execute(compiled, [a, b, np.zeros(floats, np.float32)],
                   grid=grid, threads=threads, scalars=[m, n, k],
                   output_sizes=[m * n * 4, (flags - 1) * 4])


def test_stream_k_grid_larger_than_the_gpu_is_refused():
    config = _ws(128, 128, 64, 8, 1, 6, stream_k=133)
    with pytest.raises(enigma.EnigmaError, match="at most 132"):
        config.launch(128, 4096, 132)
    assert config.launch(128, 4096)[0][0] == 133 * 256   # no GPU to judge


def test_stream_k_mistakes_are_refused():
    ex = _example("gemm_bf16")
    for config, words in (
            (enigma.MmaConfig(*BF16, warp_specialized=True, stream_k=3),
             "persistent=True"),
            (_ws(*BF16, stream_k=3, cluster=2), "without cluster"),
            (_ws(*BF16, stream_k=-1), "stream_k must be at least 0"),
            (_ws(*BF16, stream_k=5000), "stream_k must be 0 .off. to 4096")):
        with pytest.raises(enigma.EnigmaError, match=words):
            enigma.compile(ex.make_kernel(config))

    @enigma.kernel
    def no_workspace(A: enigma.bf16, B: enigma.bf16, C: enigma.f32):
        enigma.gemm_block(A, B, C, m=8, n=8, k=8,
                          config=_ws(*BF16, stream_k=3))

    with pytest.raises(enigma.EnigmaError, match="stream_k needs workspace"):
        enigma.compile(no_workspace)

    @enigma.kernel
    def stray(A: enigma.bf16, B: enigma.bf16, W: enigma.f32,
              C: enigma.f32):
        enigma.gemm_block(A, B, C, m=8, n=8, k=8, workspace=W,
                          config=_ws(*BF16))

    with pytest.raises(enigma.EnigmaError, match="belong to split-K and stream-K"):
        enigma.compile(stray)
    with pytest.raises(enigma.EnigmaError, match="stream_k > 0"):
        enigma.stream_k_workspace(_ws(*BF16))


# --------------------------------------------------------------------------
# The built-in choice and the CUDA text
# --------------------------------------------------------------------------

def test_gemm_config_for_lists_stream_k_without_choosing_it():
    """The built-in choice keeps stream-K out (measured slower than split
    K or whole blocks on an H100, docs/benchmarks.md) but lists it among
    the ways it weighed, for check_gemm_ws.py --compare-streamk."""
    from enigma._gemm_configs import _gemm_choices
    for m, n, k in ((16, 10240, 8192), (128, 28672, 4096),
                    (16, 6144, 4096)):
        assert enigma.gemm_config_for(m, n, k).stream_k == 0
        ways = {name: c for name, c, _ in _gemm_choices(m, n, k, 132)}
        assert ways["stream-K"].stream_k == 132
        assert ways["stream-K"].launch(m, n, 132)[0][0] == \
            132 * ways["stream-K"].threads
    assert enigma.gemm_config_for(4096, 4096, 4096).stream_k == 0


def test_built_in_stream_k_cuda_text_compiles_for_hopper(monkeypatch):
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    ex = _example("gemm_bf16")
    from enigma._gemm_configs import _gemm_choices
    for m, n, k in ((16, 10240, 8192), (128, 28672, 4096)):
        c = {name: c for name, c, _ in _gemm_choices(m, n, k, 132)}[
            "stream-K"]
        source = ex.compiled(c).cuda_source
        assert "memory_order_release" in source
        assert "memory_order_acquire" in source
        assert_no_spills_on_hopper(source, c)
