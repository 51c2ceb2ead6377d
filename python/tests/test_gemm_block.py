"""enigma.gemm_block, enigma.gemm_tile and enigma.autotune end to end
(docs/reference/mma.md): any matrix shape, warpgroup shapes, the launches
and buffers refused before they run, the configurations and their rules,
and the tuner's timing, cache and skipped failures. Every result is
checked against a numpy float64 reference with fresh random inputs, on
every backend under test.

Products use inputs that are small multiples of 1/8, so every product and
every partial sum is exact in float and the comparison can be exact, in
whatever order a target sums.
"""

import functools

import numpy as np
import pytest

import enigma

from conftest import run_kernel
from _mma_helpers import U32, eighths, gemm_kernel, to_bits


# --------------------------------------------------------------------------
# gemm_block
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bf16", "f32"])
@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, True)])
@pytest.mark.parametrize("m,n,k", [(32, 32, 16), (70, 45, 40), (33, 96, 24)])
def test_gemm_block_any_shape(runtime, rng, dtype, a_t, b_t, m, n, k):
    config = enigma.MmaConfig(32, 32, 16, 2, 1, 2, group_m=2)
    a = eighths(rng, (m, k), -4, 4)
    b = eighths(rng, (k, n), -4, 4)
    out = run_kernel(runtime, gemm_kernel(dtype, a_t, b_t, config),
                     [to_bits(a.T if a_t else a, dtype),
                      to_bits(b.T if b_t else b, dtype)],
                     np.float32, m * n, *config.launch(m, n),
                     scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n),
                                  a.astype(np.float64) @ b + 1.0)


# Warpgroup shapes (enigma.warpgroup_shape: wgmma on Hopper, the same
# products elsewhere): B in 64-column blocks, or stored N x K.
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("b_t", [False, True])
@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (64, 64, 64), (70, 130, 100),
                                   (130, 64, 200)])
def test_gemm_block_warpgroup_shape(runtime, rng, dtype, b_t, stages, m, n,
                                    k):
    """2 stages: each product complete before the next copy; 3 stages:
    asynchronous products (one in flight across the barrier), 48 KiB."""
    if stages == 3 and runtime.name == "metal-host":
        pytest.skip("48 KiB of threadgroup memory: beyond Metal's 32 KiB")
    config = enigma.MmaConfig(64, 64, 64, 4, 1, stages, group_m=2)
    assert enigma.warpgroup_shape(config, dtype)
    a = eighths(rng, (m, k), -4, 4)
    b = eighths(rng, (k, n), -4, 4)
    out = run_kernel(runtime, gemm_kernel(dtype, False, b_t, config),
                     [to_bits(a, dtype), to_bits(b.T if b_t else b, dtype)],
                     np.float32, m * n, *config.launch(m, n),
                     scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n),
                                  a.astype(np.float64) @ b + 1.0)


@pytest.mark.parametrize("b_t", [False, True])
def test_gemm_block_large_warpgroup_tiles(runtime, rng, b_t):
    """The CUDA list's 128 x 256 configuration: 8 simdgroups of 16 x 256,
    three stages (144 KiB: beyond Metal's threadgroup memory)."""
    if runtime.name == "metal-host":
        pytest.skip("needs more than Metal's 32 KiB of threadgroup memory")
    config = enigma.MmaConfig(128, 256, 64, 8, 1, 3)
    assert config in enigma.gemm_configs("cuda", "bf16")
    assert enigma.warpgroup_shape(config, "bf16")
    m, n, k = 150, 300, 200
    a = eighths(rng, (m, k), -4, 4)
    b = eighths(rng, (k, n), -4, 4)
    out = run_kernel(runtime, gemm_kernel("bf16", False, b_t, config),
                     [to_bits(a, "bf16"), to_bits(b.T if b_t else b, "bf16")],
                     np.float32, m * n, *config.launch(m, n),
                     scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n),
                                  a.astype(np.float64) @ b + 1.0)


