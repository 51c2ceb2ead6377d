"""The scaled 8-bit float GEMM on the warp-specialised pipeline
(``MmaConfig(..., warp_specialized=True)``, docs/design/fp8.md) and the
promotion of each K tile's product into f32 (``fast_accum=False``):

* every scaling and output type at edge sizes (M = 1, odd N, K not a
  multiple of the K tile or of the scale block) against numpy float64;
* on the host runtimes the pipelined kernel computes bit for bit what the
  classic one computes (one definition of the order of the sums), also
  persistent with fewer threadgroups than blocks;
* the accumulation order itself, bit for bit against a float32 model of
  it (one fma per product in K order; with promotion each K tile summed
  from zero, then added), and a hand-derived case where the two differ;
* the CUDA text for sm_90a (NVRTC, ptxas remarks: no spills, no
  serialised warpgroup products) and, where cuobjdump is installed, its
  SASS (QGMMA, TMA loads, no local memory).
"""

import re

import numpy as np
import pytest

import enigma
from _ptxas_reports import assert_clean_under_other_nvrtc, spill_free
from conftest import pipeline_sass
from test_gemm_fp8 import (DECODE, Arrays, assert_close, decode_out,
                           dequantised, random_bits, run, scales_for)

BLOCK = 128


def ws(*shape, **options):
    return enigma.MmaConfig(*shape, warp_specialized=True, **options)


def pipelined_config(runtime, scaling, fast_accum=False, amax=False):
    """A pipelined configuration of warpgroup products for the runtime:
    the default of sm_90 on CUDA, 64 x 64 tiles (32 KiB, Metal's limit) on
    the host runtimes (64 x 32 beside the amax's threadgroup memory)."""
    if runtime.name == "cuda":
        return enigma.gemm_fp8_configs("cuda", scaling, amax=amax,
                                       fast_accum=fast_accum)[0]
    return ws(64, 32 if amax else 64, 128, 4, 1, 2)


CASES = [  # (m, n, k, scaling, out)
    (1, 33, 40, "tensor", "bf16"),
    (37, 70, 300, "tensor", "f32"),
    (1, 5, 129, "row", "f16"),
    (45, 67, 161, "row", "bf16"),
    (3, 131, 257, "block", "f32"),
    (70, 129, 200, "block", "bf16"),
    (2, 1, 1, "block", "f16"),
]


@pytest.mark.parametrize("fast_accum", [False, True])
@pytest.mark.parametrize("m,n,k,scaling,out", CASES)
def test_pipelined_matches_dequantised_float64(runtime, rng, m, n, k,
                                               scaling, out, fast_accum):
    arr = Arrays(runtime)
    config = pipelined_config(runtime, scaling, fast_accum)
    a = random_bits(rng, (m, k), "f8e4m3")
    b = random_bits(rng, (n, k), "f8e5m2")
    sa, sb = scales_for(rng, scaling, m, n, k)
    c = arr.out(out, m, n)
    enigma.gemm_fp8(arr.put(a), arr.put(b), arr.put(sa), arr.put(sb),
                    out_dtype=out, b_dtype="f8e5m2", out=c, config=config,
                    fast_accum=fast_accum, runtime=runtime)
    A, B = dequantised(a, b, sa, sb, "f8e4m3", "f8e5m2", scaling, k)
    assert_close(decode_out(arr.get(c), out), A, B, out, runtime)


@pytest.mark.parametrize("out", ["f8e4m3", "f8e5m2"])
def test_pipelined_fp8_output_with_amax(runtime, rng, out):
    """8-bit output (saturating) and the amax through the consumers'
    named barrier, over several blocks."""
    config = pipelined_config(runtime, "tensor", amax=True)
    A, B, amax = run(runtime, rng, 70, 99, 140, "tensor", out,
                     scale_out=0.25, amax=True, config=config)
    want = float(np.abs(A @ B.T).max())
    rel = 2.0 ** -10 if runtime.name == "cuda" else 1e-5
    assert abs(amax - want) <= rel * want


