"""The pipelined forward kernel (python/enigma/_attention/forward_ws.py:
a ring of key/value stages, a producer and consumer warpgroups) on every
backend under test against float64 numpy (python/tests/
_attention_reference.py): head dimensions 64 and 128, odd lengths, Sq !=
Skv both ways with bottom-right causal masks, grouped and multi-query
heads, variable-length batches with empty sequences and non-finite keys
and values past a sequence's end, outputs poisoned (enigma.attention
fills them with NaN). On the CPU and the MSL host runtime the kernel runs
through the sequential meaning of its pipelines; on CUDA (sm_90) through
the producer warpgroup. Also: which kernel the plans choose, the
configurations the pipelined kernel refuses, and its CUDA text for sm_90a
(NVRTC with ptxas remarks: no spills, no serialised products)."""

import dataclasses
import itertools
import re

import numpy as np
import pytest

from _ptxas_reports import (assert_clean_under_other_nvrtc, spill_free,
                            spill_stores)

import enigma
import enigma.attention as ea
from _attention_reference import (check_forward, make, reference_bhsd,
                                  reference_varlen)
from enigma._attention import forward_ws, plans
from enigma._attention.launch import Target, compiled

WS = ea.ForwardConfig


def _config(runtime, d, rows=None, overlap=False):
    """A pipelined tile shape the runtime holds: Metal's 32 KiB take one
    warpgroup and blocks of 16 keys (D 64 only); the CPU and CUDA the
    default sm_90 shapes (the overlapped ones of ``plans.HOPPER_OVERLAP``)
    unless ``rows`` asks for one warpgroup.
    ``overlap``: with the products of two blocks issued together."""
    if runtime.name in ("metal", "metal-host"):
        if d > 64:
            pytest.skip("Q and two stages of D 128 exceed Metal's 32 KiB")
        config = WS(16, 64, True, pipelined=True, stages=2)
    elif runtime.name == "cuda" and not plans.hopper(runtime):
        pytest.skip("the pipelined kernel needs an sm_90 GPU")
    elif rows == 64:
        config = WS(32, 64, True, pipelined=True, stages=3)
    elif overlap:
        return plans.HOPPER_OVERLAP[d]
    else:   # the sm_90 default (three consumer warpgroups at D 64)
        config = plans._HOPPER_FORWARD[d]
    return dataclasses.replace(config, overlap=overlap)


# The two schedules of the consumer's products: one after the other, and
# FlashAttention 3's overlap (the next block's scores beside P V).
OVERLAP = pytest.mark.parametrize("overlap", [False, True],
                                  ids=["serial", "overlap"])


@OVERLAP
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("b,hq,hkv,sq,skv,d", [
    (1, 1, 1, 1, 1, 64),         # one row, one key
    (2, 4, 2, 33, 70, 64),       # grouped heads, Sq < Skv, edges
    (1, 3, 1, 70, 33, 64),       # multi-query, Sq > Skv: causal rows empty
    (1, 2, 2, 100, 300, 128),    # three key blocks, a partial last one
    (2, 2, 1, 150, 77, 128),     # two query tiles of 128, Sq > Skv
])
def test_forward_ws(runtime, rng, causal, b, hq, hkv, sq, skv, d, overlap):
    config = _config(runtime, d, overlap=overlap)
    q = make(rng, (b, hq, sq, d), "bf16")
    k = make(rng, (b, hkv, skv, d), "bf16")
    v = make(rng, (b, hkv, skv, d), "bf16")
    o, lse = ea.attention(q, k, v, causal=causal, return_lse=True,
                          config=config, runtime=runtime)
    assert o.shape == q.shape and lse.shape == (b, hq, sq)
    want_o, want_lse = reference_bhsd(q, k, v, causal)
    check_forward(o, lse, want_o, want_lse, v)
    if sq > 1 and skv > 1:   # the other mask must fail the check
        wrong = ea.attention(q, k, v, causal=not causal, config=config,
                             runtime=runtime)
        with pytest.raises(AssertionError):
            check_forward(wrong, None, want_o, want_lse, v)


@OVERLAP
@pytest.mark.parametrize("d", [64, 128])
def test_forward_ws_one_warpgroup_f16(runtime, rng, d, overlap):
    """One consumer warpgroup (64 rows), 32-key blocks, three stages,
    half precision, scale given."""
    config = _config(runtime, d, rows=64, overlap=overlap)
    q = make(rng, (1, 2, 97, d), "f16")
    k = make(rng, (1, 2, 131, d), "f16")
    v = make(rng, (1, 2, 131, d), "f16")
    o, lse = ea.attention(q, k, v, causal=True, scale=0.07,
                          return_lse=True, config=config, runtime=runtime)
    check_forward(o, lse, *reference_bhsd(q, k, v, True, 0.07), v)


