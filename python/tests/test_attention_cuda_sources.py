"""The attention kernels' CUDA text for Hopper (sm_90a, NVRTC with ptxas
remarks, no GPU needed): the default tile shapes of the forward (D 64 and
128, contiguous and paged), the decode kernel and the backward kernels
compile without register spills and without ptxas serialising the
warpgroup products (remark C7514), the two ways docs/design/wgmma.md
says a tensor-core loop loses its speed."""

import pytest

from _ptxas_reports import spill_free

import enigma
from enigma._attention import backward, decode, forward, plans
from enigma._attention.launch import Target, compiled


def _kernels():
    cuda = Target("cuda")
    found = {}
    for d in (64, 128):
        # The classic kernel's shapes (forward_config gives the pipelined
        # kernel's on an sm_90 device; test_attention_ws.py compiles those).
        config = plans._CUDA_FORWARD[d]
        found[f"forward d={d}"] = forward.forward_kernel("bf16", d, True, 0,
                                                         config)
    found["forward paged d=128"] = forward.forward_kernel(
        "f16", 128, False, 64, plans.forward_config(cuda, 128, paged=True))
    found["decode d=128"] = decode.decode_kernel(
        "bf16", 128, True, 64, plans.decode_config(cuda, 128), False)
    config = plans.backward_config(cuda, 128)
    found["dkdv d=128"] = backward.dkdv_kernel("bf16", 128, True, config,
                                               False)
    found["dkdv atomic d=128"] = backward.dkdv_kernel("bf16", 128, True,
                                                      config, True)
    found["dq d=128"] = backward.dq_kernel("bf16", 128, True, config)
    return found


def test_attention_kernels_compile_for_hopper_without_spills(monkeypatch):
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    for what, kernel in _kernels().items():
        source = compiled(kernel).cuda_source
        try:
            _, log = enigma._core.Runtime.nvrtc_check(source, "sm_90a", [],
                                                      log=True)
        except enigma.BackendUnavailableError:
            pytest.skip("NVRTC is not installed here")
        assert "Used " in log, what + ": no ptxas remarks\n" + log
        assert "C7514" not in log, what + "\n" + log
        assert spill_free(log), what + "\n" + log