def test_gemm_block_runs_only_in_its_configurations_threadgroups(runtime, rng):
    """gemm_block's simdgroups split the block: the kernel is compiled for
    config.threads (a constant on CUDA and Metal) and any other launch is
    refused before it runs, instead of computing a wrong block."""
    config = enigma.MmaConfig(32, 32, 16, 2, 1, 2, group_m=2)
    compiled = gemm_kernel("f32", False, False, config)
    assert "__launch_bounds__(64)" in compiled.cuda_source
    assert "[[max_total_threads_per_threadgroup(64)]]" in \
        compiled.metal_source
    m = n = k = 32
    a = eighths(rng, (m, k), -4, 4)
    b = eighths(rng, (k, n), -4, 4)
    inputs = [to_bits(a, "f32"), to_bits(b, "f32")]
    for grid, threads, why in (((128, 1, 1), (128, 1, 1), "is 128 threads"),
                               ((32, 1, 1), (32, 1, 1), "is 32 threads"),
                               ((96, 1, 1), (64, 1, 1), "does not divide")):
        with pytest.raises(enigma.DispatchError,
                           match="runs only in threadgroups of 64 threads.*"
                           + why):
            runtime.execute(compiled, inputs, output_size=m * n * 4,
                            grid=grid, threads=threads, scalars=[m, n, k])
    out = run_kernel(runtime, compiled, inputs, np.float32, m * n,
                     *config.launch(m, n), scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n),
                                  a.astype(np.float64) @ b + 1.0)


@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, True)])
def test_gemm_block_buffers_too_small_are_dispatch_errors(runtime, rng, a_t,
                                                          b_t):
    """A buffer smaller than the matrix gemm_block reads or writes in it
    (sides from the scalars m, n, k) is refused before the launch, with
    the sizes in the message, instead of running past its end (on the CPU
    that corrupted the heap and killed the process); buffers large enough
    run, larger ones too."""
    config = enigma.MmaConfig(32, 32, 16, 2, 1, 2, group_m=2)
    compiled = gemm_kernel("f32", a_t, b_t, config)
    m, n, k = 40, 24, 20
    a = eighths(rng, (m, k), -4, 4)
    b = eighths(rng, (k, n), -4, 4)
    inputs = [to_bits(a.T if a_t else a, "f32").ravel(),
              to_bits(b.T if b_t else b, "f32").ravel()]
    grid, threads = config.launch(m, n)
    shape_a = "a k x m" if a_t else "an m x k"
    shape_b = "an n x k" if b_t else "a k x n"
    cases = (
        ([inputs[0][:-1], inputs[1]], m * n * 4,
         f"reads A as {shape_a} matrix.*{m * k - 1} \\(", m * k * 4),
        ([inputs[0], inputs[1][:k]], m * n * 4,
         f"reads B as {shape_b} matrix.*{k} \\(", k * n * 4),
        (inputs, m * n * 4 - 4,
         f"writes C as an m x n matrix \\(pitch ldc\\), {m} x {n} with "
         f"pitch {n}: {m * n} elements, but C \\(f32\\) has {m * n - 1}",
         m * n * 4))
    for ins, out_bytes, message, least in cases:
        with pytest.raises(enigma.DispatchError,
                           match=message + f".*at least {least} bytes"):
            runtime.execute(compiled, ins, output_size=out_bytes, grid=grid,
                            threads=threads, scalars=[m, n, k])
    want = a.astype(np.float64) @ b + 1.0
    out = run_kernel(runtime, compiled, inputs, np.float32, m * n, grid,
                     threads, scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n), want)
    # Larger buffers than the matrices: fine, the extra is left alone.
    extra = [np.concatenate([x, np.zeros(7, x.dtype)]) for x in inputs]
    raw = runtime.execute(compiled, extra, output_size=(m * n + 5) * 4,
                          grid=grid, threads=threads, scalars=[m, n, k])
    np.testing.assert_array_equal(
        np.frombuffer(raw, np.float32)[:m * n].reshape(m, n), want)


def test_gemm_block_with_computed_sides_is_not_judged_before_launch(rng):
    """A side computed in the kernel (here m = M + N - N) cannot be read
    before the launch: nothing is recorded for the matrices it sizes, so
    correct launches still run."""
    config = enigma.MmaConfig(32, 32, 16, 2, 1, 2, group_m=2)

    @enigma.kernel
    def gemm(A: enigma.f32, B: enigma.f32, M: U32, N: U32, K: U32,
             C: enigma.f32):
        enigma.gemm_block(A, B, C, m=M + N - N, n=N, k=K, config=config)
    compiled = enigma.compile(gemm)
    assert "enigma.matrix_extents" in compiled.mlir_source
    assert compiled.mlir_source.count("reads A") == 0
    m, n, k = 20, 16, 8
    a = eighths(rng, (m, k), -4, 4)
    b = eighths(rng, (k, n), -4, 4)
    out = run_kernel(enigma.CpuRuntime(), compiled,
                     [to_bits(a, "f32"), to_bits(b, "f32")], np.float32,
                     m * n, *config.launch(m, n), scalars=[m, n, k])
    np.testing.assert_array_equal(out.reshape(m, n), a.astype(np.float64) @ b)