@OVERLAP
@pytest.mark.parametrize("causal", [False, True])
def test_forward_ws_varlen_empty_and_non_finite_neighbours(runtime, rng,
                                                           causal, overlap):
    """Packed sequences, empty ones among them, and a last sequence
    without queries whose keys are NaN and values infinite: the partial
    blocks before it read its rows, which must not reach any output (0 x
    inf is NaN)."""
    lengths_q = [5, 7, 0, 3, 66, 0]
    lengths_k = [9, 2, 4, 0, 70, 40]
    d = 64
    config = _config(runtime, d, overlap=overlap)
    cu_q = np.concatenate([[0], np.cumsum(lengths_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lengths_k)]).astype(np.int32)
    q = make(rng, (cu_q[-1], 4, d), "bf16")
    k = make(rng, (cu_k[-1], 2, d), "bf16")
    v = make(rng, (cu_k[-1], 2, d), "bf16")
    k[cu_k[-2]:] = 0x7FC0     # NaN
    v[cu_k[-2]:] = 0x7F80     # +inf
    o, lse = ea.attention_varlen(q, k, v, cu_q, cu_k, causal=causal,
                                 return_lse=True, config=config,
                                 runtime=runtime)
    k_ok, v_ok = k[:cu_k[-2]], v[:cu_k[-2]]
    want_o, want_lse = reference_varlen(q, k_ok, v_ok, cu_q[:-1],
                                        cu_k[:-1], causal)
    check_forward(o, lse, want_o, want_lse, v_ok)
    assert np.isneginf(lse[:, cu_q[3]:cu_q[4]]).all()   # no keys at all


@OVERLAP
def test_forward_ws_bhsd_heads_do_not_leak(runtime, rng, overlap):
    """(B, H, S, D) keys whose length is not a multiple of the block: the
    rows after a head's last key are the next head's, here infinite."""
    d = 64
    config = _config(runtime, d, overlap=overlap)
    q = make(rng, (1, 2, 20, d), "bf16")
    k = make(rng, (1, 2, 45, d), "bf16")
    v = make(rng, (1, 2, 45, d), "bf16")
    # Head 1 of K and V infinite: query head 0 (reading key head 0) must
    # stay finite and right.
    k[:, 1] = 0x7F80
    v[:, 1] = 0x7F80
    o, lse = ea.attention(q, k, v, return_lse=True, config=config,
                          runtime=runtime)
    want_o, want_lse = reference_bhsd(q[:, :1], k[:, :1], v[:, :1], False)
    check_forward(o[:, :1], lse[:, :1], want_o, want_lse, v[:, :1])


class _FakeCuda:
    """A runtime as plans sees it: a name and the device's architecture
    number (CudaRuntime.architecture)."""
    name = "cuda"

    def __init__(self, arch):
        self.architecture = arch


def test_plans_choose_the_pipelined_kernel_on_hopper_only():
    for d in (64, 128):
        ws = plans.forward_config(_FakeCuda(90), d)
        # Three consumer warpgroups at D 64, two overlapped at D 128.
        assert ws.pipelined and ws.rows == {64: 192, 128: 128}[d]
        assert ws.overlap == (d == 128)
        # With a causal mask D 128 runs its products one after the other
        # (the faster with the scale in the exponent), the same tiles.
        masked = plans.forward_config(_FakeCuda(90), d, causal=True)
        assert masked == dataclasses.replace(ws, overlap=False)
        # Short query sequences keep 64-row tiles at D 64 (mostly padding
        # in 192 rows): below 2048 rows, causal below 4096; D 128's
        # 128-row tiles do not depend on it.
        for causal, least in ((False, 2048), (True, 4096)):
            short = plans.forward_config(_FakeCuda(90), d, max_sq=least - 1,
                                         causal=causal)
            assert short.pipelined == (d == 128)
            assert plans.forward_config(_FakeCuda(90), d, max_sq=least,
                                        causal=causal) == \
                (masked if causal else ws)
        assert ws.smem_bytes(d) <= 232448
        assert not plans.forward_config(_FakeCuda(90), d,
                                        paged=True).pipelined
        assert not plans.forward_config(_FakeCuda(80), d).pipelined
        assert not plans.forward_config(Target("cpu"), d).pipelined
    assert not plans.forward_config(_FakeCuda(90), 256).pipelined
    assert plans.forward_configs(128, "ws") and all(
        c.pipelined for c in plans.forward_configs(128, "ws"))
    assert not any(c.pipelined for c in plans.forward_configs(64, "classic"))
    assert plans.forward_configs(64) == plans.forward_configs(
        64, "classic") + plans.forward_configs(64, "ws")
    assert plans.forward_configs(256, "ws") == []
    with pytest.raises(ValueError, match="kernel must be"):
        plans.forward_configs(64, "fast")


