"""The matrix multiply-accumulate examples (examples/python/gemm_bf16.py,
gemm_f32.py, flash_attention.py) on every backend under test, at small and
odd sizes, against their float64 numpy references with fresh random inputs.
Tolerances live in each example's ``check_output``, with the reasoning:

* bfloat16 GEMM: float accumulation (2 K 2^-24 (|A| @ |B|)) plus the final
  rounding to bfloat16 (2^-8 |AB|);
* float GEMM: 2 K 2^-24 (|A| @ |B|), plus 2^-9 (|A| @ |B|) with TF32
  (operands truncated to 11 significant bits);
* attention: 2^-8 (max |V| + |O|), for P rounded to bfloat16 before P V
  and O rounded to bfloat16.

The check functions are tested too: a wrong result must fail them.
"""

import numpy as np
import pytest

from _ptxas_reports import spill_free

import enigma
from conftest import load_example


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (64, 64, 32), (100, 70, 45),
                                   (129, 200, 96)])
def test_gemm_bf16(runtime, rng, m, n, k):
    ex = load_example("gemm_bf16")
    a = ex.to_bf16(rng.standard_normal((m, k)))
    b = ex.to_bf16(rng.standard_normal((k, n)))
    c = ex.run(runtime, a, b)
    ex.check_output(c, a, b)
    bad = c.copy()
    bad.flat[len(bad.flat) // 2] ^= 0x0100     # flip a mantissa bit
    with pytest.raises(AssertionError):
        ex.check_output(bad, a, b)


def test_gemm_bf16_prepared_and_other_configs(runtime, rng):
    ex = load_example("gemm_bf16")
    a = ex.to_bf16(rng.standard_normal((96, 80)))
    b = ex.to_bf16(rng.standard_normal((80, 112)))
    prepared, grid, threads, check = ex.run_prepared(runtime, (a, b))
    try:
        prepared.dispatch(grid, threads)
        check(prepared.read_output())
    finally:
        prepared.release()
    # The CUDA tile shapes are correct everywhere (the CPU just runs them)
    # that has their threadgroup memory (Metal: 32 KiB).
    limit = 32 * 1024 if runtime.name == "metal-host" else 227 * 1024
    configs = [c for c in enigma.gemm_configs("cuda", "bf16")
               if c.smem_bytes("bf16") <= limit]
    for config in configs[:2]:
        ex.check_output(ex.run(runtime, a, b, config), a, b)


@pytest.mark.parametrize("tf32", [False, True])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (64, 64, 64), (77, 130, 50)])
def test_gemm_f32(runtime, rng, m, n, k, tf32):
    ex = load_example("gemm_f32")
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = ex.run(runtime, a, b, allow_tf32=tf32)
    ex.check_output(c, a, b, tf32)
    if not tf32 and m * n > 1:
        bad = c.copy()
        bad.flat[3] += 1e-3 * (abs(bad.flat[3]) + 1)
        with pytest.raises(AssertionError):
            ex.check_output(bad, a, b)


def test_gemm_f32_tf32_tiles(runtime, rng):
    # The TF32 tiles of CUDA at an edge size (every tile masked): all of
    # them on CUDA, where they run on tensor cores; two elsewhere, which
    # compute fp32 (within the TF32 bound all the same).
    ex = load_example("gemm_f32")
    a = rng.standard_normal((131, 72)).astype(np.float32)
    b = rng.standard_normal((72, 150)).astype(np.float32)
    limit = 32 * 1024 if runtime.name == "metal-host" else 227 * 1024
    configs = [c for c in enigma.gemm_configs("cuda", "f32", allow_tf32=True)
               if c.smem_bytes("f32") <= limit]
    if not configs:
        pytest.skip("no TF32 tile fits Metal's 32 KiB of threadgroup memory")
    for config in configs if runtime.name == "cuda" else configs[:2]:
        c = ex.run(runtime, a, b, config, allow_tf32=True)
        ex.check_output(c, a, b, tf32=True)
    if runtime.name == "cuda":   # and they are not fp32 FMA
        c = ex.run(runtime, a, b, configs[0], allow_tf32=True)
        with pytest.raises(AssertionError):
            ex.check_output(c, a, b)


@pytest.mark.parametrize("rows,cols", [(1, 1), (1, 37), (33, 1), (32, 32),
                                       (65, 97), (200, 31)])