def test_default_configuration_is_pipelined_on_cuda(runtime, rng):
    """gemm_fp8 without a configuration: on sm_90 the pipelined kernel
    (persistent, one threadgroup per multiprocessor), elsewhere the
    classic one; both correct."""
    run(runtime, rng, 300, 200, 520, "row", "bf16")
    assert enigma.gemm_fp8_configs("cuda")[0].warp_specialized
    assert not enigma.gemm_fp8_configs("cuda",
                                       warp_specialized=False)[0] \
        .warp_specialized
    assert not enigma.gemm_fp8_configs("cpu")[0].warp_specialized


# --- one definition of the sums ----------------------------------------------

def _host_runtime(runtime):
    if runtime.name == "cuda":
        pytest.skip("bit-exact sums are the host runtimes' (Hopper's "
                    "tensor cores keep fewer bits between K steps)")


@pytest.mark.parametrize("scaling", ["tensor", "row", "block"])
@pytest.mark.parametrize("fast_accum", [False, True])
def test_pipelined_equals_classic_bit_for_bit(runtime, rng, scaling,
                                              fast_accum):
    """The same tiles and K tile (bk 128) give the same sums in the same
    order: the pipeline changes where copies run, not what is computed."""
    _host_runtime(runtime)
    m, n, k = 67, 129, 300
    a = random_bits(rng, (m, k), "f8e4m3")
    b = random_bits(rng, (n, k), "f8e4m3")
    sa, sb = scales_for(rng, scaling, m, n, k)
    got = [enigma.gemm_fp8(a, b, sa, sb, out_dtype="f32", config=config,
                           fast_accum=fast_accum, runtime=runtime)
           for config in (enigma.MmaConfig(64, 64, 128, 4, 1, 2),
                          ws(64, 64, 128, 4, 1, 2))]
    assert np.array_equal(got[0], got[1])


@pytest.mark.parametrize("scaling", ["tensor", "row"])
@pytest.mark.parametrize("m,n,k", [(67, 129, 300), (5, 33, 256),
                                   (1, 1, 40), (64, 64, 513)])
def test_promotion_beside_the_products_equals_classic(runtime, rng, scaling,
                                                      m, n, k, monkeypatch):
    """From 4 stages on, promotion takes two K tiles per slot and adds
    each tile's product while the next one runs (tiles past K are zeros,
    an odd count of tiles included): the same sums in the same order as
    the classic kernel, bit for bit, and against float64. The CPU only:
    two tiles per slot need more than Metal's 32 KiB."""
    if runtime.name != "cpu":
        pytest.skip("64 KiB of threadgroup memory: the CPU runtime")
    from enigma import _gemm_fp8_pipelined as pipelined
    from enigma._gemm_fp8_launch import gemm_fp8_kernel
    chosen, in_flight = [], pipelined._in_flight
    monkeypatch.setattr(pipelined, "_in_flight", lambda *args: (
        chosen.append(in_flight(*args)) or chosen[-1]))
    gemm_fp8_kernel.cache_clear()   # built here, where the spy sees it
    a = random_bits(rng, (m, k), "f8e4m3")
    b = random_bits(rng, (n, k), "f8e5m2")
    sa, sb = scales_for(rng, scaling, m, n, k)
    got = [enigma.gemm_fp8(a, b, sa, sb, out_dtype="f32", config=config,
                           b_dtype="f8e5m2", runtime=runtime)
           for config in (enigma.MmaConfig(64, 64, 128, 4, 1, 2),
                          ws(64, 64, 128, 4, 1, 4))]
    assert chosen and all(chosen)     # the pairs
    assert np.array_equal(got[0], got[1])
    A, B = dequantised(a, b, sa, sb, "f8e4m3", "f8e5m2", scaling, k)
    assert_close(got[1], A, B, "f32", runtime)


def test_promotion_beside_the_products_is_chosen_where_it_fits():
    """Two K tiles per slot need warpgroup products, promotion (not fast
    accumulation, not block scales), 4 stages or more and no cluster."""
    from types import SimpleNamespace

    from enigma._gemm_fp8_pipelined import _in_flight

    def chosen(group=True, fast=False, block=False, **config):
        shape = dict(dict(stages=6), **config)
        s = SimpleNamespace(group=group, config=ws(128, 128, 128, 8, 1,
                                                   **shape))
        return _in_flight(s, fast, block)
    assert chosen()
    assert not chosen(group=False) and not chosen(fast=True)
    assert not chosen(block=True) and not chosen(stages=3)
    assert not chosen(cluster=2, persistent=True)


