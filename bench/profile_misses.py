"""Runs one benchmark case whose target was missed, Enigma's kernel and the
library it is compared with, inside an NVTX range named ``profiled``, so
that Nsight Compute looks at those launches only (its own timing is not a
benchmark):

    ncu --clock-control none --nvtx --nvtx-include "profiled/" \\
        --section SpeedOfLight --section ComputeWorkloadAnalysis \\
        --section WarpStateStats --section Occupancy \\
        python3 bench/profile_misses.py gemm 128 4096 4096

Cases: ``gemm M N K [BM BN BK WM WN STAGES]`` (bf16, the built-in
configuration or the one given, and torch.matmul),
``attention B H S D causal [OVERLAP]`` (bf16 forward and SDPA's cuDNN
backend; with OVERLAP 1 the pipelined kernel's serial and overlapped
schedules, ``plans.HOPPER_OVERLAP``, instead of the default),
``gemv4 M N K [CONFIG]`` (4-bit quantized_matmul, group 64, with the
built-in configuration or CONFIG, a constructor of enigma.quantized such
as ``"QmvMmaConfig(staged=True)"``, and bf16 torch.matmul),
``fp8 M N K FAST`` (e4m3 gemm_fp8 with tensor scales, bf16 out, the
default configuration, promoted when FAST is 0, and torch._scaled_mm with
the matching use_fast_accum).
Each Enigma result is checked against torch before the profiled launches.
"""

import importlib.util
import os
import sys

import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
import enigma  # noqa: E402


def _bench_module(name):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(REPO, "bench", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check(got, want, tol, what):
    err = (got.float() - want.float()).abs().max().item()
    scale = want.float().abs().max().item() or 1.0
    if not err <= tol * scale:
        raise SystemExit(f"{what}: max |error| {err:.3g} against "
                         f"{tol * scale:.3g} allowed")
    print(f"{what}: checked, max |error| {err:.3g}", flush=True)


def _profiled(*fns):
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("profiled")
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def gemm(m, n, k, *shape):
    """``shape``: optionally the configuration's bm, bn, bk, wm, wn, stages
    (warp-specialised, whole blocks) instead of the built-in choice."""
    ws = _bench_module("gemm_ws_worker")
    rt = enigma.CudaRuntime()
    config = enigma.MmaConfig(*shape, warp_specialized=True) if shape else \
        enigma.gemm_config_for(m, n, k, "bf16", rt.multiprocessors)
    print(f"gemm {m}x{n}x{k}: {config}", flush=True)
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    prepared, grid, threads = ws.Gemm(rt, "bf16", False, config).prepare(
        a, b, c)
    prepared.dispatch(grid, threads)
    torch.cuda.synchronize()
    _check(c, a.float() @ b.float(), 2e-2, "enigma gemm")
    torch.matmul(a, b)
    _profiled(lambda: prepared.dispatch(grid, threads),
              lambda: torch.matmul(a, b))


def attention(batch, heads, s, d, causal, overlap=0):
    import dataclasses
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import enigma.attention as ea
    from enigma._attention import plans
    g = torch.Generator(device="cuda").manual_seed(2)
    q, k, v = (torch.randn(batch, heads, s, d, device="cuda",
                           dtype=torch.bfloat16, generator=g)
               for _ in range(3))
    runs = [(lambda: ea.attention(q, k, v, causal=bool(causal)),
             "enigma attention")]
    if overlap:
        forward_plan = _bench_module("bench_attention")._forward_plan
        runs = []
        for config in (dataclasses.replace(plans.HOPPER_OVERLAP[d],
                                           overlap=False),
                       plans.HOPPER_OVERLAP[d]):
            run, o, _ = forward_plan((q, k, v, bool(causal)), config)
            runs.append((run, f"enigma {config}", o))
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        for fn, what, *out in runs:
            o = fn()
            torch.cuda.synchronize()
            _check(out[0] if out else o, ref, 2e-2, what)
        _profiled(*(fn for fn, *_ in runs),
                  lambda: F.scaled_dot_product_attention(
                      q, k, v, is_causal=bool(causal)))


def gemv4(m, n, k, config=None):
    import enigma.quantized as eq
    if config is not None:
        # A configuration's constructor call, read from the command line.
        config = eval(config, {name: getattr(eq, name) for name in
                               ("QmvConfig", "QmvMmaConfig", "QmmConfig")})
    g = torch.Generator(device="cuda").manual_seed(3)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w_q, scales, biases = enigma.quantize(w, 64)
    w_hat = enigma.dequantize(w_q, scales, biases, 64)
    y = enigma.quantized_matmul(x, w_q, scales, biases, group_size=64,
                                config=config)
    torch.cuda.synchronize()
    _check(y, x.float() @ w_hat.float().T, 2e-2,
           f"enigma quantized_matmul {config or ''}")
    _profiled(lambda: enigma.quantized_matmul(x, w_q, scales, biases,
                                              group_size=64, out=y,
                                              config=config),
              lambda: torch.matmul(x, w.T))


def fp8(m, n, k, fast):
    g = torch.Generator(device="cuda").manual_seed(4)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    c = enigma.gemm_fp8(a, b, one, one, fast_accum=bool(fast))
    torch.cuda.synchronize()
    _check(c, a.float() @ b.float().T, 2e-2, "enigma gemm_fp8")
    _profiled(lambda: enigma.gemm_fp8(a, b, one, one, out=c,
                                      fast_accum=bool(fast)),
              lambda: torch._scaled_mm(a, b.T, one, one,
                                       out_dtype=torch.bfloat16,
                                       use_fast_accum=bool(fast)))


def main():
    case, *values = sys.argv[1:]
    {"gemm": gemm, "attention": attention, "gemv4": gemv4, "fp8": fp8}[case](
        *(int(v) if v.isdigit() else v for v in values))


if __name__ == "__main__":
    main()