def test_gemm_f32_transpose_kernel(runtime, rng, rows, cols):
    # Every element moved (the output starts zeroed, the inputs are never
    # zero), none written past the matrix (one element more, left zero).
    ex = load_example("gemm_f32")
    x = rng.uniform(1.0, 2.0, (rows, cols)).astype(np.float32)
    x *= rng.choice([-1.0, 1.0], x.shape).astype(np.float32)
    t = ex.transpose_launch(rows, cols)
    prepared = t.prepare(runtime, [x], output_size=(rows * cols + 1) * 4)
    try:
        prepared.dispatch(t.grid, t.threads)
        y = np.frombuffer(prepared.read_output(), np.float32)
    finally:
        prepared.release()
    assert np.array_equal(y[:-1].reshape(cols, rows), x.T)
    assert y[-1] == 0.0


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (77, 130, 50), (129, 300, 70)])
def test_gemm_f32_run_transposed(runtime, rng, m, n, k):
    # TF32 for B stored k x n through a transpose of B and the n x k
    # products: the CUDA tiles on CUDA (tensor cores: not fp32), the
    # runtime's default tile elsewhere.
    ex = load_example("gemm_f32")
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    configs = enigma.tf32_gemm_configs() if runtime.name == "cuda" else [None]
    for config in configs:
        c = ex.run_transposed(runtime, a, b, config)
        ex.check_output(c, a, b, tf32=True)
    if runtime.name == "cuda" and m * n * k > 1:
        with pytest.raises(AssertionError):
            ex.check_output(c, a, b)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (77, 130, 50), (129, 300, 70)])
def test_gemm_f32_run_swapped(runtime, rng, m, n, k):
    # TF32 for B stored k x n as C^T = B^T A^T (B's rows through
    # registers): the CUDA tiles on CUDA, a 32 KiB shape elsewhere.
    ex = load_example("gemm_f32")
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    configs = enigma.tf32_gemm_configs() if runtime.name == "cuda" else [None]
    for config in configs:
        c = ex.run_swapped(runtime, a, b, config)
        ex.check_output(c, a, b, tf32=True)
    if m * n * k > 1:   # tensor-core precision, not fp32, everywhere
        with pytest.raises(AssertionError):
            ex.check_output(c, a, b)


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("bh,s", [(1, 1), (2, 64), (3, 100), (1, 130)])
@pytest.mark.parametrize("q_shared", [False, True])
def test_flash_attention(runtime, rng, d, causal, bh, s, q_shared):
    """Both kernels (Q in registers, Q in threadgroup memory), edge and
    multi-block sequences: 130 keys take three blocks, so the products
    after the first (where Q is reused) are checked too."""
    ex = load_example("flash_attention")
    if q_shared and d == 128 and runtime.name == "metal-host":
        pytest.skip("Q, K and V blocks need 48 KiB: beyond Metal's 32 KiB")
    q, k, v = (ex.to_bf16(rng.standard_normal((bh, s, d))) for _ in range(3))
    o = ex.run(runtime, q, k, v, causal, q_shared)
    ex.check_output(o, q, k, v, causal)
    if s > 1:
        # Attending to the wrong keys must fail the check.
        wrong = ex.run(runtime, q, k, v, not causal, q_shared)
        with pytest.raises(AssertionError):
            ex.check_output(wrong, q, k, v, causal)


def test_flash_attention_prepared(runtime, rng):
    ex = load_example("flash_attention")
    q, k, v = (ex.to_bf16(rng.standard_normal((2, 80, 64))) for _ in range(3))
    prepared, grid, threads, check = ex.run_prepared(runtime, (q, k, v),
                                                     causal=True)
    try:
        prepared.dispatch(grid, threads)
        check(prepared.read_output())
    finally:
        prepared.release()


def test_attention_shape_mistakes():
    ex = load_example("flash_attention")
    q = np.zeros((2, 8, 32), np.uint16)
    with pytest.raises(ValueError, match="64 or 128"):
        ex.run(enigma.CpuRuntime(), q, q, q)
    with pytest.raises(ValueError, match="one shape"):
        ex.run(enigma.CpuRuntime(), q, q[:1], q)


def test_gemm_output_of_the_wrong_size_is_a_dispatch_error(rng):
    ex = load_example("gemm_bf16")
    a = ex.to_bf16(rng.standard_normal((32, 16)))
    b = ex.to_bf16(rng.standard_normal((16, 32)))
    config = enigma.gemm_configs("cpu", "bf16")[0]
    with pytest.raises(enigma.DispatchError):
        enigma.CpuRuntime().execute(ex.compiled(config), [a, b],
                                    output_size=32 * 32 * 2 + 1,
                                    grid=config.launch(32, 32)[0],
                                    threads=config.launch(32, 32)[1],
                                    scalars=[32, 32, 16])