@pytest.mark.parametrize("cluster", [{}, {"cluster": 2},
                                     {"cluster": 2, "cluster_shares": "b"}])
def test_persistent_launch_with_fewer_threadgroups_than_blocks(runtime,
                                                               rng, cluster):
    """A persistent configuration launched on 3 (a cluster: 4)
    threadgroups walks all 12 blocks (grouped order), each block's output
    once; clusters share A tiles along a block row or B tiles along a
    block column (4 block rows, 3 columns: one padded)."""
    _host_runtime(runtime)
    m, n, k = 250, 190, 260
    config = ws(64, 64, 128, 4, 1, 2, persistent=True, group_m=2, **cluster)
    kern = enigma.gemm_fp8_kernel(config, "row", "f8e4m3", "f8e4m3",
                                  "f32", False, False)
    a = random_bits(rng, (m, k), "f8e4m3")
    b = random_bits(rng, (n, k), "f8e4m3")
    sa, sb = scales_for(rng, "row", m, n, k)
    c = np.full((m, n), np.nan, np.float32)
    processors = 4 if cluster else 3
    grid, threads = config.launch(m, n, processors=processors)
    assert grid[0] == processors * config.threads
    kern.launch(grid=grid, threads=threads)(
        a, b, sa, sb, np.ones(1, np.float32), m, n, k, c,
        np.zeros(1, np.uint32), runtime=runtime)
    A, B = dequantised(a, b, sa, sb, "f8e4m3", "f8e4m3", "row", k)
    assert_close(c.astype(np.float64), A, B, "f32", runtime)


