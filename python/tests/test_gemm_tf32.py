"""Float products with TF32 allowed (docs/design/tf32.md): every target
multiplies the operands with their 13 low mantissa bits cleared (what
Hopper's wgmma does reading f32 data as tf32), exactly and summed in f32;
and gemm_block runs float tiles of tf32_warpgroup_shape as warpgroup
products (TF32 wgmma on sm_90a, through the same pipelines as bf16), with
B stored n x k (the TMA copies it) or k x n (the producer warpgroup copies
it transposed: stage_copy(..., transpose=True)).

References are numpy float64 products of the truncated operands; the bound
is the f32 accumulation's, 2 K 2^-24 (|A'| @ |B'|), tight enough that the
full-precision product fails it (checked too, so the tests can fail)."""

import os
import re

import numpy as np
import pytest

from _ptxas_reports import spill_free

import enigma
from conftest import pipeline_sass, run_kernel

U32 = enigma.Scalar(enigma.u32)


def _tf32(x):
    """x as a TF32 operand: the float's 13 low mantissa bits cleared."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return (bits & np.uint32(0xFFFFE000)).view(np.float32)


def _gemm(config, b_transposed, allow_tf32=True):
    @enigma.kernel
    def gemm_tf32(A: enigma.f32, B: enigma.f32, M: U32, N: U32, K: U32,
                  C: enigma.f32):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                          b_transposed=b_transposed, allow_tf32=allow_tf32)
    return enigma.compile(gemm_tf32)


def _check(c, a, b, what, accumulation=2.0):
    """c against the float64 product of the truncated operands, within the
    f32 accumulation bound (times `accumulation` / 2); and that bound is
    tight enough to tell the product of the full operands apart."""
    at, bt = _tf32(a).astype(np.float64), _tf32(b).astype(np.float64)
    want = at @ bt
    scale = np.abs(at) @ np.abs(bt)
    bound = accumulation * a.shape[1] * 2.0**-24 * scale + 1e-30
    c = np.asarray(c, np.float64).reshape(want.shape)
    err = np.abs(c - want)
    bad = ~(err <= bound)       # NaN (an element never written) is bad
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} "
                           f"elements out of tolerance, worst "
                           f"{float(np.nanmax(err))}")
    full = a.astype(np.float64) @ b.astype(np.float64)
    assert (np.abs(full - want) > bound).any(), \
        f"{what}: the bound does not tell TF32 from fp32"


def _run(runtime, config, a, b, b_transposed):
    m, k = a.shape
    n = b.shape[1]
    stored_b = np.ascontiguousarray(b.T if b_transposed else b)
    return run_kernel(runtime, _gemm(config, b_transposed),
                      [np.ascontiguousarray(a), stored_b], np.float32,
                      m * n, *config.launch(m, n), scalars=[m, n, k])


def _fits(runtime, config):
    limit = 32 * 1024 if runtime.name == "metal-host" else 227 * 1024
    return config.smem_bytes("f32") <= limit


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 37, 45), (33, 67, 70)])
def test_tf32_products_truncate_their_operands(runtime, rng, m, n, k):
    """The simdgroup products (mma.sync m16n8k8 on CUDA; the CPU's and
    MSL's loops) with TF32 allowed: M = 1, N odd, K not a multiple of the
    tile's 32."""
    config = enigma.MmaConfig(32, 32, 32, 1, 1, 2)
    assert not enigma.tf32_warpgroup_shape(config)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    for b_t in (False, True):
        c = _run(runtime, config, a, b, b_t)
        _check(c, a, b, f"{m}x{n}x{k} b_transposed={b_t}",
               8.0 if runtime.name == "cuda" else 2.0)


def _warpgroup_configs(runtime):
    """The CUDA list on CUDA; elsewhere the largest and a 32 KiB shape (of
    both mainloops) that Metal's threadgroup memory holds."""
    if runtime.name == "cuda":
        return enigma.tf32_gemm_configs() + enigma.tf32_gemm_configs(False)
    small = [enigma.MmaConfig(64, 64, 32, 4, 1, 2, group_m=2),
             enigma.MmaConfig(64, 64, 32, 4, 1, 2, group_m=2,
                              warp_specialized=True)]
    large = [enigma.tf32_gemm_configs()[0]]
    return [c for c in small + large if _fits(runtime, c)]


@pytest.mark.parametrize("m,n,k", [(1, 67, 45), (70, 131, 45),
                                   (129, 200, 96)])
def test_gemm_block_tf32_warpgroup(runtime, rng, m, n, k):
    """gemm_block's TF32 warpgroup shapes (B stored n x k), classic and
    warp-specialised: M = 1, N odd, K not a multiple of bk."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    for config in _warpgroup_configs(runtime):
        assert enigma.tf32_warpgroup_shape(config, b_transposed=True)
        c = _run(runtime, config, a, b, True)
        _check(c, a, b, f"{config} {m}x{n}x{k}",
               8.0 if runtime.name == "cuda" else 2.0)


def _row_major_b_configs(runtime):
    """Warp-specialised TF32 warpgroup configurations for B stored k x n:
    the CUDA list on CUDA; elsewhere the largest and a 32 KiB shape."""
    if runtime.name == "cuda":
        return enigma.tf32_gemm_configs(b_transposed=False)
    small = [enigma.MmaConfig(64, 64, 32, 4, 1, 2, group_m=2,
                              warp_specialized=True)]
    large = [enigma.tf32_gemm_configs(b_transposed=False)[0]]
    return [c for c in small + large if _fits(runtime, c)]


@pytest.mark.parametrize("m,n,k", [(1, 67, 45), (70, 131, 45),
                                   (129, 200, 96), (65, 260, 33)])
def test_gemm_block_tf32_warpgroup_row_major_b(runtime, rng, m, n, k):
    """TF32 warpgroup products with B stored k x n (as torch.matmul(a, b)
    passes it), B's tiles copied transposed into the stages: M = 1, N odd,
    K not a multiple of bk, N past one 256-column block."""
    if runtime.name == "cuda":
        pytest.skip("new pipelines run on CUDA in their own processes "
                    "(test_row_major_b_on_the_gpu)")
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    for config in _row_major_b_configs(runtime):
        assert enigma.tf32_warpgroup_shape(config, b_transposed=False)
        c = _run(runtime, config, a, b, False)
        _check(c, a, b, f"{config} {m}x{n}x{k} B k x n")


def _swapped_gemm(config):
    """C = A @ B for B stored k x n as C^T = B^T A^T: B is the product's A
    stored k x m (its rows reach TF32 wgmma through registers), A its B
    stored n x k, and C is stored transposed."""
    @enigma.kernel
    def gemm_tf32_swapped(A: enigma.f32, B: enigma.f32, M: U32, N: U32,
                          K: U32, C: enigma.f32):
        enigma.gemm_block(B, A, C, m=N, n=M, k=K, config=config,
                          a_transposed=True, b_transposed=True,
                          c_transposed=True, allow_tf32=True)
    return enigma.compile(gemm_tf32_swapped)


def _register_a_configs(runtime):
    """TF32 warpgroup configurations for A stored k x m (warp-specialised
    only): the CUDA list on CUDA; elsewhere the largest and a 32 KiB
    shape."""
    if runtime.name == "cuda":
        return enigma.tf32_gemm_configs()
    return [c for c in _warpgroup_configs(runtime) if c.warp_specialized]


@pytest.mark.parametrize("m,n,k", [(1, 67, 45), (70, 131, 45),
                                   (129, 200, 96), (65, 260, 33),
                                   (300, 1, 40)])
def test_gemm_block_tf32_warpgroup_a_stored_k_major(runtime, rng, m, n, k):
    """TF32 warpgroup products with A stored k x m (its rows through
    registers) and C stored n x m, used as C^T = B^T A^T for a B stored
    k x n: M = 1, N = 1 and odd, K not a multiple of bk, each simdgroup's
    rows in the second 32-column block of A's stage tile (N > 32 rows of
    the swapped product)."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    for config in _register_a_configs(runtime):
        assert enigma.tf32_warpgroup_shape(config, a_transposed=True,
                                           b_transposed=True)
        c = run_kernel(runtime, _swapped_gemm(config), [a, b], np.float32,
                       m * n, *config.launch(n, m), scalars=[m, n, k])
        _check(c, a, b, f"{config} {m}x{n}x{k} B k x n, swapped",
               8.0 if runtime.name == "cuda" else 2.0)