def test_tuned_launch_refuses_a_small_output(rng):
    ex = load_example("gemm_bf16")
    config = enigma.gemm_configs("cpu", "bf16")[0]
    launch = ex.tuned(config, m=40, n=24, k=16)
    a = ex.to_bf16(rng.standard_normal((40, 16)))
    b = ex.to_bf16(rng.standard_normal((16, 24)))
    with pytest.raises(enigma.DispatchError, match="writes 1920"):
        launch.execute(enigma.CpuRuntime(), [a, b], output_size=40 * 24)
    out = launch.execute(enigma.CpuRuntime(), [a, b], output_size=40 * 24 * 2)
    ex.check_output(np.frombuffer(out, np.uint16).reshape(40, 24), a, b)


def test_flash_attention_autotune_over_keys_per_block(runtime, rng, tmp_path,
                                                      monkeypatch):
    """The attention sweep over (keys per block, query rows per
    threadgroup): every pair is correct; 128 keys with D = 128 need more
    than Metal's 32 KiB of threadgroup memory: skipped where the runtime
    keeps Metal's limit, run where it allows more."""
    monkeypatch.setenv("ENIGMA_CACHE_DIR", str(tmp_path))
    ex = load_example("flash_attention")
    bh, s, d = 2, 96, 128
    q, k, v = (ex.to_bf16(rng.standard_normal((bh, s, d))) for _ in range(3))

    def check(prepared):
        ex.check_output(np.frombuffer(prepared.read_output(), np.uint16)
                        .reshape(q.shape), q, k, v, True)

    launch = ex.tuned.best(runtime, [q, k, v], output_size=q.size * 2,
                           check=check, bh=bh, s=s, d=d, causal=True)
    timings = dict(ex.tuned.timings[(bh, s, d, True)])
    # 64 and 128 query rows per threadgroup, 32 to 128 keys per block, Q
    # in registers or threadgroup memory: 2 bc D (+ rows D) elements.
    assert set(timings) == set(ex.CONFIGS)
    for (bc, rows, q_shared), timing in timings.items():
        elements = 2 * bc * d + (rows * d if q_shared else 0)
        if elements * 2 <= 32768 or runtime.name in ("cpu", "cuda"):
            assert isinstance(timing, float), ((bc, rows, q_shared), timing)
        else:
            assert "32768" in timing or "32 KiB" in timing, timing
    out = launch.execute(runtime, [q, k, v], output_size=q.size * 2)
    ex.check_output(np.frombuffer(out, np.uint16).reshape(q.shape), q, k, v,
                    True)


def _ptxas_remarks(source):
    """ptxas's remarks on the sm_90a compile of a CUDA source (NVRTC only,
    no GPU), or None where NVRTC is missing."""
    try:
        _, log = enigma._core.Runtime.nvrtc_check(source, "sm_90a", [],
                                                  log=True)
    except enigma.BackendUnavailableError:
        return None
    return log


def test_tensor_core_loops_keep_their_products_in_flight(monkeypatch):
    """Every warpgroup GEMM configuration and every attention configuration
    compiles for Hopper without spills and without ptxas serialising the
    warpgroup products (remark C7514: short of registers, it waits for each
    wgmma, which cost the 128 x 256 GEMM a quarter of its speed)."""
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    gemm, fa = load_example("gemm_bf16"), load_example("flash_attention")
    sources = {str(c): gemm.compiled(c).cuda_source
               for c in enigma.gemm_configs("cuda", "bf16")
               if enigma.warpgroup_shape(c, "bf16")}
    for d in (64, 128):
        for bc, rows, q_shared in fa.CONFIGS:
            sources[f"attention d={d} {bc} {rows} {q_shared}"] = \
                fa.compiled(d, True, bc, rows, q_shared).cuda_source
    assert len(sources) > 10
    for what, source in sources.items():
        log = _ptxas_remarks(source)
        if log is None:
            pytest.skip("NVRTC is not installed here")
        assert "Used " in log, what + ": no ptxas remarks\n" + log
        assert "C7514" not in log, what + "\n" + log
        assert spill_free(log), what + "\n" + log