def model_f32(a, b, sa, sb, fa, fb, scaling, fast_accum, chunk, bk=BLOCK):
    """The float32 result the host runtimes define. The CPU adds each
    product (exact in float32) with one rounding in K order (``chunk``
    1); the MSL host runtime, as Metal's simdgroup products of K 8, sums
    ``chunk`` = 8 products from zero and adds that. With promotion (or
    block scales) each K tile of ``bk`` is summed so from zero and then
    added to the f32 accumulator (block scales: times ``sa * sb`` first);
    tensor and row scales apply after the loop, as the kernel does."""
    A, B = DECODE[fa][a], DECODE[fb][b]
    m, k = A.shape
    n = B.shape[0]
    f32 = np.float32

    def fma_sum(acc, k0, k1):
        for kk in range(k0, k1):
            # The product is exact in float64 and the sum exact before its
            # one rounding to float32 (exponents here span far less than
            # float64's 53 bits): an fma.
            acc = (acc.astype(np.float64) +
                   np.outer(A[:, kk], B[:, kk])).astype(f32)
        return acc

    def dot_from(acc, k0, k1):
        if chunk == 1:
            return fma_sum(acc, k0, k1)
        for c0 in range(k0, k1, chunk):
            part = fma_sum(np.zeros((m, n), f32), c0, min(k1, c0 + chunk))
            acc = (acc + part).astype(f32)
        return acc

    acc = np.zeros((m, n), f32)
    if fast_accum and scaling != "block":
        acc = dot_from(acc, 0, k)
    else:
        for k0 in range(0, k, bk):
            part = dot_from(np.zeros((m, n), f32), k0, min(k, k0 + bk))
            if scaling == "block":
                s = (sa[:, k0 // BLOCK][:, None] *
                     np.repeat(sb[:, k0 // BLOCK], BLOCK)[None, :n])
                part = (part * s.astype(f32)).astype(f32)
            acc = (acc + part).astype(f32)
    if scaling == "tensor":
        acc = acc * f32(sa[0] * sb[0])
    elif scaling == "row":
        acc = (acc * sa[:, None]).astype(f32) * sb[None, :]
    return acc.astype(f32)


@pytest.mark.parametrize("scaling", ["tensor", "row", "block"])
@pytest.mark.parametrize("fast_accum", [False, True])
def test_sums_are_the_defined_float32_order(runtime, rng, scaling,
                                            fast_accum):
    """Bit for bit the float32 model of the order (fast accumulation: one
    sum through K; promotion: a sum per K tile, then added), pipelined
    kernel, sizes that end mid tile (and mid chunk of 8)."""
    _host_runtime(runtime)
    m, n, k = 33, 70, 299
    a = random_bits(rng, (m, k), "f8e4m3")
    b = random_bits(rng, (n, k), "f8e4m3")
    sa, sb = scales_for(rng, scaling, m, n, k)
    got = enigma.gemm_fp8(a, b, sa, sb, out_dtype="f32",
                          config=ws(64, 64, 128, 4, 1, 2),
                          fast_accum=fast_accum, runtime=runtime)
    want = model_f32(a, b, sa, sb, "f8e4m3", "f8e4m3", scaling, fast_accum,
                     1 if runtime.name == "cpu" else 8)
    assert np.array_equal(got, want), np.argwhere(got != want)[:3]


def test_promotion_keeps_what_one_long_sum_rounds_away(runtime):
    """K = 256: 128 products of 256 * 256 (2^23 in all), then 128 of
    1 * 2^-5. One float32 sum rounds each 2^-5 away next to 2^23 (half an
    ulp is 0.5): 2^23. Promotion sums the second K tile from zero (4) and
    adds it: 2^23 + 4, the exact value. On Hopper the promoted result is
    exact too (the tensor cores' sums of each tile are exact here)."""
    arr = Arrays(runtime)
    enc = lambda v: enigma.fp8_encode(np.asarray(v, np.float32), "f8e4m3")
    a = np.concatenate([enc(np.full(128, 256.0)), enc(np.ones(128))])
    b = np.concatenate([enc(np.full(128, 256.0)),
                        enc(np.full(128, 2.0**-5))])
    a, b = a.reshape(1, 256), b.reshape(1, 256)
    one = np.ones(1, np.float32)
    got = {}
    for fast in (False, True):
        for config in (pipelined_config(runtime, "tensor", fast),
                       None if runtime.name == "cuda" else
                       enigma.MmaConfig(64, 64, 128, 4, 1, 2)):
            c = arr.out("f32", 1, 1)
            enigma.gemm_fp8(arr.put(a), arr.put(b), arr.put(one),
                            arr.put(one), out_dtype="f32", out=c,
                            config=config, fast_accum=fast, runtime=runtime)
            got.setdefault(fast, set()).add(float(arr.get(c)[0, 0]))
    assert got[False] == {2.0**23 + 4}
    if runtime.name != "cuda":
        assert got[True] == {2.0**23}


def test_fast_accum_must_be_a_bool(rng):
    a = random_bits(rng, (4, 32), "f8e4m3")
    with pytest.raises(enigma.DispatchError, match="fast_accum"):
        enigma.gemm_fp8(a, a, 1.0, 1.0, fast_accum=1,
                        runtime=enigma.CpuRuntime())
    with pytest.raises(enigma.EnigmaError, match="fast_accum"):
        enigma.gemm_fp8_configs("cuda", fast_accum="yes")


def test_pipelined_configurations_are_checked(rng):
    a = random_bits(rng, (4, 32), "f8e4m3")
    rt = enigma.CpuRuntime()
    with pytest.raises(enigma.EnigmaError, match="whole warpgroups"):
        enigma.gemm_fp8(a, a, 1.0, 1.0, config=ws(32, 32, 128, 1, 1, 2),
                        runtime=rt)
    with pytest.raises(enigma.EnigmaError, match="split_k"):
        enigma.gemm_fp8(a, a, 1.0, 1.0, config=ws(64, 64, 128, 4, 1, 2,
                                                  split_k=2), runtime=rt)
    with pytest.raises(enigma.EnigmaError, match="warp-specialised"):
        enigma.gemm_fp8(a, a, 1.0, 1.0, config=enigma.MmaConfig(
            64, 64, 128, 4, 1, 2, persistent=True), runtime=rt)


# --- the CUDA text and its SASS ---------------------------------------------

def _cuda_kernels():
    """The first pipelined configurations of each list, bf16 out and 8-bit
    out with amax (the epilogue's named barrier), plus a cluster."""
    found = {}
    for scaling in ("tensor", "row", "block"):
        for fast in ((False, True) if scaling != "block" else (False,)):
            config = enigma.gemm_fp8_configs("cuda", scaling, amax=True,
                                             fast_accum=fast)[0]
            for out, extra in (("bf16", False), ("f8e4m3", True)):
                found[f"{scaling} fast_accum={fast} {config} {out}"] = \
                    enigma.gemm_fp8_kernel(config, scaling, "f8e4m3",
                                           "f8e5m2", out, extra, extra,
                                           fast)
    cluster = ws(128, 128, 128, 8, 1, 6, persistent=True, cluster=2)
    found[f"row {cluster}"] = enigma.gemm_fp8_kernel(
        cluster, "row", "f8e4m3", "f8e4m3", "f8e4m3", True, True)
    return found


def _ptxas_log(source):
    try:
        _, log = enigma._core.Runtime.nvrtc_check(source, "sm_90a", [],
                                                  log=True)
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed here")
    return log


def test_pipelined_cuda_text_compiles_for_hopper(monkeypatch):
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    silent, sources = [], {}
    for what, kern in _cuda_kernels().items():
        src = enigma.compile(kern).cuda_source
        sources[what] = src
        assert "__launch_bounds__(" in src and "enigma_ring_wait(" in src
        assert "enigma_ring_acquire(" in src, what
        assert "enigma_mma_fp8<" in src, what   # the 8-bit products
        log = _ptxas_log(src)
        if "Used " not in log:
            silent.append(what)
            continue
        assert spill_free(log), what + "\n" + log
        assert not re.findall(r"\(C75\d\d\)", log), what + "\n" + log
        assert "ptxas warning" not in log, what + "\n" + log
    # The same under the other NVRTC a test process may load.
    assert_clean_under_other_nvrtc(sources)
    if silent:
        pytest.skip(f"this NVRTC gave no ptxas report for {len(silent)} "
                    "kernels (they compiled): registers and spills unread")


def test_pipelined_sass_has_qgmma_tma_and_no_local_memory(monkeypatch):
    sass_tool = pipeline_sass()
    tool = sass_tool.cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump is not installed here")
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    for fast in (False, True):
        config = enigma.gemm_fp8_configs("cuda", "tensor",
                                         fast_accum=fast)[0]
        src = enigma.compile(enigma.gemm_fp8_kernel(
            config, "tensor", "f8e4m3", "f8e4m3", "bf16", False, False,
            fast)).cuda_source
        try:
            sass, _, _ = sass_tool.sass_of(src, tool)
        except enigma.BackendUnavailableError:
            pytest.skip("NVRTC is not installed here")
        assert re.search(r"QGMMA\.64x\d+x32\.F32\.E4M3\.E4M3", sass), config
        assert "UTMALDG" in sass, config        # TMA copies of A and B
        assert "USETMAXREG" in sass, config     # the roles' registers
        assert not sass_tool.uses_local_memory(sass), config


@pytest.mark.parametrize("scaling", ["tensor", "row", "block"])
def test_short_scales_are_refused_before_the_launch(runtime, rng, scaling):
    """With m, n and k as scalar parameters each launch judges the scale
    buffers by the scaling's shape (block: ceil(k/128) x m for A,
    ceil(n/128) x ceil(k/128) for B): one element short is a
    DispatchError naming them; exactly enough runs."""
    _host_runtime(runtime)
    m, n, k = 70, 130, 300           # 3 K blocks, 2 blocks of B's rows
    config = enigma.MmaConfig(64, 64, 128, 2, 2, 2)
    kern = enigma.gemm_fp8_kernel(config, scaling, "f8e4m3", "f8e4m3",
                                  "f32", False, False)
    a = random_bits(rng, (m, k), "f8e4m3")
    b = random_bits(rng, (n, k), "f8e4m3")
    sa, sb = scales_for(rng, scaling, m, n, k)
    assert (sa.size, sb.size) == {"tensor": (1, 1), "row": (m, n),
                                  "block": (3 * m, 2 * 3)}[scaling]
    grid, threads = config.launch(m, n)

    def launch(sa, sb):
        c = np.full((m, n), np.nan, np.float32)
        kern.launch(grid=grid, threads=threads)(
            a, b, sa, sb, np.ones(1, np.float32), m, n, k, c,
            np.zeros(1, np.uint32), runtime=runtime)
        return c

    for short, name in ((0, "A"), (1, "B")):
        scales = [sa, sb]
        scales[short] = scales[short].reshape(-1)[:-1].copy()
        if scales[short].size == 0:
            scales[short] = np.zeros(0, np.float32)
        with pytest.raises(enigma.DispatchError,
                           match=f"reads {scaling} scales of {name}"):
            launch(*scales)
    assert not np.isnan(launch(sa, sb)).any()
