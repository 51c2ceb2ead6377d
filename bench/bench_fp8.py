"""FP8 e4m3 GEMM on one CUDA GPU: enigma.gemm_fp8_block against
torch._scaled_mm (cuBLASLt), bf16 out, with per-tensor scales and with
row-wise scales (one per row of A, one per column of C), at 4096^3,
8192^3 and the Llama-3-8B prefill shapes (M 4096; (N, K) = (6144, 4096),
(4096, 4096), (28672, 4096), (4096, 14336)).

Two kernels side by side (``--kernels``): the warp-specialised pipeline
(a TMA producer warpgroup and wgmma consumer warpgroups, persistent; the
default on sm_90) and the classic one (every thread copies with cp.async),
each autotuned over the first ``--configs`` configurations of
enigma.gemm_fp8_configs. Two accumulations (``--accum``): "promoted"
(enigma's fast_accum=False, each 128 of K added into f32, against
torch._scaled_mm's default use_fast_accum=False) and "fast" (the tensor
cores' own sums through all of K, against use_fast_accum=True).

Every implementation's result is checked against the float32 product of
the dequantised operands before anything is timed; the timed launches
alternate between implementations for ``--rounds`` rounds (batches of
launches queued back to back, as bench_cuda.py times GEMMs) and the ratio
is the median of the per-round throughput ratios with their range.

    python bench/bench_fp8.py            # all shapes, both scalings
    python bench/bench_fp8.py --quick    # 4096^3 and one Llama shape
    python bench/bench_fp8.py --kernels pipelined --accum fast

bench_cuda.py runs it as the step ``fp8`` (``--only fp8``).
"""

import argparse
import sys
import time

import numpy as np

import enigma
from bench_timing import batched_us


SHAPES = [  # (label, M, N, K)
    ("4096^3", 4096, 4096, 4096),
    ("8192^3", 8192, 8192, 8192),
    ("llama3-8b qkv", 4096, 6144, 4096),
    ("llama3-8b o", 4096, 4096, 4096),
    ("llama3-8b gate+up", 4096, 28672, 4096),
    ("llama3-8b down", 4096, 4096, 14336),
]
QUICK = ("4096^3", "llama3-8b gate+up")
KINDS = ("pipelined", "classic")
ACCUMS = ("promoted", "fast")


def close(out, ref, what, rel=2.0**-7, accumulation=0.0):
    """|out - ref| <= rel (|ref| + mean |ref|) + accumulation element by
    element: a few bf16 roundings, while a wrong tile, edge or scale is off
    by the size of the values. ``accumulation`` admits the error of the FP8
    tensor cores' own accumulation (Hopper adds 8-bit products with fewer
    bits than f32): the largest error cuBLASLt's fast accumulation makes on
    the same operands, measured first."""
    out, ref = out.float(), ref.float()
    bound = rel * (ref.abs() + ref.abs().mean()) + accumulation
    bad = int(((out - ref).abs() > bound).sum().item())
    assert bad == 0, (f"{what}: {bad} of {ref.numel()} elements differ, "
                      f"worst {(out - ref).abs().max().item():.4g}")


def fast_accumulation_error(torch, a, b, tsa, tsb, ref):
    """The largest |C - ref| of torch._scaled_mm with use_fast_accum=True
    (the tensor cores' accumulation without promotion to f32), or 0."""
    try:
        c = torch._scaled_mm(a, b.t(), scale_a=tsa, scale_b=tsb,
                             out_dtype=torch.bfloat16, use_fast_accum=True)
        return float((c.float() - ref).abs().max().item())
    except RuntimeError:
        return 0.0