def test_pipelined_config_mistakes(rng):
    q = make(rng, (1, 1, 8, 64), "bf16")
    with pytest.raises(ValueError, match="rows must be 64, 128 or 192"):
        ea.attention(q, q, q, config=WS(64, 32, True, pipelined=True))
    with pytest.raises(ValueError, match="overlap and turns"):
        ea.attention(q, q, q, config=WS(64, 64, True, pipelined=True,
                                        turns=True, overlap=True))
    with pytest.raises(ValueError, match="overlap is the pipelined"):
        ea.attention(q, q, q, config=WS(64, 64, True, overlap=True))
    with pytest.raises(ValueError, match="bc must be a multiple of 16"):
        ea.attention(q, q, q, config=WS(40, 64, True, pipelined=True))
    q256 = make(rng, (1, 1, 8, 256), "bf16")
    with pytest.raises(ValueError, match="head dimensions 64 and 128"):
        ea.attention(q256, q256, q256,
                     config=WS(32, 64, True, pipelined=True))
    cache = make(rng, (2, 16, 1, 64), "bf16")
    table = np.array([[0, 1]], np.int32)
    with pytest.raises(ValueError, match="takes contiguous keys"):
        ea.attention_paged(q[0].transpose(1, 0, 2), cache, cache, table,
                           np.array([20], np.int32),
                           np.array([0, 8], np.int32),
                           config=WS(64, 64, True, pipelined=True))


def test_pipelined_forward_compiles_for_hopper_without_spills(monkeypatch):
    """The default sm_90 shapes, their serial twins and the overlapped
    schedule's: NVRTC for sm_90a with ptxas remarks, no spills (but the
    80 bytes the causal overlapped D 128 default spills, measured faster
    than its serial twin: no more than those), no serialised warpgroup
    products (C7514), the roles' register budgets in the text."""
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    sources = {}
    for d, causal, overlap in itertools.product((64, 128), (False, True),
                                                (False, True)):
        config = dataclasses.replace(
            plans.forward_config(_FakeCuda(90), d), overlap=False) \
            if not overlap else plans.HOPPER_OVERLAP[d]
        kernel = forward_ws.forward_ws_kernel("bf16", d, causal, config)
        source = compiled(kernel).cuda_source
        # The producer warpgroup and the consumers with their budgets.
        assert (f"enigma_producer_registers<"
                f"{forward_ws.producer_registers(config.threads)}>"
                in source)
        assert (f"enigma_consumer_registers<"
                f"{forward_ws.consumer_registers(config.threads)},"
                in source)
        assert "enigma_stage_copy<" in source
        try:
            _, log = enigma._core.Runtime.nvrtc_check(source, "sm_90a",
                                                      [], log=True)
        except enigma.BackendUnavailableError:
            pytest.skip("NVRTC is not installed here")
        what = f"d={d} causal={causal} overlap={overlap}"
        assert "Used " in log, what + ": no ptxas remarks\n" + log
        assert "C7514" not in log, what + "\n" + log
        if (d, causal, overlap) == (128, True, True):
            assert max(spill_stores(log)) <= 80, what + "\n" + log
            continue
        assert spill_free(log), what + "\n" + log
        sources[what] = source
    # The same under the other NVRTC a test process may load.
    assert_clean_under_other_nvrtc(sources)


def _softmax_beside_register_a_product(ptx):
    """Whether the PTX runs exponentials while a register-A wgmma (P V)
    is in flight: after that product's group, a wait that leaves one
    group pending, then ex2 before the next wait for every group."""
    rs = re.search(r"wgmma\.mma_async[^\n]*\}, \{%r", ptx)
    if rs is None:
        return False
    rest = ptx[rs.end():]
    leave_one = rest.find("wgmma.wait_group.sync.aligned 1;")
    wait_all = rest.find("wgmma.wait_group.sync.aligned 0;")
    exp = rest.find("ex2.approx", leave_one)
    return 0 <= leave_one < exp < wait_all


@pytest.mark.parametrize("d", [64, 128])
def test_overlapped_schedule_keeps_p_v_in_flight_during_the_softmax(d):
    """The PTX of the overlapped schedule (NVRTC, compute_90a): P V is a
    register-A wgmma left in flight while the softmax's exponentials run;
    the serial schedule's PTX has no such stretch (the check can fail)."""
    ptx = {}
    for overlap in (False, True):
        config = plans.HOPPER_OVERLAP[d] if overlap else \
            dataclasses.replace(plans.HOPPER_OVERLAP[d], overlap=False)
        source = compiled(forward_ws.forward_ws_kernel(
            "bf16", d, False, config)).cuda_source
        try:
            image, _ = enigma._core.Runtime.nvrtc_binary(source,
                                                         "compute_90a")
        except enigma.BackendUnavailableError:
            pytest.skip("NVRTC is not installed here")
        ptx[overlap] = bytes(image).decode("utf-8", "replace")
    assert _softmax_beside_register_a_product(ptx[True])
    assert not _softmax_beside_register_a_product(ptx[False])