def test_one_kernel_cannot_need_two_threadgroup_sizes():
    small = enigma.MmaConfig(32, 32, 16, 2, 1, 2)
    large = enigma.MmaConfig(64, 64, 16, 2, 2, 2)

    @enigma.kernel
    def two(A: enigma.f32, B: enigma.f32, C: enigma.f32, D: enigma.f32):
        enigma.gemm_block(A, B, C, m=32, n=32, k=16, config=small)
        enigma.gemm_block(A, B, D, m=64, n=64, k=16, config=large)
    with pytest.raises(enigma.EnigmaError,
                       match="threadgroups of 64 threads; this part needs "
                             "128"):
        enigma.compile(two)


def test_warpgroup_shape_rules():
    ok = enigma.MmaConfig(128, 256, 64, 8, 1, 3)
    assert enigma.warpgroup_shape(ok, "bf16")
    assert enigma.warpgroup_shape(ok, "f16")
    assert not enigma.warpgroup_shape(ok, "f32")
    assert not enigma.warpgroup_shape(ok, "bf16", a_transposed=True)
    assert not enigma.warpgroup_shape(enigma.MmaConfig(128, 256, 32, 8, 1, 3),
                                      "bf16")
    assert not enigma.warpgroup_shape(enigma.MmaConfig(128, 256, 64, 4, 2, 3),
                                      "bf16")
    assert not enigma.warpgroup_shape(enigma.MmaConfig(128, 96, 64, 8, 1, 3),
                                      "bf16")


def test_gemm_configs_fit_threadgroup_memory():
    limits = {"cuda": 227 * 1024, "metal": 32 * 1024, "cpu": 227 * 1024}
    for target, limit in limits.items():
        for dtype in ("bf16", "f16", "f32"):
            configs = enigma.gemm_configs(target, dtype)
            assert configs
            for c in configs:
                assert c.smem_bytes(dtype) <= limit
                assert (c.bm // c.wm) % 16 == 0 and (c.bn // c.wn) % 16 == 0
    # Hopper: the 16-bit list leads with warpgroup shapes of deep pipelines.
    first = enigma.gemm_configs("cuda", "bf16")[0]
    assert enigma.warpgroup_shape(first, "bf16") and first.stages >= 3
    with pytest.raises(enigma.EnigmaError, match="target must be one of"):
        enigma.gemm_configs("rocm", "bf16")
    # TF32 tensor cores have tiles of their own on CUDA, where they fit;
    # the other targets compute fp32 either way.
    tf32 = enigma.gemm_configs("cuda", "f32", allow_tf32=True)
    assert tf32 and tf32 != enigma.gemm_configs("cuda", "f32")
    assert all(c.smem_bytes("f32") <= 227 * 1024 for c in tf32)
    assert enigma.default_gemm_config("cuda", "f32", allow_tf32=True) == \
        tf32[0]
    assert enigma.gemm_configs("cpu", "f32", allow_tf32=True) == \
        enigma.gemm_configs("cpu", "f32")
    with pytest.raises(enigma.EnigmaError, match="allow_tf32 must be a bool"):
        enigma.gemm_configs("cuda", "f32", allow_tf32="yes")
    # Operands gemm_block cannot multiply have no tiles (not float ones).
    for target in ("cuda", "metal", "cpu"):
        with pytest.raises(enigma.EnigmaError, match="half, bfloat or float"):
            enigma.gemm_configs(target, "i8")
        with pytest.raises(enigma.EnigmaError, match="half, bfloat or float"):
            enigma.default_gemm_config(target, "u16")
    # A misspelt dtype: the function, the argument and the three it takes.
    with pytest.raises(enigma.EnigmaError,
                       match="gemm_configs: dtype must be half, bfloat or "
                             "float .*got 'bf61'"):
        enigma.gemm_configs("cuda", "bf61")
    with pytest.raises(enigma.EnigmaError,
                       match="gemm_config_for: dtype must be half, bfloat "
                             "or float .*got 'bf61'"):
        enigma.gemm_config_for(16, 16, 16, "bf61", 132)


# --------------------------------------------------------------------------
# gemm_tile
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _gemm_tile(dtype, a_t, b_t, accumulate):
    elem = getattr(enigma, dtype)
    m, n, k = 48, 64, 32

    @enigma.kernel
    def tile_product(A: elem, B: elem, C: enigma.f32):
        a = enigma.threadgroup_alloc(elem, m * k)
        b = enigma.threadgroup_alloc(elem, k * n)
        enigma.copy_tile(a, A, k if a_t else m, m if a_t else k,
                         src_ld=m if a_t else k)
        enigma.copy_tile(b, B, n if b_t else k, k if b_t else n,
                         src_ld=k if b_t else n)
        enigma.copy_commit()
        enigma.copy_wait(0)
        enigma.barrier()
        enigma.gemm_tile(a, b, C, m=m, n=n, k=k, a_transposed=a_t,
                         b_transposed=b_t, accumulate=accumulate)
    return enigma.compile(tile_product), m, n, k


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, True)])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("threads", [32, 96])
def test_gemm_tile_threadgroup_product(runtime, rng, dtype, a_t, b_t,
                                       accumulate, threads):
    """The product enigma.gemm can lower to: 48 x 64 output tiles (16 x 32
    where 32 does not divide) dealt to 1 or 3 simdgroups."""
    kernel, m, n, k = _gemm_tile(dtype, a_t, b_t, accumulate)
    a = eighths(rng, (m, k))
    b = eighths(rng, (k, n))
    c = eighths(rng, (m, n))
    raw = runtime.execute(kernel, [to_bits(a.T if a_t else a, dtype),
                                   to_bits(b.T if b_t else b, dtype)],
                          outputs=None, output_size=m * n * 4,
                          grid=(threads, 1, 1), threads=(threads, 1, 1)) \
        if not accumulate else None
    if accumulate:   # C is read and written: bind an initial C
        prepared = runtime.prepare(kernel, [to_bits(a.T if a_t else a, dtype),
                                            to_bits(b.T if b_t else b, dtype)],
                                   m * n * 4)
        prepared.dispatch((threads, 1, 1), (threads, 1, 1))   # C = 0 + AB
        prepared.dispatch((threads, 1, 1), (threads, 1, 1))   # C = AB + AB
        raw = prepared.read_output()
        prepared.release()
        want = 2 * (a.astype(np.float64) @ b)
    else:
        want = a.astype(np.float64) @ b
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32)
                                  .reshape(m, n), want)