def operands(torch, m, n, k, scaling, gen):
    """(a, b) float8_e4m3fn (M x K, N x K), their float32 scales in Enigma's
    shapes and torch._scaled_mm's, and the float32 reference product."""
    x = torch.randn(m, k, device="cuda", generator=gen)
    w = torch.randn(n, k, device="cuda", generator=gen) * 0.5
    top = 448.0
    if scaling == "tensor":
        sa = (x.abs().max() / top).reshape(1)
        sb = (w.abs().max() / top).reshape(1)
        a = (x / sa).to(torch.float8_e4m3fn)
        b = (w / sb).to(torch.float8_e4m3fn)
        torch_scales = (sa.reshape(()), sb.reshape(()))
        ref = (a.float() * sa) @ (b.float() * sb).t()
    else:
        sa = x.abs().amax(dim=1) / top
        sb = w.abs().amax(dim=1) / top
        a = (x / sa[:, None]).to(torch.float8_e4m3fn)
        b = (w / sb[:, None]).to(torch.float8_e4m3fn)
        torch_scales = (sa.reshape(m, 1).contiguous(),
                        sb.reshape(1, n).contiguous())
        ref = (a.float() * sa[:, None]) @ (b.float() * sb[:, None]).t()
    return a, b, sa.contiguous(), sb.contiguous(), torch_scales, ref


_COMPILED = {}


def compiled(config, scaling, fast_accum):
    key = (config, scaling, fast_accum)
    if key not in _COMPILED:
        _COMPILED[key] = enigma.compile(enigma.gemm_fp8_kernel(
            config, scaling, "f8e4m3", "f8e4m3", "bf16", False, False,
            fast_accum))
    return _COMPILED[key]


def tuner(rt, kind, scaling, fast_accum, count):
    """An enigma.autotune over the first ``count`` configurations of the
    pipelined (warp-specialised) or classic kernel's list."""
    configs = enigma.gemm_fp8_configs(
        "cuda", scaling, warp_specialized=kind == "pipelined",
        fast_accum=fast_accum)[:count]

    @enigma.autotune(configs=configs, key=["m", "n", "k"])
    def tuned(config, m, n, k):
        grid, threads = config.launch(m, n, rt.multiprocessors)
        return enigma.Launch(compiled(config, scaling, fast_accum), grid,
                             threads, scalars=[m, n, k],
                             output_bytes=m * n * 2)
    return tuned


