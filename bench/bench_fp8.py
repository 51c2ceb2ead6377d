"""FP8 e4m3 GEMM on one CUDA GPU: enigma.gemm_fp8_block (wgmma on sm_90,
autotuned over the first configurations of enigma.gemm_fp8_configs)
against torch._scaled_mm (cuBLASLt), bf16 out, with per-tensor scales and
with row-wise scales (one per row of A, one per column of C), at 4096^3,
8192^3 and the Llama-3-8B prefill shapes (M 4096; (N, K) = (6144, 4096),
(4096, 4096), (28672, 4096), (4096, 14336)).

Every implementation's result is checked against the float32 product of
the dequantised operands before anything is timed; the timed launches
alternate between implementations for ``--rounds`` rounds (batches of
launches queued back to back, as bench_cuda.py times GEMMs) and the ratio
is the median of the per-round throughput ratios with their range.
torch._scaled_mm runs with use_fast_accum off (its default: cuBLASLt adds
the tensor cores' partial sums into f32 every few K steps) and on (the
tensor cores' own sums, as wgmma's accumulators in Enigma's kernel).

    python bench/bench_fp8.py            # all shapes, both scalings
    python bench/bench_fp8.py --quick    # 4096^3 and one Llama shape

bench_cuda.py runs it as the step ``fp8`` (``--only fp8``).
"""

import argparse
import importlib.util
import os
import sys
import time

import numpy as np

import enigma

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

SHAPES = [  # (label, M, N, K)
    ("4096^3", 4096, 4096, 4096),
    ("8192^3", 8192, 8192, 8192),
    ("llama3-8b qkv", 4096, 6144, 4096),
    ("llama3-8b o", 4096, 4096, 4096),
    ("llama3-8b gate+up", 4096, 28672, 4096),
    ("llama3-8b down", 4096, 4096, 14336),
]
QUICK = ("4096^3", "llama3-8b gate+up")


def load_example():
    path = os.path.join(REPO, "examples", "python", "gemm_fp8.py")
    spec = importlib.util.spec_from_file_location("enigma_example_gemm_fp8",
                                                  path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def batched_us(launch, sync, batch=10, samples=6):
    """Median wall time per launch of ``batch`` launches queued back to
    back (host launch costs hide behind the previous kernel)."""
    launch()
    sync()
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(batch):
            launch()
        sync()
        times.append((time.perf_counter() - start) * 1e6 / batch)
    return float(np.median(times))


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


def bench_shape(rt, ex, rows, label, m, n, k, scaling, rounds):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(29)
    name = f"fp8 gemm {label} ({m}x{n}x{k}) {scaling} scales"
    flops = 2.0 * m * n * k
    a, b, sa, sb, (tsa, tsb), ref = operands(torch, m, n, k, scaling, gen)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    so = torch.ones(1, device="cuda", dtype=torch.float32)
    amax = torch.zeros(1, device="cuda", dtype=torch.uint32)
    # Enigma: the call form for the reference check of the default
    # configuration, then the autotuned configuration prepared once.
    acc = fast_accumulation_error(torch, a, b, tsa, tsb, ref)
    rows.append((name, "largest error of cuBLASLt fast accumulation",
                 f"{acc:.4g}", "admitted in every check below"))
    enigma.gemm_fp8(a, b, sa, sb, out=c, runtime=rt)
    torch.cuda.synchronize()
    close(c, ref, name + " enigma.gemm_fp8", accumulation=acc)
    tuner = ex.tuned_tensor if scaling == "tensor" else ex.tuned_row
    inputs = [a, b, sa, sb, so]

    def check(_prepared=None):
        torch.cuda.synchronize()
        close(c, ref, name, accumulation=acc)
        c.fill_(float("nan"))

    c.fill_(float("nan"))
    launch = tuner.best(rt, inputs, outputs=[c, amax], check=check, m=m, n=n,
                        k=k)
    prepared = launch.prepare(rt, inputs, outputs=[c, amax])
    c.fill_(float("nan"))
    prepared.dispatch(launch.grid, launch.threads)
    prepared.synchronize()
    close(c, ref, name + " " + repr(launch), accumulation=acc)

    variants = {}
    for fast in (False, True):
        ct = torch.empty_like(c)

        def run(fast=fast, ct=ct):
            return torch._scaled_mm(a, b.t(), scale_a=tsa, scale_b=tsb,
                                    out_dtype=torch.bfloat16,
                                    use_fast_accum=fast, out=ct)
        try:
            run()
            torch.cuda.synchronize()
            close(ct, ref, f"{name} torch._scaled_mm fast_accum={fast}",
                  accumulation=acc)
            variants[f"torch._scaled_mm (cuBLASLt, fast_accum={fast})"] = run
        except (RuntimeError, AssertionError) as e:
            rows.append((name, f"torch._scaled_mm fast_accum={fast}",
                         "not run", str(e).splitlines()[0][:100]))

    for config, t in tuner.timings.get((m, n, k), []):
        rows.append((name, "enigma config " + ", ".join(
            f"{key}={v}" for key, v in config.as_dict().items()),
            t[:100] if isinstance(t, str) else f"{t:.1f} us",
            "failed" if isinstance(t, str) else
            f"{flops / t / 1e6:.0f} TFLOP/s"))
    ours = "enigma.gemm_fp8_block (tuned)"
    results = {ours: []}
    results.update({label_: [] for label_ in variants})
    sync = torch.cuda.synchronize
    for _ in range(rounds):
        results[ours].append(batched_us(
            lambda: prepared.dispatch_async(launch.grid, launch.threads),
            prepared.synchronize))
        for label_, fn in variants.items():
            results[label_].append(batched_us(fn, sync))
    prepared.release()
    for impl, times in results.items():
        us = float(np.median(times))
        rows.append((name, impl, f"{us:.1f} us",
                     f"{flops / us / 1e6:.0f} TFLOP/s"))
    for label_ in variants:
        r = np.array(results[label_]) / np.array(results[ours])
        rows.append((name, f"enigma / {label_} (throughput)",
                     f"{np.median(r):.3f} (rounds {r.min():.3f}-"
                     f"{r.max():.3f})", "target >= 0.95"))
    for row in rows[-(2 * len(variants) + 1):]:
        print(" | ".join(str(x) for x in row), flush=True)
    del a, b, c, ref
    torch.cuda.empty_cache()


def run_all(rows, quick=False, rounds=5, scalings=("tensor", "row")):
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
    ex = load_example()
    for label, m, n, k in SHAPES:
        if quick and label not in QUICK:
            continue
        for scaling in scalings:
            try:
                bench_shape(rt, ex, rows, label, m, n, k, scaling, rounds)
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
    args = parser.parse_args(argv)
    scalings = ("tensor", "row") if args.scaling == "both" else \
        (args.scaling,)
    rows = []
    start = time.time()
    run_all(rows, args.quick, args.rounds, scalings)
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{time.time() - start:.0f} s\n")
    print("| benchmark | implementation | time | throughput / note |\n"
          "|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    return 0 if not any(r[1] == "error" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