# --------------------------------------------------------------------------
# autotune
# --------------------------------------------------------------------------

def test_autotune_times_caches_and_skips_failures(tmp_path, monkeypatch, rng,
                                                   capsys):
    monkeypatch.setenv("ENIGMA_CACHE_DIR", str(tmp_path))
    rt = enigma.CpuRuntime()
    good = enigma.MmaConfig(32, 32, 16, 2, 1, 2)
    bad = enigma.MmaConfig(24, 32, 16, 1, 1, 2)     # 24 rows: an EnigmaError
    built = []

    @enigma.autotune(configs=[bad, good], key=["m", "n", "k"], repeat=2,
                     batch=3)
    def tuned(config, m, n, k):
        built.append(config)
        return enigma.Launch(gemm_kernel("f32", False, False, config),
                             *config.launch(m, n), scalars=[m, n, k])

    a = eighths(rng, (40, 24))
    b = eighths(rng, (24, 40))
    checked = []

    def check(prepared):
        out = np.frombuffer(prepared.read_output(), np.float32)
        np.testing.assert_array_equal(out.reshape(40, 40),
                                      a.astype(np.float64) @ b + 1.0)
        checked.append(True)

    launch = tuned.best(rt, [a, b], output_size=40 * 40 * 4, check=check,
                        m=40, n=40, k=24)
    assert launch.compiled is gemm_kernel("f32", False, False, good)
    assert checked == [True]
    results = tuned.timings[(40, 40, 24)]
    assert isinstance(results[0][1], str) and "failed" in results[0][1]
    assert isinstance(results[1][1], float) and results[1][1] > 0
    files = list((tmp_path / "autotune").glob("tuned-*.json"))
    assert len(files) == 1
    # Not a terminal: no progress line.
    assert "autotune" not in capsys.readouterr().err
    out = np.frombuffer(launch.execute(rt, [a, b], output_size=40 * 40 * 4),
                        np.float32)
    np.testing.assert_array_equal(out.reshape(40, 40),
                                  a.astype(np.float64) @ b + 1.0)

    # A new process (a fresh tuner) reads the winner and builds only it.
    built.clear()
    again = enigma.autotune(configs=[bad, good], key=["m", "n", "k"])(
        tuned.fn)
    again.__name__ = "tuned"
    assert again.best(rt, [a, b], output_size=40 * 40 * 4, m=40, n=40,
                      k=24).compiled is launch.compiled
    assert built == [good]