def bench_shape(rt, rows, label, m, n, k, scaling, rounds, kinds=KINDS,
                accums=ACCUMS, configs=4):
    """One shape and scaling: for each accumulation (promoted: enigma's
    fast_accum=False against torch's use_fast_accum=False, their defaults;
    fast: both True), each kernel kind autotuned and timed against
    torch._scaled_mm in the same rounds."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(29)
    name = f"fp8 gemm {label} ({m}x{n}x{k}) {scaling} scales"
    flops = 2.0 * m * n * k
    a, b, sa, sb, (tsa, tsb), ref = operands(torch, m, n, k, scaling, gen)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    so = torch.ones(1, device="cuda", dtype=torch.float32)
    amax = torch.zeros(1, device="cuda", dtype=torch.uint32)
    acc = fast_accumulation_error(torch, a, b, tsa, tsb, ref)
    rows.append((name, "largest error of cuBLASLt fast accumulation",
                 f"{acc:.4g}", "admitted in every check below"))
    inputs = [a, b, sa, sb, so]

    def check(_prepared=None):
        torch.cuda.synchronize()
        close(c, ref, name, accumulation=acc)
        c.fill_(float("nan"))

    sync = torch.cuda.synchronize
    for accum in accums:
        fast = accum == "fast"
        where = f"{name}, {accum} accumulation"
        # The call form's default configuration (pipelined on sm_90).
        c.fill_(float("nan"))
        enigma.gemm_fp8(a, b, sa, sb, out=c, runtime=rt, fast_accum=fast)
        check()
        results, prepared = {}, []
        for kind in kinds:
            t = tuner(rt, kind, scaling, fast, configs)
            launch = t.best(rt, inputs, outputs=[c, amax], check=check,
                            m=m, n=n, k=k)
            for config, us in t.timings.get((m, n, k), []):
                rows.append((where, f"enigma {kind} config {config!r}",
                             us[:100] if isinstance(us, str) else
                             f"{us:.1f} us", "failed" if isinstance(us, str)
                             else f"{flops / us / 1e6:.0f} TFLOP/s"))
            p = launch.prepare(rt, inputs, outputs=[c, amax])
            c.fill_(float("nan"))
            p.dispatch(launch.grid, launch.threads)
            p.synchronize()
            check()
            prepared.append(p)
            results[f"enigma {kind} (tuned)"] = (
                lambda p=p, launch=launch: p.dispatch_async(
                    launch.grid, launch.threads), p.synchronize)
        ct = torch.empty_like(c)

        def run(ct=ct, fast=fast):
            return torch._scaled_mm(a, b.t(), scale_a=tsa, scale_b=tsb,
                                    out_dtype=torch.bfloat16,
                                    use_fast_accum=fast, out=ct)
        theirs = f"torch._scaled_mm (cuBLASLt, use_fast_accum={fast})"
        try:
            run()
            sync()
            close(ct, ref, f"{where} {theirs}", accumulation=acc)
            results[theirs] = (run, sync)
        except (RuntimeError, AssertionError) as e:
            rows.append((where, theirs, "not run",
                         str(e).splitlines()[0][:100]))
        times = {impl: [] for impl in results}
        for _ in range(rounds):
            for impl, (fn, wait) in results.items():
                times[impl].append(batched_us(fn, wait))
        for p in prepared:
            p.release()
        for impl, ts in times.items():
            us = float(np.median(ts))
            rows.append((where, impl, f"{us:.1f} us",
                         f"{flops / us / 1e6:.0f} TFLOP/s"))
        if theirs in times:
            for impl in times:
                if impl == theirs:
                    continue
                r = np.array(times[theirs]) / np.array(times[impl])
                rows.append((where, f"{impl} / {theirs} (throughput)",
                             f"{np.median(r):.3f} (rounds {r.min():.3f}-"
                             f"{r.max():.3f})", "target >= 0.95"))
        for row in rows[-(2 * len(times) - 1):]:
            print(" | ".join(str(x) for x in row), flush=True)
    torch.cuda.empty_cache()


def run_all(rows, quick=False, rounds=5, scalings=("tensor", "row"),
            kinds=KINDS, accums=ACCUMS, configs=4):
    """Every shape and scaling's rows appended to ``rows`` (bench_cuda.py
    passes its own)."""
    import torch
    if not torch.cuda.is_available():
        rows.append(("fp8 gemm", "", "not run", "no CUDA device"))
        return
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) < (9, 0):
        rows.append(("fp8 gemm", "", "not run",
                     f"sm_{major}{minor}: wgmma with 8-bit operands needs "
                     "sm_90"))
        return
    rt = enigma.CudaRuntime()
    for label, m, n, k in SHAPES:
        if quick and label not in QUICK:
            continue
        for scaling in scalings:
            try:
                bench_shape(rt, rows, label, m, n, k, scaling, rounds,
                            kinds, accums, configs)
            except Exception as e:  # noqa: BLE001 - keep going, report it
                import traceback
                traceback.print_exc()
                rows.append((f"fp8 gemm {label} {scaling}", "error", "",
                             repr(e)[:120]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="4096^3 and Llama-3-8B gate+up only")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scaling", choices=["tensor", "row", "both"],
                        default="both")
    parser.add_argument("--kernels", choices=["pipelined", "classic", "both"],
                        default="both",
                        help="the warp-specialised kernel, the classic one, "
                        "or both side by side")
    parser.add_argument("--accum", choices=["promoted", "fast", "both"],
                        default="both",
                        help="promotion into f32 per 128 of K (torch's "
                        "default), the tensor cores' sums, or both")
    parser.add_argument("--configs", type=int, default=4,
                        help="configurations autotuned per kernel")
    args = parser.parse_args(argv)
    scalings = ("tensor", "row") if args.scaling == "both" else \
        (args.scaling,)
    kinds = KINDS if args.kernels == "both" else (args.kernels,)
    accums = ACCUMS if args.accum == "both" else (args.accum,)
    rows = []
    start = time.time()
    run_all(rows, args.quick, args.rounds, scalings, kinds, accums,
            args.configs)
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{time.time() - start:.0f} s\n")
    print("| benchmark | implementation | time | throughput / note |\n"
          "|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    return 0 if not any(r[1] == "error" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