def test_c_transposed_in_other_configurations(runtime, rng):
    """c_transposed applies to every configuration: fp32 and TF32
    simdgroup products, C stored n x m with its own pitch."""
    m, n, k, ldc = 37, 19, 41, 40
    config = enigma.MmaConfig(32, 32, 32, 1, 1, 2)

    @enigma.kernel
    def gemm_ct(A: enigma.f32, B: enigma.f32, M: U32, N: U32, K: U32,
                C: enigma.f32):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config, ldc=ldc,
                          c_transposed=True, allow_tf32=True)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(gemm_ct), [a, b], np.float32,
                     n * ldc, *config.launch(m, n), scalars=[m, n, k])
    ct = np.asarray(out).reshape(n, ldc)
    _check(ct[:, :m].T.copy(), a, b, "c_transposed",
           8.0 if runtime.name == "cuda" else 2.0)


def test_c_transposed_errors():
    config = enigma.MmaConfig(64, 64, 32, 4, 1, 2, split_k=2,
                              warp_specialized=True)

    @enigma.kernel
    def split(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        enigma.gemm_block(A, B, C, m=8, n=8, k=64, config=config,
                          c_transposed=True)
    with pytest.raises(enigma.EnigmaError, match="c_transposed"):
        enigma.compile(split)


def test_row_major_b_on_the_gpu():
    """On a GPU (the GPU script): every configuration of
    tf32_gemm_configs(b_transposed=False) checked against torch on edge
    shapes and 4096^3 (bounds-checked first, then as compiled for speed),
    each in a process of its own with a time limit, so that a pipeline
    that hangs fails instead of hanging the suite
    (bench/check_gemm_ws.py, rows "tf32-Bkn")."""
    if "cuda" not in os.environ.get("ENIGMA_TEST_BACKENDS", ""):
        pytest.skip("runs where ENIGMA_TEST_BACKENDS includes cuda")
    import subprocess
    import sys
    script = os.path.join(os.path.dirname(__file__), "..", "..", "bench",
                          "check_gemm_ws.py")
    listing = subprocess.run([sys.executable, script, "--list"],
                             capture_output=True, text=True, timeout=120)
    rows = [line.split()[0] for line in listing.stdout.splitlines()
            if "tf32-Bkn" in line]
    assert len(rows) == len(enigma.tf32_gemm_configs(b_transposed=False))
    done = subprocess.run([sys.executable, script, "--check-only",
                           "--only", ",".join(rows), "--configs-only"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"{len(rows)} passed, 0 failed" in done.stdout, done.stdout


def test_tf32_warpgroup_shape_rules():
    ok = enigma.MmaConfig(128, 256, 32, 8, 1, 4)
    assert enigma.tf32_warpgroup_shape(ok, b_transposed=True)
    # Both operands K-major: B stored n x k, A not transposed; or A
    # stored k x m (through registers) with B stored n x k.
    assert not enigma.tf32_warpgroup_shape(ok)
    ws = enigma.MmaConfig(128, 256, 32, 8, 1, 4, warp_specialized=True)
    assert enigma.tf32_warpgroup_shape(ws, a_transposed=True,
                                       b_transposed=True)
    assert not enigma.tf32_warpgroup_shape(ws, a_transposed=True)
    # The classic mainloop keeps mma.sync for A stored k x m.
    assert not enigma.tf32_warpgroup_shape(ok, a_transposed=True,
                                           b_transposed=True)
    for bad in (enigma.MmaConfig(128, 256, 64, 8, 1, 3),   # rows of 64
                enigma.MmaConfig(128, 256, 32, 4, 2, 3),   # wn = 2
                enigma.MmaConfig(128, 192, 32, 8, 1, 3),   # N = 192
                enigma.MmaConfig(128, 512, 16, 8, 1, 2)):
        assert not enigma.tf32_warpgroup_shape(bad, b_transposed=True), bad
    for c in enigma.tf32_gemm_configs() + enigma.tf32_gemm_configs(False):
        assert enigma.tf32_warpgroup_shape(c, b_transposed=True)
        assert c.smem_bytes("f32") <= 227 * 1024
    assert all(c.warp_specialized for c in enigma.tf32_gemm_configs())
    with pytest.raises(enigma.EnigmaError, match="must be a bool"):
        enigma.tf32_gemm_configs("yes")
    # B stored k x n: warp-specialised shapes whose producer has the
    # registers to copy B transposed (not beside 512 consumers).
    assert enigma.tf32_warpgroup_shape(ws)
    assert not enigma.tf32_warpgroup_shape(
        enigma.MmaConfig(256, 128, 32, 16, 1, 4, warp_specialized=True))
    rows = enigma.tf32_gemm_configs(b_transposed=False)
    assert rows and all(c.warp_specialized and c.threads <= 256 and
                        enigma.tf32_warpgroup_shape(c) for c in rows)
    with pytest.raises(enigma.EnigmaError, match="warp-specialised"):
        enigma.tf32_gemm_configs(False, b_transposed=False)
    with pytest.raises(enigma.EnigmaError, match="must be a bool"):
        enigma.tf32_gemm_configs(b_transposed=1)


def test_tf32_warpgroup_kernels_compile_to_hgmma(monkeypatch):
    """Every TF32 warpgroup configuration (B stored n x k, and k x n;
    and the swapped product, A through registers) compiles for sm_90a to
    TF32 HGMMA (when cuobjdump is here to read the SASS), without spills
    and without ptxas serialising the products (remark C7514); with B
    stored k x n the producer warpgroup copies B transposed with 16-byte
    loads and stores (LDG.E.128, STS.128) and A with the TMA."""
    sass_tool = pipeline_sass()
    tool = sass_tool.cuobjdump()
    silent = []
    # (config, B stored n x k, the swapped product: A stored k x m in
    # 32-column blocks through registers)
    for config, b_t, swapped in \
            [(c, True, False) for c in enigma.tf32_gemm_configs() +
             enigma.tf32_gemm_configs(False)] + \
            [(c, False, False) for c in
             enigma.tf32_gemm_configs(b_transposed=False)] + \
            [(c, True, True) for c in enigma.tf32_gemm_configs()]:
        source = (_swapped_gemm(config) if swapped else
                  _gemm(config, b_t)).cuda_source
        a_args = "true, 3, 2, 3, 1024" if swapped else "false, 3, 2, 3, 0"
        assert re.search(rf"enigma_mma_sync<32, 32, {a_args}, 32, "
                         r"true, 3, 2, 3, 0, true, true, true>", source), \
            config
        assert ("enigma_stage_copy_transposed<32, " in source) != b_t
        monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
        try:
            if tool is None:
                sass = ""
                _, log = enigma._core.Runtime.nvrtc_check(source, "sm_90a",
                                                          [], log=True)
            else:
                sass, _, log = sass_tool.sass_of(source, tool)
        except enigma.BackendUnavailableError:
            pytest.skip("NVRTC is not installed here")
        if "Used " in log:
            assert "C7514" not in log, f"{config}\n{log}"
            assert spill_free(log), f"{config}\n{log}"
        else:
            # Some NVRTC builds (13.0 on the GPU machines) compile but keep
            # ptxas's -v report out of the program log.
            silent.append(config)
        if tool is not None:
            assert f"HGMMA.64x{config.bn}x8.F32.TF32" in sass, config
            if not b_t:
                assert "LDG.E.128" in sass and "STS.128" in sass, config
                assert "UTMALDG" in sass, config
    if silent and tool is None:
        pytest.skip(f"this NVRTC gave no ptxas report for {len(silent)} "
                    "kernels (they compiled) and cuobjdump is missing")


def test_gemm_config_for_leaves_tf32_to_the_caller():
    """The built-in choice for float operands, TF32 or not, is the
    default configuration: it does not know how B is stored, and the
    transposing route for B stored k x n has not run on a GPU yet (the
    TF32 warpgroup configurations are taken by name)."""
    cfg = enigma.gemm_config_for
    for m in (64, 1024, 4096):
        assert cfg(m, 4096, 4096, "f32", allow_tf32=True) == \
            enigma.default_gemm_config("cuda", "f32", True)
    assert cfg(4096, 4096, 4096, "f32") == \
        enigma.default_gemm_config("cuda", "f32")
    assert cfg(4096, 4096, 4096, "f32", target="cpu", allow_tf32=True) == \
        enigma.default_gemm_config("cpu", "f32", True)
    big = enigma.tf32_gemm_configs()[0]
    assert big == enigma.tf32_gemm_configs(b_transposed=False)[0]
    assert enigma.tf32_warpgroup_shape(big) and \
        enigma.tf32_warpgroup_shape(big, b_transposed=True)
